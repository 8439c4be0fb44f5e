//! The queues `auto` counts on the hosts mdtune's users run (docs/auto.md, docs/reference.md §5),
//! one test per rule, through the real binary on fake roots that mirror the kernel's sysfs:
//! virtio-blk disks, roles inside nested arrays, a multipath map whose paths are gone, NVMe poll
//! queues, and members with unacknowledged bad blocks. The CPUs and the cache that cap what the
//! queues allow: `auto_hosts.rs`.

use crate::common::{run, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec, NvmeQueues, Use};
use serde_json::{json, Value};
use std::fs;

#[test]
fn a_virtio_blk_disk_counts_its_virtqueues_though_it_reads_rotational() {
    let dir = scratch("virtio-blk");
    let mut r = FakeRoot::new(&dir, 16);
    let vd: Vec<String> = ["vda", "vdb", "vdc"]
        .iter()
        .map(|n| r.virtio_blk(n, 4))
        .collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&vd[0], &vd[1], &vd[2]]);
    // Next to it, hard disks behind a shared-tag SCSI HBA still count as one queue each.
    let hdd: Vec<String> = ["sda", "sdb", "sdc"].iter().map(|n| r.hdd(n, 16)).collect();
    r.md(
        "md1",
        &MdSpec::level("raid5", 2),
        &[&hdd[0], &hdd[1], &hdd[2]],
    );
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["warnings"], json!([]), "{}", out.stdout);
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 4);
    let m = &out.array("md0")["members"][0];
    assert_eq!(m["hw_queues"], 4, "{m}");
    assert!(m.get("note").is_none(), "{m}");
    assert_eq!(out.setting("md1", "group_thread_cnt")["after"], 0);
    assert_eq!(out.array("md1")["members"][0]["hw_queues"], 1);
}

#[test]
fn a_nested_array_counts_only_its_own_active_members() {
    let dir = scratch("nested-roles");
    let mut r = FakeRoot::new(&dir, 64);
    let nvme: Vec<String> = (0..4).map(|c| r.nvme(c, 8)).collect();
    let spare = r.scsi("sda", 1);
    let failed = r.scsi("sdb", 1);
    // raid5 over two raid1 pairs of NVMe drives; one pair has a SATA hot spare, the other a
    // failed SATA member (mdadm --fail, not yet removed): both are bound rdevs, so both are in
    // the pair's slaves/.
    r.md_with(
        "md10",
        &MdSpec::level("raid1", 10),
        &[
            (&nvme[0], Use::Active),
            (&nvme[1], Use::Active),
            (&spare, Use::Spare),
        ],
    );
    r.md_with(
        "md11",
        &MdSpec::level("raid1", 11),
        &[
            (&nvme[2], Use::Active),
            (&nvme[3], Use::Active),
            (&failed, Use::Faulty),
        ],
    );
    r.md("md0", &MdSpec::level("raid5", 1), &["md10", "md11"]);
    let out = run(
        &dir,
        json!({"check_mode": true, "arrays": [{"name": "md0"}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["warnings"], json!([]), "{}", out.stdout);
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 8);
    let md0 = out.array("md0");
    assert_eq!(md0["hw_queues"], 8, "{md0}");
    for m in md0["members"].as_array().unwrap() {
        assert_eq!(m["hw_queues"], 8, "{m}");
        let paths = m["paths"].to_string();
        assert!(!paths.contains("sda") && !paths.contains("sdb"), "{m}");
    }
}

#[test]
fn a_stacked_device_with_no_paths_has_unknown_queues_and_nothing_is_written() {
    let dir = scratch("no-paths");
    let mut r = FakeRoot::new(&dir, 64);
    let mp = r.dm_multipath_no_paths(0);
    let a = r.nvme(1, 8);
    let b = r.nvme(2, 8);
    r.md("md0", &MdSpec::level("raid5", 1), &[&mp, &a, &b]);
    r.set_md("md0", "group_thread_cnt", "4");
    let out = run(&dir, json!({"arrays": [{"name": "md0"}]}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    // A write would suspend the array and wait on the I/O the map queues.
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    let warnings = out.json["warnings"].to_string();
    assert!(
        warnings.contains("md0") && warnings.contains("dm-0"),
        "{warnings}"
    );
    let m = &out.array("md0")["members"][0];
    assert_eq!(m["name"], "dm-0");
    assert_eq!(m["hw_queues"], Value::Null, "{m}");
    assert!(
        m["problem"].as_str().unwrap_or("").contains("slaves"),
        "{m}"
    );
}

#[test]
fn poll_queues_are_not_counted_on_pcie_nvme_multipath_paths_or_fabrics() {
    let dir = scratch("poll-queues");
    let mut r = FakeRoot::new(&dir, 8);
    // PCIe NVMe booted with nvme.write_queues=2 nvme.poll_queues=2: 2/4/2 default/read/poll,
    // 8 mq/ entries of which 6 carry md's I/O.
    let split = NvmeQueues {
        default: 2,
        read: 4,
        poll: 2,
    };
    let d: Vec<String> = (0..3).map(|c| r.nvme_split(c, split)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
    // Native multipath: the hidden path devices have the queues, 8 default and 2 poll each.
    let polled = NvmeQueues {
        default: 8,
        read: 0,
        poll: 2,
    };
    let heads: Vec<String> = (10..13)
        .map(|s| r.nvme_multipath_split(s, &[(s, polled)], false))
        .collect();
    r.md(
        "md1",
        &MdSpec::level("raid5", 2),
        &[&heads[0], &heads[1], &heads[2]],
    );
    // NVMe over TCP, two paths each: one connected with --nr-io-queues 4 --nr-poll-queues 4,
    // the other with 6 I/O queues and no poll queues.
    let tcp = |default, poll| NvmeQueues {
        default,
        read: 0,
        poll,
    };
    let fabrics: Vec<String> = (20..23)
        .map(|s| r.nvme_multipath_split(s, &[(s, tcp(4, 4)), (s + 10, tcp(6, 0))], true))
        .collect();
    r.md(
        "md2",
        &MdSpec::level("raid5", 3),
        &[&fabrics[0], &fabrics[1], &fabrics[2]],
    );
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["warnings"], json!([]), "{}", out.stdout);
    assert_eq!(out.array("md0")["hw_queues"], 6);
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 6);
    let m = &out.array("md0")["members"][0];
    assert_eq!(
        m["note"], "poll queues not counted (md never submits polled I/O): nvme0n1 (8 mq/, 2 poll)",
        "{m}"
    );
    assert_eq!(out.array("md1")["hw_queues"], 8);
    let p = &out.array("md1")["members"][0]["paths"][0];
    assert_eq!(
        (&p["name"], &p["hw_queues"], &p["poll_queues"]),
        (&json!("nvme10c10n1"), &json!(8), &json!(2)),
        "{p}"
    );
    // The smallest path counts: the TCP path with 4 I/O queues, its 4 poll queues left out.
    assert_eq!(out.array("md2")["hw_queues"], 4);
    let paths = &out.array("md2")["members"][0]["paths"];
    assert_eq!(paths[0]["poll_queues"], 4, "{paths}");
    assert!(paths[1].get("poll_queues").is_none(), "{paths}");
}

#[test]
fn poll_queues_that_cannot_be_told_apart_leave_the_thread_count_unchanged() {
    let dir = scratch("poll-unknown");
    let mut r = FakeRoot::new(&dir, 8);
    let split = NvmeQueues {
        default: 8,
        read: 0,
        poll: 2,
    };
    let d: Vec<String> = (0..3).map(|c| r.nvme_split(c, split)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
    r.set_md("md0", "group_thread_cnt", "3");
    // A kernel that showed no cpu<K> entry in mq/<N>: the poll queues cannot be found.
    for n in 0..10 {
        let mq = r.device_dir("nvme1n1").join(format!("mq/{n}"));
        for e in fs::read_dir(&mq).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with("cpu") && e.path().is_dir() {
                fs::remove_dir(e.path()).unwrap();
            }
        }
    }
    let out = run(&dir, json!({}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "3");
    let m = &out.array("md0")["members"][1];
    assert_eq!(m["hw_queues"], Value::Null, "{m}");
    let problem = m["problem"].as_str().unwrap_or_default();
    assert_eq!(
        problem,
        "nvme1n1 has poll queues (queue/io_poll is 1), but its last mq/ entries do not map the \
         8 possible CPUs once (cpu<K> entries): which are poll queues cannot be told",
        "{m}"
    );
    assert!(out.json["warnings"].to_string().contains("nvme1n1"));
}

#[test]
fn a_member_with_unacknowledged_bad_blocks_counts_while_in_sync() {
    let dir = scratch("bad-blocks");
    let mut r = FakeRoot::new(&dir, 16);
    // nvme2n1 has fewer queues than the others: counting it shows in the result.
    let d: Vec<String> = (0..4)
        .map(|c| r.nvme(c, if c == 2 { 4 } else { 8 }))
        .collect();
    let failed = r.scsi("sda", 1);
    // nvme2n1 reads faulty,in_sync,blocked: md has not acknowledged its bad blocks yet, and
    // still reads and writes it. sda failed for real (faulty, no slot).
    r.md_with(
        "md0",
        &MdSpec::level("raid5", 1),
        &[
            (&d[0], Use::Active),
            (&d[1], Use::Active),
            (&d[2], Use::BadBlocks),
            (&d[3], Use::Active),
            (&failed, Use::Faulty),
        ],
    );
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let members = out.array("md0")["members"].as_array().unwrap().clone();
    let m = |name: &str| members.iter().find(|m| m["name"] == name).unwrap().clone();
    assert_eq!(
        (
            m("nvme2n1")["role"].clone(),
            m("nvme2n1")["counted"].clone()
        ),
        (json!("active"), json!(true))
    );
    assert_eq!(
        (m("sda")["role"].clone(), m("sda")["counted"].clone()),
        (json!("faulty"), json!(false))
    );
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 4);
    assert!(
        out.setting("md0", "group_thread_cnt")["why"]
            .as_str()
            .unwrap_or_default()
            .contains("(min over 4 members)"),
        "{}",
        out.stdout
    );
}
