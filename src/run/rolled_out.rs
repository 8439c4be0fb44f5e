//! What a `query` compares with when its input carries no desired state of its own (no
//! `arrays`, no `thread_policy`, no system key; docs/reference.md §2): the persisted state, the
//! one that was rolled out and that the next boot puts back, when there is one; otherwise
//! mdtune's defaults, as any input without those keys means. `{"state": "query"}`, Ansible's
//! `mdtune_info` without options, Salt's `mdtune.query` without pillar, and `mdtune --verify`,
//! `--show` and `--metrics` all see drift from what was rolled out this way (`super::module`'s
//! `query` and `super::look` run it).

use crate::persist;
use crate::persist::ComparedWith;
use crate::spec::{Spec, State};
use crate::sys::Root;

/// The keys of the input that are not desired state: how to run, not what to want.
const NOT_DESIRED: [&str; 2] = ["state", "persist"];

/// True if and only if the input names desired state of its own: any key other than `state`,
/// `persist`, `root`, `check_mode`, `diff` and `_ansible_*`, not null. A key added to the input
/// later counts by itself.
pub(crate) fn has_desired_state(spec: &Spec) -> bool {
    spec.persisted
        .iter()
        .any(|(k, v)| !v.is_null() && !NOT_DESIRED.contains(&k.as_str()))
}

/// The persisted state as a query of it, run like `spec` (its root, `persist`, `diff`), and what
/// the report says it compared with. `None` when nothing usable is persisted: nothing, a state
/// that is not `present`, or one that cannot be read (a run without desired state then compares
/// with the defaults, and warns that the persisted state cannot be compared).
pub(crate) fn persisted_query(spec: &Spec, root: &Root) -> Option<(Spec, ComparedWith)> {
    let text = persist::load_state(root).ok()??;
    let mut ps = Spec::from_json(&text).ok()?;
    if ps.state != State::Present {
        return None;
    }
    ps.state = State::Query;
    ps.root = spec.root.clone();
    ps.persist = spec.persist;
    ps.check_mode = spec.check_mode;
    ps.diff = spec.diff;
    let written = persist::written(root).ok().flatten();
    let with = ComparedWith {
        file: format!("/etc/mdtune/{}", persist::STATE_FILE),
        written: written.as_ref().map(|w| w.time.clone()),
        version: written.map(|w| w.version),
    };
    Some((ps, with))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn desired(input: serde_json::Value) -> bool {
        has_desired_state(&Spec::from_json(&input.to_string()).unwrap())
    }

    #[test]
    fn only_keys_that_want_something_are_desired_state() {
        for none in [
            json!({"state": "query"}),
            json!({"state": "query", "persist": true, "diff": true, "root": "/x"}),
            json!({"_ansible_module_name": "mdtune_info", "_ansible_check_mode": false}),
            json!({"state": "query", "arrays": null, "speed_limit_max": null}),
        ] {
            assert!(!desired(none.clone()), "{none}");
        }
        for some in [
            json!({"state": "query", "arrays": [{"name": "md0"}]}),
            json!({"state": "query", "thread_policy": "auto"}),
            json!({"state": "query", "speed_limit_max": 5000}),
        ] {
            assert!(desired(some.clone()), "{some}");
        }
    }
}
