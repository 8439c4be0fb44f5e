//! Building the report (docs/reference.md §3) from the inventory, the plan and what applying
//! did: each array's part (`super::array`), the system block, the run's `compliant`
//! (`super::compliance`), and the `msg` (`super::msg`), which a failure replaces with what it
//! rolled back or left (`super::failure`). Its shape is `super::model`; what a setting's `after`
//! and `changed` say is `super::setting`. Pure: building a report touches nothing.

use super::array::array;
use super::compliance::{compliant, nothing_checked};
use super::failure::failure;
use super::model::{Report, Setting};
use super::msg;
use super::setting::{Ends, Summary};
use crate::apply::{Outcome, Target};
use crate::host::Inventory;
use crate::md::kernel;
use crate::persist::Persist;
use crate::plan::{LimitChange, Plan};
use crate::spec::Spec;
use std::collections::BTreeMap;

/// Builds the report of a `present`, `query` or `reverted` run.
pub fn build(
    spec: &Spec,
    inv: &Inventory,
    plan: &Plan,
    outcome: &Outcome,
    persist: Persist,
) -> Report {
    let mut ends = Ends::new(spec, outcome);
    ends.rolled_out = persist.compared_with.is_some();
    let (mut arrays, mut lines, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for ap in &plan.arrays {
        let part = array(
            &inv.arrays[ap.array],
            ap,
            spec.state,
            &ends,
            &inv.speed_limits,
        );
        arrays.push(part.report);
        lines.push(part.line);
        diff.extend(part.diff);
    }
    let (system, summary) = system(&plan.limits, &ends);
    let compliant = compliant(spec.state, plan, &arrays, &persist);
    let mut msg = msg::message(spec, &lines, &summary.due, &persist, compliant);
    diff.extend(summary.finish("system"));
    let mut warnings = plan.warnings.clone();
    warnings.extend(nothing_checked(spec.state, plan));
    let (mut rolled_back, mut not_restored) = (None, None);
    if let Some(f) = &outcome.failure {
        let said = failure(f, &persist.left);
        (msg, rolled_back, not_restored) = (said.msg, Some(said.rolled_back), said.not_restored);
    }
    let settings_changed = arrays
        .iter()
        .flat_map(|a| a.settings.values())
        .chain(system.values())
        .any(|s| s.changed);
    // A sync left frozen is something still different from before the run.
    let left_frozen = outcome
        .failure
        .as_ref()
        .is_some_and(|f| !f.not_resumed.is_empty());
    Report {
        changed: settings_changed || persist.changed || left_frozen,
        failed: outcome.failure.is_some() || !persist.left.is_empty(),
        msg,
        state: spec.state.name(),
        check_mode: spec.check_mode,
        compliant,
        arrays,
        system,
        persist,
        diff: spec.diff.then_some(diff),
        warnings,
        rolled_back,
        not_restored,
        resumed: Vec::new(),
        boosts_ended: Vec::new(),
    }
}

/// The system block: each managed speed limit's entry, and its block of the diff and the `msg`.
fn system(limits: &[LimitChange], ends: &Ends) -> (BTreeMap<&'static str, Setting>, Summary) {
    let mut system = BTreeMap::new();
    let mut summary = Summary::default();
    for l in limits {
        let mut s = ends.setting(&Target::Limit(l.limit), l.before, l.after, None);
        s.unit = kernel::sync_unit("", l.limit.name());
        summary.add(l.limit.name(), l.before, s.after);
        system.insert(l.limit.name(), s);
    }
    (system, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{ApplyError, Failure, Write};
    use crate::host::fixtures::{host, raid};
    use crate::md::{Attr, SpeedLimit, Value};
    use serde_json::json;
    use std::io;

    fn spec(input: serde_json::Value) -> Spec {
        Spec::from_json(&input.to_string()).unwrap()
    }

    fn report(input: serde_json::Value, inv: &Inventory, outcome: &Outcome) -> Report {
        let spec = spec(input);
        let plan = crate::plan::plan(&spec, inv).unwrap();
        build(&spec, inv, &plan, outcome, Persist::default())
    }

    fn write(array: &str, attr: Attr, before: u64, after: u64) -> Write {
        Write {
            target: Target::Md {
                array: array.into(),
                attr,
            },
            before: Value::Int(before),
            after: Value::Int(after),
        }
    }

    #[test]
    fn a_converged_host_is_unchanged_and_compliant() {
        let inv = host(vec![raid("md0", "raid5", &[Some(1), Some(1)])]);
        let r = report(json!({"state": "query"}), &inv, &Outcome::default());
        assert!(!r.changed && !r.failed && r.compliant, "{}", r.to_text());
        assert!(r.arrays.iter().all(|a| a.compliant));
    }

    #[test]
    fn check_mode_reports_what_would_change_as_changed_and_not_compliant() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8), Some(8)])]);
        let r = report(json!({"check_mode": true}), &inv, &Outcome::default());
        assert!(r.changed && !r.failed && !r.compliant, "{}", r.to_text());
        let s = &r.arrays[0].settings["group_thread_cnt"];
        assert_eq!(
            (s.before, s.after, s.changed),
            (Value::Int(0), Value::Int(8), true)
        );
        assert!(r.msg.contains("group_thread_cnt 0 -> 8"), "{}", r.msg);
    }

    #[test]
    fn a_rolled_back_failure_is_failed_unchanged_and_lists_what_was_restored() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8), Some(8)])]);
        let done = write("md0", Attr::GroupThreadCnt, 0, 8);
        let outcome = Outcome {
            done: vec![done.clone()],
            failure: Some(Failure {
                error: ApplyError::Write {
                    target: Target::Limit(SpeedLimit::Max),
                    value: Value::Int(1),
                    source: io::Error::from_raw_os_error(22),
                },
                rolled_back: vec![done],
                not_restored: Vec::new(),
                not_resumed: Vec::new(),
            }),
            paused: Vec::new(),
        };
        let r = report(json!({"speed_limit_max": 1}), &inv, &outcome);
        assert!(r.failed && !r.changed, "{}", r.to_text());
        let back = r.rolled_back.as_ref().expect("rolled_back");
        assert_eq!(back.len(), 1);
        assert_eq!(
            (back[0].target.as_str(), back[0].setting.as_str()),
            ("md0", "group_thread_cnt")
        );
        assert!(r.msg.contains("speed_limit_max"), "{}", r.msg);
    }

    #[test]
    fn the_system_block_holds_each_managed_limit_and_names_those_due() {
        let limits = [SpeedLimit::Min, SpeedLimit::Max].map(|limit| LimitChange {
            limit,
            before: Value::Int(1000),
            after: Value::Int(if limit == SpeedLimit::Max { 5000 } else { 1000 }),
        });
        let spec = spec(json!({"check_mode": true}));
        let outcome = Outcome::default();
        let (system, summary) = system(&limits, &Ends::new(&spec, &outcome));
        assert_eq!(
            system.keys().copied().collect::<Vec<_>>(),
            ["speed_limit_max", "speed_limit_min"]
        );
        let max = &system["speed_limit_max"];
        assert_eq!(
            (max.after, max.changed, max.source),
            (Value::Int(5000), true, None)
        );
        assert!(!system["speed_limit_min"].changed);
        assert_eq!(summary.due, ["speed_limit_max 1000 -> 5000"]);
    }

    #[test]
    fn the_report_is_one_line_of_json_in_the_documented_key_order() {
        let inv = host(vec![raid("md0", "raid1", &[Some(1), Some(1)])]);
        let text = report(json!({}), &inv, &Outcome::default()).to_text();
        assert!(!text.contains('\n'));
        let at = |k: &str| text.find(&format!("\"{k}\":")).expect(k);
        let order = [
            "changed",
            "failed",
            "msg",
            "check_mode",
            "compliant",
            "arrays",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
    }
}
