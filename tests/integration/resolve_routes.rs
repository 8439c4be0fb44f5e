//! Both ways of resolving a path beneath the root (docs/reference.md §4; src/sys/resolve.rs):
//! every layout reads the same with `openat2` and `statx` failing ENOSYS as on an older kernel
//! (the walk), writes the same with and without `openat2`, a rename elsewhere on the host
//! during a run hides no array or member, and a disk's `device` link out of the root is not
//! followed by either. strace injects the failures and counts the calls, so
//! a change of system call shows here.

use crate::common::{needs, Requirement};
use crate::common::{run, scratch};
use crate::layouts::strs;
use mdtune_fakeroot::{FakeRoot, MdSpec, Use};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// Runs `mdtune -` with `input` under strace, tracing `openat2` and the calls in `missing`, each
/// of which fails with ENOSYS, as on an older kernel (`openat2` before 5.6, `statx` before
/// 4.11). Returns the report and how many calls of the first in `missing` (or `openat2`)
/// strace saw. The binary is the one `common::run` would start.
fn traced(root: &Path, mut input: Value, missing: &[&str]) -> (crate::common::Run, usize) {
    input["root"] = Value::String(root.display().to_string());
    let log = root.join(format!("traced-{}.strace", missing.join("-")));
    let counted = missing.first().copied().unwrap_or("openat2");
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o"])
        .arg(&log)
        .args(["-e", &format!("trace=openat2,{}", missing.join(","))]);
    if !missing.is_empty() {
        cmd.args(["-e", &format!("inject={}:error=ENOSYS", missing.join(","))]);
    }
    cmd.arg(crate::common::binary_for(root, &input)).arg("-");
    crate::common::require_strace();
    let out = crate::common::run_command(cmd, &input.to_string());
    let calls = fs::read_to_string(&log)
        .expect("strace wrote no log")
        .lines()
        .filter(|l| l.contains(&format!("{counted}(")))
        .count();
    fs::remove_file(&log).unwrap();
    (out, calls)
}

/// A host of every layout the inventory walks: partitions under LVM, stacked md, NVMe multipath
/// with a partition, dm-multipath, a rotational disk, a spare.
pub(crate) fn every_layout_host(dir: &Path) {
    let mut r = FakeRoot::new(dir, 64);
    let disks: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let parts: Vec<String> = disks.iter().map(|d| r.partition(d, 1)).collect();
    let lv = r.dm_linear(0, &[&parts[0]]);
    r.md(
        "md0",
        &MdSpec::level("raid5", 1),
        &[&lv, &parts[1], &parts[2]],
    );
    let a = r.nvme(10, 6);
    let b = r.nvme(11, 4);
    r.md("md10", &MdSpec::level("raid1", 2), &[&a, &b]);
    let c = r.nvme(12, 6);
    let d = r.nvme(13, 6);
    r.md("md11", &MdSpec::level("raid1", 3), &[&c, &d]);
    r.md("md12", &MdSpec::level("raid5", 4), &["md10", "md11"]);
    let head = r.nvme_multipath(20, &[(20, 4), (30, 6)]);
    let head_part = r.partition(&head, 1);
    let sdx = r.scsi("sdx", 2);
    let sdy = r.scsi("sdy", 2);
    let mpath = r.dm_multipath(5, &[&sdx, &sdy]);
    let hdd = r.hdd("sdz", 48);
    let spare = r.nvme(40, 2);
    r.md_with(
        "md20",
        &MdSpec::level("raid5", 5),
        &[
            (&head_part, Use::Active),
            (&mpath, Use::Active),
            (&hdd, Use::Rebuilding),
            (&spare, Use::Spare),
        ],
    );
}

#[test]
fn every_layout_reads_the_same_without_openat2_or_statx() {
    if !needs(Requirement::Strace) {
        return;
    }
    // Kernels before 5.6 have no openat2: each path through links is then walked one component
    // at a time, instead of one confined openat2. Same host, same answer, every member and path
    // included.
    let dir = scratch("no-openat2");
    every_layout_host(&dir);
    for input in [json!({"state": "query"}), json!({"check_mode": true})] {
        let (with, calls) = traced(&dir, input.clone(), &[]);
        assert_eq!(with.code, 0, "{}", with.stdout);
        assert!(
            calls > 0,
            "{input}: the run without injection made no openat2 call"
        );
        // statx counts mq/ and finds partition files without opening them. Without each, and
        // without both (a 4.x kernel), the same answer.
        for missing in [&["openat2"][..], &["statx"], &["openat2", "statx"]] {
            let (without, injected) = traced(&dir, input.clone(), missing);
            assert!(
                injected > 0,
                "{input}: strace injected no {} failure",
                missing[0]
            );
            assert_eq!(
                with.json, without.json,
                "{input}: the run without {missing:?} disagrees"
            );
        }
        assert_eq!(
            with.array("md0")["members"][0]["paths"][0]["name"],
            "nvme0n1"
        );
        assert_eq!(with.array("md12")["hw_queues"], 4);
        assert_eq!(
            strs(&with.array("md20")["members"], "device"),
            ["dm-5", "nvme20n1", "nvme40n1", "sdz"]
        );
    }
}

#[test]
fn every_layout_writes_the_same_with_and_without_openat2() {
    if !needs(Requirement::Strace) {
        return;
    }
    // The writes, their read-backs, the lock, the saved originals and the persisted files are
    // opened beneath the root: with openat2, or by a walk that opens each directory with
    // O_NOFOLLOW and resolves the links on the way itself (sys/block/<md> is one). Two identical
    // hosts, one run each way: the same report and the same files afterwards.
    let input = json!({
        "persist": true,
        "speed_limit_max": 300000,
        "arrays": [{"name": "md*", "stripe_cache_size": 4096}]
    });
    let (a, b) = (scratch("writes-openat2"), scratch("writes-walk"));
    every_layout_host(&a);
    every_layout_host(&b);
    let (with, calls) = traced(&a, input.clone(), &[]);
    let (without, injected) = traced(&b, input, &["openat2"]);
    assert_eq!(with.code, 0, "{}", with.stdout);
    assert!(
        calls > 0 && injected > 0,
        "openat2: {calls} calls, {injected} injected"
    );
    // The roots' own paths (in the persisted input, the udev reload's note) are the one
    // difference.
    let unrooted = |text: &str, dir: &Path| text.replace(&dir.display().to_string(), "ROOT");
    assert_eq!(
        unrooted(&with.stdout, &a),
        unrooted(&without.stdout, &b),
        "the two ways disagree"
    );
    assert_eq!(with.json["changed"], true, "{}", with.stdout);
    // And the time each run wrote: the manifest's and the lock's record of the last run.
    let untimed = |text: String| match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(mut o)) => {
            for key in ["written", "written_unix", "time", "unix"] {
                o.remove(key);
            }
            Value::Object(o).to_string()
        }
        _ => text,
    };
    let files = |dir: &Path| -> Vec<(std::path::PathBuf, String)> {
        crate::common::snapshot(dir)
            .into_iter()
            .map(|(p, c, _)| {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                (rel, untimed(unrooted(&String::from_utf8_lossy(&c), dir)))
            })
            .collect()
    };
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa, fb, "the two ways left different files");
    for f in [
        "etc/mdtune/mdtune.json",
        "run/mdtune.lock",
        "proc/sys/dev/raid/speed_limit_max",
    ] {
        assert!(fa.iter().any(|(p, _)| p == Path::new(f)), "{f} not written");
    }
}

#[test]
fn renames_elsewhere_on_the_host_do_not_hide_arrays_or_members() {
    // A confined walk through sysfs's `..` links fails with EAGAIN when any rename anywhere on
    // the system races with it (openat2(2)); real hosts rename files all the time (every atomic
    // write). The walk must be made again, never taken for a missing array or member.
    let dir = scratch("renames");
    let mut r = FakeRoot::new(&dir, 64);
    for n in 0..6 {
        let disks: Vec<String> = (0..4).map(|c| r.nvme(n * 10 + c, 8)).collect();
        let d: Vec<&str> = disks.iter().map(String::as_str).collect();
        r.md(&format!("md{n}"), &MdSpec::level("raid5", n + 1), &d);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let renamers: Vec<_> = (0..2)
        .map(|t| {
            let (stop, base) = (stop.clone(), dir.join(format!("churn{t}")));
            std::thread::spawn(move || {
                fs::write(&base, "x").unwrap();
                let other = base.with_extension("b");
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    fs::rename(&base, &other).unwrap();
                    fs::rename(&other, &base).unwrap();
                }
            })
        })
        .collect();
    for round in 0..20 {
        let out = run(&dir, json!({"state": "query"}));
        assert_eq!(out.code, 0, "{}", out.stdout);
        let arrays = out.json["arrays"].as_array().unwrap();
        assert_eq!(arrays.len(), 6, "round {round}: {}", out.stdout);
        for a in arrays {
            assert_eq!(a["hw_queues"], 8, "round {round}: {a}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in renamers {
        t.join().unwrap();
    }
}

#[test]
fn a_disks_device_link_out_of_the_root_is_not_followed_to_decide_that_it_is_scsi() {
    if !needs(Requirement::Strace) {
        return;
    }
    // A disk counts as one queue when it is SCSI: its `device` link leads to a SCSI device with
    // `scsi_disk/`. Here the link leads out of the root, to a directory that has
    // one: it must not be followed, with or without openat2; the member's queues are then
    // unknown and the run says why.
    let dir = scratch("scsi-link-out");
    let mut r = FakeRoot::new(&dir, 64);
    let hdd = r.hdd("sdz", 4);
    let nvme = r.nvme(0, 8);
    r.md("md0", &MdSpec::level("raid1", 1), &[&hdd, &nvme]);
    let outside = scratch("scsi-link-out-elsewhere");
    fs::create_dir_all(outside.join("scsi_disk/9:0:0:0")).unwrap();
    let link = r.device_dir(&hdd).join("device");
    fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    for missing in [&[][..], &["openat2"]] {
        let (out, _) = traced(&dir, json!({"state": "query"}), missing);
        assert_eq!(out.code, 0, "{}", out.stdout);
        let members = &out.array("md0")["members"];
        let sdz = members
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "sdz")
            .unwrap();
        assert_eq!(sdz["hw_queues"], Value::Null, "without {missing:?}: {sdz}");
        let problem = sdz["problem"].as_str().unwrap_or_default();
        assert!(
            problem.contains("does not resolve inside sys/"),
            "without {missing:?}: {sdz}"
        );
    }
}
