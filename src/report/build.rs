//! Building the report (docs/reference.md §3) from the inventory, the plan and what applying
//! did: each setting's `before`, `after`, `changed` and `compliant`, the diff, the `msg`, the
//! run's `compliant`, and what a failure rolled back or left. Its shape is `super::model`; its
//! `msg` lines come from `super::msg`. Pure: building a report touches nothing.
//!
//! Meaning of `after` per setting: in check mode and `query`, the value the desired state wants;
//! in a real run, the value in place when the run ended (the old one again after a rollback).

use super::model::{ArrayReport, HeldBack, Persist, Report, Restored, Setting};
use super::msg;
use crate::apply::{NotRestored, Outcome, Target, Write};
use crate::host::Inventory;
use crate::md::Value;
use crate::plan::{Diff, Plan, Source};
use crate::spec::{Spec, State};
use std::collections::BTreeMap;

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

/// A value a rollback could not put back, with the value the kernel holds now.
fn not_restored_text(n: &NotRestored) -> String {
    let (w, e) = (&n.write, &n.error);
    match n.now {
        Some(now) if now == w.after => {
            format!("{} is still {} (was {}): {e}", w.target, w.after, w.before)
        }
        Some(now) => format!(
            "{} is {now} (was {}, this run wrote {}): {e}",
            w.target, w.before, w.after
        ),
        None => format!(
            "{} holds a value that cannot be read back (was {}, this run wrote {}): {e}",
            w.target, w.before, w.after
        ),
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

    /// When something is due, adds a diff entry with every managed setting as context.
    fn finish(self, header: &str, diff: &mut Vec<Diff>) {
        if self.due.is_empty() {
            return;
        }
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
        if f.is_some_and(|f| f.not_restored.iter().any(|n| n.write.target == *t)) {
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
    // After a failed rollback, the value the kernel holds now (docs/reference.md §3).
    let now = |t: &Target| -> Option<Value> {
        let f = outcome.failure.as_ref()?;
        f.not_restored.iter().find(|n| n.write.target == *t)?.now
    };
    let setting = |t: Target, before: Value, after: Value, source: Option<Source>| -> Setting {
        let due = before != after;
        let (after, changed) = if !real_run {
            (after, due && spec.state != State::Query)
        } else {
            match in_place(&t) {
                Some(true) => (now(&t).unwrap_or(after), true),
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
            why: None,
            held_back: None,
        }
    };

    let mut arrays = Vec::new();
    let mut diff = Vec::new();
    let mut lines = Vec::new();
    for ap in &plan.arrays {
        let a = &inv.arrays[ap.array];
        let mut settings = BTreeMap::new();
        let mut summary = Summary::default();
        let compliant = ap.is_compliant() || spec.state == State::Reverted;
        let mut line = msg::Line::new(&a.name, compliant);
        for c in &ap.changes {
            let t = Target::Md {
                array: a.name.clone(),
                attr: c.attr,
            };
            let mut s = setting(t, c.before, c.after, Some(c.source));
            if c.source == Source::Auto {
                s.why.clone_from(&ap.why);
            }
            // Held back: not written, so `after` is the value that stays in place.
            if let Some(hold) = c.hold {
                (s.after, s.changed) = (c.before, false);
                s.held_back = Some(HeldBack {
                    reason: hold.reason(a),
                    wanted: c.after,
                });
            }
            // The diff shows what is (or would be) different: nothing after a full rollback.
            summary.add(c.attr.name(), c.before, s.after);
            settings.insert(c.attr.name(), s);
            line.add(c.attr.name(), c.before, c.after, c.hold);
        }
        // Skipped with a warning: an array that cannot be read, queues that cannot be found.
        if let Some(why) = &a.unreadable {
            line.skipped("", why);
        } else {
            for s in ap.skipped.iter().filter(|s| s.source == Source::Auto) {
                line.skipped(s.setting.name(), &s.reason);
            }
        }
        lines.push(line);
        summary.finish(&a.name, &mut diff);
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
            // Never vacuous: values that could not be read are not known to match.
            compliant: ap.is_compliant() && a.unreadable.is_none(),
        });
    }
    let mut system = BTreeMap::new();
    let mut summary = Summary::default();
    for l in &plan.limits {
        let s = setting(Target::Limit(l.limit), l.before, l.after, None);
        summary.add(l.limit.name(), l.before, s.after);
        system.insert(l.limit.name(), s);
    }
    let quiet = match spec.state {
        State::Reverted => "at their saved values",
        _ => "compliant",
    };
    let (mut msgs, rest) = msg::arrays(&lines, quiet);
    if !summary.due.is_empty() {
        msgs.push(format!("system: {}", summary.due.join(", ")));
    }
    msgs.extend(rest);
    summary.finish("system", &mut diff);
    let removing = spec.persist == Some(false);
    msgs.extend(msg::persisted(&persist, spec.state, real_run, removing));
    if msgs.is_empty() {
        msgs.push(if spec.state == State::Reverted {
            "no saved originals to restore, no persisted file to remove".into()
        } else {
            "no md arrays selected".into()
        });
    }

    // Compliant (docs/reference.md §3): something was checked, every array's values were read
    // and match, and the persisted files match what `persist` asks (or, unset, do not diverge).
    let mut warnings = plan.warnings.clone();
    let checked = !plan.arrays.is_empty() || !plan.limits.is_empty();
    if !checked && spec.state != State::Reverted {
        warnings.push(
            "nothing was checked: no md array is selected and no system setting is managed, \
             so this run is not compliant"
                .into(),
        );
    }
    let compliant = (checked || spec.state == State::Reverted)
        && plan.is_compliant()
        && arrays.iter().all(|a| a.compliant)
        && persist.files.is_empty()
        && persist.left.is_empty()
        && persist.diverged.is_empty()
        && !persist.unknown;
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
        let what = if spec.state == State::Reverted {
            "revert"
        } else {
            "persist: false"
        };
        msg = format!(
            "{what} stopped part-way: NOT REMOVED: {}; {msg}",
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
        let left: Vec<String> = f.not_restored.iter().map(not_restored_text).collect();
        if left.is_empty() {
            msg.push_str("; no value is left changed");
        } else {
            msg.push_str(&format!("; NOT RESTORED: {}", left.join("; ")));
            not_restored = Some(left);
        }
        // A failed persist whose undo failed: these files still hold the new state.
        if !persist.left.is_empty() {
            msg.push_str(&format!("; NOT UNDONE: {}", persist.left.join("; ")));
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
        warnings,
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
