//! The report: the one JSON object a run prints (docs/reference.md §3), built from the inventory,
//! the plan and what applying did. Ansible reads it as a module result; the Salt wrappers
//! translate it into state changes. Pure: building a report touches nothing.
//!
//! Meaning of `after` per setting: in check mode and `query`, the value the desired state wants;
//! in a real run, the value in place when the run ended (the old one again after a rollback).

use crate::apply::{Outcome, Target, Write};
use crate::host::{Inventory, Member, Sync};
use crate::md::Value;
use crate::persist::Reload;
use crate::plan::{Diff, Plan, Skip, Source};
use crate::spec::{Spec, State};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Setting {
    pub(crate) before: Value,
    pub(crate) after: Value,
    pub(crate) changed: bool,
    /// Whether the live value already matched the desired one when the run started.
    pub(crate) compliant: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) source: Option<Source>,
    /// A due setting this run did not write, why, and the value a later run will write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) held_back: Option<HeldBack>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct HeldBack {
    pub(crate) reason: String,
    pub(crate) wanted: Value,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ArrayReport {
    pub(crate) name: String,
    pub(crate) devname: Option<String>,
    pub(crate) uuid: Option<String>,
    pub(crate) level: String,
    pub(crate) array_state: String,
    pub(crate) members: Vec<Member>,
    pub(crate) hw_queues: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sync: Option<Sync>,
    pub(crate) settings: BTreeMap<&'static str, Setting>,
    pub(crate) skipped: Vec<Skip>,
    pub(crate) compliant: bool,
}

/// The persisted files a run wrote or removed, or would have (check mode, `query`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Persist {
    /// True if and only if a file was (or, in check mode, would be) written or removed.
    pub(crate) changed: bool,
    /// `present` and `query`: the files due (written, or due to be); `reverted`: the files
    /// removed (or due to be).
    pub(crate) files: Vec<String>,
    /// A revert that stopped part-way: the files still there, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) left: Vec<String>,
    /// Present when the udev rule was (or would be) installed or removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) udev_reload: Option<Reload>,
}

/// A value put back by a rollback or a revert.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Restored {
    pub(crate) target: String,
    pub(crate) setting: String,
    pub(crate) value: Value,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub changed: bool,
    pub failed: bool,
    pub(crate) msg: String,
    pub(crate) state: &'static str,
    pub(crate) check_mode: bool,
    pub compliant: bool,
    pub(crate) arrays: Vec<ArrayReport>,
    pub(crate) system: BTreeMap<&'static str, Setting>,
    pub(crate) persist: Persist,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) diff: Option<Vec<Diff>>,
    pub(crate) warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rolled_back: Option<Vec<Restored>>,
    /// After a failed rollback: what is still changed, with the error that kept it so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) not_restored: Option<Vec<String>>,
}

impl Report {
    /// The report as one line of JSON, keys in the order of docs/reference.md §3.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            serde_json::json!({"changed": false, "failed": true, "warnings": [],
                    "msg": format!("cannot encode the report: {e}")})
            .to_string()
        })
    }
}

fn restored(w: &Write) -> Restored {
    let (target, setting) = match &w.target {
        Target::Md { array, attr } => (array.clone(), attr.name().to_string()),
        Target::Limit(l) => ("system".to_string(), l.name().to_string()),
    };
    Restored {
        target,
        setting,
        value: w.before,
    }
}

/// One block of the message and the diff: the managed settings of an array, or of the system.
#[derive(Default)]
struct Summary {
    before: String,
    after: String,
    due: Vec<String>,
}

impl Summary {
    fn add(&mut self, name: &str, before: Value, after: Value) {
        self.before.push_str(&format!("{name}: {before}\n"));
        self.after.push_str(&format!("{name}: {after}\n"));
        if before != after {
            self.due.push(format!("{name} {before} -> {after}"));
        }
    }

    /// Adds `header: <changes>` (or `header: unchanged`) to the message and, when something
    /// is due, a diff entry with every managed setting as context.
    fn finish(self, header: &str, msgs: &mut Vec<String>, diff: &mut Vec<Diff>) {
        if self.due.is_empty() {
            msgs.push(format!("{header}: unchanged"));
            return;
        }
        msgs.push(format!("{header}: {}", self.due.join(", ")));
        diff.push(Diff {
            before_header: header.to_string(),
            after_header: header.to_string(),
            before: self.before,
            after: self.after,
        });
    }
}

/// Builds the report of a `present` or `query` run.
pub fn build(
    spec: &Spec,
    inv: &Inventory,
    plan: &Plan,
    outcome: &Outcome,
    persist: Persist,
) -> Report {
    let real_run = spec.state != State::Query && !spec.check_mode;
    // Where each write ended: in place (changed) or put back.
    let in_place = |t: &Target| -> Option<bool> {
        let f = outcome.failure.as_ref();
        if f.is_some_and(|f| f.not_restored.iter().any(|(w, _)| w.target == *t)) {
            return Some(true);
        }
        if f.is_some_and(|f| f.rolled_back.iter().any(|w| w.target == *t)) {
            return Some(false);
        }
        outcome
            .done
            .iter()
            .any(|w| w.target == *t)
            .then_some(f.is_none())
    };
    let setting = |t: Target, before: Value, after: Value, source: Option<Source>| -> Setting {
        let due = before != after;
        let (after, changed) = if !real_run {
            (after, due && spec.state != State::Query)
        } else {
            match in_place(&t) {
                Some(true) => (after, true),
                _ if outcome.failure.is_some() => (before, false),
                _ => (after, false),
            }
        };
        Setting {
            before,
            after,
            changed,
            compliant: !due,
            source,
            held_back: None,
        }
    };

    let mut arrays = Vec::new();
    let mut diff = Vec::new();
    let mut msgs = Vec::new();
    for ap in &plan.arrays {
        let a = &inv.arrays[ap.array];
        let mut settings = BTreeMap::new();
        let mut summary = Summary::default();
        for c in &ap.changes {
            let t = Target::Md {
                array: a.name.clone(),
                attr: c.attr,
            };
            let mut s = setting(t, c.before, c.after, Some(c.source));
            // Held back: not written, so `after` is the value that stays in place.
            let after = match c.hold {
                Some(hold) => {
                    (s.after, s.changed) = (c.before, false);
                    s.held_back = Some(HeldBack {
                        reason: hold.reason(a),
                        wanted: c.after,
                    });
                    c.before
                }
                None => c.after,
            };
            settings.insert(c.attr.name(), s);
            summary.add(c.attr.name(), c.before, after);
        }
        summary.finish(&a.name, &mut msgs, &mut diff);
        arrays.push(ArrayReport {
            name: a.name.clone(),
            devname: a.devnames.first().cloned(),
            uuid: a.mdadm_uuid(),
            level: a.level.clone(),
            array_state: a.array_state.clone(),
            members: a.members.clone(),
            hw_queues: ap.hw_queues,
            sync: a.sync.clone(),
            settings,
            skipped: ap.skipped.clone(),
            compliant: ap.is_compliant(),
        });
    }
    let mut system = BTreeMap::new();
    let mut summary = Summary::default();
    for l in &plan.limits {
        let (b, a) = (l.before, l.after);
        system.insert(l.limit.name(), setting(Target::Limit(l.limit), b, a, None));
        summary.add(l.limit.name(), b, a);
    }
    if !plan.limits.is_empty() {
        summary.finish("system", &mut msgs, &mut diff);
    }
    let files = persist.files.join(", ");
    if !files.is_empty() {
        msgs.push(match (spec.state, real_run) {
            (State::Reverted, true) => format!("removed {files}"),
            (State::Reverted, false) => format!("would remove {files}"),
            (State::Query, _) => format!("persist due: {files}"),
            (State::Present, true) => format!("persisted {files}"),
            (State::Present, false) => format!("would persist {files}"),
        });
    }
    if let Some(r) = persist.udev_reload.as_ref().filter(|r| r.ran) {
        msgs.push(format!("{}: {}", r.command, r.result));
    }
    if msgs.is_empty() {
        msgs.push(if spec.state == State::Reverted {
            "no saved originals to restore, no persisted file to remove".into()
        } else {
            "no md arrays selected".into()
        });
    }

    // Compliant: the live values and, with `persist`, the persisted files already match.
    let compliant = plan.is_compliant() && persist.files.is_empty() && persist.left.is_empty();
    let failed = outcome.failure.is_some() || !persist.left.is_empty();
    let settings_changed = arrays
        .iter()
        .flat_map(|a| a.settings.values())
        .chain(system.values())
        .any(|s| s.changed);
    let body = msgs.join("; ");
    let mut msg = match (spec.state, real_run) {
        (State::Query, _) if compliant => format!("compliant: {body}"),
        (State::Query, _) => format!("not compliant: {body}"),
        (State::Reverted, true) if !persist.left.is_empty() => format!("restored: {body}"),
        (State::Reverted, true) => format!("reverted: {body}"),
        (State::Reverted, false) => format!("check mode: would revert: {body}"),
        (State::Present, true) => body,
        (State::Present, false) => format!("check mode: {body}"),
    };
    if !persist.left.is_empty() {
        msg = format!(
            "revert stopped part-way: NOT REMOVED: {}; {msg}",
            persist.left.join("; ")
        );
    }
    let (mut rolled_back, mut not_restored) = (None, None);
    if let Some(f) = &outcome.failure {
        msg = f.error.to_string();
        if !f.rolled_back.is_empty() {
            let what: Vec<String> = f.rolled_back.iter().map(|w| w.target.to_string()).collect();
            msg.push_str(&format!("; rolled back: {}", what.join(", ")));
        }
        let left: Vec<String> = f
            .not_restored
            .iter()
            .map(|(w, e)| format!("{} is still {} (was {}): {e}", w.target, w.after, w.before))
            .collect();
        if left.is_empty() {
            msg.push_str("; no value is left changed");
        } else {
            msg.push_str(&format!("; NOT RESTORED: {}", left.join("; ")));
            not_restored = Some(left);
        }
        rolled_back = Some(f.rolled_back.iter().map(restored).collect());
    }
    Report {
        changed: settings_changed || persist.changed,
        failed,
        msg,
        state: spec.state.name(),
        check_mode: spec.check_mode,
        compliant,
        arrays,
        system,
        persist,
        diff: spec.diff.then_some(diff),
        warnings: plan.warnings.clone(),
        rolled_back,
        not_restored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{ApplyError, Failure};
    use crate::host::fixtures::{host, raid};
    use crate::md::Attr;
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
                    target: Target::Limit(crate::md::SpeedLimit::Max),
                    value: Value::Int(1),
                    source: io::Error::from_raw_os_error(22),
                },
                rolled_back: vec![done],
                not_restored: Vec::new(),
            }),
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
