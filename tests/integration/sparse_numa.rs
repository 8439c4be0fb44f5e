//! Sparse NUMA node ids (docs/auto.md; bare-metal POWER numbers its nodes 0 and 8): raid5 sizes
//! its worker groups by the count of possible nodes and indexes them by node id, so any thread
//! count there corrupts kernel memory. `auto` stays at zero with a warning, an explicit or
//! persisted count is refused, and a revert writes zero in place of a saved count.

use crate::auto_hosts::nvme_raid5;
use crate::common::{assert_same_values, kernel_snapshot, run, run_args, scratch};
use mdtune_fakeroot::FakeRoot;
use serde_json::{json, Value};
use std::path::Path;

/// A two-socket host whose possible NUMA node ids are 0 and 8, as bare-metal POWER9 (PowerNV)
/// numbers them, with md0 over three 16-queue NVMe drives.
fn sparse_host(dir: &Path) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 64);
    nvme_raid5(&mut r, 16);
    r.set_numa("0,8", Some("0,8"));
    r
}

/// The kernel functions every refusal and warning about sparse node ids names.
fn names_the_kernel_functions(text: &str) {
    for f in [
        "num_possible_nodes()",
        "alloc_thread_groups",
        "cpu_to_node()",
        "raid5_wakeup_stripe_thread",
    ] {
        assert!(text.contains(f), "{f} not named in: {text}");
    }
}

#[test]
fn sparse_node_ids_keep_auto_at_zero_with_a_warning_naming_the_kernel_functions() {
    let dir = scratch("sparse-auto");
    let r = sparse_host(&dir);
    // What mdtune's auto wrote there before: node 8's CPUs index past the two worker groups.
    r.set_md("md0", "group_thread_cnt", "16");
    let out = run(&dir, json!({}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    let s = out.setting("md0", "group_thread_cnt");
    assert_eq!((&s["before"], &s["after"]), (&json!(16), &json!(0)), "{s}");
    assert_eq!(s["source"], "auto");
    let why = s["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("16 hardware queues (min over 3 members): 0, since the possible NUMA node ids are sparse (2 possible nodes, the highest id 8)"),
        "{why}"
    );
    names_the_kernel_functions(why);
    let warnings: Vec<&str> = out.json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("sparse"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stdout);
    names_the_kernel_functions(warnings[0]);
    // Converged: nothing to write, the warning stays.
    let again = run(&dir, json!({}));
    assert_eq!(again.json["changed"], false, "{}", again.stdout);
    assert!(again.json["warnings"].to_string().contains("sparse"));
    // An AC922 adds its GPUs' memory as nodes 252-255.
    r.set_numa("0,8,252-255", Some("0,8"));
    let why = out_why(&dir);
    assert!(
        why.contains("(6 possible nodes, the highest id 255)"),
        "{why}"
    );
}

fn out_why(dir: &Path) -> String {
    let out = run(dir, json!({"check_mode": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    out.setting("md0", "group_thread_cnt")["why"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn sparse_node_ids_refuse_an_explicit_thread_count_and_write_nothing() {
    let dir = scratch("sparse-refuse");
    let _r = sparse_host(&dir);
    let before = kernel_snapshot(&dir);
    for (input, key, value) in [
        (
            json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]}),
            "arrays[0].group_thread_cnt",
            4,
        ),
        (json!({"thread_policy": 8}), "thread_policy", 8),
        (
            json!({"thread_policy": {"mode": "fixed", "value": 2}, "persist": true}),
            "thread_policy",
            2,
        ),
    ] {
        let out = run(&dir, input.clone());
        assert_eq!(out.code, 2, "{input}: {}", out.stdout);
        let msg = out.msg();
        assert!(
            msg.starts_with(&format!(
                "{key}: {value} is not allowed on this host; allowed: 0 (\"off\"). Its possible \
                 NUMA node ids are sparse (2 nodes, the highest id 8)"
            )),
            "{msg}"
        );
        names_the_kernel_functions(msg);
    }
    assert_same_values(&before, &kernel_snapshot(&dir));
    assert!(!dir.join("etc/mdtune").exists(), "a refused run persisted");
    assert!(
        !dir.join("run/mdtune.lock").exists(),
        "a refused run took the lock"
    );
    // 0 and "off" are what such a host allows.
    for ok in [json!({"thread_policy": "off"}), json!({"thread_policy": 0})] {
        let out = run(&dir, ok);
        assert_eq!(out.code, 0, "{}", out.stdout);
    }
}

#[test]
fn sparse_node_ids_refuse_a_persisted_thread_count_on_udev_replay_and_keep_auto_at_zero() {
    let dir = scratch("sparse-udev");
    let mut r = FakeRoot::new(&dir, 64);
    nvme_raid5(&mut r, 16);
    r.set_nodes(2);
    let out = run(
        &dir,
        json!({"persist": true, "arrays": [{"name": "md0", "group_thread_cnt": 4}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
    // The drives move to a host whose firmware numbers its nodes 0 and 8; the array assembles
    // with the kernel's default and udev replays the persisted state: refused, nothing written.
    r.set_numa("0,8", Some("0,8"));
    r.set_md("md0", "group_thread_cnt", "0");
    let before = kernel_snapshot(&dir);
    let root = dir.display().to_string();
    let udev = run_args(&["--udev", "md0", "--root", &root], "", &[]);
    assert_eq!(udev.code, 1, "{}", udev.stdout);
    assert!(
        udev.msg().starts_with(
            "the persisted state: arrays[0].group_thread_cnt: 4 is not allowed on this host"
        ),
        "{}",
        udev.msg()
    );
    assert_same_values(&before, &kernel_snapshot(&dir));
    // Persisted auto: the replay puts 0 back over a value set by hand.
    let out = run(&dir, json!({"persist": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    r.set_md("md0", "group_thread_cnt", "8");
    let udev = run_args(&["--udev", "md0", "--root", &root], "", &[]);
    assert_eq!(udev.code, 0, "{}", udev.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}

#[test]
fn a_revert_on_sparse_node_ids_writes_zero_in_place_of_a_saved_thread_count() {
    let dir = scratch("sparse-revert");
    let mut r = FakeRoot::new(&dir, 64);
    nvme_raid5(&mut r, 16);
    r.set_nodes(2);
    r.set_md("md0", "group_thread_cnt", "6");
    let out = run(&dir, json!({"thread_policy": "off"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    r.set_numa("0,8", Some("0,8"));
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0", "6 restored");
    let warnings = out.json["warnings"].to_string();
    assert!(
        warnings.contains("md0: the saved group_thread_cnt 6 is not restored, 0 takes its place"),
        "{warnings}"
    );
}
