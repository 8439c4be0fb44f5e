//! The module contract (sections 1-5), one test per promise, run through the real binary on fake
//! roots that mirror the kernel's sysfs layout. Which arrays an entry selects: `selectors.rs`;
//! unusable input: `refusals.rs`.

use crate::common::{assert_same_values, kernel_snapshot, run, run_args, scratch, Immutable};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::json;
use std::fs;

#[test]
fn auto_picks_the_queue_count_for_every_layout() {
    let dir = scratch("layouts");
    demo_host(&dir);
    let r = run(&dir, json!({"check_mode": true}));
    assert_eq!(r.code, 0, "{}", r.stdout);
    // Partitions of 8-queue NVMe drives: the partition resolves to its disk.
    assert_eq!(r.setting("md0", "group_thread_cnt")["after"], 8);
    assert_eq!(r.array("md0")["members"][0]["device"], "nvme0n1");
    // dm-multipath over 16-queue NVMe paths: its own mq/0 is ignored.
    assert_eq!(r.setting("md2", "group_thread_cnt")["after"], 16);
    assert_eq!(r.array("md2")["members"][0]["paths"][1]["name"], "nvme21n1");
    // Single-queue SATA: 0, already in place.
    assert_eq!(r.setting("md3", "group_thread_cnt")["changed"], false);
    assert_eq!(r.setting("md3", "group_thread_cnt")["after"], 0);
    // NVMe multipath heads (raid10 here) resolve to their 4-queue path devices.
    assert_eq!(r.array("md1")["hw_queues"], 4);
    assert_eq!(
        r.array("md1")["members"][0]["paths"][0]["name"],
        "nvme4c14n1"
    );
}

#[test]
fn auto_counts_nvme_multipath_paths_nested_md_and_dm_linear() {
    let dir = scratch("stacks");
    let mut r = FakeRoot::new(&dir, 64);
    let heads: Vec<String> = (0..3)
        .map(|s| r.nvme_multipath(s, &[(s, 4), (s + 10, 6)]))
        .collect();
    let h: Vec<&str> = heads.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &h);
    // raid5 over two raid1 arrays of 12-queue drives, and an LVM volume over a 12-queue drive.
    let d: Vec<String> = (20..25).map(|c| r.nvme(c, 12)).collect();
    r.md("md10", &MdSpec::level("raid1", 2), &[&d[0], &d[1]]);
    r.md("md11", &MdSpec::level("raid1", 3), &[&d[2], &d[3]]);
    let lv = r.dm_linear(7, &[&d[4]]);
    r.md("md12", &MdSpec::level("raid5", 4), &["md10", "md11", &lv]);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0"}, {"name": "md12"}], "check_mode": true}),
    );
    // Several paths to one member count as the smallest path, not their sum.
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 4);
    assert_eq!(out.array("md0")["members"][0]["hw_queues"], 4);
    assert_eq!(out.setting("md12", "group_thread_cnt")["after"], 12);
    let members = out.array("md12")["members"].as_array().unwrap().clone();
    let devices: Vec<&str> = members
        .iter()
        .map(|m| m["device"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["dm-7", "md10", "md11"]);
    assert_eq!(members[1]["paths"][0]["name"], "nvme20n1");
}

#[test]
fn unknown_member_queues_warn_and_leave_threads_unchanged() {
    let dir = scratch("unknown");
    let mut r = FakeRoot::new(&dir, 8);
    let a = r.nvme(0, 8);
    let lv = r.dm_linear(0, &[]); // no mq/, no slaves: nothing to count
    r.md("md0", &MdSpec::level("raid5", 1), &[&a, &lv]);
    let out = run(&dir, json!({}));
    assert_eq!(out.code, 0);
    assert_eq!(out.json["changed"], false);
    assert!(
        out.json["warnings"][0].as_str().unwrap().contains("dm-0"),
        "{}",
        out.stdout
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}

#[test]
fn second_identical_run_changes_nothing_and_writes_nothing() {
    let dir = scratch("idempotent");
    demo_host(&dir);
    let input = json!({"arrays": [{"name": "md*", "stripe_cache_size": 4096, "sync_speed_max": 50000,
        "skip_copy": true, "sync_force_parallel": "yes"}], "speed_limit_min": 5000});
    let first = run(&dir, input.clone());
    assert_eq!(first.json["changed"], true, "{}", first.stdout);
    let before = kernel_snapshot(&dir);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let second = run(&dir, input);
    assert_eq!(second.json["changed"], false, "{}", second.stdout);
    assert_eq!(second.json["compliant"], true);
    assert_eq!(
        kernel_snapshot(&dir),
        before,
        "a converged run touched a kernel file"
    );
}

#[test]
fn check_mode_reports_the_change_due_and_writes_nothing() {
    for key in ["check_mode", "_ansible_check_mode"] {
        let dir = scratch("check");
        demo_host(&dir);
        let before = kernel_snapshot(&dir);
        let out = run(
            &dir,
            json!({key: true, "arrays": [{"name": "hana_data", "stripe_cache_size": 8192}]}),
        );
        assert_eq!(out.json["changed"], true);
        assert_eq!(out.json["check_mode"], true);
        let s = out.setting("md0", "stripe_cache_size");
        assert_eq!(
            (
                s["before"].clone(),
                s["after"].clone(),
                s["changed"].clone()
            ),
            (json!(256), json!(8192), json!(true))
        );
        assert_eq!(kernel_snapshot(&dir), before, "{key} wrote");
        assert!(!dir.join("run/mdtune").exists(), "{key} saved originals");
    }
}

#[test]
fn ansible_args_file_is_read_and_ansible_keys_ignored() {
    let dir = scratch("argsfile");
    demo_host(&dir);
    let args = dir.join("args");
    fs::write(
        &args,
        json!({"root": dir, "arrays": [{"name": "md0", "group_thread_cnt": "4"}],
            "_ansible_check_mode": false, "_ansible_diff": true, "_ansible_no_log": false,
            "_ansible_tracebacks_for": [], "_ansible_something_new": {"x": 1}})
        .to_string(),
    )
    .unwrap();
    let out = run_args(&[args.to_str().unwrap()], "", &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 4);
    assert_eq!(out.json["diff"][0]["before"], "group_thread_cnt: 0\n");
    assert_eq!(out.json["diff"][0]["after"], "group_thread_cnt: 4\n");
    assert_eq!(
        fs::read_to_string(dir.join("sys/block/md0/md/group_thread_cnt")).unwrap(),
        "4\n"
    );
}

#[test]
fn help_and_version_are_plain_text() {
    let out = run_args(&["--help"], "", &[]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("usage:") && out.stdout.contains("--udev"));
    let out = run_args(&["--version"], "", &[]);
    assert_eq!(
        out.stdout.trim(),
        format!("mdtune {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn sync_speed_compares_number_and_suffix_and_system_restores_the_system_value() {
    let dir = scratch("syncspeed");
    let r = demo_host(&dir);
    let set = |v: serde_json::Value| {
        run(
            &dir,
            json!({"arrays": [{"name": "md1", "sync_speed_max": v}]}),
        )
    };
    let out = set(json!(200000));
    // 200000 (system) is not the array's own 200000: a write is due.
    assert_eq!(out.setting("md1", "sync_speed_max")["before"], "system");
    assert_eq!(out.setting("md1", "sync_speed_max")["changed"], true);
    r.set_md("md1", "sync_speed_max", "200000 (local)");
    assert_eq!(set(json!("200000")).json["changed"], false);
    let out = set(json!("system"));
    assert_eq!(out.setting("md1", "sync_speed_max")["after"], "system");
    r.set_md("md1", "sync_speed_max", "200000 (system)");
    assert_eq!(set(json!("system")).json["changed"], false);
}

#[test]
fn query_reports_compliance_writes_nothing_and_exits_0() {
    let dir = scratch("query");
    demo_host(&dir);
    let before = kernel_snapshot(&dir);
    let out = run(&dir, json!({"state": "query"}));
    assert_eq!(
        (
            out.code,
            out.json["changed"].clone(),
            out.json["compliant"].clone()
        ),
        (0, json!(false), json!(false))
    );
    assert_eq!(out.array("md0")["compliant"], false);
    assert_eq!(out.array("md3")["compliant"], true);
    assert!(out.msg().starts_with("not compliant"), "{}", out.msg());
    assert_eq!(kernel_snapshot(&dir), before);
    run(&dir, json!({}));
    let out = run(&dir, json!({"state": "query"}));
    assert_eq!(out.json["compliant"], true, "{}", out.stdout);
}

#[test]
fn stripe_cache_is_written_before_preread_bypass_threshold() {
    let dir = scratch("order");
    let r = demo_host(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "preread_bypass_threshold": 2000, "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert_eq!(r.read_md("md0", "preread_bypass_threshold"), "2000");
}

#[test]
fn system_speed_limits_are_managed() {
    let dir = scratch("limits");
    demo_host(&dir);
    let out = run(
        &dir,
        json!({"speed_limit_min": "50000", "speed_limit_max": 2000000, "arrays": []}),
    );
    assert_eq!(
        out.json["system"]["speed_limit_min"],
        json!({"before": 1000, "after": 50000, "changed": true, "compliant": false,
               "unit": "KiB/s per device; on raid10, KiB/s of array sectors in resync, check \
                        and repair"})
    );
    assert_eq!(
        fs::read_to_string(dir.join("proc/sys/dev/raid/speed_limit_max"))
            .unwrap()
            .trim(),
        "2000000"
    );
}

#[test]
fn a_failed_write_rolls_back_the_rest_of_the_run() {
    if !needs(Requirement::ImmutableFiles) {
        return;
    }
    let dir = scratch("rollback");
    let r = demo_host(&dir);
    // md2's stripe_cache_size is immutable (chattr +i: even root gets EPERM on open for
    // writing), and md0's writes come first.
    let attr = r.md_attr("md2", "stripe_cache_size");
    let _guard = Immutable::set(&attr);
    let before = kernel_snapshot(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}, {"name": "md2", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json["changed"], false);
    assert!(
        out.msg().contains("md2: stripe_cache_size"),
        "{}",
        out.msg()
    );
    let restored: Vec<String> = out.json["rolled_back"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{} {}",
                w["target"].as_str().unwrap(),
                w["setting"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        restored,
        [
            "md2 group_thread_cnt",
            "md0 stripe_cache_size",
            "md0 group_thread_cnt"
        ]
    );
    assert_same_values(&before, &kernel_snapshot(&dir));
}

#[test]
fn a_raid5_without_skip_copy_says_this_kernel_does_not_offer_it() {
    let dir = scratch("no-skip-copy");
    let r = demo_host(&dir);
    fs::remove_file(r.md_attr("md0", "skip_copy")).unwrap();
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "skip_copy": true}]}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.msg()
            .contains("md0 is raid5, but this kernel does not offer it"),
        "{}",
        out.msg()
    );
}
