//! The arrays' health through the real binary (docs/reference.md §1, `--tick` (c) and
//! `--metrics`): a degraded raid5, a raid1 with benign mismatches, a check running, a frozen
//! sync, and checks that `mdtune --tick` sees end whole, interrupted, or in an mdcheck window,
//! recorded in `var/lib/mdtune/checks.json` and shown as metrics. promtool, when installed,
//! accepts every exposition.

use crate::common::{run_args, scratch};
use crate::oncall::mdtune;
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::Value;
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// md0 (raid5, three drives) and md1 (raid1, two), both idle, nothing checked since assembly.
fn host(name: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let mut r = FakeRoot::new(&dir, 8);
    let drives: Vec<String> = (0..5).map(|c| r.nvme(c, 4)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &d[..3]);
    r.md("md1", &MdSpec::level("raid1", 2), &d[3..]);
    (dir, r)
}

/// `--metrics` of `dir`, checked by promtool when it is installed.
fn metrics(dir: &Path) -> String {
    let (code, m, err) = mdtune(&["--metrics"], dir);
    assert_eq!(code, 0, "{err}");
    promtool_accepts(&m);
    m
}

fn promtool_accepts(m: &str) {
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("promtool is not installed: the exposition is not checked by it");
        return;
    };
    child.stdin.take().unwrap().write_all(m.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "promtool check metrics: {said}\n{m}");
}

fn has(m: &str, lines: &[&str]) {
    for line in lines {
        assert!(m.lines().any(|l| l == *line), "no {line} in:\n{m}");
    }
}

/// `mdtune --tick` on `dir`: its JSON object.
fn tick(dir: &Path) -> Value {
    let out = run_args(&["--tick", "--root", dir.to_str().unwrap()], "", &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    out.json
}

/// Sets md0's sync to `action` (`idle`: `sync_completed` none), `last_sync_action`, and where
/// it runs (`sync_min`, `sync_max`).
fn md0(r: &FakeRoot, action: &str, last: &str, min: &str, max: &str) {
    let running = action != "idle";
    r.set_md("md0", "sync_action", action);
    r.set_md("md0", "last_sync_action", last);
    let completed = if running { "1000 / 4001000" } else { "none" };
    r.set_md("md0", "sync_completed", completed);
    r.set_md("md0", "sync_speed", if running { "1000" } else { "none" });
    r.set_md("md0", "sync_min", min);
    r.set_md("md0", "sync_max", max);
}

#[test]
fn a_degraded_raid5_benign_raid1_mismatches_a_running_check_and_a_frozen_sync_are_metrics() {
    let (dir, r) = host("health-now");
    r.set_md("md0", "degraded", "1");
    r.set_md("md1", "mismatch_cnt", "128");
    r.set_md("md1", "last_sync_action", "check");
    let m = metrics(&dir);
    has(
        &m,
        &[
            "mdtune_array_degraded{array=\"md0\",device=\"md0\"} 1",
            "mdtune_array_degraded{array=\"md1\",device=\"md1\"} 0",
            "mdtune_array_mismatch_sectors{array=\"md1\",device=\"md1\",level=\"raid1\"} 128",
            "mdtune_array_mismatch_sectors{array=\"md0\",device=\"md0\",level=\"raid5\"} 0",
            "mdtune_array_sync_boost_active{array=\"md0\",device=\"md0\"} 0",
        ],
    );
    // Nothing recorded without a tick: no check families, no tick time.
    assert!(!m.contains("mdtune_array_last_check_"), "{m}");
    assert!(!m.contains("mdtune_last_tick_timestamp_seconds"), "{m}");
    // A check running at 1000 KiB/s with 4000000 sectors to go: 2000 s left.
    md0(&r, "check", "none", "0", "max");
    r.set_md("md1", "sync_action", "frozen");
    let m = metrics(&dir);
    has(
        &m,
        &[
            "mdtune_array_sync_remaining_seconds{array=\"md0\",device=\"md0\"} 2000",
            "mdtune_array_sync_action{array=\"md0\",device=\"md0\",action=\"check\"} 1",
            "mdtune_array_sync_frozen{array=\"md1\",device=\"md1\",by=\"other\"} 1",
        ],
    );
}

#[test]
fn the_tick_records_a_whole_check_an_interrupted_one_and_an_mdcheck_window() {
    let (dir, r) = host("health-checks");
    let first = tick(&dir);
    assert_eq!(first["recorded"], serde_json::json!([]), "{first}");
    let record = dir.join("var/lib/mdtune/checks.json");
    let meta = fs::metadata(&record).unwrap();
    // Owned by whoever ran the tick: root on a host (the test's own user when it is not root).
    let me = fs::metadata("/proc/self").unwrap().uid();
    assert_eq!((meta.mode() & 0o7777, meta.uid()), (0o644, me));
    // Whole: from sector 0 with no end, ended complete (sync_min back at 0), 16 mismatches.
    md0(&r, "check", "none", "0", "max");
    tick(&dir);
    md0(&r, "idle", "check", "0", "max");
    r.set_md("md0", "mismatch_cnt", "16");
    let out = tick(&dir);
    let c = &out["recorded"][0];
    assert_eq!(
        (c["array"].as_str(), c["whole"].as_bool()),
        (Some("md0"), Some(true)),
        "{out}"
    );
    assert_eq!(c["mismatch_cnt"], 16);
    assert_eq!(c["range"], serde_json::json!([0, 4001000]));
    assert_eq!(out["changed"], true);
    // Interrupted: md keeps its place in sync_min.
    md0(&r, "check", "check", "0", "max");
    tick(&dir);
    md0(&r, "idle", "check", "409600", "max");
    r.set_md("md0", "mismatch_cnt", "0");
    let out = tick(&dir);
    let why = out["recorded"][0]["why_not_whole"].as_str().unwrap();
    assert_eq!(why, "interrupted at sector 409600", "{out}");
    // An mdcheck window: started at 2048, to 60000.
    md0(&r, "check", "check", "2048", "60000");
    tick(&dir);
    md0(&r, "idle", "check", "0", "max");
    let out = tick(&dir);
    let why = out["recorded"][0]["why_not_whole"].as_str().unwrap();
    assert!(why.contains("window") && why.contains("2048"), "{out}");
    // The record: three checks of md0, with its uuid, kept across reboots (var/lib).
    let h: Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    let checks = h["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3, "{h}");
    assert!(checks
        .iter()
        .all(|c| c["uuid"].as_str().is_some_and(|u| u.len() == 32)));
    // The metrics: the last of each kind, the tick's time, the record's start.
    let m = metrics(&dir);
    has(
        &m,
        &["mdtune_array_last_check_mismatch_sectors{array=\"md0\",device=\"md0\",level=\"raid5\",action=\"check\",whole=\"true\"} 16"],
    );
    for prefix in [
        "mdtune_array_last_check_end_timestamp_seconds{array=\"md0\",device=\"md0\",action=\"check\",whole=\"true\"} ",
        "mdtune_array_last_check_end_timestamp_seconds{array=\"md0\",device=\"md0\",action=\"check\",whole=\"false\"} ",
        "mdtune_array_checks_watched_since_timestamp_seconds{array=\"md1\",device=\"md1\"} ",
        "mdtune_last_tick_timestamp_seconds ",
    ] {
        assert!(m.lines().any(|l| l.starts_with(prefix)), "no {prefix} in:\n{m}");
    }
    // A tick that sees nothing new leaves the record as it is.
    let before = fs::read(&record).unwrap();
    assert_eq!(tick(&dir)["recorded"], serde_json::json!([]));
    assert_eq!(fs::read(&record).unwrap(), before);
}
