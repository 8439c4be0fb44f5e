//! What waits: settings the plan wants but this run must not write, and why (docs/reference.md
//! §4). A held-back setting stays in the plan, so the report shows it and the array is not
//! compliant; it is never written, and a later run applies it once the reason is gone. And what
//! a write must not go into: a running sync, which the run pauses around it.
//!
//! - While an array reshapes, the writes that suspend it ([`kernel::SUSPENDS_ARRAY`]) and any
//!   lowering of `stripe_cache_size` (a reshape needs its stripes) wait for the reshape to end.
//! - On an external-metadata (IMSM/DDF) array, `stripe_cache_size` is written only while mdmon
//!   runs for the container: the write waits for mdmon ([`kernel::WAITS_FOR_MDMON`]) and would
//!   hang without it.
//! - A `preread_bypass_threshold` above the live stripe cache waits with a held-back cache.
//! - While a resync, recovery, check or repair runs, the writes of [`kernel::PAUSED_FOR`] go in
//!   with the sync paused (`crate::apply` pauses and resumes it; the plan says it will), except on
//!   an external-metadata array, whose sync mdmon drives: there they wait for the sync to end;
//!   and except a repair on a kernel where a paused repair resumes as a resync
//!   ([`kernel::repair_resumes_as_resync`]): there they wait for the repair to end.
//!
//! Pure: it reads the inventory's array and changes the plan's copy.

use super::model::{ArrayPlan, Change, Hold};
use crate::host::Array;
use crate::md::kernel;
use crate::md::{Attr, SyncRun, Value};

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
    let mut holds: Vec<Hold> = Vec::new();
    for h in ap.changes.iter().filter_map(|c| c.hold) {
        if !holds.contains(&h) {
            holds.push(h);
        }
    }
    for hold in holds {
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
    if let (Some(run), true) = (running(array), kernel::PAUSED_FOR.contains(&c.attr)) {
        if array.external.is_some() {
            return Some(Hold::Sync(run));
        }
        let release = array.sync.as_ref().and_then(|s| s.release.as_deref());
        if run == SyncRun::Repair && kernel::repair_resumes_as_resync(release) {
            return Some(Hold::Repair);
        }
    }
    let no_mdmon = array.external.as_ref().is_some_and(|e| e.mdmon.is_err());
    (c.attr == kernel::WAITS_FOR_MDMON && no_mdmon).then_some(Hold::NoMdmon)
}

/// The sync `array` shows running, if any.
fn running(array: &Array) -> Option<SyncRun> {
    SyncRun::running(&array.sync.as_ref()?.action)
}

/// The sync a run pauses around the writes of `ap` (docs/reference.md §4): the one running, when
/// a write that is not held back is one of [`kernel::PAUSED_FOR`].
pub(crate) fn pause_for(array: &Array, ap: &ArrayPlan) -> Option<SyncRun> {
    let writes = ap
        .changes
        .iter()
        .any(|c| c.is_write() && kernel::PAUSED_FOR.contains(&c.attr));
    running(array).filter(|_| writes)
}

#[cfg(test)]
mod tests {
    use crate::host::fixtures::{host, raid};
    use crate::host::External;
    use crate::md::{Attr, SyncRun};
    use crate::plan::{plan, Hold};
    use crate::spec::Spec;
    use serde_json::json;

    fn planned(array: crate::host::Array, input: serde_json::Value) -> crate::plan::ArrayPlan {
        let spec = Spec::from_json(&input.to_string()).unwrap();
        plan(&spec, &host(vec![array])).unwrap().arrays.remove(0)
    }

    fn checking() -> crate::host::Array {
        let mut a = raid("md0", "raid5", &[Some(8); 3]);
        a.sync.as_mut().unwrap().action = "check".into();
        a
    }

    #[test]
    fn a_running_sync_is_paused_around_writes_that_suspend_the_array_and_only_those() {
        let ap = planned(checking(), json!({"thread_policy": 4}));
        assert_eq!(ap.pause, Some(SyncRun::Check));
        assert!(ap.changes.iter().all(|c| c.hold.is_none()));
        let ap = planned(
            checking(),
            json!({"thread_policy": 0, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
        );
        assert_eq!(ap.pause, None, "a stripe cache write goes in unpaused");
        let mut idle = checking();
        idle.sync.as_mut().unwrap().action = "frozen".into();
        assert_eq!(planned(idle, json!({"thread_policy": 4})).pause, None);
    }

    #[test]
    fn an_external_metadata_array_holds_the_write_back_while_its_sync_runs() {
        let mut a = checking();
        a.sync.as_mut().unwrap().action = "resync".into();
        a.external = Some(External {
            container: "md127".into(),
            mdmon: Ok(4242),
        });
        let ap = planned(
            a,
            json!({"arrays": [{"name": "md0", "skip_copy": true, "stripe_cache_size": 512}],
                   "thread_policy": 4}),
        );
        let held: Vec<(Attr, Option<Hold>)> = ap.changes.iter().map(|c| (c.attr, c.hold)).collect();
        assert_eq!(
            held,
            [
                (Attr::GroupThreadCnt, Some(Hold::Sync(SyncRun::Resync))),
                (Attr::StripeCacheSize, None),
                (Attr::SkipCopy, Some(Hold::Sync(SyncRun::Resync)))
            ]
        );
        assert_eq!(ap.pause, None);
    }
}
