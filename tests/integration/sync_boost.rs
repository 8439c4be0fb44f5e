//! docs/reference.md §2 `sync_boost`, §1 `--tick` (b): a boost's values are in force only while
//! the array runs one of its syncs. A player thread acts as md on a fake root ([`Md`]): it runs
//! a raid10 resync (or a check), moving `sync_completed`, until told to end it, then reads
//! `idle` as md does once the sync thread is reaped (no uevent: only `--tick` or a later run
//! sees the end). The boost's values are in force while it runs, the earlier values are back
//! after one tick, a second tick changes nothing, a value changed by hand is left alone and
//! named, an idle array gets nothing, `during: [check]` boosts a check, and a persisted boost
//! comes back through `--udev` (and `--tick`) during a resync after a reboot.

use crate::common::{run, run_args, scratch, Run};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// md playing a sync of `md0` until [`Md::end`].
struct Md {
    end: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Md {
    /// Starts `action` (`resync`, `check`) on `md0`.
    fn run(r: &FakeRoot, action: &'static str) -> Md {
        let files =
            ["sync_action", "sync_completed", "last_sync_action"].map(|f| r.md_attr("md0", f));
        let end = Arc::new(AtomicBool::new(false));
        let e = end.clone();
        std::fs::write(&files[0], action).unwrap();
        let thread = thread::spawn(move || {
            let [act, completed, last] = files;
            let mut done = 0u64;
            while !e.load(Ordering::SeqCst) {
                done = (done + 1024).min(131_072);
                std::fs::write(&completed, format!("{done} / 131072")).unwrap();
                thread::sleep(Duration::from_millis(20));
            }
            // md_reap_sync_thread: idle, no sync thread, the action remembered.
            std::fs::write(&completed, "none").unwrap();
            std::fs::write(&last, action).unwrap();
            std::fs::write(&act, "idle").unwrap();
        });
        Md { end, thread }
    }

    fn end(self) {
        self.end.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
    }
}

/// A raid10 `md0` over 4 NVMe drives, idle, with the kernel's sync limits.
fn raid10(label: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(label).join("root");
    let mut r = FakeRoot::new(&dir, 8);
    let drives: Vec<String> = (0..4).map(|c| r.nvme(c, 8)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid10", 1), &d);
    (dir, r)
}

fn input() -> Value {
    json!({"arrays": [{"name": "md0", "sync_speed_min": 50000,
        "sync_boost": {"sync_speed_min": 500_000, "sync_speed_max": 900_000}}]})
}

fn tick(dir: &Path) -> Run {
    run_args(&["--tick", "--root", dir.to_str().unwrap()], "", &[])
}

fn limits(r: &FakeRoot) -> [String; 2] {
    ["sync_speed_min", "sync_speed_max"].map(|f| r.read_md("md0", f))
}

fn record(dir: &Path) -> PathBuf {
    dir.join("run/mdtune/boost-md0.json")
}

#[test]
fn a_raid10_resync_runs_boosted_and_the_tick_after_its_end_puts_the_limits_back() {
    let (dir, r) = raid10("boost-resync");
    // Idle: the plain value only; the boost writes nothing until a sync starts.
    let idle = run(&dir, input());
    assert_eq!(idle.code, 0, "{}", idle.stdout);
    assert_eq!(limits(&r), ["50000", "200000 (system)"]);
    assert!(!record(&dir).exists());
    assert_eq!(idle.array("md0")["sync_boost"]["active"], false);
    let md = Md::run(&r, "resync");
    let boosted = run(&dir, input());
    assert_eq!(boosted.code, 0, "{}", boosted.stdout);
    assert_eq!(limits(&r), ["500000", "900000"]);
    assert!(
        boosted.msg().contains("sync_boost while the resync runs"),
        "{}",
        boosted.msg()
    );
    let b = &boosted.array("md0")["sync_boost"];
    assert_eq!(b["active"], true);
    assert_eq!(b["during"], json!(["resync", "recover", "reshape"]));
    assert_eq!(
        b["limits"],
        json!({"sync_speed_min": 500_000, "sync_speed_max": 900_000})
    );
    assert_eq!(
        b["saved"],
        json!({"sync_speed_min": 50000, "sync_speed_max": "system"})
    );
    assert!(b["since"].as_u64().is_some());
    let mode = std::fs::metadata(record(&dir)).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    // While boosted the boost's values are the wanted ones; a tick leaves the running sync be.
    let mut query = input();
    query["state"] = json!("query");
    assert_eq!(run(&dir, query).json["compliant"], true);
    assert_eq!(tick(&dir).json["changed"], false);
    assert_eq!(limits(&r), ["500000", "900000"]);
    // --show, --verify and the metrics say it is in force, and since when.
    let show = text(&dir, "--show");
    assert!(
        show.contains("boost: sync_speed_max system -> 900000, sync_speed_min 50000 -> 500000 while the resync runs (since 20"),
        "{show}"
    );
    assert!(text(&dir, "--verify").contains("md0 boost: sync_speed_max"));
    let active = "mdtune_array_sync_boost_active{array=\"md0\",device=\"md0\"}";
    assert!(text(&dir, "--metrics").contains(&format!("{active} 1")));
    md.end();
    let t = tick(&dir);
    assert_eq!(t.code, 0, "{}", t.stdout);
    assert_eq!(t.json["changed"], true);
    assert_eq!(limits(&r), ["50000", "system"]);
    assert!(!record(&dir).exists());
    let ended = &t.json["ended"][0];
    assert_eq!(ended["array"], "md0");
    assert_eq!(ended["sync"], "resync");
    assert_eq!(
        ended["restored"]["sync_speed_min"],
        json!({"from": 500_000, "to": 50000})
    );
    assert_eq!(ended["left_alone"], json!({}));
    // Idempotent: the second tick has nothing to do.
    let again = tick(&dir);
    assert_eq!(
        (again.json["changed"].clone(), again.msg()),
        (json!(false), "nothing to do")
    );
    assert_eq!(limits(&r), ["50000", "system"]);
    assert!(text(&dir, "--metrics").contains(&format!("{active} 0")));
}

/// What `mdtune FLAG --root DIR` prints.
fn text(dir: &Path, flag: &str) -> String {
    let out = std::process::Command::new(crate::common::bin())
        .args([flag, "--root", dir.to_str().unwrap()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_value_changed_by_hand_during_the_boost_is_left_alone_and_named() {
    let (dir, r) = raid10("boost-by-hand");
    let md = Md::run(&r, "resync");
    assert_eq!(run(&dir, input()).code, 0);
    r.set_md("md0", "sync_speed_max", "700000");
    md.end();
    // Any later run ends it too, before it reads the host.
    let later = run(
        &dir,
        json!({"arrays": [{"name": "md0", "sync_speed_min": 50000}]}),
    );
    assert_eq!(later.code, 0, "{}", later.stdout);
    assert_eq!(limits(&r), ["50000", "700000"]);
    let ended = &later.json["boosts_ended"][0];
    assert_eq!(
        ended["left_alone"]["sync_speed_max"],
        json!({"value": 700_000, "boost": 900_000})
    );
    assert!(
        later
            .msg()
            .contains("sync_speed_max left alone at 700000 (changed by hand during the boost)"),
        "{}",
        later.msg()
    );
    assert!(!record(&dir).exists());
}

#[test]
fn a_check_is_boosted_only_when_during_names_it() {
    let (dir, r) = raid10("boost-check");
    let md = Md::run(&r, "check");
    // The default during (resync, recover, reshape) leaves a check alone.
    assert_eq!(run(&dir, input()).code, 0);
    assert_eq!(limits(&r), ["50000", "200000 (system)"]);
    let check = json!({"arrays": [{"name": "md*",
        "sync_boost": {"sync_speed_max": 900_000, "during": ["check"]}}]});
    assert_eq!(run(&dir, check).code, 0);
    assert_eq!(limits(&r)[1], "900000");
    md.end();
    let t = tick(&dir);
    assert_eq!(t.json["ended"][0]["sync"], "check", "{}", t.stdout);
    assert_eq!(limits(&r)[1], "system");
    let bad = run_args(
        &["-"],
        &json!({"root": dir, "arrays": [{"name": "md0",
            "sync_boost": {"sync_speed_max": 1, "during": ["scrub"]}}]})
        .to_string(),
        &[],
    );
    assert_eq!(bad.code, 2);
    assert!(bad.msg().starts_with("arrays[0].sync_boost.during[0]: \"scrub\" is not allowed; expected a non-empty list of resync, recover, reshape, check, repair"), "{}", bad.msg());
}

#[test]
fn a_persisted_boost_comes_back_with_the_resync_after_a_reboot() {
    let (dir, r) = raid10("boost-persisted");
    let mut persisted = input();
    persisted["persist"] = json!(true);
    assert_eq!(run(&dir, persisted).code, 0);
    // A reboot: the kernel's values, run/ empty; the array assembles dirty and resyncs.
    r.set_md("md0", "sync_speed_min", "1000 (system)");
    std::fs::remove_dir_all(dir.join("run/mdtune")).ok();
    let md = Md::run(&r, "resync");
    let udev = run_args(&["--udev", "md0", "--root", dir.to_str().unwrap()], "", &[]);
    assert_eq!(udev.code, 0, "{}", udev.stdout);
    assert_eq!(limits(&r), ["500000", "900000"]);
    assert!(record(&dir).exists());
    md.end();
    assert_eq!(tick(&dir).json["ended"][0]["array"], "md0");
    // The steady state is the persisted plain value.
    assert_eq!(limits(&r), ["50000", "system"]);
    // Without a udev event (a spare's recovery), the tick itself starts the persisted boost.
    let md = Md::run(&r, "recover");
    let t = tick(&dir);
    assert_eq!(t.json["boosted"][0]["sync"], "recover", "{}", t.stdout);
    assert_eq!(limits(&r), ["500000", "900000"]);
    assert_eq!(tick(&dir).json["changed"], false);
    md.end();
    tick(&dir);
    assert_eq!(limits(&r), ["50000", "system"]);
    assert_eq!(tick(&dir).msg(), "nothing to do");
}
