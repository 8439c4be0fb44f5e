//! The layouts real hosts have (issue 11, docs/reference.md §2, §4 and §5), one test per promise,
//! through the real binary on fake roots that mirror the kernel's sysfs layout: partitions deep in
//! the stack, member roles, NUMA, rotational disks behind SAS HBAs, reshapes, external metadata
//! and mdmon, values the kernel prints negative or not at all, and rollback order.

use crate::common::{give_to_nobody_except, run, run_unprivileged, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec, Use};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

pub(crate) fn strs(v: &Value, key: &str) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|m| m[key].as_str().unwrap_or("").to_string())
        .collect()
}

fn warnings(r: &crate::common::Run) -> String {
    r.json["warnings"].to_string()
}

#[test]
fn partitions_anywhere_in_the_stack_resolve_to_their_disks() {
    let dir = scratch("partitions");
    let mut r = FakeRoot::new(&dir, 64);
    // LVM (dm-linear) on an NVMe partition, as md members.
    let lvs: Vec<String> = (0..3)
        .map(|c| {
            let disk = r.nvme(c, 8);
            let part = r.partition(&disk, 2);
            r.dm_linear(c, &[&part])
        })
        .collect();
    let lv: Vec<&str> = lvs.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &lv);
    // raid5 over raid1 arrays of partitions of 6-queue drives.
    let parts: Vec<String> = (10..14)
        .map(|c| {
            let disk = r.nvme(c, 6);
            r.partition(&disk, 1)
        })
        .collect();
    r.md("md10", &MdSpec::level("raid1", 2), &[&parts[0], &parts[1]]);
    r.md("md11", &MdSpec::level("raid1", 3), &[&parts[2], &parts[3]]);
    r.md("md12", &MdSpec::level("raid5", 4), &["md10", "md11"]);
    // Partitions of NVMe multipath heads (no mq/ on the head; paths of 4 and 6 queues).
    let heads: Vec<String> = (20..23)
        .map(|s| {
            let head = r.nvme_multipath(s, &[(s, 4), (s + 10, 6)]);
            r.partition(&head, 1)
        })
        .collect();
    let h: Vec<&str> = heads.iter().map(String::as_str).collect();
    r.md("md20", &MdSpec::level("raid5", 5), &h);

    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["warnings"], json!([]), "{}", out.stdout);
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 8);
    let md0 = &out.array("md0")["members"];
    assert_eq!(strs(md0, "device"), ["dm-0", "dm-1", "dm-2"]);
    assert_eq!(md0[0]["paths"][0]["name"], "nvme0n1");
    assert_eq!(out.setting("md12", "group_thread_cnt")["after"], 6);
    assert_eq!(
        out.array("md12")["members"][0]["paths"][1]["name"],
        "nvme11n1"
    );
    assert_eq!(out.setting("md20", "group_thread_cnt")["after"], 4);
    let md20 = &out.array("md20")["members"][0];
    assert_eq!(md20["device"], "nvme20n1");
    assert_eq!(strs(&md20["paths"], "name"), ["nvme20c20n1", "nvme20c30n1"]);
}

#[test]
fn only_active_members_count_and_every_member_reports_its_role() {
    let dir = scratch("roles");
    let mut r = FakeRoot::new(&dir, 64);
    let nvme: Vec<String> = (0..4).map(|c| r.nvme(c, 8)).collect();
    let spare = r.scsi("sda", 1);
    let journal = r.scsi("sdb", 1);
    let faulty = r.scsi("sdc", 1);
    r.md_with(
        "md0",
        &MdSpec::level("raid5", 1),
        &[
            (&nvme[0], Use::Active),
            (&nvme[1], Use::Active),
            (&nvme[2], Use::Active),
            (&nvme[3], Use::Rebuilding),
            (&spare, Use::Spare),
            (&journal, Use::Journal),
            (&faulty, Use::Faulty),
        ],
    );
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    // The 1-queue spare, journal and faulty member would pull min down to 1 and auto to 0.
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 8);
    assert_eq!(out.array("md0")["hw_queues"], 8);
    let members = &out.array("md0")["members"];
    assert_eq!(
        strs(members, "name"),
        ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "sda", "sdb", "sdc"]
    );
    assert_eq!(
        strs(members, "role"),
        [
            "active",
            "active",
            "active",
            "rebuilding",
            "spare",
            "journal",
            "faulty"
        ]
    );
    let counted: Vec<bool> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["counted"].as_bool().unwrap())
        .collect();
    assert_eq!(counted, [true, true, true, true, false, false, false]);
    assert!(members[3].get("reason").is_none(), "{}", members[3]);
    for (i, word) in [(4, "spare"), (5, "journal"), (6, "faulty")] {
        let reason = members[i]["reason"].as_str().unwrap_or("");
        assert!(reason.contains(word), "{}", members[i]);
        // Reported with what it resolved to, like any member.
        assert_eq!(members[i]["hw_queues"], 1);
    }
}

#[test]
fn auto_max_defaults_to_online_cpus_per_possible_numa_node() {
    let dir = scratch("numa");
    let mut r = FakeRoot::new(&dir, 32);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 64)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
    let threads =
        |input: Value| run(&dir, input).setting("md0", "group_thread_cnt")["after"].clone();
    let check = json!({"check_mode": true});
    // The kernel starts group_thread_cnt workers on every possible node (alloc_thread_groups).
    r.set_nodes(2);
    assert_eq!(threads(check.clone()), 16, "32 CPUs over 2 nodes");
    r.set_nodes(3);
    assert_eq!(threads(check.clone()), 10, "32 CPUs over 3 nodes");
    assert_eq!(
        threads(json!({"check_mode": true, "thread_policy": {"mode": "auto", "max": 24}})),
        24,
        "an explicit max wins"
    );
    r.set_nodes(0);
    assert_eq!(threads(check.clone()), 32, "no node/possible: one node");
    r.set_cpus(2);
    r.set_nodes(4);
    assert_eq!(threads(check), 1, "at least 1");
}

#[test]
fn a_scsi_disk_counts_as_one_queue_whatever_its_hba_shows_hard_disk_or_ssd() {
    // Every LUN's queue comes from its host's tag set (scsi_alloc_sdev, scsi_mq_setup_tags): its
    // mq/ is the adapter's, shared by every disk behind it, not the disk's.
    let dir = scratch("scsi-one-rule");
    let mut r = FakeRoot::new(&dir, 64);
    // raid6 of SAS hard disks behind an HBA giving every LUN its 48 queues.
    let hdds: Vec<String> = ["sda", "sdb", "sdc", "sdd"]
        .iter()
        .map(|n| r.hdd(n, 48))
        .collect();
    let h: Vec<&str> = hdds.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid6", 1), &h);
    // Next to it, SAS SSDs on the same kind of HBA: the same rule.
    let ssds: Vec<String> = ["sde", "sdf", "sdg"]
        .iter()
        .map(|n| r.scsi(n, 48))
        .collect();
    let s: Vec<&str> = ssds.iter().map(String::as_str).collect();
    r.md("md1", &MdSpec::level("raid5", 2), &s);
    r.set_md("md1", "group_thread_cnt", "48");
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 0);
    assert_eq!(out.setting("md0", "group_thread_cnt")["changed"], false);
    assert_eq!(out.setting("md1", "group_thread_cnt")["after"], 0);
    assert_eq!(out.setting("md1", "group_thread_cnt")["changed"], true);
    for md in ["md0", "md1"] {
        for m in out.array(md)["members"].as_array().unwrap() {
            assert_eq!(m["hw_queues"], 1, "{m}");
            let note = m["note"].as_str().unwrap_or("");
            assert!(note.starts_with("SCSI disk, counted as 1 queue"), "{m}");
            assert!(note.contains("(48 mq/)"), "{m}");
        }
    }
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

#[test]
fn the_committed_demo_host_reads_as_the_builder_makes_it() {
    // examples/demo-host is `mkroot demo` as git keeps it (no empty directory: no empty
    // holders/, slaves/ or scsi_disk/ entry). It must read as the builder's host does, so that
    // a change to the builder is a change to the demo too.
    let built = scratch("demo-built");
    mdtune_fakeroot::demo_host(&built);
    let committed = scratch("demo-committed");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-host/.");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&demo)
        .arg(&committed)
        .status();
    assert!(copied.unwrap().success());
    let read = |root: &Path| {
        let out = run(root, json!({"state": "query", "thread_policy": "auto"}));
        assert_eq!(out.code, 0, "{}", out.stdout);
        out.stdout.replace(&root.display().to_string(), "ROOT")
    };
    assert_eq!(
        read(&committed),
        read(&built),
        "examples/demo-host is out of date: regenerate it with \
         cargo run --example mkroot -- demo DIR (see docs/testing.md)"
    );
}
