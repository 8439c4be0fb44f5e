//! Whether a run is compliant (docs/reference.md §3): something was checked, every array's values
//! were read and match, and the persisted files match what `persist` asks (or, unset, do not
//! diverge); and the warning when nothing was checked. Pure. What one array's `compliant` says
//! is `super::array`.

use super::model::ArrayReport;
use crate::persist::Persist;
use crate::plan::Plan;
use crate::spec::State;

/// True if and only if the run of `state` is compliant, with the arrays' entries and the
/// persisted files reported for it. A revert that had nothing to restore is compliant.
pub(super) fn compliant(
    state: State,
    plan: &Plan,
    arrays: &[ArrayReport],
    persist: &Persist,
) -> bool {
    (checked(plan) || state == State::Reverted)
        && plan.is_compliant()
        && arrays.iter().all(|a| a.compliant)
        && persist.files.is_empty()
        && persist.left.is_empty()
        && persist.diverged.is_empty()
        && !persist.unknown
        && persist.not_in_force.is_empty()
}

/// The warning of a run that checked nothing (and so is not compliant), if it did.
pub(super) fn nothing_checked(state: State, plan: &Plan) -> Option<String> {
    (!checked(plan) && state != State::Reverted).then(|| {
        "nothing was checked: no md array is selected and no system setting is managed, \
         so this run is not compliant"
            .into()
    })
}

/// True if and only if the plan holds an array or a system setting.
fn checked(plan: &Plan) -> bool {
    !plan.arrays.is_empty() || !plan.limits.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::{SpeedLimit, Value};
    use crate::persist::Diverged;
    use crate::plan::LimitChange;

    fn limit(before: u64, after: u64) -> Plan {
        Plan {
            limits: vec![LimitChange {
                limit: SpeedLimit::Max,
                before: Value::Int(before),
                after: Value::Int(after),
            }],
            ..Plan::default()
        }
    }

    #[test]
    fn a_run_that_checked_nothing_is_not_compliant_and_says_so() {
        let (empty, none) = (Plan::default(), Persist::default());
        assert!(!compliant(State::Present, &empty, &[], &none));
        assert!(!compliant(State::Query, &empty, &[], &none));
        assert!(nothing_checked(State::Query, &empty).is_some());
        // A revert with nothing saved has nothing to restore.
        assert!(compliant(State::Reverted, &empty, &[], &none));
        assert!(nothing_checked(State::Reverted, &empty).is_none());
    }

    #[test]
    fn a_checked_setting_that_matches_is_compliant_and_one_due_is_not() {
        let none = Persist::default();
        assert!(compliant(State::Query, &limit(5, 5), &[], &none));
        assert!(nothing_checked(State::Query, &limit(5, 5)).is_none());
        assert!(!compliant(State::Query, &limit(5, 6), &[], &none));
    }

    #[test]
    fn an_array_that_is_not_compliant_makes_the_run_not_compliant() {
        let a = ArrayReport {
            name: "md0".into(),
            devname: None,
            uuid: None,
            level: "raid5".into(),
            array_state: "clean".into(),
            members: Vec::new(),
            hw_queues: None,
            sync: None,
            sync_pause: None,
            sync_boost: None,
            settings: Default::default(),
            skipped: Vec::new(),
            compliant: false,
            effect: None,
        };
        let none = Persist::default();
        assert!(!compliant(
            State::Query,
            &limit(5, 5),
            std::slice::from_ref(&a),
            &none
        ));
        let a = ArrayReport {
            compliant: true,
            ..a
        };
        assert!(compliant(State::Query, &limit(5, 5), &[a], &none));
    }

    #[test]
    fn persisted_files_due_left_diverging_or_unknown_are_not_compliant() {
        let plan = limit(5, 5);
        let cases: [fn(&mut Persist); 4] = [
            |p| p.files.push("/etc/mdtune/mdtune.json".into()),
            |p| p.left.push("/etc/mdtune/mdtune.json: busy".into()),
            |p| {
                p.diverged.push(Diverged {
                    target: "system".into(),
                    setting: "speed_limit_max",
                    value: Value::Int(6),
                    wanted: Value::Int(5),
                })
            },
            |p| p.unknown = true,
        ];
        for make in cases {
            let mut p = Persist::default();
            make(&mut p);
            assert!(!compliant(State::Query, &plan, &[], &p), "{p:?}");
        }
    }
}
