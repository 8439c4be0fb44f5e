//! What a run writes, holds back and restores on the layouts real hosts have (docs/reference.md
//! §2, Input, and §4, Applying), one test per promise, through the real binary on fake roots that
//! mirror the kernel's sysfs layout: reshapes, external metadata and mdmon, values the kernel
//! prints negative or not at all, and rollback order. How the layouts are read: `layouts.rs`.

use crate::common::{give_to_nobody_except, run, run_unprivileged, scratch};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::json;
use std::fs;
use std::path::Path;
use std::process::Command;

fn warnings(r: &crate::common::Run) -> String {
    r.json["warnings"].to_string()
}

#[test]
fn a_reshape_holds_back_threads_skip_copy_and_a_lower_stripe_cache_until_it_ends() {
    let dir = scratch("reshape");
    let mut r = FakeRoot::new(&dir, 64);
    let d: Vec<String> = (0..4).map(|c| r.nvme(c, 8)).collect();
    let dv: Vec<&str> = d.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::reshaping(1), &dv);
    r.set_md("md0", "stripe_cache_size", "2048");
    let input = json!({"arrays": [{"name": "md0", "skip_copy": true, "stripe_cache_size": 1024,
        "sync_speed_max": 90000}]});
    let out = run(&dir, input.clone());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["compliant"], false);
    assert_eq!(out.array("md0")["compliant"], false);
    for (attr, before, wanted) in [
        ("group_thread_cnt", json!(0), json!(8)),
        ("skip_copy", json!(false), json!(true)),
        ("stripe_cache_size", json!(2048), json!(1024)),
    ] {
        let s = out.setting("md0", attr);
        assert_eq!(s["changed"], false, "{attr}: {s}");
        assert_eq!(s["after"], before, "{attr}: {s}");
        assert_eq!(s["held_back"]["wanted"], wanted, "{attr}: {s}");
        assert!(
            s["held_back"]["reason"]
                .as_str()
                .unwrap()
                .contains("reshap"),
            "{attr}: {s}"
        );
    }
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md0", "skip_copy"), "0");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "2048");
    // What a reshape does not mind is applied now.
    assert_eq!(out.setting("md0", "sync_speed_max")["changed"], true);
    assert_eq!(r.read_md("md0", "sync_speed_max"), "90000");
    assert!(
        warnings(&out).contains("md0: group_thread_cnt, stripe_cache_size, skip_copy"),
        "{}",
        warnings(&out)
    );

    // The reshape ends: the next run applies what was held back.
    r.set_md("md0", "sync_action", "idle");
    r.set_md("md0", "reshape_position", "none");
    let out = run(&dir, input);
    assert_eq!(out.json["warnings"], json!([]), "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    assert_eq!(r.read_md("md0", "skip_copy"), "1");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "1024");
}

#[test]
fn a_reshape_position_alone_also_holds_back_and_raising_the_cache_is_not_held() {
    let dir = scratch("reshape-position");
    let mut r = FakeRoot::new(&dir, 64);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let dv: Vec<&str> = d.iter().map(String::as_str).collect();
    // An interrupted reshape, frozen: sync_action idle, reshape_position says where it stopped.
    let mut spec = MdSpec::level("raid5", 1);
    spec.reshape_position = "2097152".into();
    r.md("md0", &spec, &dv);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.setting("md0", "group_thread_cnt")["held_back"]["reason"]
            .as_str()
            .unwrap()
            .contains("reshape_position is 2097152")
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
}

/// Two Intel VROC (IMSM) raid5 member arrays of container md127, with an mdmon for it.
fn vroc_host(dir: &Path) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 64);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let dv: Vec<&str> = d.iter().map(String::as_str).collect();
    r.md("md127", &MdSpec::imsm_container(0x127), &dv);
    r.md("md126", &MdSpec::imsm_member("md127", 0, 0x126), &dv);
    r.md("md125", &MdSpec::imsm_member("md127", 1, 0x125), &dv);
    r
}

#[test]
fn two_vroc_arrays_keep_their_own_originals_and_revert_restores_both() {
    let dir = scratch("vroc-revert");
    let r = vroc_host(&dir);
    r.mdmon("md127", 4242, Some("mdmon"));
    assert_eq!(
        r.read_md("md126", "uuid"),
        "00000000-0000-0000-0000-000000000000"
    );
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md12[56]", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // The all-zero md/uuid is unknown: the uuid comes from udev's md-uuid-* link.
    assert_eq!(
        out.array("md126")["uuid"],
        "00000126:e5f60718:293a4b5c:6d7e8f90"
    );
    assert_eq!(
        out.array("md125")["uuid"],
        "00000125:e5f60718:293a4b5c:6d7e8f90"
    );
    assert_eq!(r.read_md("md126", "stripe_cache_size"), "4096");
    assert_eq!(r.read_md("md125", "stripe_cache_size"), "4096");
    let saved = fs::read_dir(dir.join("run/mdtune")).unwrap().count();
    assert_eq!(saved, 2, "one saved-originals file per array");
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    for md in ["md125", "md126"] {
        assert_eq!(
            r.read_md(md, "stripe_cache_size"),
            "256",
            "{md}: {}",
            out.stdout
        );
        assert_eq!(r.read_md(md, "group_thread_cnt"), "0", "{md}");
    }
}

#[test]
fn without_mdmon_the_stripe_cache_of_an_external_array_is_not_written() {
    let dir = scratch("vroc-mdmon");
    let r = vroc_host(&dir);
    let input = json!({"arrays": [{"name": "md126", "stripe_cache_size": 4096}]});
    // (what the reason says, the mdmon pid file's process: none, gone, or another program)
    let cases = [
        ("no mdmon pid file", None),
        ("is not running", Some(None)),
        ("not mdmon", Some(Some("sshd"))),
    ];
    for (why, process) in cases {
        if let Some(comm) = process {
            r.mdmon("md127", 4242, comm);
        }
        let out = run(&dir, input.clone());
        assert_eq!(out.code, 0, "{why}: {}", out.stdout);
        assert_eq!(out.json["compliant"], false, "{why}");
        let s = out.setting("md126", "stripe_cache_size");
        let reason = s["held_back"]["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("md127") && reason.contains(why),
            "{why}: {s}"
        );
        assert_eq!(r.read_md("md126", "stripe_cache_size"), "256", "{why}");
        assert!(
            warnings(&out).contains("mdmon"),
            "{why}: {}",
            warnings(&out)
        );
        // Writes that do not wait for mdmon go through.
        assert_eq!(r.read_md("md126", "group_thread_cnt"), "8", "{why}");
    }
    r.mdmon("md127", 4243, Some("mdmon"));
    let out = run(&dir, input);
    assert_eq!(
        out.setting("md126", "stripe_cache_size")["changed"],
        true,
        "{}",
        out.stdout
    );
    assert_eq!(out.json["warnings"], json!([]), "{}", out.stdout);
    assert_eq!(r.read_md("md126", "stripe_cache_size"), "4096");
}

#[test]
fn negative_speed_values_are_read_and_reported_not_fatal() {
    let dir = scratch("negative");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..2).map(|c| r.nvme(c, 4)).collect();
    r.md("md0", &MdSpec::level("raid1", 1), &[&d[0], &d[1]]);
    r.md("md1", &MdSpec::level("raid1", 2), &[&d[0], &d[1]]);
    // speed_limit_max was set to -1; md0's sync_speed_max to 2^32-1, which md prints as -1.
    fs::write(dir.join("proc/sys/dev/raid/speed_limit_max"), "-1\n").unwrap();
    r.set_md("md0", "sync_speed_max", "-1 (local)");
    r.set_md("md1", "sync_speed_min", "-1 (system)");
    let out = run(
        &dir,
        json!({"state": "query", "speed_limit_max": 500000,
        "arrays": [{"name": "md*", "sync_speed_max": 90000}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["system"]["speed_limit_max"]["before"], -1);
    assert_eq!(out.setting("md0", "sync_speed_max")["before"], -1);
    let out = run(
        &dir,
        json!({"speed_limit_max": 500000,
        "arrays": [{"name": "md*", "sync_speed_max": 90000}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "sync_speed_max"), "90000");
    // Revert puts the negative values back the way the kernel takes them.
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let limit = fs::read_to_string(dir.join("proc/sys/dev/raid/speed_limit_max")).unwrap();
    assert_eq!(limit.trim(), "-1");
    // sync_speed_max takes an unsigned: the value md prints as -1 is 2^32-1.
    assert_eq!(r.read_md("md0", "sync_speed_max"), "4294967295");
}

#[test]
fn an_array_that_reads_empty_is_skipped_with_a_warning_and_the_run_goes_on() {
    let dir = scratch("empty");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
    r.md("md1", &MdSpec::level("raid5", 2), &[&d[0], &d[1], &d[2]]);
    // An array being stopped: the personality is gone and raid456 files read empty.
    fs::write(r.md_attr("md0", "stripe_cache_size"), "").unwrap();
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 512}, {"name": "md1"}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let w = warnings(&out);
    assert!(
        w.contains("md0: skipped") && w.contains("stripe_cache_size read empty"),
        "{w}"
    );
    assert_eq!(
        out.array("md0")["skipped"][0]["setting"],
        "group_thread_cnt"
    );
    assert_eq!(out.array("md0")["settings"], json!({}));
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md1", "group_thread_cnt"), "4");
}

#[test]
fn a_failed_run_that_lowered_the_stripe_cache_and_threshold_restores_both_cache_first() {
    if !needs(Requirement::Root) {
        return;
    }
    for tool in ["setpriv", "chown"] {
        assert!(
            Command::new(tool).arg("--version").output().is_ok(),
            "{tool} is missing: apt-get install util-linux coreutils"
        );
    }
    let dir = scratch("rollback-order");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
    r.md("md1", &MdSpec::level("raid5", 2), &[&d[0], &d[1], &d[2]]);
    r.set_md("md0", "stripe_cache_size", "1024");
    r.set_md("md0", "preread_bypass_threshold", "512");
    // The run is unprivileged and owns the root, except md1's group_thread_cnt (root's, read
    // only): its write, after both of md0's, gets EACCES.
    give_to_nobody_except(&dir, &r.md_attr("md1", "group_thread_cnt"));
    let input = json!({"root": dir, "thread_policy": "off", "arrays": [
        {"name": "md0", "stripe_cache_size": 256, "preread_bypass_threshold": 100},
        {"name": "md1", "group_thread_cnt": 2}]});
    let out = run_unprivileged(&input);
    assert_eq!(out.code, 1, "{}", out.stdout);
    // The kernel refuses a threshold above the cache: the cache goes back up first.
    assert_eq!(
        out.rolled_back(),
        ["md0 stripe_cache_size", "md0 preread_bypass_threshold"]
    );
    assert!(out.json.get("not_restored").is_none(), "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "1024");
    assert_eq!(r.read_md("md0", "preread_bypass_threshold"), "512");
}

#[test]
fn a_revert_during_a_reshape_keeps_the_originals_it_could_not_restore_yet() {
    let dir = scratch("reshape-revert");
    let mut r = FakeRoot::new(&dir, 64);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let dv: Vec<&str> = d.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &dv);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "skip_copy": true}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    // mdadm --grow starts a reshape; a revert now must not suspend the array.
    r.set_md("md0", "sync_action", "reshape");
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    assert_eq!(r.read_md("md0", "skip_copy"), "1");
    assert!(
        warnings(&out).contains("saved originals kept"),
        "{}",
        warnings(&out)
    );
    assert_eq!(fs::read_dir(dir.join("run/mdtune")).unwrap().count(), 1);
    r.set_md("md0", "sync_action", "idle");
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md0", "skip_copy"), "0");
    assert_eq!(fs::read_dir(dir.join("run/mdtune")).unwrap().count(), 0);
}
