//! Restores in an order the kernel accepts (docs/reference.md §4, §6): a revert and a rollback
//! that put back a `preread_bypass_threshold` above the stripe cache in force, replayed against
//! the kernel's rules from the writes the real binary makes (strace).

use crate::auto_hosts::nvme_raid5;
use crate::common::{give_to_nobody_except, run_unprivileged, scratch, Run};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// The md attribute writes a run makes, in order, as `(array, attr, value)`, from strace
/// (`apt-get install strace`).
fn md_writes(root: &Path, input: &Value) -> (Run, Vec<(String, String, String)>) {
    let log = root.join("strace.log");
    let mut input = input.clone();
    input["root"] = Value::String(root.display().to_string());
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-y", "-qq", "-e", "trace=write", "-o"])
        .arg(&log)
        .args([crate::common::bin(), "-"]);
    let out = crate::common::run_command(cmd, &input.to_string());
    assert!(
        log.exists(),
        "strace did not run: apt-get install strace ({})",
        out.stderr
    );
    let text = fs::read_to_string(&log).unwrap();
    let mut writes = Vec::new();
    for line in text.lines() {
        // write(3</root/sys/devices/virtual/block/md0/md/stripe_cache_size>, "256", 3) = 3
        let Some(start) = line.find("write(") else {
            continue;
        };
        let rest = &line[start..];
        let (Some(lt), Some(gt)) = (rest.find('<'), rest.find('>')) else {
            continue;
        };
        let path = &rest[lt + 1..gt];
        let Some((array, attr)) = path
            .rsplit_once("/md/")
            .map(|(dev, attr)| (dev.rsplit('/').next().unwrap_or(""), attr))
        else {
            continue;
        };
        let value = rest[gt..]
            .split('"')
            .nth(1)
            .unwrap_or("")
            .trim_end_matches("\\n")
            .to_string();
        writes.push((array.to_string(), attr.to_string(), value));
    }
    (out, writes)
}

/// Replays `writes` as the kernel takes them, from `cache` and `threshold` in force: a
/// `preread_bypass_threshold` above the stripe cache in force is refused
/// (`raid5_store_preread_threshold`: EINVAL); `raid5_set_cache_size` never looks at the
/// threshold. Returns the first refused step.
fn first_refused(
    writes: &[(String, String, String)],
    mut cache: u64,
    mut threshold: u64,
) -> Option<String> {
    for (array, attr, value) in writes {
        let v: u64 = value.parse().unwrap_or(u64::MAX);
        match attr.as_str() {
            "stripe_cache_size" => cache = v,
            "preread_bypass_threshold" if v > cache => {
                return Some(format!(
                    "{array}: preread_bypass_threshold {v} above the stripe cache {cache} \
                     in force (writes: {writes:?})"
                ))
            }
            "preread_bypass_threshold" => threshold = v,
            _ => {}
        }
    }
    let _ = threshold;
    None
}

#[test]
fn a_revert_restores_a_threshold_above_the_cache_in_an_order_the_kernel_accepts() {
    if !needs(Requirement::Strace) {
        return;
    }
    let dir = scratch("revert-order");
    let mut r = FakeRoot::new(&dir, 8);
    nvme_raid5(&mut r, 4);
    // The kernel allows it: the threshold was set under a larger cache, then the cache lowered.
    r.set_md("md0", "stripe_cache_size", "256");
    r.set_md("md0", "preread_bypass_threshold", "1000");
    let tune = json!({"thread_policy": "off", "arrays": [
        {"name": "md0", "stripe_cache_size": 4096, "preread_bypass_threshold": 3000}]});
    let (out, writes) = md_writes(&dir, &tune);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(first_refused(&writes, 256, 1000), None);
    let (out, writes) = md_writes(&dir, &json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!writes.is_empty(), "the revert wrote nothing");
    assert_eq!(first_refused(&writes, 4096, 3000), None);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
    assert_eq!(r.read_md("md0", "preread_bypass_threshold"), "1000");
}

#[test]
fn a_rollback_restores_a_threshold_above_the_cache_in_an_order_the_kernel_accepts() {
    if !needs(Requirement::Root) {
        return;
    }
    for tool in ["setpriv", "chown"] {
        assert!(
            Command::new(tool).arg("--version").output().is_ok(),
            "{tool} is missing: apt-get install util-linux coreutils"
        );
    }
    let dir = scratch("rollback-order-values");
    let mut r = FakeRoot::new(&dir, 8);
    nvme_raid5(&mut r, 4);
    let d: Vec<String> = (0..3).map(|c| format!("nvme{c}n1")).collect();
    r.md("md1", &MdSpec::level("raid5", 2), &[&d[0], &d[1], &d[2]]);
    r.set_md("md0", "stripe_cache_size", "256");
    r.set_md("md0", "preread_bypass_threshold", "1000");
    // md1's group_thread_cnt is root's and read only: its write, after md0's, gets EACCES.
    give_to_nobody_except(&dir, &r.md_attr("md1", "group_thread_cnt"));
    let input = json!({"root": dir, "thread_policy": "off", "arrays": [
        {"name": "md0", "stripe_cache_size": 4096, "preread_bypass_threshold": 3000},
        {"name": "md1", "group_thread_cnt": 2}]});
    let out = run_unprivileged(&input);
    assert_eq!(out.code, 1, "{}", out.stdout);
    // From cache 4096 / threshold 3000 back to 256 / 1000: the threshold first (1000 fits under
    // 4096), then the cache; the other way round the kernel refuses 1000 above 256.
    assert_eq!(
        out.rolled_back(),
        ["md0 preread_bypass_threshold", "md0 stripe_cache_size"]
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
    assert_eq!(r.read_md("md0", "preread_bypass_threshold"), "1000");
}
