//! The trail's line for one run (docs/reference.md §6): who ran it, then what it changed, each
//! setting with its old and new value, and the persisted files it wrote or removed; or that it
//! failed, and why. Pure: the report in, a line out. A run that changed nothing and did not fail
//! has no line.
//!
//! Everything after the caller comes from the host or the run (array names, values the kernel
//! printed, paths, failure messages that quote them) and is escaped as the caller is
//! (`crate::view::escaped`), once, as a whole: its fixed words hold neither a control character
//! nor a backslash, so that is the same as escaping each field, and a field added later cannot be
//! forgotten. A raw control character would reach the journal, which then shows the whole line
//! as `[blob data]`, or fake a second line.

use super::caller::Caller;
use crate::apply::Resumed;
use crate::report::{pause_note, Report, SyncPause};
use crate::spec::State;

/// Facility daemon (3), severity error (3).
pub const ERR: u8 = 3 * 8 + 3;
/// Facility daemon (3), severity info (6).
pub const INFO: u8 = 3 * 8 + 6;

/// The line for a run that ended as `report`, and its syslog priority; `None` when it changed
/// nothing and did not fail. `removing` says that the run's persisted files were removed
/// (`state: reverted`, `persist: false`), not written.
pub(crate) fn of_report(caller: &Caller, report: &Report, removing: bool) -> Option<(u8, String)> {
    if report.failed {
        let why = super::reason::of_report(report, |s| !s.compliant);
        return Some((ERR, said(caller, &format!("FAILED: {}{why}", report.msg))));
    }
    if !report.changed {
        // A measured run whose writes revert_if_slower put back wrote twice: its msg says so.
        let reverted = report
            .arrays
            .iter()
            .any(|a| a.effect.as_ref().is_some_and(|e| e.reverted));
        return reverted.then(|| (INFO, said(caller, &report.msg)));
    }
    let mut parts: Vec<String> = report.resumed.iter().filter_map(of_resumed).collect();
    for a in &report.arrays {
        // A sync paused around the writes is told with them, as the report's msg tells it.
        let paused = match &a.sync_pause {
            Some(p @ SyncPause::Done(_)) => format!(" ({})", pause_note(p, State::Present)),
            _ => String::new(),
        };
        parts.extend(changed(&a.name, &a.settings).map(|c| c + &paused));
    }
    parts.extend(changed("system", &report.system));
    if report.persist.changed && !report.persist.files.is_empty() {
        let verb = if removing { "removed" } else { "persisted" };
        parts.push(format!("{verb} {}", report.persist.files.join(", ")));
    }
    let head = if report.state == "reverted" {
        "reverted"
    } else {
        "changed"
    };
    let why = super::reason::of_report(report, |s| s.changed);
    Some((
        INFO,
        said(caller, &format!("{head} {}{why}", parts.join("; "))),
    ))
}

/// The line of the syncs `--tick` resumed, if it resumed any.
pub(crate) fn of_tick(caller: &Caller, resumed: &[Resumed]) -> Option<(u8, String)> {
    let parts: Vec<String> = resumed.iter().filter_map(of_resumed).collect();
    (!parts.is_empty()).then(|| (INFO, said(caller, &parts.join("; "))))
}

/// `resumed md0's check that a killed mdtune run (pid 4242) had left frozen, from 4096`, for a
/// stale pause that was resumed.
fn of_resumed(r: &Resumed) -> Option<String> {
    (r.outcome == "resumed").then(|| {
        let from = r.from.map_or(String::new(), |f| format!(", from {f}"));
        format!(
            "resumed {}'s {} that a killed mdtune run (pid {}) had left frozen{from}",
            r.array, r.action, r.pid
        )
    })
}

/// The line for a run that stopped before it had a report.
pub(crate) fn of_failure(caller: &Caller, error: &str) -> (u8, String) {
    (ERR, said(caller, &format!("FAILED: {error}")))
}

/// `caller: what`, `what` escaped (the caller is already, `super::caller`).
fn said(caller: &Caller, what: &str) -> String {
    format!("{}: {}", caller.describe(), crate::view::escaped(what))
}

/// `target: setting old -> new, ...` for the settings of `target` that changed; `None` when none
/// did.
fn changed<'a, K: std::fmt::Display + 'a>(
    target: &str,
    settings: impl IntoIterator<Item = (&'a K, &'a crate::report::Setting)>,
) -> Option<String> {
    let done: Vec<String> = settings
        .into_iter()
        .filter(|(_, s)| s.changed)
        .map(|(name, s)| format!("{name} {} -> {}", s.before, s.after))
        .collect();
    (!done.is_empty()).then(|| format!("{target}: {}", done.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::Outcome;
    use crate::host::fixtures::{host, raid};
    use crate::persist::Persist;
    use crate::report::build;
    use crate::spec::Spec;

    fn caller() -> Caller {
        Caller {
            tool: "ansible mdtune".into(),
            person: "user alice via sudo".into(),
        }
    }

    fn report(input: &str, files: &[&str]) -> Report {
        let inv = host(vec![raid("md0", "raid5", &[Some(8), Some(8)])]);
        let spec = Spec::from_json(input).unwrap();
        let plan = crate::plan::plan(&spec, &inv).unwrap();
        let persist = Persist {
            changed: !files.is_empty(),
            files: files.iter().map(|f| f.to_string()).collect(),
            ..Persist::default()
        };
        build(&spec, &inv, &plan, &Outcome::default(), persist)
    }

    #[test]
    fn a_change_names_the_caller_each_setting_old_and_new_and_the_files() {
        let r = report(r#"{"check_mode": true}"#, &["/etc/mdtune/mdtune.json"]);
        let (priority, line) = of_report(&caller(), &r, false).unwrap();
        assert_eq!(priority, INFO);
        assert_eq!(
            line,
            "ansible mdtune, user alice via sudo: changed md0: group_thread_cnt 0 -> 8; \
             persisted /etc/mdtune/mdtune.json"
        );
        let (_, line) = of_report(&caller(), &r, true).unwrap();
        assert!(
            line.ends_with("; removed /etc/mdtune/mdtune.json"),
            "{line}"
        );
    }

    #[test]
    fn a_sync_paused_around_the_writes_is_told_with_them() {
        use crate::apply::{Outcome, Paused, Target, Write};
        use crate::md::{Attr, SyncRun, Value};
        let inv = host(vec![raid("md0", "raid5", &[Some(8), Some(8)])]);
        let spec = Spec::from_json("{}").unwrap();
        let plan = crate::plan::plan(&spec, &inv).unwrap();
        let target = Target::Md {
            array: "md0".into(),
            attr: Attr::GroupThreadCnt,
        };
        let outcome = Outcome {
            done: vec![Write {
                target,
                before: Value::Int(0),
                after: Value::Int(8),
            }],
            failure: None,
            paused: vec![Paused {
                array: "md0".into(),
                action: SyncRun::Resync,
                settings: vec![Attr::GroupThreadCnt],
                paused_at: Some([1024, 65408]),
                resumed_from: None,
                resumed: true,
                record: Default::default(),
            }],
        };
        let r = build(&spec, &inv, &plan, &outcome, Persist::default());
        let (_, line) = of_report(&caller(), &r, false).unwrap();
        assert_eq!(
            line,
            "ansible mdtune, user alice via sudo: changed md0: group_thread_cnt 0 -> 8 \
             (resync paused at 1024 / 65408, resumed from the kernel's checkpoint)"
        );
    }

    #[test]
    fn every_field_from_the_host_is_escaped_as_the_caller_is() {
        let name = "md_a\u{1b}[2J\n\u{202e}b\\";
        let inv = host(vec![raid(name, "raid5", &[Some(8), Some(8)])]);
        let spec = Spec::from_json(r#"{"check_mode": true}"#).unwrap();
        let plan = crate::plan::plan(&spec, &inv).unwrap();
        let persist = Persist {
            changed: true,
            files: vec!["/etc/md\r\t".into()],
            ..Persist::default()
        };
        let r = build(&spec, &inv, &plan, &Outcome::default(), persist);
        let hostile = Caller {
            tool: crate::view::escaped("x\ny").into_owned(),
            person: "user root".into(),
        };
        let (_, line) = of_report(&hostile, &r, false).unwrap();
        assert_eq!(
            line,
            "x\\x0ay, user root: changed md_a\\x1b[2J\\x0a\\u{202e}b\\\\: group_thread_cnt 0 \
             -> 8; persisted /etc/md\\x0d\\x09"
        );
        let (_, line) = of_failure(&caller(), "cannot read /sys/block/md\u{7}0: it is gone");
        assert_eq!(
            line,
            "ansible mdtune, user alice via sudo: FAILED: cannot read /sys/block/md\\x070: it is gone"
        );
    }

    #[test]
    fn the_line_carries_the_reason_of_what_changed_escaped() {
        let r = report(
            r#"{"check_mode": true, "reason": "CHG0042 \\ vendor"}"#,
            &[],
        );
        let (_, line) = of_report(&caller(), &r, false).unwrap();
        assert!(
            line.ends_with("group_thread_cnt 0 -> 8; reason: CHG0042 \\\\ vendor"),
            "{line}"
        );
        let r = report(
            r#"{"check_mode": true, "reason": "CHG7", "arrays": [{"name": "md0",
                "stripe_cache_size": 4096, "reason": "SAP note 1"}]}"#,
            &[],
        );
        let (_, line) = of_report(&caller(), &r, false).unwrap();
        assert!(
            line.ends_with(
                "; reason for md0 group_thread_cnt: CHG7; \
                 reason for md0 stripe_cache_size: SAP note 1"
            ),
            "{line}"
        );
        let r = report(r#"{"check_mode": true}"#, &[]);
        let (_, line) = of_report(&caller(), &r, false).unwrap();
        assert!(!line.contains("reason"), "{line}");
    }

    #[test]
    fn a_run_that_changed_nothing_has_no_line_and_a_failure_says_so() {
        let r = report(r#"{"state": "query"}"#, &[]);
        assert_eq!(of_report(&caller(), &r, false), None);
        let (priority, line) = of_failure(&caller(), "cannot take the lock");
        assert_eq!(priority, ERR);
        assert_eq!(
            line,
            "ansible mdtune, user alice via sudo: FAILED: cannot take the lock"
        );
    }
}
