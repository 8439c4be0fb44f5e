//! One managed setting's entry in the report (docs/reference.md §3: `before`, `after`,
//! `changed`, `compliant`), from the plan's values and where this run's write of it ended; and
//! the block that the managed settings of one array, or of the system, add to the diff and to
//! the `msg`. Pure. Which settings there are, and what is held back, is the plan's business.
//!
//! Meaning of `after`: in check mode and `query`, the value the desired state wants; in a real
//! run, the value in place when the run ended (the old one again after a rollback, the value the
//! kernel holds after a rollback that failed).

use super::model::Setting;
use crate::apply::{Outcome, Paused, Target};
use crate::md::Value;
use crate::plan::{Diff, Source};
use crate::spec::{Spec, State};
use std::fmt::Write as _;

/// What a run did to the targets it planned, as much as a setting's entry needs to know.
pub(super) struct Ends<'a> {
    outcome: &'a Outcome,
    /// Neither check mode nor `query`: the writes happened.
    real_run: bool,
    query: bool,
    /// A query of the persisted state (`Persist::compared_with`): its `msg` says the wanted
    /// values are the ones rolled out.
    pub(super) rolled_out: bool,
    /// The input's `reason`s: the top level's, and each entry's (docs/reference.md §2).
    reasons: (Option<&'a str>, Vec<Option<&'a str>>),
}

impl<'a> Ends<'a> {
    pub(super) fn new(spec: &'a Spec, outcome: &'a Outcome) -> Ends<'a> {
        let entries = spec.arrays.iter().map(|e| e.reason.as_deref()).collect();
        Ends {
            outcome,
            real_run: spec.writes(),
            query: spec.state == State::Query,
            rolled_out: false,
            reasons: (spec.reason.as_deref(), entries),
        }
    }

    /// The `reason` that covers a value from `source`: its entry's own, else the top level's;
    /// none for a value a revert puts back.
    fn reason(&self, source: Option<Source>) -> Option<String> {
        let (top, entries) = &self.reasons;
        let own = match source {
            Some(Source::Saved) => return None,
            Some(Source::Entry(i)) => entries.get(i).copied().flatten(),
            _ => None,
        };
        own.or(*top).map(String::from)
    }

    /// True if and only if the writes happened (neither check mode nor `query`).
    pub(super) fn real_run(&self) -> bool {
        self.real_run
    }

    /// The sync this run paused around `array`'s writes, if it paused one.
    pub(super) fn paused(&self, array: &str) -> Option<&'a Paused> {
        self.outcome.paused.iter().find(|p| p.array == array)
    }

    /// The entry of the setting `t`, planned from `before` to `after`. Nothing is held back
    /// here: the caller marks a held-back setting.
    pub(super) fn setting(
        &self,
        t: &Target,
        before: Value,
        after: Value,
        source: Option<Source>,
    ) -> Setting {
        let due = before != after;
        let (after, changed) = if self.real_run {
            self.ended(t, before, after)
        } else {
            (after, due && !self.query)
        };
        Setting {
            before,
            after,
            changed,
            compliant: !due,
            reason: self.reason(source),
            source,
            why: None,
            unit: None,
            per_member_kib_s: None,
            held_back: None,
        }
    }

    /// In a real run, the value in place at the end and whether it is this run's: after a
    /// failure every write was put back, except those the rollback could not (their value is
    /// the one the kernel holds now, docs/reference.md §3, or the one written when it cannot
    /// be read); without one, what was written stays.
    fn ended(&self, t: &Target, before: Value, after: Value) -> (Value, bool) {
        match &self.outcome.failure {
            Some(f) => match f.not_restored.iter().find(|n| n.write.target == *t) {
                Some(n) => (n.now.unwrap_or(after), true),
                None => (before, false),
            },
            None => (after, self.outcome.done.iter().any(|w| w.target == *t)),
        }
    }
}

/// One block of the message and the diff: the managed settings of an array, or of the system.
#[derive(Default)]
pub(super) struct Summary {
    before: String,
    after: String,
    /// `name before -> after` for each setting that is (or would be) different.
    pub(super) due: Vec<String>,
}

impl Summary {
    pub(super) fn add(&mut self, name: &str, before: Value, after: Value) {
        // Written into the texts in place, not formatted into a String each first.
        let _ = writeln!(self.before, "{name}: {before}");
        let _ = writeln!(self.after, "{name}: {after}");
        if before != after {
            self.due.push(format!("{name} {before} -> {after}"));
        }
    }

    /// The diff entry under `header`, with every managed setting as context, when something
    /// is due; else none.
    pub(super) fn finish(self, header: &str) -> Option<Diff> {
        if self.due.is_empty() {
            return None;
        }
        Some(Diff {
            before_header: header.to_string(),
            after_header: header.to_string(),
            before: self.before,
            after: self.after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{ApplyError, Failure, NotRestored, Write};
    use crate::md::SpeedLimit;
    use serde_json::json;
    use std::io;

    const MAX: Target = Target::Limit(SpeedLimit::Max);
    const MIN: Target = Target::Limit(SpeedLimit::Min);

    fn spec(input: serde_json::Value) -> Spec {
        Spec::from_json(&input.to_string()).unwrap()
    }

    fn write(target: Target) -> Write {
        Write {
            target,
            before: Value::Int(1),
            after: Value::Int(2),
        }
    }

    /// A run that wrote `done`, then failed and rolled back `rolled_back` but not `not_restored`
    /// (the kernel holds 7 now).
    fn failed(done: Vec<Write>, rolled_back: Vec<Write>, not_restored: Vec<Write>) -> Outcome {
        let error = || ApplyError::Write {
            target: MAX,
            value: Value::Int(2),
            source: io::Error::from_raw_os_error(22),
        };
        Outcome {
            done,
            failure: Some(Failure {
                error: error(),
                rolled_back,
                not_restored: not_restored
                    .into_iter()
                    .map(|write| NotRestored {
                        write,
                        error: error(),
                        now: Some(Value::Int(7)),
                    })
                    .collect(),
                not_resumed: Vec::new(),
            }),
            paused: Vec::new(),
        }
    }

    fn entry(spec: &Spec, outcome: &Outcome, t: &Target) -> (Value, Value, bool, bool) {
        let s = Ends::new(spec, outcome).setting(t, Value::Int(1), Value::Int(2), None);
        (s.before, s.after, s.changed, s.compliant)
    }

    #[test]
    fn check_mode_shows_the_wanted_value_as_changed_and_query_as_unchanged() {
        let none = Outcome::default();
        let (one, two) = (Value::Int(1), Value::Int(2));
        let check = entry(&spec(json!({"check_mode": true})), &none, &MAX);
        assert_eq!(check, (one, two, true, false));
        let query = entry(&spec(json!({"state": "query"})), &none, &MAX);
        assert_eq!(query, (one, two, false, false));
    }

    #[test]
    fn a_real_run_shows_what_was_written_as_changed() {
        let s = spec(json!({}));
        let outcome = Outcome {
            done: vec![write(MAX)],
            ..Outcome::default()
        };
        let (one, two) = (Value::Int(1), Value::Int(2));
        assert_eq!(entry(&s, &outcome, &MAX), (one, two, true, false));
        // Planned but not written (held back, say): the caller says what stays in place.
        assert_eq!(entry(&s, &outcome, &MIN), (one, two, false, false));
    }

    #[test]
    fn after_a_failure_a_setting_shows_the_value_in_place() {
        let s = spec(json!({}));
        let one = Value::Int(1);
        let back = failed(vec![write(MAX)], vec![write(MAX)], Vec::new());
        assert_eq!(entry(&s, &back, &MAX), (one, one, false, false));
        // Never written: the old value is in place.
        assert_eq!(entry(&s, &back, &MIN), (one, one, false, false));
        let left = failed(vec![write(MAX)], Vec::new(), vec![write(MAX)]);
        assert_eq!(entry(&s, &left, &MAX), (one, Value::Int(7), true, false));
    }

    #[test]
    fn a_block_makes_a_diff_entry_only_when_something_is_due() {
        let mut quiet = Summary::default();
        quiet.add("speed_limit_min", Value::Int(1000), Value::Int(1000));
        assert!(quiet.finish("system").is_none());
        let mut due = Summary::default();
        due.add("speed_limit_min", Value::Int(1000), Value::Int(1000));
        due.add("speed_limit_max", Value::Int(200000), Value::Int(5000));
        assert_eq!(due.due, ["speed_limit_max 200000 -> 5000"]);
        let d = due.finish("system").expect("a diff entry");
        assert_eq!(
            (d.before_header.as_str(), d.after_header.as_str()),
            ("system", "system")
        );
        assert_eq!(d.before, "speed_limit_min: 1000\nspeed_limit_max: 200000\n");
        assert_eq!(d.after, "speed_limit_min: 1000\nspeed_limit_max: 5000\n");
    }
}
