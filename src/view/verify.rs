//! `mdtune --verify` (docs/reference.md §1): the host against what was rolled out, one row per
//! setting, as saptune's `note verify` prints its table: array, setting, expected, actual,
//! source, compliant (and `why`, the input's `reason`, when one is given); below them, rows for
//! what is not healthy (`super::oncall`), which do not decide the exit status. Rendered from the report of the `query` that `--verify` runs (the same as
//! `{"state": "query"}`: against the persisted state, or the defaults when nothing is
//! persisted), so the table and `--verify --json` cannot disagree. Pure; every string is escaped
//! before it is rendered.

use super::cells::{shown, Table};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// The table for a person: what it compared with, one row per managed setting of every array,
/// then per system setting (an array that could not be read is one row of dashes: the warnings
/// say why), the notes of held-back settings, the warnings, and the report's `msg` as the
/// verdict. `expected` is what the desired state wants (a held-back setting's wanted value),
/// `actual` the live value, `source` the entry of the input that wants it.
pub fn verify(report: &Json) -> String {
    let r = &super::escape::safe(report);
    let mut out = String::from("mdtune --verify: ");
    let c = &r["persist"]["compared_with"];
    match (c["file"].as_str(), c["written"].as_str()) {
        (Some(file), Some(t)) => {
            let v = shown(&c["version"]);
            let _ = writeln!(
                out,
                "compared with the persisted state {file}, written {t} by mdtune {v}"
            );
        }
        (Some(file), None) => {
            let _ = writeln!(out, "compared with the persisted state {file}");
        }
        (None, _) => out.push_str("nothing persisted: compared with the defaults\n"),
    }
    let reasons = has_reason(r);
    let mut header = vec![
        "array",
        "setting",
        "expected",
        "actual",
        "source",
        "compliant",
    ];
    if reasons {
        header.push("why");
    }
    let mut t = Table::new(&header);
    let mut notes = String::new();
    let system = [(Json::from("system"), &r["system"], true)];
    let arrays = r["arrays"].as_array().into_iter().flatten();
    let arrays = arrays.map(|a| (a["name"].clone(), &a["settings"], a["compliant"] == true));
    for (array, settings, compliant) in arrays.chain(system) {
        let name = shown(&array);
        let list = settings.as_object().filter(|s| !s.is_empty());
        // An array with nothing managed is a row only when it is not compliant: unreadable.
        if list.is_none() && !compliant {
            let cells = [name.as_str(), "-", "-", "-", "-", "no"];
            t.row(cells.map(String::from).to_vec());
        }
        for (setting, s) in list.into_iter().flatten() {
            let expected = s["held_back"].get("wanted").unwrap_or(&s["after"]);
            let source = match s["source"].as_str() {
                Some(src) => src.to_string(),
                None => setting.clone(),
            };
            let compliant = if s["compliant"] == true { "yes" } else { "no" };
            let cells = [
                name.clone(),
                setting.clone(),
                shown(expected),
                shown(&s["before"]),
            ];
            let mut cells = cells.to_vec();
            cells.extend([source, compliant.to_string()]);
            if reasons {
                cells.push(s["reason"].as_str().unwrap_or("").to_string());
            }
            t.row(cells);
            if let Some(why) = s["held_back"]["reason"].as_str() {
                let _ = writeln!(notes, "  {name} {setting}: held back: {why}");
            }
        }
    }
    // A frozen sync starts no rebuild onto a spare: a row of its own, never compliant.
    for a in r["arrays"].as_array().into_iter().flatten() {
        if let Some(line) = super::host::frozen(&a["sync"]["frozen_by"]) {
            let name = shown(&a["name"]);
            let cells = [&name, "sync", "running", "frozen", "-", "no"];
            t.row(cells.map(|c| c.to_string()).to_vec());
            let _ = writeln!(notes, "  {name} sync: frozen {line}");
        }
        if a["sync_boost"]["active"] == true {
            if let Some(line) = super::host::boost(a) {
                let _ = writeln!(notes, "  {} boost: {line}", shown(&a["name"]));
            }
        }
    }
    // What is not healthy: rows of their own, shown and not counted (docs/reference.md §1).
    let now = r["now_unix"].as_u64();
    let arrays = r["arrays"].as_array().into_iter().flatten();
    let health = arrays.fold(false, |any, a| {
        super::oncall::verify_rows(&mut t, a, now) | any
    });
    out.push_str(&t.render());
    out.push_str(&notes);
    for w in r["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "warning: {}", shown(w));
    }
    let _ = writeln!(out, "{}", shown(&r["msg"]));
    if health {
        let _ = writeln!(out, "{}", super::oncall::NOT_COUNTED);
    }
    out
}

/// True when a setting's value has a `reason` (the table then has a `why` column).
fn has_reason(r: &Json) -> bool {
    let arrays = r["arrays"].as_array().into_iter().flatten();
    let mut settings = arrays
        .map(|a| &a["settings"])
        .chain([&r["system"]])
        .filter_map(Json::as_object)
        .flat_map(|m| m.values());
    settings.any(|s| s["reason"].is_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_setting_is_a_row_with_expected_actual_source_and_compliant() {
        let report = json!({"msg": "not compliant with the persisted state (/etc/mdtune/mdtune.json): md0: \
            stripe_cache_size 1024 (rolled out 4096); 1 array compliant",
            "persist": {"compared_with": {"file": "/etc/mdtune/mdtune.json",
                "written": "2025-06-01T10:00:00Z", "version": "0.1.0"}},
            "arrays": [{"name": "md0", "compliant": false, "settings": {
                "stripe_cache_size": {"before": 1024, "after": 4096, "compliant": false,
                    "source": "arrays[1]"},
                "group_thread_cnt": {"before": 8, "after": 8, "compliant": true,
                    "source": "auto"}}},
                {"name": "md7\u{1b}[2J", "compliant": false, "settings": {}}],
            "system": {"speed_limit_max": {"before": 200000, "after": 200000, "compliant": true}},
            "warnings": []});
        let t = verify(&report);
        // What it compared with, the columns, four rows (two settings, the unreadable array, the
        // system limit), the verdict.
        assert_eq!(t.lines().count(), 7, "{t}");
        assert!(
            t.starts_with(
                "mdtune --verify: compared with the persisted state \
            /etc/mdtune/mdtune.json, written 2025-06-01T10:00:00Z by mdtune 0.1.0\n"
            ),
            "{t}"
        );
        // The rows, by their words: md0's drifted cache, the system limit in place.
        for row in [
            "md0 stripe_cache_size 4096 1024 arrays[1] no",
            "system speed_limit_max 200000 200000 speed_limit_max yes",
        ] {
            let words: Vec<&str> = row.split(' ').collect();
            let found = t
                .lines()
                .find(|l| l.starts_with(words[0]) && l.contains(words[1]));
            let got = found.map(|l| l.split_whitespace().collect::<Vec<_>>());
            assert_eq!(got, Some(words), "{t}");
        }
        assert!(t.contains("md7\\x1b[2J") && !t.contains('\u{1b}'), "{t}");
        assert!(t.contains("md7\\x1b[2J  -"), "{t}");
    }

    #[test]
    fn a_reason_is_the_why_of_its_row_and_health_rows_say_they_are_not_counted() {
        let report = json!({"msg": "compliant with the persisted state (/etc/mdtune/mdtune.json): 1 array compliant",
            "persist": {"compared_with": {"file": "/etc/mdtune/mdtune.json"}},
            "arrays": [{"name": "md0", "level": "raid5", "compliant": true,
                "members": [{"name": "sdb1", "role": "faulty"}],
                "health": {"degraded": 1},
                "settings": {"stripe_cache_size": {"before": 4096, "after": 4096,
                    "compliant": true, "source": "arrays[1]", "reason": "SAP note 1 \u{1b}"}}}],
            "system": {}, "warnings": [], "now_unix": 100});
        let t = verify(&report);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].ends_with("compliant  why"), "{t}");
        assert!(lines[2].ends_with("yes        SAP note 1 \\x1b"), "{t}");
        assert!(lines[3].starts_with("md0    degraded"), "{t}");
        assert_eq!(
            lines.last(),
            Some(&super::super::oncall::NOT_COUNTED),
            "{t}"
        );
        // Without a reason there is no why column; without a health row, no footer.
        let mut plain = report.clone();
        plain["arrays"][0]["settings"]["stripe_cache_size"]["reason"] = Json::Null;
        plain["arrays"][0]["health"]["degraded"] = json!(0);
        let t = verify(&plain);
        assert!(!t.contains("why") && !t.contains("not counted"), "{t}");
    }
}
