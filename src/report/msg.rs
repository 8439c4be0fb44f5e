//! The `msg` of a report (docs/reference.md §3): one line a person reads first. A head says what
//! kind of run it was (`check mode: `, `compliant: `, `reverted: `; none for a run that wrote),
//! then come the arrays that need a look: those that changed (or would, or are due), whose
//! settings are held back (each with a short why), that were skipped with a warning, or that are
//! not compliant for another reason; then what is due on the system, the rest of the arrays
//! counted (`12 arrays compliant`), and the persisted files. Revert names the arrays and settings
//! it restores and says what it removed by what it is, not by path; a removal that stopped
//! part-way is said first. Pure. The `msg` of a run whose writes failed is `super::failure`'s.

use super::model::SyncPause;
use crate::md::{SyncRun, Value};
use crate::persist::Persist;
use crate::plan::Hold;
use crate::spec::{Spec, State};

/// The `msg` of a run that did not fail: `lines` are the arrays', in plan order; `system_due`
/// the system settings that are (or would be) different; `compliant` the run's.
pub(super) fn message(
    spec: &Spec,
    lines: &[Line],
    system_due: &[String],
    persist: &Persist,
    compliant: bool,
) -> String {
    let body = body(spec, lines, system_due, persist);
    // A query with no desired state of its own compared with the persisted state: say so.
    let against = persist
        .compared_with
        .as_ref()
        .map(|c| format!(" with the persisted state ({})", c.file))
        .unwrap_or_default();
    let msg = match (spec.state, spec.writes()) {
        (State::Query, _) if compliant => format!("compliant{against}: {body}"),
        (State::Query, _) => format!("not compliant{against}: {body}"),
        (State::Reverted, true) if !persist.left.is_empty() => format!("restored: {body}"),
        (State::Reverted, true) => format!("reverted: {body}"),
        (State::Reverted, false) => format!("check mode: would revert: {body}"),
        (State::Present, true) => body,
        (State::Present, false) => format!("check mode: {body}"),
    };
    if persist.left.is_empty() {
        return msg;
    }
    let what = match spec.state {
        State::Reverted => "revert",
        _ => "persist: false",
    };
    format!(
        "{what} stopped part-way: NOT REMOVED: {}; {msg}",
        persist.left.join("; ")
    )
}

/// The message after its head: every part, or, when there is none, that there was nothing to do.
/// A query names every reason it is not compliant before it counts the arrays that are, so that
/// no message contradicts itself (`not compliant: persist due: ...; 5 arrays compliant`).
fn body(spec: &Spec, lines: &[Line], system_due: &[String], persist: &Persist) -> String {
    let quiet = match spec.state {
        State::Reverted => "at their saved values",
        _ => "compliant",
    };
    let (mut parts, rest) = arrays(lines, quiet);
    if !system_due.is_empty() {
        parts.push(format!("system: {}", system_due.join(", ")));
    }
    if spec.state == State::Query {
        parts.extend(persisted(persist, spec));
        if persist.unknown {
            parts.push("the persisted state cannot be compared (see warnings)".into());
        }
        parts.extend(rest);
    } else {
        parts.extend(rest);
        parts.extend(persisted(persist, spec));
    }
    if parts.is_empty() {
        parts.push(match spec.state {
            State::Reverted => "no saved originals to restore, no persisted file to remove".into(),
            _ => "no md arrays selected".into(),
        });
    }
    parts.join("; ")
}

/// What the message says about one array.
#[derive(Debug, Default)]
pub(super) struct Line {
    name: String,
    /// `attr before -> after`, `attr before -> wanted held back (why)`, `skipped: why`; or,
    /// compared with the persisted state, `attr live (rolled out wanted)`.
    what: Vec<String>,
    /// After the settings, in parentheses: the sync paused around them.
    note: Option<String>,
    compliant: bool,
    rolled_out: bool,
}

impl Line {
    /// The line of array `name`; `rolled_out`: the wanted values are the persisted state's.
    pub(super) fn new(name: &str, compliant: bool, rolled_out: bool) -> Line {
        Line {
            name: name.to_string(),
            compliant,
            rolled_out,
            what: Vec::new(),
            note: None,
        }
    }

    /// A managed setting: named when it is due, with why when it is held back.
    pub(super) fn add(&mut self, attr: &str, before: Value, after: Value, held: Option<Hold>) {
        if held.is_none() && before == after {
            return;
        }
        let mut s = if self.rolled_out {
            format!("{attr} {before} (rolled out {after})")
        } else {
            format!("{attr} {before} -> {after}")
        };
        if let Some(h) = held {
            s.push_str(" held back (");
            s.push_str(short(h));
            s.push(')');
        }
        self.what.push(s);
    }

    /// Something skipped with a warning: the array (`what` empty) or one setting.
    pub(super) fn skipped(&mut self, what: &str, why: &str) {
        let why = why.strip_prefix(&format!("{}: ", self.name)).unwrap_or(why);
        self.what.push(match what {
            "" => format!("skipped: {why}"),
            w => format!("{w} skipped: {why}"),
        });
    }

    /// Something the array's state says besides its settings (a frozen sync), in its words.
    pub(super) fn state(&mut self, text: &str) {
        let text = text
            .strip_prefix(&format!("{}: ", self.name))
            .unwrap_or(text);
        self.compliant = false;
        self.what.push(text.to_string());
    }

    /// Said after the settings, in parentheses.
    pub(super) fn note(&mut self, note: String) {
        self.note = Some(note);
    }

    /// The part of the message for this array, or `None` when it only counts.
    fn part(&self) -> Option<String> {
        let note = self
            .note
            .as_ref()
            .map_or(String::new(), |n| format!(" ({n})"));
        match (self.what.is_empty(), self.compliant) {
            (true, true) => None,
            (true, false) => Some(format!("{}: not compliant{note}", self.name)),
            (false, _) => Some(format!("{}: {}{note}", self.name, self.what.join(", "))),
        }
    }
}

/// What the line says of a sync paused around the array's writes: where it was paused and
/// where it resumes (`check paused at 1024 / 65408, resumed from 1024`), or that a run pauses it.
pub(crate) fn pause_note(p: &SyncPause, state: State) -> String {
    match p {
        SyncPause::Done(p) => {
            let at = p
                .paused_at
                .map_or("while delayed".into(), |[d, t]| format!("at {d} / {t}"));
            let resumed = match (p.resumed, p.resumed_from) {
                (false, _) => "NOT RESUMED".to_string(),
                (true, Some(from)) => format!("resumed from {from}"),
                (true, None) => "resumed from the kernel's checkpoint".to_string(),
            };
            format!("{} paused {at}, {resumed}", p.action)
        }
        SyncPause::Planned { action, .. } if state == State::Query => {
            format!("a run pauses the {action} around the writes")
        }
        SyncPause::Planned { action, .. } => format!("would pause the {action} around the writes"),
    }
}

/// Why a setting waits, in a word or two (the report's `held_back.reason` has the whole story).
fn short(h: Hold) -> &'static str {
    match h {
        Hold::Reshape => "reshape",
        Hold::NoMdmon => "no mdmon",
        Hold::AfterStripeCache => "waits for stripe_cache_size",
        Hold::Repair => "repair running",
        Hold::Sync(run) => match run {
            SyncRun::Resync => "resync running",
            SyncRun::Recover => "recover running",
            SyncRun::Check => "check running",
            SyncRun::Repair => "repair running",
        },
    }
}

/// The parts for the arrays that are named, and `N arrays <quiet>` for the rest (`compliant`,
/// or for a revert `at their saved values`), if any.
pub(super) fn arrays(lines: &[Line], quiet: &str) -> (Vec<String>, Option<String>) {
    let parts: Vec<String> = lines.iter().filter_map(Line::part).collect();
    let rest = lines.len() - parts.len();
    let s = if rest == 1 { "" } else { "s" };
    (
        parts,
        (rest > 0).then(|| format!("{rest} array{s} {quiet}")),
    )
}

/// The parts for the persisted files: what was (or would be) written or removed, what the next
/// boot would put back otherwise than this run, and the udev reload that ran. A removal (a
/// revert, `persist: false`) names the files by what they are; a write names their paths.
fn persisted(p: &Persist, spec: &Spec) -> Vec<String> {
    let removing = spec.persist == Some(false);
    let mut parts = Vec::new();
    if !p.files.is_empty() {
        let files = p.files.join(", ");
        parts.push(match (spec.state, spec.writes()) {
            (State::Query, _) => format!("persist due: {files}"),
            (State::Reverted, true) => format!("removed {}", removed(&p.files)),
            (State::Reverted, false) => format!("would remove {}", removed(&p.files)),
            (State::Present, true) if removing => format!("removed {}", removed(&p.files)),
            (State::Present, false) if removing => format!("would remove {}", removed(&p.files)),
            (State::Present, true) => format!("persisted {files}"),
            (State::Present, false) => format!("would persist {files}"),
        });
    }
    if !p.diverged.is_empty() {
        let what: Vec<String> = p
            .diverged
            .iter()
            .map(|d| format!("{} {} {}", d.target, d.setting, d.value))
            .collect();
        parts.push(format!("the next boot puts back {}", what.join(", ")));
    }
    if !p.not_in_force.is_empty() {
        parts.push(format!(
            "the next boot does not replay the persisted state: {}; {}",
            p.not_in_force.join("; "),
            crate::persist::FIX
        ));
    }
    if let Some(r) = p.udev_reload.as_ref().filter(|r| r.ran) {
        parts.push(format!("{}: {}", r.command, r.result));
    }
    parts
}

/// What a revert removed (or would), by what each file is: `the udev rule, the persisted input,
/// the installed binary, the manifest and the saved originals of 3 arrays`.
fn removed(files: &[String]) -> String {
    let mut kinds: Vec<String> = Vec::new();
    let mut originals = 0;
    for f in files {
        let kind = if f.ends_with(".rules") {
            "the udev rule"
        } else if f.ends_with("/etc/mdtune/installed.json") {
            "the manifest"
        } else if f.contains("/etc/mdtune/") {
            "the persisted input"
        } else if f.contains("/sbin/") {
            "the installed binary"
        } else {
            originals += 1;
            continue;
        };
        if !kinds.iter().any(|k| k == kind) {
            kinds.push(kind.to_string());
        }
    }
    if originals > 0 {
        let s = if originals == 1 { "" } else { "s" };
        kinds.push(format!("the saved originals of {originals} array{s}"));
    }
    match kinds.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(input: serde_json::Value) -> Spec {
        Spec::from_json(&input.to_string()).unwrap()
    }

    /// md0 due (0 -> 8), md1 compliant.
    fn two_lines() -> Vec<Line> {
        let mut due = Line::new("md0", false, false);
        due.add("group_thread_cnt", Value::Int(0), Value::Int(8), None);
        vec![due, Line::new("md1", true, false)]
    }

    #[test]
    fn the_head_says_what_kind_of_run_it_was() {
        let (lines, none) = (two_lines(), Persist::default());
        let msg = |input, compliant| message(&spec(input), &lines, &[], &none, compliant);
        let body = "md0: group_thread_cnt 0 -> 8; 1 array compliant";
        assert_eq!(msg(json!({}), false), body);
        assert_eq!(
            msg(json!({"check_mode": true}), false),
            format!("check mode: {body}")
        );
        assert_eq!(
            msg(json!({"state": "query"}), false),
            format!("not compliant: {body}")
        );
        assert_eq!(
            msg(json!({"state": "query"}), true),
            format!("compliant: {body}")
        );
        let revert = "md0: group_thread_cnt 0 -> 8; 1 array at their saved values";
        assert_eq!(
            msg(json!({"state": "reverted"}), false),
            format!("reverted: {revert}")
        );
        assert_eq!(
            msg(json!({"state": "reverted", "check_mode": true}), false),
            format!("check mode: would revert: {revert}")
        );
    }

    #[test]
    fn the_system_comes_after_the_named_arrays_and_the_files_last() {
        let persist = Persist {
            files: vec!["/etc/mdtune/mdtune.json".into()],
            ..Persist::default()
        };
        let due = ["speed_limit_max 200000 -> 5000".to_string()];
        assert_eq!(
            message(&spec(json!({})), &two_lines(), &due, &persist, false),
            "md0: group_thread_cnt 0 -> 8; system: speed_limit_max 200000 -> 5000; \
             1 array compliant; persisted /etc/mdtune/mdtune.json"
        );
    }

    #[test]
    fn a_run_with_nothing_to_say_says_there_was_nothing_to_do() {
        let none = Persist::default();
        let msg = |input| message(&spec(input), &[], &[], &none, false);
        assert_eq!(msg(json!({})), "no md arrays selected");
        assert_eq!(
            msg(json!({"state": "reverted"})),
            "reverted: no saved originals to restore, no persisted file to remove"
        );
    }

    #[test]
    fn a_removal_that_stopped_part_way_is_said_first() {
        let persist = Persist {
            files: vec!["/etc/udev/rules.d/90-mdtune.rules".into()],
            left: vec!["/etc/mdtune/mdtune.json: busy".into()],
            ..Persist::default()
        };
        let msg = |input| message(&spec(input), &[], &[], &persist, false);
        assert_eq!(
            msg(json!({"persist": false})),
            "persist: false stopped part-way: NOT REMOVED: /etc/mdtune/mdtune.json: busy; \
             removed the udev rule"
        );
        assert_eq!(
            msg(json!({"state": "reverted"})),
            "revert stopped part-way: NOT REMOVED: /etc/mdtune/mdtune.json: busy; \
             restored: removed the udev rule"
        );
    }

    #[test]
    fn only_arrays_that_need_a_look_are_named_and_the_rest_counted() {
        let mut lines: Vec<Line> = (0..16)
            .map(|i| Line::new(&format!("md{i}"), true, false))
            .collect();
        lines[3].add("group_thread_cnt", Value::Int(0), Value::Int(8), None);
        lines[5].add(
            "group_thread_cnt",
            Value::Int(0),
            Value::Int(8),
            Some(Hold::Reshape),
        );
        lines[7].skipped("", "md7: md/stripe_cache_size read empty");
        lines[9].add("stripe_cache_size", Value::Int(256), Value::Int(256), None);
        lines[11] = Line::new("md11", false, false);
        let (mut parts, rest) = arrays(&lines, "compliant");
        parts.extend(rest);
        assert_eq!(
            parts.join("; "),
            "md3: group_thread_cnt 0 -> 8; md5: group_thread_cnt 0 -> 8 held back (reshape); \
             md7: skipped: md/stripe_cache_size read empty; md11: not compliant; \
             12 arrays compliant"
        );
        assert_eq!(
            arrays(&lines[..1], "compliant").1.unwrap(),
            "1 array compliant"
        );
    }

    #[test]
    fn removed_files_are_named_by_what_they_are() {
        let files: Vec<String> = [
            "/etc/udev/rules.d/90-mdtune.rules",
            "/etc/mdtune/mdtune.json",
            "/usr/local/sbin/mdtune",
            "/run/mdtune/1.json",
            "/run/mdtune/2.json",
            "/etc/mdtune/installed.json",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            removed(&files),
            "the udev rule, the persisted input, the installed binary, the manifest and the \
             saved originals of 2 arrays"
        );
        assert_eq!(removed(&files[3..4]), "the saved originals of 1 array");
    }
}
