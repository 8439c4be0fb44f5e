//! The module contract (sections 1-5), one test per promise, run through the real binary on fake
//! roots that mirror the kernel's sysfs layout.

use crate::common::{assert_same_values, kernel_snapshot, run, run_args, run_unpackaged, scratch};
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
fn unusable_input_exits_2_with_a_message_naming_key_value_and_range() {
    let dir = scratch("badinput");
    demo_host(&dir);
    let before = kernel_snapshot(&dir);
    let cases = [
        (json!({"thread_polcy": "auto"}), "unknown key thread_polcy"),
        (
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 16}]}),
            "arrays[0].stripe_cache_size: 16 is not allowed; expected an integer 17..32768",
        ),
        (
            json!({"arrays": [{"name": "md0", "group_thread_cnt": 9000}]}),
            "arrays[0].group_thread_cnt: 9000",
        ),
        (
            json!({"arrays": [{"name": "md0", "sync_speed_max": -5}]}),
            "arrays[0].sync_speed_max: -5",
        ),
        (json!({"speed_limit_max": 0}), "speed_limit_max: 0"),
        (json!({"state": "absent"}), "state: \"absent\""),
        (
            json!({"arrays": [{"name": "../../etc"}]}),
            "arrays[0].name: \"../../etc\"",
        ),
        (json!({"arrays": [{"name": "/etc/md0"}]}), "arrays[0].name"),
        (
            json!({"arrays": [{"name": "md9"}]}),
            "arrays[0].name: \"md9\" matches no md array",
        ),
        (
            json!({"arrays": [{"uuid": "00000000:00000000:00000000:00000000"}]}),
            "arrays[0].uuid:",
        ),
        (
            json!({"arrays": [{"name": "md1", "stripe_cache_size": 512}]}),
            "arrays[0].stripe_cache_size: stripe_cache_size is not available: md1 is raid10",
        ),
        (
            json!({"arrays": [{"name": "md0", "preread_bypass_threshold": 1000}]}),
            "exceeds md0's stripe_cache_size",
        ),
    ];
    for (input, want) in cases {
        let out = run(&dir, input.clone());
        assert_eq!(out.code, 2, "{input}: {}", out.stdout);
        assert_eq!(out.json["failed"], true);
        assert!(
            out.msg().contains(want),
            "{input}: {:?} lacks {want:?}",
            out.msg()
        );
    }
    assert_eq!(kernel_snapshot(&dir), before);
    assert!(!dir.join("run/mdtune").exists());
}

#[test]
fn invalid_json_and_missing_args_file_exit_2_with_json() {
    let out = run_args(&["-"], "{\"arrays\": [", &[]);
    assert_eq!(out.code, 2);
    assert!(out.msg().contains("not a JSON object"), "{}", out.stdout);
    let out = run_args(&["/nonexistent/args"], "", &[]);
    assert_eq!(out.code, 2);
    assert!(out.msg().contains("/nonexistent/args"), "{}", out.stdout);
    let out = run_args(&["--frobnicate", "x"], "", &[]);
    assert_eq!(out.code, 2);
    assert_eq!(out.json["failed"], true);
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
        let names: Vec<&str> = out.json["arrays"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
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

/// Makes a file immutable for as long as the guard lives.
struct Immutable(std::path::PathBuf);

impl Immutable {
    fn set(path: &std::path::Path) -> Immutable {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .map(|s| s.success());
        assert!(
            matches!(ok, Ok(true)),
            "chattr +i failed: this test needs root, e2fsprogs (apt-get install e2fsprogs) and a filesystem with immutable files (ext4, xfs) under $TMPDIR"
        );
        Immutable(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_failed_write_rolls_back_the_rest_of_the_run() {
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

#[test]
fn unusable_roots_exit_2_naming_the_path_and_what_is_wrong_in_every_state() {
    let base = scratch("bad-roots");
    let file = base.join("a-file");
    fs::write(&file, "").unwrap();
    let missing = base.join("missing");
    for (root, why) in [(&file, "is a regular file"), (&missing, "does not exist")] {
        for extra in [
            json!({}),
            json!({"state": "query"}),
            json!({"check_mode": true}),
            json!({"state": "reverted"}),
            json!({"persist": true}),
        ] {
            let out = run_unpackaged(root, extra.clone());
            assert_eq!(out.code, 2, "{extra}: {}", out.stdout);
            let want = format!("root: {} {why}", root.display());
            assert!(
                out.msg().contains(&want),
                "{extra}: {:?} lacks {want:?}",
                out.msg()
            );
        }
        let out = run_args(
            &["--udev", "md0", "--root", root.to_str().unwrap()],
            "",
            &[],
        );
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(
            out.msg().contains(&root.display().to_string()),
            "{}",
            out.msg()
        );
        assert!(out.msg().contains(why), "{}", out.msg());
    }
    assert!(!missing.exists());
    assert_eq!(fs::read(&file).unwrap(), b"");
}

#[test]
fn a_non_utf8_argument_exits_2_without_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let out = std::process::Command::new(crate::common::bin())
        .arg(std::ffi::OsStr::from_bytes(b"/tmp/args-\xff"))
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{json}");
    assert!(
        json["msg"].as_str().unwrap().contains("not valid UTF-8"),
        "{json}"
    );
}

#[test]
fn a_refusal_at_plan_time_writes_nothing_not_even_the_lock() {
    let dir = scratch("refusal-no-lock");
    demo_host(&dir);
    fs::remove_dir_all(dir.join("run")).unwrap();
    for input in [
        json!({"arrays": [{"name": "md9", "stripe_cache_size": 4096}]}),
        json!({"persist": true, "arrays": [{"name": "md1", "stripe_cache_size": 4096}]}),
    ] {
        let out = run(&dir, input);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(!dir.join("run").exists(), "an exit-2 run created run/");
        assert!(!dir.join("etc/mdtune").exists());
    }
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

#[test]
fn numbers_beyond_64_bits_are_echoed_as_given() {
    let dir = scratch("huge-number");
    demo_host(&dir);
    let text = format!(
        r#"{{"root": "{}", "arrays": [{{"name": "md0", "stripe_cache_size": 100000000000000000000000000}}]}}"#,
        dir.display()
    );
    let out = run_args(&["-"], &text, &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.msg()
            .contains("stripe_cache_size: 100000000000000000000000000 is not allowed"),
        "{}",
        out.msg()
    );
}
