//! An entry's `sync_boost` in the plan (docs/reference.md §2): the plain value is the steady
//! state; while the array runs one of the boost's syncs, the boost's values are the wanted ones,
//! so compliance counts them and a run writes them (plain writes: the sync limits take no pause).
//! A boost value the array or the kernel lacks is refused or skipped exactly as the plain key of
//! the same name is. Pure: whether a boost is recorded, and its end, are `crate::boost`'s.

use super::model::{ArrayPlan, BoostPlan, Change, PlanError, Skip, Source};
use crate::host::Array;
use crate::spec::Boost;
use std::collections::BTreeMap;

/// Plans `boost` (from `arrays[index]`, naming its arrays exactly or not) on `array`, whose plain
/// settings `ap` already plans.
pub(super) fn plan_boost(
    array: &Array,
    ap: &mut ArrayPlan,
    boost: &Boost,
    index: usize,
    exact: bool,
) -> Result<(), PlanError> {
    if array.unreadable.is_some() {
        return Ok(());
    }
    let mut values = BTreeMap::new();
    for (&attr, &value) in &boost.values {
        if array.values.contains_key(&attr) {
            values.insert(attr, value);
            continue;
        }
        let mut reason = array.lacks(attr.family());
        if let (true, Some(v)) = (reason.ends_with("does not offer it"), attr.since()) {
            reason.push_str(&format!(" (md has {attr} from Linux {v})"));
        }
        if exact {
            let key = format!("arrays[{index}].sync_boost.{attr}");
            return Err(PlanError::NotAvailable { key, attr, reason });
        }
        ap.skipped.push(Skip {
            setting: attr,
            reason: format!("sync_boost: {reason}"),
            source: Source::Entry(index),
        });
    }
    if values.is_empty() {
        return Ok(());
    }
    let action = array.sync.as_ref().map_or("", |s| s.action.as_str());
    let active = boost.runs_during(action);
    let (mut steady, mut plains) = (BTreeMap::new(), BTreeMap::new());
    for (&attr, &value) in &values {
        let live = array.values[&attr];
        let plain = ap.changes.iter_mut().find(|c| c.attr == attr);
        if let Some(c) = &plain {
            plains.insert(attr, c.after);
        }
        steady.insert(attr, plain.as_ref().map_or(live, |c| c.after));
        match (active, plain) {
            (false, _) => {}
            (true, Some(c)) => c.after = value,
            (true, None) => {
                let c = Change::new(attr, live, value, Source::Entry(index));
                ap.changes.push(c);
            }
        }
    }
    ap.boost = Some(BoostPlan {
        source: Source::Entry(index),
        during: boost.during.clone(),
        values,
        active,
        steady,
        plain: plains,
        saved: None,
        since: None,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::host::fixtures::{host, raid};
    use crate::md::{Attr, Value};
    use crate::plan::{plan, Plan};
    use crate::spec::Spec;
    use serde_json::json;

    fn raid10(action: &str, min: Value) -> crate::host::Inventory {
        let mut a = raid("md0", "raid10", &[Some(4), Some(4)]);
        a.sync.as_mut().unwrap().action = action.into();
        a.values.insert(Attr::SyncSpeedMin, min);
        a.values.insert(Attr::SyncSpeedMax, Value::System);
        host(vec![a])
    }

    fn run(input: serde_json::Value, action: &str) -> Result<Plan, String> {
        let spec = Spec::from_json(&input.to_string()).unwrap();
        plan(&spec, &raid10(action, Value::Int(50_000))).map_err(|e| e.to_string())
    }

    fn wanted(p: &Plan, attr: Attr) -> Option<Value> {
        p.arrays[0]
            .changes
            .iter()
            .find(|c| c.attr == attr)
            .map(|c| c.after)
    }

    #[test]
    fn a_boost_is_wanted_only_while_its_sync_runs() {
        let input = json!({"arrays": [{"name": "md0", "sync_speed_min": 60000,
            "sync_boost": {"sync_speed_min": 500_000, "sync_speed_max": 900_000}}]});
        let idle = run(input.clone(), "idle").unwrap();
        assert_eq!(wanted(&idle, Attr::SyncSpeedMin), Some(Value::Int(60_000)));
        assert_eq!(wanted(&idle, Attr::SyncSpeedMax), None);
        let b = idle.arrays[0].boost.as_ref().unwrap();
        assert!(!b.active);
        assert_eq!(b.steady[&Attr::SyncSpeedMin], Value::Int(60_000));
        assert_eq!(b.steady[&Attr::SyncSpeedMax], Value::System);
        let busy = run(input.clone(), "resync").unwrap();
        assert_eq!(wanted(&busy, Attr::SyncSpeedMin), Some(Value::Int(500_000)));
        assert_eq!(wanted(&busy, Attr::SyncSpeedMax), Some(Value::Int(900_000)));
        assert!(busy.arrays[0].boost.as_ref().unwrap().active);
        assert!(!busy.is_compliant());
        // A check is not one of the default syncs.
        assert_eq!(
            wanted(&run(input, "check").unwrap(), Attr::SyncSpeedMax),
            None
        );
        let check = json!({"arrays": [{"name": "md*",
            "sync_boost": {"sync_speed_max": 900_000, "during": ["check"]}}]});
        let p = run(check, "check").unwrap();
        assert_eq!(wanted(&p, Attr::SyncSpeedMax), Some(Value::Int(900_000)));
    }

    #[test]
    fn a_boost_value_the_kernel_lacks_is_refused_by_name_and_skipped_by_glob() {
        let exact = json!({"arrays": [{"name": "md0", "sync_boost": {"sync_io_depth": 64}}]});
        let e = run(exact, "resync").unwrap_err();
        assert!(
            e.starts_with("arrays[0].sync_boost.sync_io_depth: sync_io_depth is not available"),
            "{e}"
        );
        assert!(e.contains("from Linux 6.16"), "{e}");
        let glob = json!({"arrays": [{"name": "md*",
            "sync_boost": {"sync_io_depth": 64, "sync_speed_min": 9}}]});
        let p = run(glob, "resync").unwrap();
        let skipped = &p.arrays[0].skipped;
        assert!(skipped
            .iter()
            .any(|s| s.setting == Attr::SyncIoDepth && s.reason.starts_with("sync_boost: ")));
        assert_eq!(wanted(&p, Attr::SyncSpeedMin), Some(Value::Int(9)));
    }
}
