//! `mdtune --verify` (docs/reference.md §1): the host against what was rolled out, one row per
//! setting, as saptune's `note verify` prints its table: array, setting, expected, actual,
//! source, compliant. Rendered from the report of the `query` that `--verify` runs (the same as
//! `{"state": "query"}`: against the persisted state, or the defaults when nothing is
//! persisted), so the table and `--verify --json` cannot disagree. Pure; every string is escaped
//! before it is rendered.

use super::cells::{shown, Table};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;

/// One row per managed setting of every array, then per system setting; an array that could not
/// be read is one row saying so. `expected` is what the desired state wants (a held-back
/// setting's wanted value), `actual` the live value, `source` the entry of the input that wants
/// it.
pub fn verify_rows(report: &Json) -> Vec<Json> {
    let mut rows = Vec::new();
    for a in report["arrays"].as_array().into_iter().flatten() {
        let settings = a["settings"].as_object();
        if settings.is_none_or(|s| s.is_empty()) && a["compliant"] == false {
            rows.push(
                json!({"array": a["name"], "setting": null, "expected": null,
                "actual": null, "source": null, "compliant": false,
                "note": "not compliant: its values could not be read (see warnings)"}),
            );
        }
        for (setting, s) in settings.into_iter().flatten() {
            rows.push(row(&a["name"], setting, s, s["source"].clone()));
        }
    }
    for (setting, s) in report["system"].as_object().into_iter().flatten() {
        rows.push(row(&json!("system"), setting, s, json!(setting)));
    }
    rows
}

fn row(array: &Json, setting: &str, s: &Json, source: Json) -> Json {
    let expected = s["held_back"].get("wanted").unwrap_or(&s["after"]);
    let mut r = json!({"array": array, "setting": setting, "expected": expected,
        "actual": s["before"], "source": source, "compliant": s["compliant"]});
    if let Some(why) = s["held_back"]["reason"].as_str() {
        r["note"] = json!(format!("held back: {why}"));
    }
    r
}

/// The table for a person: what it compared with, the rows, the warnings, and the report's
/// `msg` as the verdict.
pub fn verify(report: &Json) -> String {
    let r = &super::escape::safe(report);
    let mut out = String::new();
    let c = &r["persist"]["compared_with"];
    if c.is_object() {
        let when = match (c["written"].as_str(), c["version"].as_str()) {
            (Some(t), Some(v)) => format!(", written {t} by mdtune {v}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "mdtune --verify: compared with the persisted state {}{when}",
            shown(&c["file"])
        );
    } else {
        out.push_str("mdtune --verify: nothing persisted: compared with the defaults\n");
    }
    let mut t = Table::new(&[
        "array",
        "setting",
        "expected",
        "actual",
        "source",
        "compliant",
    ]);
    let mut notes = Vec::new();
    for row in verify_rows(r) {
        let dash = |v: &Json| {
            if v.is_null() {
                "-".to_string()
            } else {
                shown(v)
            }
        };
        let compliant = if row["compliant"] == true {
            "yes"
        } else {
            "no"
        };
        t.row(vec![
            dash(&row["array"]),
            dash(&row["setting"]),
            dash(&row["expected"]),
            dash(&row["actual"]),
            dash(&row["source"]),
            compliant.to_string(),
        ]);
        if let Some(n) = row["note"].as_str() {
            notes.push(format!(
                "{} {}: {n}",
                dash(&row["array"]),
                dash(&row["setting"])
            ));
        }
    }
    out.push_str(&t.render());
    for n in notes {
        let _ = writeln!(out, "  {n}");
    }
    for w in r["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "warning: {}", shown(w));
    }
    let _ = writeln!(out, "{}", shown(&r["msg"]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let rows = verify_rows(&report);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[1],
            json!({"array": "md0", "setting": "stripe_cache_size",
            "expected": 4096, "actual": 1024, "source": "arrays[1]", "compliant": false})
        );
        let t = verify(&report);
        assert!(
            t.starts_with(
                "mdtune --verify: compared with the persisted state \
            /etc/mdtune/mdtune.json, written 2025-06-01T10:00:00Z by mdtune 0.1.0\n"
            ),
            "{t}"
        );
        let cache = t.lines().find(|l| l.contains("stripe_cache_size")).unwrap();
        assert_eq!(
            cache.split_whitespace().collect::<Vec<_>>(),
            [
                "md0",
                "stripe_cache_size",
                "4096",
                "1024",
                "arrays[1]",
                "no"
            ]
        );
        let system = t.lines().find(|l| l.starts_with("system")).unwrap();
        assert_eq!(
            system.split_whitespace().collect::<Vec<_>>(),
            [
                "system",
                "speed_limit_max",
                "200000",
                "200000",
                "speed_limit_max",
                "yes"
            ]
        );
        assert!(t.contains("md7\\x1b[2J") && !t.contains('\u{1b}'), "{t}");
    }
}
