//! Which arrays an entry selects (docs/reference.md §2, array entry), through the real binary on
//! fake roots: mdadm names, `/dev/md` links and both uuid forms, globs that match nothing (a
//! warning; with a uuid, exit 2 naming it), raid4/5/6 settings by glob skipped on raid10, names
//! like `md_d0` and `md_home`, kernels without `md/uuid`, and members from `md/dev-*` links.

use crate::common::{run, scratch};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::json;
use std::fs;

#[test]
fn selectors_accept_mdadm_names_dev_md_links_and_both_uuid_forms() {
    let dir = scratch("selectors");
    demo_host(&dir);
    for sel in [
        json!({"name": "hana_data"}),
        json!({"name": "/dev/md/hana_data"}),
        json!({"uuid": "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90"}),
        json!({"uuid": "A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F90"}),
        json!({"name": "md0", "uuid": "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90"}),
        json!({"name": "md[0]"}),
    ] {
        let out = run(&dir, json!({"arrays": [sel], "check_mode": true}));
        let names = out.array_names();
        assert_eq!(names, ["md0"], "{sel}");
        assert_eq!(out.array("md0")["devname"], "hana_data");
    }
}

#[test]
fn a_glob_matching_nothing_is_a_warning() {
    let dir = scratch("glob");
    demo_host(&dir);
    let out = run(&dir, json!({"arrays": [{"name": "md9*"}]}));
    assert_eq!(out.code, 0);
    assert_eq!(out.json["changed"], false);
    assert!(out.json["warnings"][0].as_str().unwrap().contains("md9*"));
}

#[test]
fn raid456_settings_by_glob_are_skipped_on_raid10_and_sync_limits_apply() {
    let dir = scratch("raid10");
    demo_host(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md*", "stripe_cache_size": 512, "sync_speed_min": 50000, "sync_speed_max": 800000}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let md1 = out.array("md1");
    let skipped: Vec<&str> = md1["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["setting"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["group_thread_cnt", "stripe_cache_size"]);
    assert!(md1["skipped"][1]["reason"]
        .as_str()
        .unwrap()
        .contains("raid10"));
    assert_eq!(md1["sync"]["action"], "resync");
    assert_eq!(md1["sync"]["completed"], json!([1048576, 4194304]));
    assert_eq!(md1["sync"]["speed_kib_s"], 187000);
    assert_eq!(out.setting("md1", "sync_speed_max")["after"], 800000);
    let md126 = out.array("md126");
    assert!(md126["skipped"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("external:imsm container"));
    assert!(md126.get("sync").is_none());
}

#[test]
fn names_like_md_d0_and_md_home_are_arrays_too() {
    let dir = scratch("names");
    let mut r = FakeRoot::new(&dir, 8);
    let a: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    let b: Vec<String> = (3..6).map(|c| r.nvme(c, 4)).collect();
    r.md("md_d0", &MdSpec::level("raid5", 1), &[&a[0], &a[1], &a[2]]);
    r.md(
        "md_home",
        &MdSpec::level("raid6", 2),
        &[&b[0], &b[1], &b[2]],
    );
    let out = run(&dir, json!({}));
    assert_eq!(out.setting("md_d0", "group_thread_cnt")["after"], 4);
    assert_eq!(r.read_md("md_home", "group_thread_cnt"), "4");
}

#[test]
fn old_kernels_without_md_uuid_are_matched_through_udev_links() {
    let dir = scratch("olduuid");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    let mut spec = MdSpec::level("raid5", 0xabcdef01);
    spec.kernel_uuid_file = false;
    r.md("md5", &spec, &[&d[0], &d[1], &d[2]]);
    let out = run(
        &dir,
        json!({"arrays": [{"uuid": "abcdef01:e5f60718:293a4b5c:6d7e8f90"}], "check_mode": true}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.array("md5")["uuid"],
        "abcdef01:e5f60718:293a4b5c:6d7e8f90"
    );
}

#[test]
fn members_come_from_md_dev_links_when_slaves_is_empty() {
    let dir = scratch("devlinks");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 6)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
    fs::remove_dir_all(r.device_dir("md0").join("slaves")).unwrap();
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 6);
    assert_eq!(out.array("md0")["members"].as_array().unwrap().len(), 3);
}

#[test]
fn a_glob_with_a_uuid_that_matches_nothing_exits_2_naming_the_uuid() {
    let dir = scratch("glob-uuid");
    demo_host(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md*", "uuid": "deadbeef:00000000:00000000:00000000",
            "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.msg()
            .contains("arrays[0].uuid: \"deadbeef000000000000000000000000\""),
        "{}",
        out.msg()
    );
    assert!(!dir.join("run/mdtune.lock").exists());
}
