//! `auto`'s ceiling on the hosts mdtune's users run (docs/auto.md, docs/reference.md §2, §3), one
//! test per rule, through the real binary on fake roots that mirror the kernel's sysfs: NUMA
//! nodes without CPUs, isolated CPUs, the kernel's mask for unbound work, the stripe cache that
//! bounds the workers, and the `why` of every number `auto` decides. Which queues count:
//! `auto_queues.rs`; sparse NUMA node ids are `sparse_numa`'s, the order of restores
//! `restore_order`'s.

use crate::common::{run, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
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
