//! `mdtune --verify` (docs/reference.md §1): the host against what was rolled out, one row per
//! setting, as saptune's `note verify` prints its table: array, setting, expected, actual,
//! source, compliant. Rendered from the report of the `query` that `--verify` runs (the same as
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
    let mut t = Table::new(&[
        "array",
        "setting",
        "expected",
        "actual",
        "source",
        "compliant",
    ]);
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
    out.push_str(&t.render());
    out.push_str(&notes);
    for w in r["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "warning: {}", shown(w));
    }
    let _ = writeln!(out, "{}", shown(&r["msg"]));
    out
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
}
