//! One run at a time per host (docs/reference.md §4): the lock under `run/` serialises concurrent
//! runs of the real binary, and a run that cannot get it within its bounded wait fails with a
//! message a person can act on, having written nothing.

use crate::common::{
    assert_same_values, bin, hold_lock, kernel_snapshot, persisted_root, run, run_args, scratch,
};
use mdtune_fakeroot::{bench_host, demo_host};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ARRAYS: u32 = 12;

#[test]
fn eight_parallel_runs_are_serialised_by_the_lock_and_each_reports_what_it_did() {
    let dir = scratch("parallel");
    // Enough arrays that a run takes a while: an interleaving would show as a run that saw some
    // arrays before and some after another run's writes.
    let r = bench_host(&dir, ARRAYS, 2, 4);
    let wanted: Vec<(u64, u64)> = (0..8).map(|i| (1024 + 512 * i, i + 1)).collect();
    let mut children = Vec::new();
    for &(cache, threads) in &wanted {
        let input = json!({"root": dir, "arrays": [{"name": "md*", "stripe_cache_size": cache,
            "group_thread_cnt": threads}]});
        let mut child = Command::new(bin())
            .arg("-")
            .env("MDTUNE_LOCK_WAIT", "120")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        crate::common::send_input(&mut child, &input);
        children.push(child);
    }
    // Per run: (before, after) of both settings, the same on every array or the run interleaved.
    let mut runs: Vec<((Value, Value), (Value, Value))> = Vec::new();
    for (child, &(cache, threads)) in children.into_iter().zip(&wanted) {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(report["failed"], false);
        let arrays = report["arrays"].as_array().unwrap();
        assert_eq!(arrays.len(), ARRAYS as usize);
        let seen: Vec<_> = arrays
            .iter()
            .map(|a| {
                let s = &a["settings"];
                (
                    s["stripe_cache_size"]["before"].clone(),
                    s["group_thread_cnt"]["before"].clone(),
                )
            })
            .collect();
        assert!(
            seen.iter().all(|b| *b == seen[0]),
            "a run saw another run half done: {seen:?}"
        );
        for a in arrays {
            let s = &a["settings"];
            assert_eq!(s["stripe_cache_size"]["after"], cache, "{stdout}");
            assert_eq!(s["group_thread_cnt"]["after"], threads, "{stdout}");
            assert_eq!(s["stripe_cache_size"]["changed"], true, "{stdout}");
        }
        runs.push((seen[0].clone(), (json!(cache), json!(threads))));
    }
    // The reports chain: each run's before is the previous run's after, starting from the
    // kernel defaults; every run appears exactly once.
    let by_before: BTreeMap<String, usize> = runs
        .iter()
        .enumerate()
        .map(|(i, (before, _))| (format!("{before:?}"), i))
        .collect();
    assert_eq!(by_before.len(), runs.len(), "two runs saw the same state");
    let mut state = (json!(256), json!(0));
    let mut order = Vec::new();
    while let Some(&i) = by_before.get(&format!("{state:?}")) {
        order.push(i);
        state = runs[i].1.clone();
    }
    assert_eq!(
        order.len(),
        runs.len(),
        "the reports do not chain: {runs:?}"
    );
    // The host ends in the last run's desired state.
    for a in 0..ARRAYS {
        let md = format!("md{a}");
        assert_eq!(r.read_md(&md, "stripe_cache_size"), state.0.to_string());
        assert_eq!(r.read_md(&md, "group_thread_cnt"), state.1.to_string());
    }
}

#[test]
fn a_run_that_cannot_get_the_lock_in_time_fails_clearly_and_writes_nothing() {
    let dir = scratch("lock-timeout");
    demo_host(&dir);
    let lock_path = dir.join("run/mdtune.lock");
    let held = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let before = kernel_snapshot(&dir);
    let input = json!({"root": dir, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let start = Instant::now();
    let out = run_args(&["-"], &input.to_string(), &[("MDTUNE_LOCK_WAIT", "0.3")]);
    let took = start.elapsed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json["failed"], true);
    assert_eq!(out.json["changed"], false);
    let msg = out.msg();
    assert!(
        msg.contains("another mdtune run holds") && msg.contains("run/mdtune.lock"),
        "{msg}"
    );
    assert!(
        msg.contains("gave up after waiting 0."),
        "the message says how long it waited: {msg}"
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "waited {took:?}"
    );
    assert_same_values(&before, &kernel_snapshot(&dir));

    // Released, the same run goes through.
    rustix::fs::flock(&held, rustix::fs::FlockOperation::Unlock).unwrap();
    let out = run(&dir, input);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.setting("md0", "stripe_cache_size")["after"], 4096);
}

#[test]
fn a_run_waits_for_the_lock_and_then_proceeds() {
    let dir = scratch("lock-wait");
    let r = demo_host(&dir);
    let held = hold_lock(&dir);
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        drop(held);
    });
    let input = json!({"root": dir, "arrays": [{"name": "md0", "stripe_cache_size": 2048}]});
    let start = Instant::now();
    let out = run_args(&["-"], &input.to_string(), &[("MDTUNE_LOCK_WAIT", "30")]);
    release.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(start.elapsed() >= Duration::from_millis(400));
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "2048");
}

#[test]
fn check_mode_and_query_never_wait_for_the_lock() {
    let dir = scratch("lock-readonly");
    demo_host(&dir);
    let held = hold_lock(&dir);
    for extra in [json!({"check_mode": true}), json!({"state": "query"})] {
        let mut input =
            json!({"root": dir, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
        input
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let out = run_args(&["-"], &input.to_string(), &[("MDTUNE_LOCK_WAIT", "0")]);
        assert_eq!(out.code, 0, "{}", out.stdout);
    }
    drop(held);
    let _ = fs::remove_file(dir.join("run/mdtune.lock"));
}

#[test]
fn a_udev_replay_takes_the_same_lock_and_gives_up_in_bounded_time() {
    let (dir, r) = persisted_root("udev-lock");
    let held = hold_lock(&dir);
    let root = dir.display().to_string();
    let udev = || {
        Command::new(bin())
            .args(["--udev", "md0", "--root", &root])
            .env("MDTUNE_LOCK_WAIT", "0.3")
            .output()
            .unwrap()
    };
    let start = Instant::now();
    let blocked = udev();
    assert_eq!(blocked.status.code(), Some(1));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
    drop(held);
    assert_eq!(udev().status.code(), Some(0));
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
}
