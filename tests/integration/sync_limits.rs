//! docs/reference.md §2, §3: the sync limits. `sync_io_depth` (Linux 6.16 and later) per array
//! (`arrays[].sync_io_depth`, `md/sync_io_depth`, printed `N (system|local)`, `"system"`
//! restores) and system-wide (`sync_io_depth`, `/proc/sys/dev/raid/sync_io_depth`): set, read
//! back, persisted and replayed by the udev rule, reverted; on an older kernel a glob skips it
//! and an exact name or the top-level key is refused. And the unit each sync limit counts in.

use crate::common::{run, run_args, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};

/// A host with md1, a raid10 over four 4-queue drives (near 2 copies, the kernel's layout
/// 0x102), on a kernel that has `sync_io_depth` when `io_depth`.
fn raid10(name: &str, io_depth: bool) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let mut r = FakeRoot::new(&dir, 16);
    if io_depth {
        r.with_sync_io_depth();
    }
    let drives: Vec<String> = (0..4).map(|c| r.nvme(c, 4)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md1", &MdSpec::level("raid10", 1), &d);
    (dir, r)
}

fn system_depth(dir: &Path) -> String {
    fs::read_to_string(dir.join("proc/sys/dev/raid/sync_io_depth"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn sync_io_depth_is_set_per_array_and_system_wide_and_system_restores_the_array_s() {
    let (dir, r) = raid10("io-depth", true);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md1", "sync_io_depth": 64}], "sync_io_depth": "128"}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md1", "sync_io_depth"), "64");
    assert_eq!(system_depth(&dir), "128");
    let s = out.setting("md1", "sync_io_depth");
    assert_eq!((&s["before"], &s["after"]), (&json!("system"), &json!(64)));
    let sys = &out.json["system"]["sync_io_depth"];
    assert_eq!((&sys["before"], &sys["after"]), (&json!(32), &json!(128)));
    assert_eq!(
        out.msg(),
        "md1: sync_io_depth system -> 64; system: sync_io_depth 32 -> 128"
    );
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md1", "sync_io_depth": "system"}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md1", "sync_io_depth"), "system");
    assert_eq!(out.setting("md1", "sync_io_depth")["after"], "system");
    // The kernel's own format is read as the kernel means it.
    r.set_md("md1", "sync_io_depth", "64 (local)");
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md1", "sync_io_depth": 64}], "state": "query"}),
    );
    assert_eq!(out.json["compliant"], true, "{}", out.stdout);
}

#[test]
fn a_glob_skips_sync_io_depth_on_a_kernel_without_it_and_an_exact_name_refuses() {
    let (dir, r) = raid10("io-depth-old", false);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md*", "sync_io_depth": 64}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let skipped = out.array("md1")["skipped"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["setting"] == "sync_io_depth"))
        .unwrap_or_else(|| panic!("sync_io_depth not skipped: {}", out.stdout));
    assert_eq!(
        skipped["reason"],
        "md1 is raid10, but this kernel does not offer it (md has sync_io_depth from Linux 6.16)"
    );
    let before = fs::read_dir(r.md_attr("md1", "")).unwrap().count();
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md1", "sync_io_depth": 64}]}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(
        out.msg(),
        "arrays[0].sync_io_depth: sync_io_depth is not available: md1 is raid10, but this \
         kernel does not offer it (md has sync_io_depth from Linux 6.16)"
    );
    assert_eq!(fs::read_dir(r.md_attr("md1", "")).unwrap().count(), before);
}

#[test]
fn the_system_sync_io_depth_on_a_kernel_without_it_is_refused_and_nothing_written() {
    let (dir, _r) = raid10("io-depth-sys-old", false);
    let out = run(
        &dir,
        json!({"sync_io_depth": 64, "speed_limit_max": 500000}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(
        out.msg(),
        "sync_io_depth: this kernel has no /proc/sys/dev/raid/sync_io_depth (md has it from \
         Linux 6.16); leave it out on this host"
    );
    let max = fs::read_to_string(dir.join("proc/sys/dev/raid/speed_limit_max")).unwrap();
    assert_eq!(max.trim(), "200000");
    assert!(!dir.join("proc/sys/dev/raid/sync_io_depth").exists());
}

#[test]
fn a_sync_io_depth_out_of_range_is_refused_naming_the_range() {
    let (dir, _r) = raid10("io-depth-range", true);
    for (input, key) in [
        (json!({"sync_io_depth": 0}), "sync_io_depth: 0"),
        (
            json!({"sync_io_depth": 16_777_216}),
            "sync_io_depth: 16777216",
        ),
        (
            json!({"arrays": [{"name": "md1", "sync_io_depth": -1}]}),
            "arrays[0].sync_io_depth: -1",
        ),
    ] {
        let out = run(&dir, input);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(
            out.msg().starts_with(key) && out.msg().contains("an integer 1..16777215 (sync I/Os)"),
            "{}",
            out.msg()
        );
    }
    assert_eq!(system_depth(&dir), "32");
}

#[test]
fn a_persisted_sync_io_depth_is_replayed_by_the_udev_rule_and_reverted() {
    let (dir, r) = raid10("io-depth-persist", true);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md1", "sync_io_depth": 64}], "sync_io_depth": 128,
               "persist": true}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // A reboot: the kernel's defaults are back.
    r.set_md("md1", "sync_io_depth", "32 (system)");
    fs::write(dir.join("proc/sys/dev/raid/sync_io_depth"), "32").unwrap();
    let root = dir.display().to_string();
    let replay = run_args(&["--udev", "md1", "--root", &root], "", &[]);
    assert_eq!(replay.code, 0, "{}", replay.stdout);
    assert_eq!(r.read_md("md1", "sync_io_depth"), "64");
    assert_eq!(system_depth(&dir), "128");
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md1", "sync_io_depth"), "system");
    assert_eq!(system_depth(&dir), "32");
}

#[test]
fn a_raid10_sync_limit_says_it_counts_array_sectors_and_what_each_member_runs_at() {
    let (dir, mut r) = raid10("units", true);
    let drives: Vec<String> = (10..13).map(|c| r.nvme(c, 4)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md5", &MdSpec::level("raid5", 5), &d);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md*", "sync_speed_max": 100000, "sync_speed_min": "system",
                           "sync_io_depth": 64}],
               "thread_policy": "off"}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Near 2 copies over 4 raid disks: each member reads half of what the array's sync counts.
    let max = out.setting("md1", "sync_speed_max");
    assert_eq!(max["per_member_kib_s"], 50000, "{max}");
    assert_eq!(
        max["unit"],
        "KiB/s of array sectors in resync, check and repair (each member at the limit x copies / \
         raid disks); KiB/s per device in recovery"
    );
    // "system" follows speed_limit_min, 1000.
    assert_eq!(
        out.setting("md1", "sync_speed_min")["per_member_kib_s"],
        500
    );
    assert_eq!(
        out.setting("md1", "sync_io_depth")["unit"],
        "sync I/Os in flight while the array is busy, 64 KiB each"
    );
    let max = out.setting("md5", "sync_speed_max");
    assert_eq!(max["unit"], "KiB/s per device");
    assert!(max.get("per_member_kib_s").is_none(), "{max}");
    assert_eq!(
        out.setting("md5", "sync_io_depth")["unit"],
        "sync I/Os in flight while the array is busy, one 4 KiB stripe each"
    );
}
