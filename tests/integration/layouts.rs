//! The layouts real hosts have (docs/reference.md §2, Input, and §5, Finding hardware queues), as a run reads them, one
//! test per promise, through the real binary on fake roots that mirror the kernel's sysfs layout:
//! partitions deep in the stack, member roles, NUMA, rotational disks and SSDs behind SAS HBAs, and
//! the committed demo host. What a run writes, holds back and restores on such layouts:
//! `layout_writes.rs`.

use crate::common::{run, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec, Use};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

pub(crate) fn strs(v: &Value, key: &str) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|m| m[key].as_str().unwrap_or("").to_string())
        .collect()
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
