//! docs/reference.md §4, "A pause that always ends": a pause is recorded under `run/mdtune/`
//! before `frozen` is written and removed after the resume; SIGINT, SIGTERM and SIGHUP between
//! the two finish the resume first and exit with the failure JSON; a run killed mid-pause
//! (SIGKILL) leaves a record that the next run resumes from, and that `--verify`, `--show` and
//! `--metrics` name; a freeze mdtune did not make is waited for and never resumed; `sync_min`
//! and `sync_max` read before the freeze are put back, also for a `delayed` check; a repair is
//! not paused on a kernel where it would resume as a resync. The played md ([`Md`]) acts as
//! drivers/md/md.c does on each of these.

use crate::common::{bin, logged, run_args, scratch, syslog};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How the played md's sync thread takes a `frozen`.
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    /// How long the sync thread takes to stop after `frozen` (a slow stop is where a signal or
    /// a SIGKILL lands mid-pause).
    pub(crate) stop_after: Duration,
    /// The sync reads `delayed`: on the stop, `md_do_sync` resets `sync_min` to 0.
    pub(crate) delayed: bool,
}

/// md's sync controls of `md0`, played from a thread: `frozen` stops the sync after
/// `stop_after` (keeping a check's place in `sync_min`, or resetting it to 0 when `delayed`),
/// `check`/`repair` starts one at `sync_min`, `idle` lets a resync start again.
pub(crate) struct Md {
    quit: Arc<AtomicBool>,
    resumed: Arc<Mutex<Vec<String>>>,
    thread: JoinHandle<()>,
}

impl Md {
    pub(crate) fn play(r: &FakeRoot, kernel: Kernel) -> Md {
        let files = ["sync_action", "sync_completed", "sync_min"].map(|f| r.md_attr("md0", f));
        let quit = Arc::new(AtomicBool::new(false));
        let resumed = Arc::new(Mutex::new(Vec::new()));
        let (q, seen) = (quit.clone(), resumed.clone());
        let thread = thread::spawn(move || play(&files, &q, &seen, kernel));
        Md {
            quit,
            resumed,
            thread,
        }
    }

    /// Every resume seen so far (`check from 4096`).
    fn resumed(&self) -> Vec<String> {
        self.resumed.lock().unwrap().clone()
    }

    pub(crate) fn stop(self) -> Vec<String> {
        self.quit.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
        self.resumed.lock().unwrap().clone()
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_default().trim().to_string()
}

fn play(files: &[PathBuf; 3], quit: &AtomicBool, seen: &Mutex<Vec<String>>, k: Kernel) {
    let [action, completed, min] = files;
    let original = read(action);
    let (mut frozen_at, mut stopped) = (None::<Instant>, false);
    loop {
        let ending = quit.load(Ordering::SeqCst);
        match read(action).as_str() {
            "frozen" if !stopped => {
                let since = *frozen_at.get_or_insert_with(Instant::now);
                if since.elapsed() >= k.stop_after {
                    let at = read(completed)
                        .split_once('/')
                        .map(|(d, _)| d.trim().to_string());
                    let kept = match (k.delayed, at) {
                        (true, _) | (_, None) => "0".to_string(),
                        (false, Some(at)) => at,
                    };
                    fs::write(min, kept).unwrap();
                    fs::write(completed, "none").unwrap();
                    stopped = true;
                }
            }
            a @ ("check" | "repair") if stopped => {
                let from = read(min);
                fs::write(completed, format!("{from} / 65536")).unwrap();
                seen.lock().unwrap().push(format!("{a} from {from}"));
                (stopped, frozen_at) = (false, None);
            }
            "idle" if stopped => {
                fs::write(action, &original).unwrap();
                fs::write(completed, "4096 / 65536").unwrap();
                seen.lock().unwrap().push(original.clone());
                (stopped, frozen_at) = (false, None);
            }
            _ => {}
        }
        if ending {
            return;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// A raid5 `md0` whose `sync_action` shows `action` at `completed`, with `sync_min` 2048 and
/// `sync_max` 60000 (an mdcheck window); `group_thread_cnt` 0.
pub(crate) fn host(name: &str, action: &str, completed: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let mut r = FakeRoot::new(&dir, 32);
    let drives: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    let mut spec = MdSpec::level("raid5", 1);
    spec.sync_action = action.into();
    spec.sync_completed = completed.into();
    r.md("md0", &spec, &d);
    r.set_md("md0", "sync_min", "2048");
    r.set_md("md0", "sync_max", "60000");
    (dir, r)
}

pub(crate) fn input(dir: &Path) -> String {
    json!({"root": dir.display().to_string(),
           "arrays": [{"name": "md0", "group_thread_cnt": 4}]})
    .to_string()
}

/// Starts a run of `input(dir)` that waits up to 20 s for a sync to stop.
fn start(dir: &Path) -> Child {
    let mut child = Command::new(bin())
        .arg("-")
        .env("MDTUNE_SYNC_STOP_WAIT", "20")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input(dir).as_bytes()).unwrap();
    child
}

pub(crate) fn record(dir: &Path) -> PathBuf {
    dir.join("run/mdtune/pause-md0.json")
}

/// Waits until the run has recorded its pause and written `frozen`.
fn mid_pause(dir: &Path, r: &FakeRoot) {
    let start = Instant::now();
    while !(record(dir).exists() && r.read_md("md0", "sync_action") == "frozen") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run never paused"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn output(child: Child) -> (Value, i32) {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    (json, out.status.code().unwrap_or(-1))
}

const SLOW: Kernel = Kernel {
    stop_after: Duration::from_millis(1500),
    delayed: false,
};

#[test]
fn a_signal_mid_pause_resumes_the_check_rolls_back_and_answers_with_the_failure() {
    for sig in ["TERM", "INT", "HUP"] {
        let (dir, r) = host(&format!("pause-sig-{sig}"), "check", "4096 / 65536");
        let md = Md::play(&r, SLOW);
        let child = start(&dir);
        mid_pause(&dir, &r);
        signal(&child, sig);
        let (json, code) = output(child);
        let resumed = md.stop();
        assert_eq!(code, 1, "SIG{sig}: {json}");
        let msg = json["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(&format!("interrupted by SIG{sig}")), "{msg}");
        assert_eq!(json["failed"], true);
        assert_eq!(json["changed"], false, "{json}");
        assert_eq!(resumed, ["check from 4096"], "SIG{sig}");
        assert_eq!(r.read_md("md0", "sync_action"), "check");
        assert_eq!(r.read_md("md0", "sync_max"), "60000");
        assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
        assert!(!record(&dir).exists(), "the pause is still recorded");
    }
}

/// A host whose run was killed (SIGKILL) mid-pause of md0's check, once the sync thread has
/// stopped on its own: frozen, recorded, and nobody resumes it.
fn killed_mid_pause(name: &str) -> (PathBuf, FakeRoot, Md) {
    let (dir, r) = host(name, "check", "4096 / 65536");
    let md = Md::play(&r, SLOW);
    let child = start(&dir);
    mid_pause(&dir, &r);
    signal(&child, "KILL");
    let _ = output(child);
    thread::sleep(SLOW.stop_after + Duration::from_millis(200));
    (dir, r, md)
}

#[test]
fn a_run_killed_mid_pause_is_named_then_resumed_from_its_record_by_the_tick() {
    let (dir, r, md) = killed_mid_pause("pause-kill9");
    assert_eq!(r.read_md("md0", "sync_action"), "frozen");
    assert!(md.resumed().is_empty());

    let root = dir.display().to_string();
    let verify = run_text(&["--verify", "--root", &root]);
    assert_eq!(verify.1, 3, "{}", verify.0);
    assert!(
        verify.0.contains("killed mid-pause") && verify.0.contains("mdtune --tick"),
        "{}",
        verify.0
    );
    let metrics = run_text(&["--metrics", "--root", &root]).0;
    assert!(
        metrics.contains("mdtune_array_sync_frozen{array=\"md0\",device=\"md0\",by=\"mdtune\"} 1"),
        "{metrics}"
    );
    let show = run_text(&["--show", "--root", &root]).0;
    assert!(show.contains("frozen: by an mdtune run"), "{show}");

    // The tick resumes it, where it stood and within its window, and says so in the trail; a
    // second tick has nothing to do.
    let log = syslog(&dir);
    let (tick, code) = run_text(&["--tick", "--root", &root]);
    let lines = logged(&log);
    assert!(
        lines.len() == 1
            && lines[0].contains("tick, ")
            && lines[0].contains("resumed md0's check that a killed mdtune run (pid "),
        "{lines:?}"
    );
    assert_eq!(code, 0, "{tick}");
    let tick: Value = serde_json::from_str(&tick).unwrap();
    assert_eq!(tick["changed"], true, "{tick}");
    assert_eq!(tick["resumed"][0]["array"], "md0", "{tick}");
    assert_eq!(tick["resumed"][0]["from"], 4096, "{tick}");
    thread::sleep(Duration::from_millis(50));
    assert_eq!(md.resumed(), ["check from 4096"]);
    assert_eq!(r.read_md("md0", "sync_action"), "check");
    assert_eq!(r.read_md("md0", "sync_max"), "60000");
    assert!(!record(&dir).exists());
    let (again, code) = run_text(&["--tick", "--root", &root]);
    assert_eq!(code, 0, "{again}");
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["changed"], false, "{again}");
    assert_eq!(again["resumed"], json!([]), "{again}");
    md.stop();
}

#[test]
fn a_run_killed_mid_pause_is_resumed_by_the_next_run_before_it_reads_the_host() {
    let (dir, r, md) = killed_mid_pause("pause-kill9-run");
    assert_eq!(r.read_md("md0", "sync_action"), "frozen");
    // The next run resumes it first, then pauses it again for its own write.
    let out = run_args(&["-"], &input(&dir), &[("MDTUNE_SYNC_STOP_WAIT", "20")]);
    let resumed = md.stop();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.json["resumed"][0]["outcome"], "resumed",
        "{}",
        out.stdout
    );
    assert_eq!(out.json["resumed"][0]["from"], 4096);
    assert_eq!(resumed[0], "check from 4096");
    assert_eq!(r.read_md("md0", "sync_max"), "60000");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
    assert!(!record(&dir).exists());
}

#[test]
fn a_udev_replay_resumes_a_pause_a_killed_run_left_even_with_nothing_persisted() {
    let (dir, _, md) = killed_mid_pause("pause-kill9-udev");
    let root = dir.display().to_string();
    let (text, code) = run_text(&["--udev", "md0", "--root", &root]);
    thread::sleep(Duration::from_millis(50));
    let resumed = md.stop();
    assert_eq!(code, 0, "{text}");
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["changed"], true, "{json}");
    assert_eq!(json["resumed"][0]["outcome"], "resumed", "{json}");
    assert_eq!(resumed, ["check from 4096"]);
    assert!(!record(&dir).exists());
}

/// `mdtune ARGS` as text: stdout and the exit status.
fn run_text(args: &[&str]) -> (String, i32) {
    let out = Command::new(bin()).args(args).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn a_delayed_check_starts_again_at_its_window_not_at_zero() {
    let (dir, r) = host("pause-delayed", "check", "delayed");
    let md = Md::play(
        &r,
        Kernel {
            stop_after: Duration::ZERO,
            delayed: true,
        },
    );
    let out = run_args(&["-"], &input(&dir), &[]);
    let resumed = md.stop();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(resumed, ["check from 2048"]);
    assert_eq!(r.read_md("md0", "sync_min"), "2048");
    assert_eq!(r.read_md("md0", "sync_max"), "60000");
}

#[test]
fn a_sync_another_tool_froze_is_waited_for_never_resumed_and_not_compliant() {
    // sync_action reads frozen while the sync thread still runs (6.7+): the write waits.
    let (dir, r) = host("pause-other", "frozen", "8192 / 65536");
    let completed = r.md_attr("md0", "sync_completed");
    let threads = r.md_attr("md0", "group_thread_cnt");
    let early = Arc::new(AtomicBool::new(false));
    let seen = early.clone();
    let stopper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(400));
        seen.store(read(&threads) != "0", Ordering::SeqCst);
        fs::write(completed, "none").unwrap();
    });
    let out = run_args(&["-"], &input(&dir), &[]);
    stopper.join().unwrap();
    assert!(
        !early.load(Ordering::SeqCst),
        "written before the sync stopped"
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
    assert_eq!(
        r.read_md("md0", "sync_action"),
        "frozen",
        "mdtune resumed a freeze not its own"
    );
    assert_eq!(out.json["compliant"], false);
    assert!(out.msg().contains("not by mdtune"), "{}", out.msg());
    let root = dir.display().to_string();
    let (metrics, _) = run_text(&["--metrics", "--root", &root]);
    assert!(
        metrics.contains("mdtune_array_sync_frozen{array=\"md0\",device=\"md0\",by=\"other\"} 1"),
        "{metrics}"
    );
    assert_eq!(run_text(&["--verify", "--root", &root]).1, 3);
}

#[test]
fn a_repair_is_held_back_where_resuming_it_would_run_a_resync() {
    for (release, paused) in [
        ("7.3.4+deb13-cloud-amd64", false),
        ("6.12.57+deb13-cloud-amd64", true),
    ] {
        let (dir, r) = host(&format!("pause-repair-{release}"), "repair", "4096 / 65536");
        r.set_release(Some(release));
        let md = Md::play(
            &r,
            Kernel {
                stop_after: Duration::ZERO,
                delayed: false,
            },
        );
        let out = run_args(&["-"], &input(&dir), &[]);
        let resumed = md.stop();
        assert_eq!(out.code, 0, "{}", out.stdout);
        let setting = out.setting("md0", "group_thread_cnt");
        if paused {
            assert_eq!(resumed, ["repair from 4096"], "{release}");
            assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
        } else {
            assert!(resumed.is_empty(), "{release}: {resumed:?}");
            assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
            let why = setting["held_back"]["reason"].as_str().unwrap_or_default();
            assert!(why.contains("would resume as a resync"), "{setting}");
        }
    }
}
