//! docs/reference.md §4, writes into a running sync: a write that suspends the array
//! (`group_thread_cnt`, `skip_copy`) goes into a running resync, recovery, check or repair only
//! with the sync paused around it, and the sync resumes from where it stopped; other writes go
//! in as they are; an external-metadata array holds the write back until its sync ends; the
//! report says which. A fake root's files do not act like md's, so each test plays md's sync
//! controls on them from a thread ([`Md`]) while the binary runs, as drivers/md/md.c does.

use crate::common::{needs, Requirement};
use crate::common::{run, run_args, scratch};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// What [`Md`] saw while the binary ran.
#[derive(Debug, Default)]
struct Seen {
    /// How often a running sync was stopped by `frozen`.
    stopped: usize,
    /// Each resume: `check from 4096`, `resync`.
    resumed: Vec<String>,
    /// The suspending values (`group_thread_cnt skip_copy`) each time they changed, and
    /// whether the sync was stopped at that moment.
    changes: Vec<(String, bool)>,
}

/// How the played md acts on `frozen`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// As every kernel from 5.10 to 7.x: the sync stops, and an interrupted check or repair keeps
    /// where it stood in `sync_min`.
    Keeps,
    /// The sync stops, but `sync_min` stays where it was (a kernel that does not keep it).
    Forgets,
    /// The sync never stops.
    Stubborn,
    /// The sync stops, and then `sync_action` refuses every write (made immutable).
    Jams,
}

/// md's sync controls on one array of a fake root, played from a thread as the kernel plays
/// them: `frozen` stops the running sync (`sync_completed` then reads `none`; an interrupted
/// check or repair keeps where it stood in `sync_min`, `md_do_sync`), `check` or `repair` starts
/// one at `sync_min`, `idle` lets a frozen resync or recovery start again from where it
/// stopped.
struct Md {
    quit: Arc<AtomicBool>,
    thread: JoinHandle<Seen>,
}

impl Md {
    fn play(r: &FakeRoot, md: &str, kernel_does: Kernel) -> Md {
        let path = |f: &str| r.md_attr(md, f);
        let files = [
            "sync_action",
            "sync_completed",
            "sync_min",
            "group_thread_cnt",
            "skip_copy",
        ]
        .map(path);
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let thread = thread::spawn(move || kernel(&files, &q, kernel_does));
        Md { quit, thread }
    }

    /// Lets the thread see the binary's last write, then stops it.
    fn seen(self) -> Seen {
        self.quit.store(true, Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_default().trim().to_string()
}

/// The thread of [`Md`]: one pass every millisecond; after `quit`, one more.
fn kernel(files: &[PathBuf; 5], quit: &AtomicBool, does: Kernel) -> Seen {
    let [action, completed, min, threads, skip] = files;
    let original = read(action);
    let total = read(completed)
        .split_once('/')
        .map(|(_, t)| t.trim().to_string())
        .unwrap_or_default();
    let (mut seen, mut stopped, mut at) = (Seen::default(), false, String::new());
    let mut last = format!("{} {}", read(threads), read(skip));
    loop {
        let ending = quit.load(Ordering::SeqCst);
        // The values first, with the state the sync had until now.
        let now = format!("{} {}", read(threads), read(skip));
        if now != last && !now.starts_with(' ') && !now.ends_with(' ') {
            seen.changes.push((now.clone(), stopped));
            last = now;
        }
        match read(action).as_str() {
            "frozen" if !stopped && does != Kernel::Stubborn => {
                at = read(completed)
                    .split_once('/')
                    .map(|(d, _)| d.trim().to_string())
                    .unwrap_or_default();
                if matches!(original.as_str(), "check" | "repair") && does == Kernel::Keeps {
                    fs::write(min, &at).unwrap();
                }
                if does == Kernel::Jams {
                    immutable(action, true);
                }
                fs::write(completed, "none").unwrap();
                (stopped, seen.stopped) = (true, seen.stopped + 1);
            }
            a @ ("check" | "repair") if stopped => {
                let from = read(min);
                fs::write(completed, format!("{from} / {total}")).unwrap();
                seen.resumed.push(format!("{a} from {from}"));
                stopped = false;
            }
            "idle" if stopped => {
                fs::write(action, &original).unwrap();
                fs::write(completed, format!("{at} / {total}")).unwrap();
                seen.resumed.push(original.clone());
                stopped = false;
            }
            _ => {}
        }
        if ending {
            if does == Kernel::Jams {
                immutable(action, false);
            }
            return seen;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// `chattr +i` (`on`) or `-i` on `path`: even root's open for writing then fails (EPERM).
fn immutable(path: &Path, on: bool) {
    let flag = if on { "+i" } else { "-i" };
    let ok = Command::new("chattr").arg(flag).arg(path).status();
    assert!(
        matches!(ok, Ok(s) if s.success()),
        "chattr {flag} {} failed: this test needs root, e2fsprogs (apt-get install e2fsprogs) \
         and a filesystem with immutable files (ext4, xfs) under $TMPDIR",
        path.display()
    );
}

/// A raid5 `md0` of three 8-queue drives whose `sync_action` shows `action`, at 4096 of 65536
/// sectors; `group_thread_cnt` 0.
fn syncing(name: &str, action: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let mut r = FakeRoot::new(&dir, 32);
    let drives: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    let mut spec = MdSpec::level("raid5", 1);
    spec.sync_action = action.into();
    spec.sync_completed = "4096 / 65536".into();
    r.md("md0", &spec, &d);
    (dir, r)
}

/// Runs `input` on `dir` with the sync stop wait `wait` (seconds).
fn run_waiting(dir: &Path, mut input: Value, wait: &str) -> (Value, i32) {
    input["root"] = json!(dir.display().to_string());
    let out = run_args(
        &["-"],
        &input.to_string(),
        &[("MDTUNE_SYNC_STOP_WAIT", wait)],
    );
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    (out.json, out.code)
}

#[test]
fn a_thread_count_write_into_a_running_check_pauses_it_and_resumes_it_where_it_stopped() {
    let (dir, r) = syncing("pause-check", "check");
    let md = Md::play(&r, "md0", Kernel::Keeps);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "skip_copy": true}]}),
    );
    let seen = md.seen();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(seen.stopped, 1, "{seen:?}");
    assert_eq!(seen.resumed, ["check from 4096"], "{seen:?}");
    assert!(
        !seen.changes.is_empty() && seen.changes.iter().all(|(_, stopped)| *stopped),
        "a value changed while the check ran: {seen:?}"
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
    assert_eq!(r.read_md("md0", "skip_copy"), "1");
    assert_eq!(r.read_md("md0", "sync_action"), "check");
    assert_eq!(r.read_md("md0", "sync_min"), "4096");
    assert_eq!(
        out.array("md0")["sync_pause"],
        json!({"action": "check", "settings": ["group_thread_cnt", "skip_copy"],
               "paused_at": [4096, 65536], "resumed_from": 4096, "resumed": true})
    );
    assert_eq!(
        out.msg(),
        "md0: group_thread_cnt 0 -> 4, skip_copy false -> true (check paused at 4096 / 65536, \
         resumed from 4096)"
    );
}

#[test]
fn a_check_whose_kernel_keeps_no_position_resumes_from_its_progress_as_mdcheck_does() {
    let (dir, r) = syncing("pause-mdcheck", "repair");
    let md = Md::play(&r, "md0", Kernel::Forgets);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]}),
    );
    let seen = md.seen();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(seen.resumed, ["repair from 4096"], "{seen:?}");
    assert_eq!(out.array("md0")["sync_pause"]["resumed_from"], 4096);
}

#[test]
fn a_resync_is_frozen_around_the_write_and_let_go_from_the_kernels_checkpoint() {
    let (dir, r) = syncing("pause-resync", "resync");
    let md = Md::play(&r, "md0", Kernel::Keeps);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 2}]}),
    );
    let seen = md.seen();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(seen.resumed, ["resync"], "{seen:?}");
    assert!(seen.changes.iter().all(|(_, stopped)| *stopped), "{seen:?}");
    assert_eq!(r.read_md("md0", "sync_action"), "resync");
    assert_eq!(r.read_md("md0", "sync_completed"), "4096 / 65536");
    let p = &out.array("md0")["sync_pause"];
    assert_eq!(
        (p["action"].as_str(), &p["resumed_from"]),
        (Some("resync"), &Value::Null)
    );
    assert!(
        out.msg()
            .ends_with("(resync paused at 4096 / 65536, resumed from the kernel's checkpoint)"),
        "{}",
        out.msg()
    );
}

#[test]
fn writes_that_do_not_suspend_the_array_go_into_a_running_sync_unpaused() {
    let (dir, r) = syncing("pause-none", "check");
    let md = Md::play(&r, "md0", Kernel::Keeps);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096, "sync_speed_max": 50000}],
               "thread_policy": "off"}),
    );
    let seen = md.seen();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(seen.stopped, 0, "{seen:?}");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert!(
        out.array("md0").get("sync_pause").is_none(),
        "{}",
        out.stdout
    );
}

#[test]
fn check_mode_and_query_say_a_run_pauses_the_check_and_write_nothing() {
    let (dir, r) = syncing("pause-check-mode", "check");
    let input = json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]});
    let mut check = input.clone();
    check["check_mode"] = json!(true);
    let out = run(&dir, check);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.msg(),
        "check mode: md0: group_thread_cnt 0 -> 4 (would pause the check around the writes)"
    );
    assert_eq!(
        out.array("md0")["sync_pause"],
        json!({"action": "check", "settings": ["group_thread_cnt"]})
    );
    let mut query = input;
    query["state"] = json!("query");
    let out = run(&dir, query);
    assert!(
        out.msg()
            .ends_with("(a run pauses the check around the writes)"),
        "{}",
        out.msg()
    );
    assert_eq!(r.read_md("md0", "sync_action"), "check");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}

#[test]
fn a_sync_that_does_not_stop_is_resumed_and_nothing_is_written() {
    let (dir, r) = syncing("pause-stubborn", "check");
    let md = Md::play(&r, "md0", Kernel::Stubborn);
    let (json, code) = run_waiting(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]}),
        "0.3",
    );
    let seen = md.seen();
    assert_eq!(code, 1, "{json}");
    assert!(seen.changes.is_empty(), "{seen:?}");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md0", "sync_action"), "check");
    let msg = json["msg"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "md0: group_thread_cnt: not written: the check it runs did not stop within 300 ms"
        ) && msg.contains("the check was resumed")
            && msg.contains("no value is left changed"),
        "{msg}"
    );
    assert_eq!(json["changed"], false);
}

#[test]
fn a_rollback_pauses_the_sync_again_to_restore_the_thread_count() {
    if !needs(Requirement::ImmutableFiles) {
        return;
    }
    let (dir, mut r) = syncing("pause-rollback", "check");
    let drives: Vec<String> = (10..13).map(|c| r.nvme(c, 8)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md1", &MdSpec::level("raid5", 2), &d);
    let attr = r.md_attr("md1", "stripe_cache_size");
    immutable(&attr, true);
    let md = Md::play(&r, "md0", Kernel::Keeps);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4},
                          {"name": "md1", "stripe_cache_size": 4096}],
               "thread_policy": "off"}),
    );
    immutable(&attr, false);
    let seen = md.seen();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.rolled_back(), ["md0 group_thread_cnt"]);
    // Paused for the write, resumed before md1's, paused again for the restore, resumed: md0's
    // thread count changed twice, each time with the check stopped. (The two pauses may come
    // too close together for this thread to see the check run in between. On a loaded machine
    // the write, the resume, the second freeze and the restore can all fall between two of its
    // passes, as they may on a kernel, where `sync_completed` reads `none` until a resumed sync
    // runs: then it saw no change at all, and only its stop and the resume tell.)
    if seen.changes.is_empty() {
        assert!(seen.stopped >= 1, "{seen:?}");
    } else {
        assert_eq!(
            seen.changes,
            [("4 0".to_string(), true), ("0 0".to_string(), true)],
            "{seen:?}"
        );
    }
    assert_eq!(
        seen.resumed.last().map(String::as_str),
        Some("check from 4096"),
        "{seen:?}"
    );
    let paused = out.array("md0")["sync_pause"].clone();
    assert_eq!(paused["resumed"], true, "{paused}");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md0", "sync_action"), "check");
}

#[test]
fn an_external_metadata_array_holds_the_write_back_while_its_sync_runs() {
    let dir = scratch("pause-imsm");
    let mut r = FakeRoot::new(&dir, 32);
    let drives: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md127", &MdSpec::imsm_container(9), &d);
    let mut vol = MdSpec::imsm_member("md127", 0, 10);
    vol.sync_action = "resync".into();
    vol.sync_completed = "4096 / 65536".into();
    r.md("md126", &vol, &d);
    r.mdmon("md127", 4242, None);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md126", "group_thread_cnt": 4}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.msg(),
        "md126: group_thread_cnt 0 -> 4 held back (resync running)"
    );
    let held = &out.setting("md126", "group_thread_cnt")["held_back"]["reason"];
    assert!(
        held.as_str()
            .is_some_and(|r| r.contains("fa1944bbe622") && r.contains("mdmon")),
        "{held}"
    );
    assert_eq!(r.read_md("md126", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md126", "sync_action"), "resync");
}

#[test]
fn a_sync_that_cannot_be_resumed_fails_the_run_rolls_back_and_says_how_to_resume_it() {
    if !needs(Requirement::ImmutableFiles) {
        return;
    }
    let (dir, r) = syncing("pause-jammed", "check");
    let md = Md::play(&r, "md0", Kernel::Jams);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]}),
    );
    let seen = md.seen();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(seen.changes.iter().all(|(_, stopped)| *stopped), "{seen:?}");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(out.rolled_back(), ["md0 group_thread_cnt"]);
    let msg = out.msg();
    assert!(
        msg.starts_with("md0: the check paused for this run's writes could not be resumed: ")
            && msg.contains(
                "NOT RESUMED: md0: the check is left frozen (paused at 4096 / 65536): resume it \
                 with mdtune --tick (or by hand: echo 4096 > /sys/block/md0/md/sync_min; echo \
                 check > /sys/block/md0/md/sync_action)"
            ),
        "{msg}"
    );
    assert_eq!(
        out.json["changed"], true,
        "a frozen check is left different"
    );
    assert_eq!(out.array("md0")["sync_pause"]["resumed"], false);
}

#[test]
fn a_udev_replay_during_a_resync_pauses_it_and_puts_every_value_in_force() {
    let (dir, r) = syncing("pause-udev", "idle");
    let persisted = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 1024}],
               "persist": true}),
    );
    assert_eq!(persisted.code, 0, "{}", persisted.stdout);
    // A boot after an unclean shutdown: the kernel's defaults, and the array resyncs.
    r.set_md("md0", "group_thread_cnt", "0");
    r.set_md("md0", "stripe_cache_size", "256");
    r.set_md("md0", "sync_action", "resync");
    r.set_md("md0", "sync_completed", "4096 / 65536");
    let md = Md::play(&r, "md0", Kernel::Keeps);
    let root = dir.display().to_string();
    let replay = run_args(&["--udev", "md0", "--root", &root], "", &[]);
    let seen = md.seen();
    assert_eq!(replay.code, 0, "{}", replay.stdout);
    assert_eq!(seen.resumed, ["resync"], "{seen:?}");
    assert!(
        !seen.changes.is_empty() && seen.changes.iter().all(|(_, stopped)| *stopped),
        "{seen:?}"
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "1024");
    assert_eq!(r.read_md("md0", "sync_action"), "resync");
    assert!(
        replay
            .msg()
            .ends_with("(resync paused at 4096 / 65536, resumed from the kernel's checkpoint)"),
        "{}",
        replay.msg()
    );
}
