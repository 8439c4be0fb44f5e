//! What the persisted state would put back (docs/reference.md §6): a run that leaves `persist`
//! unset while a persisted state exists compares the two plans on the same host, and every
//! setting both manage with different values is reported as `persist.diverged`, so that the
//! live host and the next boot never disagree silently. Pure.

use crate::md::Value;
use crate::plan::Plan;
use serde::Serialize;
use std::collections::BTreeMap;

/// A setting the next boot or re-assembly would set otherwise than this run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diverged {
    /// The array's kernel name, or `system`.
    pub(crate) target: String,
    pub(crate) setting: &'static str,
    /// What the persisted state puts back.
    pub(crate) value: Value,
    /// What this run wants.
    pub(crate) wanted: Value,
}

/// Every `(target, setting)` a plan manages, with the value it wants (held back or not).
fn wants(plan: &Plan) -> BTreeMap<(String, &'static str), Value> {
    let md = plan.arrays.iter().flat_map(|a| {
        a.changes
            .iter()
            .map(|c| ((a.name.clone(), c.attr.name()), c.after))
    });
    let limits = plan
        .limits
        .iter()
        .map(|l| (("system".to_string(), l.limit.name()), l.after));
    md.chain(limits).collect()
}

/// The settings that `persisted` (the persisted state planned on this host) wants otherwise than
/// `run`, in the run's order.
pub(crate) fn diverged(run: &Plan, persisted: &Plan) -> Vec<Diverged> {
    let theirs = wants(persisted);
    wants(run)
        .into_iter()
        .filter_map(|((target, setting), wanted)| {
            let value = *theirs.get(&(target.clone(), setting))?;
            (value != wanted).then_some(Diverged {
                target,
                setting,
                value,
                wanted,
            })
        })
        .collect()
}

/// The warning a run with diverged settings gives: what the next boot puts back, and the two
/// ways to make them agree.
pub(crate) fn diverged_warning(diverged: &[Diverged]) -> Option<String> {
    if diverged.is_empty() {
        return None;
    }
    let what: Vec<String> = diverged
        .iter()
        .map(|d| {
            format!(
                "{} {} {} (this run: {})",
                d.target, d.setting, d.value, d.wanted
            )
        })
        .collect();
    Some(format!(
        "persist.diverged: the persisted state (/etc/mdtune/mdtune.json) puts back {} at the next \
         boot or re-assembly; give persist: true to persist this run's values, or persist: false \
         to stop persisting",
        what.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::Attr;
    use crate::plan::{ArrayPlan, Change, Source};

    fn plan(cache: u64) -> Plan {
        Plan {
            arrays: vec![ArrayPlan {
                array: 0,
                name: "md0".into(),
                hw_queues: None,
                why: None,
                pause: None,
                boost: None,
                changes: vec![
                    Change::new(
                        Attr::StripeCacheSize,
                        Value::Int(256),
                        Value::Int(cache),
                        Source::Entry(0),
                    ),
                    Change::new(
                        Attr::GroupThreadCnt,
                        Value::Int(0),
                        Value::Int(8),
                        Source::Auto,
                    ),
                ],
                skipped: Vec::new(),
            }],
            ..Plan::default()
        }
    }

    #[test]
    fn only_settings_both_manage_with_different_values_diverge() {
        let d = diverged(&plan(8192), &plan(4096));
        assert_eq!(
            d,
            [Diverged {
                target: "md0".into(),
                setting: "stripe_cache_size",
                value: Value::Int(4096),
                wanted: Value::Int(8192),
            }]
        );
        assert!(diverged_warning(&d)
            .unwrap()
            .contains("md0 stripe_cache_size 4096 (this run: 8192)"));
        assert!(diverged(&plan(4096), &plan(4096)).is_empty());
        assert!(diverged(&plan(4096), &Plan::default()).is_empty());
        assert_eq!(diverged_warning(&[]), None);
    }
}
