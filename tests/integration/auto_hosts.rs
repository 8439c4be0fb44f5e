//! `auto` on the hosts mdtune's users run (docs/auto.md, docs/reference.md §2, §3, §5), one test
//! per rule, through the real binary on fake roots that mirror the kernel's sysfs: NUMA nodes
//! without CPUs, isolated CPUs, virtio-blk disks, NVMe poll queues, members with unacknowledged
//! bad blocks, roles inside nested arrays, a multipath map whose paths are gone, the stripe cache
//! that bounds the workers, and the `why` of every number `auto` decides. Sparse NUMA node ids
//! are `sparse_numa`'s, the order of restores `restore_order`'s.

use crate::common::{run, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec, NvmeQueues, Use};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// `arrays[md].settings.group_thread_cnt.after` of a check-mode run.
fn threads(dir: &Path, input: Value) -> Value {
    let mut input = input;
    input["check_mode"] = json!(true);
    let out = run(dir, input);
    assert_eq!(out.code, 0, "{}", out.stdout);
    out.setting("md0", "group_thread_cnt")["after"].clone()
}

/// md0, a raid5 over three NVMe drives of `queues` queues each.
pub(crate) fn nvme_raid5(r: &mut FakeRoot, queues: u32) {
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, queues)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &[&d[0], &d[1], &d[2]]);
}

#[test]
fn the_ceiling_divides_by_the_nodes_that_have_cpus_not_the_possible_ones() {
    let dir = scratch("cpuless-nodes");
    let mut r = FakeRoot::new(&dir, 64);
    nvme_raid5(&mut r, 64);
    // A cache that lets 512 workers run, so that only the CPUs bound them here.
    r.set_md("md0", "stripe_cache_size", "4096");
    // Two sockets of 32 CPUs, and two CPU-less nodes (CXL memory, PMem onlined as memory):
    // raid5_wakeup_stripe_thread() queues work only for the submitting CPU's node, so the worker
    // groups of the CPU-less nodes never run.
    r.set_numa("0-3", Some("0-1"));
    assert_eq!(threads(&dir, json!({})), 32, "64 CPUs / 2 nodes with CPUs");
    // Without node/has_cpu, the possible nodes; without either, one node.
    r.set_numa("0-3", None);
    assert_eq!(
        threads(&dir, json!({})),
        16,
        "no has_cpu: 64 CPUs / 4 possible"
    );
    r.set_nodes(0);
    assert_eq!(threads(&dir, json!({})), 64, "neither file: one node");
}

#[test]
fn isolated_cpus_do_not_count_toward_the_ceiling() {
    let dir = scratch("isolated");
    let mut r = FakeRoot::new(&dir, 8);
    nvme_raid5(&mut r, 8);
    // isolcpus=1-3: the raid5 workqueue is unbound and runs only on housekeeping CPUs.
    r.set_isolated("1-3");
    assert_eq!(threads(&dir, json!({})), 5, "8 online - 3 isolated");
    // Both rules at once: 64 CPUs, 28 isolated, 2 nodes with CPUs and 2 without.
    let dir = scratch("isolated-numa");
    let mut r = FakeRoot::new(&dir, 64);
    nvme_raid5(&mut r, 64);
    r.set_numa("0-3", Some("0-1"));
    r.set_isolated("2-15,34-47");
    assert_eq!(threads(&dir, json!({})), 18, "(64 - 28) CPUs / 2 nodes");
    // Every CPU isolated: still at least 1.
    r.set_isolated("0-63");
    assert_eq!(threads(&dir, json!({})), 1);
}

#[test]
fn the_kernels_mask_for_unbound_work_decides_which_cpus_count() {
    let dir = scratch("unbound-mask");
    let mut r = FakeRoot::new(&dir, 8);
    nvme_raid5(&mut r, 8);
    // nohz_full=6-7 without isolcpus: cpu/isolated is empty, but on 6.1 and 6.12 the kernel
    // keeps unbound work off those CPUs (and on 7.x it does not): its mask says which.
    r.set_unbound_cpumask("3f");
    assert_eq!(threads(&dir, json!({})), 6, "CPUs 0-5 in workqueue/cpumask");
    // The mask wins over cpu/isolated, which it already reflects.
    r.set_isolated("5");
    r.set_unbound_cpumask("1f");
    assert_eq!(threads(&dir, json!({})), 5);
    // raid5wq's own mask narrows it, unless they share no CPU (then the kernel uses the
    // unbound mask alone).
    r.set_raid5wq_cpumask("0f");
    assert_eq!(threads(&dir, json!({})), 4);
    r.set_raid5wq_cpumask("c0");
    assert_eq!(threads(&dir, json!({})), 5);
    // Comma-separated 32-bit groups, more CPUs than online: only online ones count.
    r.set_raid5wq_cpumask("ffffffff,ffffffff");
    r.set_unbound_cpumask("00000000,00000000,0000000f");
    assert_eq!(threads(&dir, json!({})), 4);
}

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
fn every_setting_auto_decides_says_why_with_the_numbers() {
    let dir = scratch("why");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..4).map(|c| r.nvme(c, 8)).collect();
    r.md(
        "md0",
        &MdSpec::level("raid5", 1),
        &[&d[0], &d[1], &d[2], &d[3]],
    );
    let sata: Vec<String> = ["sda", "sdb", "sdc"].iter().map(|n| r.scsi(n, 1)).collect();
    r.md(
        "md1",
        &MdSpec::level("raid5", 2),
        &[&sata[0], &sata[1], &sata[2]],
    );
    r.set_nodes(2);
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let s = out.setting("md0", "group_thread_cnt");
    assert_eq!(s["after"], 4, "{s}");
    assert_eq!(
        s["why"],
        "8 hardware queues (min over 4 members), capped at 4 = 8 CPUs / 2 nodes with CPUs",
        "{s}"
    );
    let why = out.setting("md1", "group_thread_cnt")["why"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        why.starts_with("1 hardware queue (min over 3 members)") && why.contains('0'),
        "{why}"
    );
    // Isolated CPUs and an explicit max are named too.
    r.set_isolated("6-7");
    let out = run(
        &dir,
        json!({"check_mode": true, "thread_policy": {"mode": "auto", "combine": "max"}}),
    );
    let why = out.setting("md0", "group_thread_cnt")["why"].clone();
    assert_eq!(
        why,
        "8 hardware queues (max over 4 members), capped at 3 = 6 CPUs (8 online, 2 isolated) \
         / 2 nodes with CPUs",
    );
    let out = run(
        &dir,
        json!({"check_mode": true, "thread_policy": {"mode": "auto", "max": 6}}),
    );
    let why = out.setting("md0", "group_thread_cnt")["why"].clone();
    assert_eq!(
        why,
        "8 hardware queues (min over 4 members), capped at 6 = thread_policy.max"
    );
    // A fixed value is not auto's: no why.
    let out = run(&dir, json!({"check_mode": true, "thread_policy": 2}));
    assert!(
        out.setting("md0", "group_thread_cnt").get("why").is_none(),
        "{}",
        out.stdout
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

#[test]
fn auto_never_sets_more_workers_than_the_stripe_cache_lets_run() {
    let dir = scratch("cache-bound");
    // Two sockets of 64 CPUs and 64-queue NVMe: 64 per node, but raid5 wakes a worker per 8
    // queued stripes, and the default cache of 256 holds no more than 256.
    let mut r = FakeRoot::new(&dir, 128);
    r.set_nodes(2);
    let d: Vec<String> = (0..4).map(|c| r.nvme(c, 64)).collect();
    r.md(
        "md0",
        &MdSpec::level("raid5", 1),
        &[&d[0], &d[1], &d[2], &d[3]],
    );
    let page = page_size();
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let s = out.setting("md0", "group_thread_cnt");
    assert_eq!(s["after"], 32, "{s}");
    assert_eq!(
        s["why"],
        format!(
            "64 hardware queues (min over 4 members), within the cap 64 = 128 CPUs / 2 nodes \
             with CPUs, capped at 32 = stripe_cache_size 256 / 8 stripes per worker \
             (raid5_wakeup_stripe_thread wakes a worker per 8 queued stripes); \
             stripe_cache_size 512 ({} x 4 disks x 512 = {}) would let 64 run",
            human(page),
            human(page * 4 * 512)
        ),
        "{s}"
    );
    // The cache raised in the same run lifts the bound: a real run writes both.
    let input = json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let out = run(&dir, input.clone());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "64");
    let why = out.setting("md0", "group_thread_cnt")["why"].to_string();
    assert!(
        why.ends_with(
            "within the 512 workers stripe_cache_size 4096 (planned in this run) lets run\""
        ),
        "{why}"
    );
    assert_eq!(run(&dir, input).json["changed"], false);
    // A cache lowered by hand bounds it again.
    r.set_md("md0", "stripe_cache_size", "128");
    let out = run(&dir, json!({"check_mode": true}));
    assert_eq!(out.setting("md0", "group_thread_cnt")["after"], 16);
}

/// The page size of the machine the tests run on (the fake root's kernel is this one), from
/// `getconf PAGESIZE`.
fn page_size() -> u64 {
    let out = Command::new("getconf").arg("PAGESIZE").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// `4 KiB`, `8 MiB`, as `why` writes byte counts.
fn human(n: u64) -> String {
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= size && n % size == 0 {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} bytes")
}
