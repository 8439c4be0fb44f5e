//! A run's report as text for a person (`mdtune --text`, docs/reference.md §1): the `msg`, what
//! changed (or would, or is due), what was held back and why, what was skipped, what failed and
//! what was rolled back, the persisted state the run diverges from, the warnings, then one row
//! per array whose `compliant` says, after a run that wrote, whether it is as wanted now. It is
//! rendered from the report's JSON, the very object the run prints without `--text`, so the two
//! cannot disagree.

use super::cells::{cell, level, shown, sync, Table};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// The text of a report (or of the failure object of a run that stopped before it had one).
pub fn report(r: &Json) -> String {
    let r = &super::escape::safe(r);
    let mut out = String::new();
    let failed = if r["failed"] == true { "FAILED: " } else { "" };
    let _ = writeln!(out, "{failed}{}", r["msg"].as_str().unwrap_or(""));
    let arrays = r["arrays"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let (mut due, mut held, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for a in arrays {
        let name = shown(&a["name"]);
        for (attr, s) in a["settings"].as_object().into_iter().flatten() {
            setting(&name, attr, s, &mut due, &mut held);
        }
        for s in a["skipped"].as_array().into_iter().flatten() {
            skipped.push(format!(
                "{name} {}: {}",
                shown(&s["setting"]),
                shown(&s["reason"])
            ));
        }
    }
    for (attr, s) in r["system"].as_object().into_iter().flatten() {
        setting("system", attr, s, &mut due, &mut held);
    }
    let title = if r["persist"]["compared_with"].is_object() {
        "drifted from the persisted state (live -> rolled out)"
    } else if r["state"] == "query" {
        "due (not compliant)"
    } else if r["check_mode"] == true {
        "would change"
    } else if r["failed"] == true {
        "still changed"
    } else {
        "changed"
    };
    section(&mut out, title, &due);
    section(&mut out, "held back", &held);
    section(&mut out, "skipped", &skipped);
    let files: Vec<String> = strings(&r["persist"]["files"]);
    let verb = match (r["state"].as_str(), r["check_mode"] == true) {
        (Some("reverted"), false) => "removed",
        (Some("reverted"), true) => "would remove",
        (Some("query"), _) => "persist due",
        (_, true) => "would persist",
        _ => "persisted",
    };
    section(&mut out, verb, &files);
    section(
        &mut out,
        "persist: not removed",
        &strings(&r["persist"]["left"]),
    );
    if let Some(d) = r["persist"]["diverged"].as_array() {
        let lines: Vec<String> = d.iter().map(diverged).collect();
        section(&mut out, "persist: the next boot would put back", &lines);
    }
    let not_in_force = strings(&r["persist"]["not_in_force"]);
    section(
        &mut out,
        "persist: not in force at the next boot",
        &not_in_force,
    );
    let restored: Vec<String> = r["rolled_back"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            format!(
                "{} {} = {}",
                shown(&w["target"]),
                shown(&w["setting"]),
                shown(&w["value"])
            )
        })
        .collect();
    section(&mut out, "rolled back", &restored);
    section(&mut out, "NOT RESTORED", &strings(&r["not_restored"]));
    section(&mut out, "warnings", &strings(&r["warnings"]));
    if !arrays.is_empty() {
        out.push('\n');
        out.push_str(&table(arrays, after_run(r)));
    }
    out
}

/// `md0 stripe_cache_size 4096 (this run: 1024)`: what the persisted state puts back at the
/// next boot where this run sets another value.
fn diverged(d: &Json) -> String {
    format!(
        "{} {} {} (this run: {})",
        shown(&d["target"]),
        shown(&d["setting"]),
        shown(&d["value"]),
        shown(&d["wanted"])
    )
}

/// True for a run that wrote and did not fail: its table says whether each array is as wanted
/// now, after the writes; the report's `compliant` says whether it was before them
/// (docs/reference.md §3).
fn after_run(r: &Json) -> bool {
    r["check_mode"] != true
        && r["failed"] != true
        && matches!(r["state"].as_str(), Some("present" | "reverted"))
}

/// Whether an array is as wanted after a run that wrote and did not fail: it was before, or
/// it has settings and none was held back (a frozen or unreadable array never is).
fn now_compliant(a: &Json) -> bool {
    if a["compliant"] == true {
        return true;
    }
    let settings = a["settings"].as_object().filter(|s| !s.is_empty());
    let frozen = a["sync"]["action"] == "frozen";
    settings.is_some_and(|s| s.values().all(|s| s["held_back"].is_null())) && !frozen
}

/// Adds a setting whose value differs (or is held back) to `due` or `held`.
fn setting(target: &str, attr: &str, s: &Json, due: &mut Vec<String>, held: &mut Vec<String>) {
    let (before, after) = (shown(&s["before"]), shown(&s["after"]));
    let why = s["why"]
        .as_str()
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    if let Some(h) = s.get("held_back").filter(|h| h.is_object()) {
        let wanted = shown(&h["wanted"]);
        held.push(format!(
            "{target} {attr} {before} -> {wanted} held back: {}",
            shown(&h["reason"])
        ));
    } else if before != after {
        due.push(format!("{target} {attr} {before} -> {after}{why}"));
    }
}

fn strings(v: &Json) -> Vec<String> {
    v.as_array().into_iter().flatten().map(shown).collect()
}

/// A titled list, indented two spaces; nothing when empty.
fn section(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}:");
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
}

/// One row per array: names, level, state, members counted, queues, sync, compliant (after the
/// run when `after`).
fn table(arrays: &[Json], after: bool) -> String {
    let mut t = Table::new(&[
        "array",
        "name",
        "level",
        "state",
        "members",
        "queues",
        "sync",
        "compliant",
    ]);
    for a in arrays {
        let members = a["members"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let counted = members.iter().filter(|m| m["counted"] == true).count();
        t.row(vec![
            shown(&a["name"]),
            cell(&a["devname"]),
            level(a),
            cell(&a["array_state"]),
            format!("{counted}/{}", members.len()),
            cell(&a["hw_queues"]),
            sync(&a["sync"]),
            match (after, a["compliant"] == true) {
                (true, _) if now_compliant(a) => "yes",
                (false, true) => "yes",
                _ => "no",
            }
            .into(),
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::report;
    use crate::testing::assert_has;
    use serde_json::json;

    #[test]
    fn a_check_mode_report_lists_what_would_change_and_what_is_held_back() {
        let r = json!({"changed": true, "failed": false, "state": "present", "check_mode": true,
            "msg": "check mode: md0: group_thread_cnt 0 -> 8", "compliant": false,
            "arrays": [{"name": "md0", "devname": "data", "level": "raid5", "array_state": "clean",
                "members": [{"name": "a", "counted": true}, {"name": "b", "counted": false}],
                "hw_queues": 8, "sync": {"action": "reshape", "completed": [1, 4]},
                "settings": {
                    "group_thread_cnt": {"before": 0, "after": 8, "why": "8 hardware queues"},
                    "skip_copy": {"before": false, "after": false,
                        "held_back": {"reason": "md0 is reshaping", "wanted": true}},
                    "stripe_cache_size": {"before": 256, "after": 256}},
                "skipped": [], "compliant": false}],
            "system": {"speed_limit_max": {"before": 200000, "after": "system"}},
            "persist": {"changed": false, "files": []}, "warnings": ["w1"]});
        let t = report(&r);
        assert!(
            t.starts_with("check mode: md0: group_thread_cnt 0 -> 8\n"),
            "{t}"
        );
        assert_has(
            &t,
            &[
                "would change:\n  md0 group_thread_cnt 0 -> 8 (8 hardware queues)\n",
                "  system speed_limit_max 200000 -> system\n",
                "held back:\n  md0 skip_copy false -> true held back: md0 is reshaping\n",
            ],
        );
        assert!(!t.contains("stripe_cache_size"), "{t}");
        assert!(t.contains("warnings:\n  w1\n"), "{t}");
        let row = t.lines().find(|l| l.starts_with("md0 ")).unwrap();
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            words,
            ["md0", "data", "raid5", "clean", "1/2", "8", "reshape", "25%", "no"]
        );
    }

    #[test]
    fn a_failure_object_is_its_message() {
        let t = report(
            &json!({"changed": false, "failed": true, "msg": "arrays[0]: bad", "warnings": []}),
        );
        assert_eq!(t, "FAILED: arrays[0]: bad\n");
    }

    #[test]
    fn after_a_run_that_wrote_the_table_says_what_is_true_now_and_persist_is_text() {
        let r = |state: &str, check_mode: bool, failed: bool| {
            json!({"changed": true, "failed": failed, "state": state, "check_mode": check_mode,
                "msg": "m", "compliant": false,
                "arrays": [{"name": "md0", "compliant": false, "members": [],
                    "settings": {"stripe_cache_size": {"before": 256, "after": 4096}}},
                    {"name": "md1", "compliant": false, "members": [], "settings": {
                        "skip_copy": {"before": false, "after": false,
                            "held_back": {"reason": "reshape", "wanted": true}}}}],
                "persist": {"changed": false, "files": [], "diverged": [{"target": "md0",
                    "setting": "stripe_cache_size", "value": 1024, "wanted": 4096}]}})
        };
        let last = |t: &str, name: &str| {
            let row = t.lines().find(|l| l.starts_with(name)).unwrap().to_string();
            row.split_whitespace().last().unwrap().to_string()
        };
        let t = report(&r("present", false, false));
        assert_eq!(
            (last(&t, "md0 "), last(&t, "md1 ")),
            ("yes".into(), "no".into()),
            "{t}"
        );
        assert!(
            t.contains("persist: the next boot would put back:\n  md0 stripe_cache_size 1024 (this run: 4096)\n"),
            "{t}"
        );
        // Before the writes, in check mode or a query, and after a failed run: as it was.
        for (state, check_mode, failed) in [
            ("present", true, false),
            ("query", false, false),
            ("present", false, true),
        ] {
            let t = report(&r(state, check_mode, failed));
            assert_eq!(last(&t, "md0 "), "no", "{state} {check_mode} {failed}: {t}");
        }
    }
}
