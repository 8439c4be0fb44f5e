//! What the person on call reads beside the settings (docs/reference.md §1 `--show`,
//! `--verify`): an array's health, from the JSON `crate::health::annotate` adds (`health`,
//! `checks`) and the report's members and sync: the members it misses and which are faulty or
//! rebuilding, the last whole check or repair and the mismatches it left, the running sync's
//! time left; and the input's `reason` beside the values it covers. `--show` prints them as
//! lines; `--verify` as rows whose source is `health`, which it shows and does not count: only
//! the settings and the persisted state decide its exit status. Pure; the JSON is escaped.

use super::cells::{shown, Table};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// Days without a whole check before `--verify` shows it (the `MdtuneNoWholeCheck` alert's).
const WHOLE_CHECK_DAYS: u64 = 35;
/// Mismatched sectors a mirror (raid1/10) may have before it is shown (`MdtuneMirrorMismatch`).
const MIRROR_MISMATCH: u64 = 4096;

/// `--verify`'s footer when it shows health rows.
pub(super) const NOT_COUNTED: &str = "health rows (source health) are shown, not counted: only \
    the settings and the persisted state decide the exit status (0 compliant, 3 not)";

/// The running sync's time left at its current speed: `about 1h 23m left`.
pub(super) fn eta(sync: &Json) -> Option<String> {
    let (done, total) = (
        sync["completed"][0].as_u64()?,
        sync["completed"][1].as_u64()?,
    );
    let kib = sync["speed_kib_s"].as_u64().filter(|&k| k > 0)?;
    // Sectors of 512 bytes at KiB/s: two sectors a KiB.
    let seconds = total.saturating_sub(done) / kib.saturating_mul(2);
    Some(format!("about {} left", span(seconds)))
}

/// `3d 4h`, `1h 23m`, `5m`, `40s`.
fn span(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86400, s % 86400 / 3600),
    }
}

/// The members md counts missing, and those named faulty or rebuilding: `1 missing (md/degraded);
/// faulty: sdb1`; `None` when none is missing.
fn degraded(a: &Json) -> Option<String> {
    let n = a["health"]["degraded"].as_u64().filter(|&n| n > 0)?;
    let mut l = format!("{n} member{} missing (md/degraded)", plural(n));
    let members = a["members"].as_array().into_iter().flatten();
    let mut named = false;
    for role in ["faulty", "rebuilding", "replacement", "unknown"] {
        let of: Vec<String> = members
            .clone()
            .filter(|m| m["role"] == role)
            .map(|m| shown(&m["name"]))
            .collect();
        if !of.is_empty() {
            named = true;
            let _ = write!(l, "; {role}: {}", of.join(", "));
        }
    }
    if !named {
        l.push_str("; no member left names it (a removed disk)");
    }
    Some(l)
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The last whole check or repair the tick recorded, and the last check when it is newer and
/// not whole.
fn last_checks(a: &Json) -> (Option<&Json>, Option<&Json>) {
    let last = a["checks"]["last"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let end = |c: &&Json| c["end_unix"].as_u64().unwrap_or(0);
    let whole = last.iter().filter(|c| c["whole"] == true).max_by_key(end);
    let part = last.iter().filter(|c| c["whole"] != true).max_by_key(end);
    let newer = part.filter(|p| whole.is_none_or(|w| end(p) > end(&w)));
    (whole, newer)
}

/// `check 2026-11-02T01:00:00Z (12d 3h ago), 0 mismatched sectors`.
fn check(c: &Json, now: Option<u64>) -> String {
    let end = c["end_unix"].as_u64().unwrap_or(0);
    let mut l = format!("{} {}", shown(&c["action"]), crate::persist::rfc3339(end));
    if let Some(now) = now.filter(|&n| n >= end) {
        let _ = write!(l, " ({} ago)", span(now - end));
    }
    match c["mismatch_cnt"].as_u64() {
        Some(n) => {
            let _ = write!(l, ", {n} mismatched sector{}", plural(n));
        }
        None => l.push_str(", mismatches unknown"),
    }
    l
}

/// `--show`'s health lines of an array: what it misses, its last whole check (or since when
/// none), a newer check that was not whole.
pub(super) fn show_lines(out: &mut String, a: &Json, now: Option<u64>) {
    if let Some(d) = degraded(a) {
        let _ = writeln!(out, "  degraded: {d}");
    }
    if !a["checks"].is_object() {
        return;
    }
    let (whole, newer) = last_checks(a);
    match whole {
        Some(c) => {
            let _ = writeln!(out, "  last whole check: {}", check(c, now));
        }
        None => {
            let since = match a["checks"]["watched_since"].as_u64() {
                Some(t) => format!("watched since {}", crate::persist::rfc3339(t)),
                None => "mdtune --tick has not watched it yet".into(),
            };
            let _ = writeln!(out, "  last whole check: none recorded ({since})");
        }
    }
    if let Some(c) = newer {
        let _ = writeln!(
            out,
            "  last check: {}; not whole: {}",
            check(c, now),
            shown(&c["why_not_whole"])
        );
    }
}

/// `--verify`'s health rows of an array (source `health`, compliant `-`): members missing,
/// mismatches its last whole check left (any on raid4/5/6, above 2 MiB on a mirror), no whole
/// check for 35 days. True when it added one.
pub(super) fn verify_rows(t: &mut Table, a: &Json, now: Option<u64>) -> bool {
    let name = shown(&a["name"]);
    let mut rows: Vec<[String; 3]> = Vec::new();
    if let Some(d) = degraded(a) {
        rows.push(["degraded".into(), "0".into(), d]);
    }
    let (whole, _) = last_checks(a);
    let level = a["level"].as_str().unwrap_or("");
    let allowed = if matches!(level, "raid1" | "raid10") {
        MIRROR_MISMATCH
    } else {
        0
    };
    if let Some(c) = whole.filter(|c| c["mismatch_cnt"].as_u64().is_some_and(|n| n > allowed)) {
        let expected = format!("at most {allowed}");
        rows.push(["mismatch_cnt".into(), expected, check(c, now)]);
    }
    let since = whole
        .and_then(|c| c["end_unix"].as_u64())
        .or(a["checks"]["watched_since"].as_u64());
    if let (Some(since), Some(now)) = (since, now) {
        if now.saturating_sub(since) > WHOLE_CHECK_DAYS * 86400 {
            let actual = match whole {
                Some(c) => check(c, Some(now)),
                None => format!("none since {}", crate::persist::rfc3339(since)),
            };
            let expected = format!("within {WHOLE_CHECK_DAYS} days");
            rows.push(["whole check".into(), expected, actual]);
        }
    }
    for [what, expected, actual] in &rows {
        let cells = [&name, what, expected, actual, "health", "-"];
        t.row(cells.map(|c| c.to_string()).to_vec());
    }
    !rows.is_empty()
}

/// `why`, with the input's reason for the value after it: `...; reason: CHG0042`.
pub(super) fn with_reason(why: String, reason: &Json) -> String {
    match (reason.as_str(), why.is_empty()) {
        (None, _) => why,
        (Some(r), true) => format!("reason: {r}"),
        (Some(r), false) => format!("{why}; reason: {r}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_has;
    use serde_json::json;

    const DAY: u64 = 86400;

    fn raid5(degraded: u64, last: Json) -> Json {
        json!({"name": "md0", "level": "raid5",
            "members": [{"name": "sda1", "role": "active"}, {"name": "sdb1", "role": "faulty"},
                        {"name": "sdc1", "role": "rebuilding"}, {"name": "sdd1", "role": "spare"}],
            "sync": {"action": "recover", "completed": [1000, 7_201_000], "speed_kib_s": 1000},
            "health": {"degraded": degraded, "mismatch_cnt": 0},
            "checks": {"watched_since": 0, "last": last}})
    }

    #[test]
    fn show_names_the_missing_members_the_last_whole_check_and_the_time_left() {
        let last = json!([
            {"action": "check", "whole": true, "end_unix": 10 * DAY, "mismatch_cnt": 128},
            {"action": "check", "whole": false, "end_unix": 11 * DAY, "mismatch_cnt": 0,
             "why_not_whole": "interrupted at sector 5"}]);
        let a = raid5(1, last);
        let mut out = String::new();
        show_lines(&mut out, &a, Some(12 * DAY + 3600));
        assert_has(
            &out,
            &[
                "  degraded: 1 member missing (md/degraded); faulty: sdb1; rebuilding: sdc1\n",
                "  last whole check: check 1970-01-11T00:00:00Z (2d 1h ago), 128 mismatched sectors\n",
                "  last check: check 1970-01-12T00:00:00Z (1d 1h ago), 0 mismatched sectors; not whole: interrupted at sector 5\n",
            ],
        );
        assert_eq!(eta(&a["sync"]).as_deref(), Some("about 1h 0m left"));
        let mut out = String::new();
        show_lines(&mut out, &raid5(0, json!([])), Some(DAY));
        assert_eq!(
            out,
            "  last whole check: none recorded (watched since 1970-01-01T00:00:00Z)\n"
        );
        assert_eq!(eta(&json!({"action": "idle", "completed": null})), None);
    }

    #[test]
    fn verify_shows_what_is_not_healthy_as_rows_that_are_not_counted() {
        let last = json!([{"action": "check", "whole": true, "end_unix": DAY, "mismatch_cnt": 8}]);
        let mut t = Table::new(&[
            "array",
            "setting",
            "expected",
            "actual",
            "source",
            "compliant",
        ]);
        assert!(verify_rows(&mut t, &raid5(1, last), Some(40 * DAY)));
        let text = t.render();
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip(1)
            .map(|l| {
                l.split("  ")
                    .filter(|c| !c.is_empty())
                    .map(str::trim)
                    .collect()
            })
            .collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert_eq!(
            rows[0],
            [
                "md0",
                "degraded",
                "0",
                "1 member missing (md/degraded); faulty: sdb1; rebuilding: sdc1",
                "health",
                "-"
            ]
        );
        assert_eq!(rows[1][1..3], ["mismatch_cnt", "at most 0"]);
        assert_eq!(rows[2][1..3], ["whole check", "within 35 days"]);
        // A healthy array, and a mirror's few benign mismatches, add no row.
        let mut a = raid5(
            0,
            json!([{"action": "check", "whole": true, "end_unix": DAY, "mismatch_cnt": 128}]),
        );
        a["level"] = json!("raid1");
        let mut t = Table::new(&["array"]);
        assert!(!verify_rows(&mut t, &a, Some(2 * DAY)), "{}", t.render());
    }
}
