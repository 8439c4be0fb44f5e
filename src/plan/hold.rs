//! What waits: settings the plan wants but this run must not write, and why (docs/reference.md
//! §4). A held-back setting stays in the plan, so the report shows it and the array is not
//! compliant; it is never written, and a later run applies it once the reason is gone.
//!
//! - While an array reshapes, the writes that suspend it ([`kernel::SUSPENDS_ARRAY`]) and any
//!   lowering of `stripe_cache_size` (a reshape needs its stripes) wait for the reshape to end.
//! - On an external-metadata (IMSM/DDF) array, `stripe_cache_size` is written only while mdmon
//!   runs for the container: the write waits for mdmon ([`kernel::WAITS_FOR_MDMON`]) and would
//!   hang without it.
//! - A `preread_bypass_threshold` above the live stripe cache waits with a held-back cache.
//!
//! Pure: it reads the inventory's array and changes the plan's copy.

use super::model::{ArrayPlan, Change, Hold};
use crate::host::Array;
use crate::md::kernel;
use crate::md::{Attr, Value};

/// Marks the due changes of `ap` that must wait, and warns once per array.
pub(crate) fn hold_back(array: &Array, ap: &mut ArrayPlan, warnings: &mut Vec<String>) {
    for c in ap.changes.iter_mut().filter(|c| c.is_due()) {
        c.hold = why(array, c);
    }
    let cache_held = ap
        .changes
        .iter()
        .any(|c| c.attr == Attr::StripeCacheSize && c.hold.is_some());
    if let (true, Some(Value::Int(live))) = (cache_held, array.values.get(&Attr::StripeCacheSize)) {
        for c in ap.changes.iter_mut().filter(|c| c.is_write()) {
            if c.attr == Attr::PrereadBypassThreshold
                && matches!(c.after, Value::Int(v) if v > *live)
            {
                c.hold = Some(Hold::AfterStripeCache);
            }
        }
    }
    for hold in [Hold::Reshape, Hold::NoMdmon, Hold::AfterStripeCache] {
        let held: Vec<&str> = ap
            .changes
            .iter()
            .filter(|c| c.hold == Some(hold))
            .map(|c| c.attr.name())
            .collect();
        if !held.is_empty() {
            warnings.push(format!(
                "{}: {} not written: {}; a later run applies {}",
                array.name,
                held.join(", "),
                hold.reason(array),
                if held.len() == 1 { "it" } else { "them" }
            ));
        }
    }
}

fn why(array: &Array, c: &Change) -> Option<Hold> {
    if array.reshape.is_some() {
        let lowers = matches!((c.before, c.after), (Value::Int(b), Value::Int(a)) if a < b);
        if kernel::SUSPENDS_ARRAY.contains(&c.attr) || c.attr == Attr::StripeCacheSize && lowers {
            return Some(Hold::Reshape);
        }
    }
    let no_mdmon = array.external.as_ref().is_some_and(|e| e.mdmon.is_err());
    (c.attr == kernel::WAITS_FOR_MDMON && no_mdmon).then_some(Hold::NoMdmon)
}
