//! `state: reverted` (docs/reference.md §6), through the real binary on fake roots: the originals
//! back and the persisted files removed, a second revert that changes nothing, an array found
//! again by its uuid under a new name, a binary persist did not install kept, a revert that fails
//! part way saying what it restored, removed and left, and one in check mode saying what it would.

use crate::common::{
    assert_same_values, kernel_snapshot, run, run_unpackaged, scratch, shared_binary,
};
use crate::persistence::{desired, BINARY, RULE, STATE};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::json;
use std::fs;
use std::process::Command;

#[test]
fn revert_restores_originals_removes_files_and_a_second_revert_changes_nothing() {
    let dir = scratch("revert");
    let r = demo_host(&dir);
    let original = kernel_snapshot(&dir);
    assert_eq!(run(&dir, desired()).code, 0);
    // A later run changes md0 again: the saved original stays the first one.
    assert_eq!(
        run(
            &dir,
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 8192}]})
        )
        .code,
        0
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "8192");

    // Revert restores every saved original: a selection is ignored, and says so.
    let check = run(
        &dir,
        json!({"state": "reverted", "check_mode": true, "arrays": [{"name": "md0"}]}),
    );
    assert_eq!(check.json["changed"], true);
    assert!(
        check.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("arrays ignored"),
        "{}",
        check.stdout
    );
    assert!(dir.join(STATE).exists(), "check mode removed a file");

    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["changed"], true);
    assert_eq!(out.setting("md0", "stripe_cache_size")["before"], 8192);
    assert_eq!(out.setting("md0", "stripe_cache_size")["after"], 256);
    assert_eq!(out.json["system"]["speed_limit_min"]["after"], 1000);
    let files = out.persist_files();
    assert!(files.contains(&"/etc/udev/rules.d/90-mdtune.rules"));
    assert!(files.contains(&"/run/mdtune/system.json"));
    assert_same_values(&original, &kernel_snapshot(&dir));
    for f in [STATE, BINARY, RULE] {
        assert!(!dir.join(f).exists(), "{f} left after revert");
    }
    assert_eq!(fs::read_dir(dir.join("run/mdtune")).unwrap().count(), 0);

    let again = run(&dir, json!({"state": "reverted"}));
    assert_eq!(again.json["changed"], false, "{}", again.stdout);
}

#[test]
fn revert_finds_a_reassembled_array_by_uuid_under_its_new_name() {
    let first = scratch("uuid-a");
    let mut a = FakeRoot::new(&first, 8);
    let d: Vec<String> = (0..3).map(|c| a.nvme(c, 4)).collect();
    let spec = MdSpec::level("raid5", 0x5eed);
    a.md("md0", &spec, &[&d[0], &d[1], &d[2]]);
    assert_eq!(run(&first, json!({})).code, 0);
    assert_eq!(a.read_md("md0", "group_thread_cnt"), "4");

    // The same array, re-assembled as md9 on a host whose run/ still holds the originals.
    let second = scratch("uuid-b");
    let mut b = FakeRoot::new(&second, 8);
    let d: Vec<String> = (0..3).map(|c| b.nvme(c, 4)).collect();
    b.md("md9", &spec, &[&d[0], &d[1], &d[2]]);
    b.set_md("md9", "group_thread_cnt", "4");
    fs::remove_dir_all(second.join("run")).unwrap();
    assert!(Command::new("cp")
        .args([
            "-a",
            first.join("run").to_str().unwrap(),
            second.to_str().unwrap()
        ])
        .status()
        .unwrap()
        .success());
    let out = run(&second, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(b.read_md("md9", "group_thread_cnt"), "0");
}

#[test]
fn revert_keeps_a_binary_that_persist_did_not_install() {
    let dir = scratch("keepbinary");
    demo_host(&dir);
    // A package put the same binary in place before mdtune ever ran.
    fs::create_dir_all(dir.join("usr/local/sbin")).unwrap();
    fs::hard_link(shared_binary(), dir.join(BINARY)).unwrap();
    let out = run_unpackaged(&dir, desired());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let files = out.json["persist"]["files"].as_array().unwrap().clone();
    assert!(
        !files.contains(&json!("/usr/local/sbin/mdtune")),
        "{files:?}"
    );
    let out = run_unpackaged(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        dir.join(BINARY).exists(),
        "revert removed a binary it did not install"
    );
    for f in [STATE, RULE, "etc/mdtune/installed.json"] {
        assert!(!dir.join(f).exists(), "{f} left after revert");
    }
}

#[test]
fn a_revert_that_fails_part_way_reports_what_it_restored_removed_and_left() {
    let dir = scratch("revert-partial");
    let r = demo_host(&dir);
    assert_eq!(run(&dir, desired()).code, 0);
    // The rule cannot be removed (as with chattr +i): a directory in its place.
    fs::remove_file(dir.join(RULE)).unwrap();
    fs::create_dir_all(dir.join(RULE).join("x")).unwrap();
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json["failed"], true);
    assert_eq!(
        out.json["changed"], true,
        "values were restored and files removed"
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
    let msg = out.msg();
    assert!(
        msg.contains("NOT REMOVED: /etc/udev/rules.d/90-mdtune.rules"),
        "{msg}"
    );
    assert!(msg.contains("restored: md0: "), "{msg}");
    assert!(msg.contains("stripe_cache_size 4096 -> 256"), "{msg}");
    assert!(msg.contains("removed the persisted input"), "{msg}");
    assert!(!dir.join(STATE).exists());
    // The manifest stays, so a later revert can finish.
    assert!(dir.join("etc/mdtune/installed.json").exists());
    assert!(out.json["persist"]["left"][0]
        .as_str()
        .unwrap()
        .starts_with("/etc/udev/rules.d/90-mdtune.rules: "));
    fs::remove_dir_all(dir.join(RULE)).unwrap();
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!dir.join("etc/mdtune/installed.json").exists());
    assert!(!dir.join(BINARY).exists());
}

#[test]
fn a_revert_in_check_mode_says_what_it_would_do_and_its_diff_shows_removed_files() {
    let dir = scratch("revert-check");
    demo_host(&dir);
    assert_eq!(run(&dir, desired()).code, 0);
    let out = run(
        &dir,
        json!({"state": "reverted", "check_mode": true, "diff": true}),
    );
    let msg = out.msg();
    assert!(msg.starts_with("check mode: would revert: md0: "), "{msg}");
    assert!(msg.contains("would remove the udev rule"), "{msg}");
    let diff = out.json["diff"].as_array().unwrap();
    let rule = diff
        .iter()
        .find(|d| d["before_header"] == "/etc/udev/rules.d/90-mdtune.rules")
        .unwrap_or_else(|| panic!("no diff for the rule: {}", out.stdout));
    assert!(rule["before"].as_str().unwrap().contains("--udev %k"));
    assert_eq!(rule["after"], "");
    let out = run(&dir, json!({"state": "reverted", "diff": true}));
    assert!(out.msg().starts_with("reverted: md0: "), "{}", out.msg());
    assert!(out.json["diff"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["before_header"] == "/etc/mdtune/mdtune.json"));
}
