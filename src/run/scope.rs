//! What a run reads of the host (`host::Scope`): the attributes its entries name (their
//! `sync_boost`'s too) and those the
//! plan always looks at, the system limits it sets or that a named setting follows, and a
//! raid4/5/6 array's `raid_disks` only when `auto` may decide a thread count, since only its
//! `why` uses it. Reading less is what keeps a run near the floor of reading sysfs
//! (docs/performance.md).

use crate::host::Scope;
use crate::md::{Attr, SpeedLimit};
use crate::spec::{Entry, NameSelector, Spec, Want};
use std::collections::BTreeSet;

/// What a `present` or `query` run reads: the attributes its entries name, `group_thread_cnt`
/// (the thread policy may set it on any array) and `stripe_cache_size` (holds and the kernel's
/// cap on `preread_bypass_threshold` look at the live one).
pub(crate) fn scope(spec: &Spec) -> Scope {
    let named: BTreeSet<Attr> = spec
        .arrays
        .iter()
        .flat_map(|e| {
            let boosted = e.boost.iter().flat_map(|b| b.values.keys().copied());
            e.settings.keys().copied().chain(boosted)
        })
        .collect();
    // The system limits an array's "system" follows, for what a raid10 member runs at.
    let followed = [
        (Attr::SyncSpeedMin, SpeedLimit::Min),
        (Attr::SyncSpeedMax, SpeedLimit::Max),
    ]
    .into_iter()
    .filter(|(a, l)| named.contains(a) && !spec.speed_limits.contains_key(l))
    .map(|(_, l)| l);
    Scope {
        only: spec.only.clone(),
        speed_limits: spec.speed_limits.keys().copied().chain(followed).collect(),
        attrs: Attr::ALL
            .into_iter()
            .filter(|a| {
                named.contains(a) || matches!(a, Attr::GroupThreadCnt | Attr::StripeCacheSize)
            })
            .collect(),
        stripe_disks: may_auto(spec),
        health: false,
    }
}

/// Whether `auto` may decide some array's `group_thread_cnt`: an entry asks for it, or the
/// thread policy does and no entry for every array (`*`) sets a number first.
fn may_auto(spec: &Spec) -> bool {
    let threads = |e: &Entry| e.settings.get(&Attr::GroupThreadCnt).cloned();
    let every = |e: &Entry| {
        e.uuid.is_none()
            && matches!(&e.name, Some(NameSelector::Glob(p))
                if p.as_str().ends_with('*')
                    && matches!(p.as_str().trim_end_matches('*'), "" | "m" | "md"))
    };
    spec.arrays.iter().any(|e| threads(e) == Some(Want::Auto))
        || (spec.thread_policy.want == Want::Auto
            && !spec
                .arrays
                .iter()
                .any(|e| every(e) && matches!(threads(e), Some(Want::Value(_)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(input: &str) -> Spec {
        Spec::from_json(input).unwrap()
    }

    #[test]
    fn raid_disks_are_read_only_when_auto_may_decide_a_thread_count() {
        for (input, wanted) in [
            (r#"{}"#, true),
            (r#"{"thread_policy": "off"}"#, false),
            (r#"{"thread_policy": 4}"#, false),
            (
                r#"{"arrays": [{"name": "*", "group_thread_cnt": 8}]}"#,
                false,
            ),
            (
                r#"{"arrays": [{"name": "md*", "group_thread_cnt": 8}]}"#,
                false,
            ),
            (
                r#"{"arrays": [{"name": "md1*", "group_thread_cnt": 8}]}"#,
                true,
            ),
            (
                r#"{"arrays": [{"name": "*", "stripe_cache_size": 4096}]}"#,
                true,
            ),
            (
                r#"{"thread_policy": "off", "arrays": [{"name": "md0", "group_thread_cnt": "auto"}]}"#,
                true,
            ),
            (
                r#"{"arrays": [{"name": "*", "group_thread_cnt": 8}, {"name": "md1", "group_thread_cnt": "auto"}]}"#,
                true,
            ),
        ] {
            assert_eq!(scope(&spec(input)).stripe_disks, wanted, "{input}");
        }
    }
}
