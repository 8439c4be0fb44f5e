//! docs/reference.md §2 `measure`, `revert_if_slower` and §3 `effect`: a played kernel advances
//! `md0`'s `stat` at rates that follow the `group_thread_cnt` mdtune writes (the seed's figures:
//! 43 MiB/s written and 172 MiB/s read at 0, 105 and 420 at 4), and the run's verdict follows:
//! `faster` with the player's ratios, `slower` reverted through the rollback's path, a constant
//! load `same`, a load that shifts mid-window and no I/O at all `inconclusive`. Windows are 2 s
//! (4 samples of 500 ms each) to keep the tests short.

use crate::common::{run, scratch, Run};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const MIB: f64 = 1024.0 * 1024.0;

/// The load the player plays: read and write MiB/s for a `group_thread_cnt`, and how long into
/// the run it plays that (after which, if `then` is set, it plays `then` for every value).
#[derive(Clone, Copy)]
struct Load {
    rates: fn(u64) -> (f64, f64),
    shift_after: Option<(Duration, (f64, f64))>,
}

struct Player {
    quit: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Player {
    /// Plays `load` on `md0` of `r`: every 10 ms, `stat`'s counters grow by the rates the
    /// `group_thread_cnt` in force calls for (64 KiB per I/O, 0.5 ms per I/O), written whole by
    /// a rename as the kernel shows a file whole.
    fn play(r: &FakeRoot, load: Load) -> Player {
        let stat = r.device_dir("md0").join("stat");
        let threads = r.md_attr("md0", "group_thread_cnt");
        // The counters start at 0, written before the run can read them.
        fs::write(&stat, "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n").unwrap();
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let thread = thread::spawn(move || {
            let (start, mut last) = (Instant::now(), Instant::now());
            let (mut rs, mut ws) = (0f64, 0f64);
            while !q.load(Ordering::SeqCst) {
                let value = fs::read_to_string(&threads)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .unwrap_or(0);
                let (read, write) = match load.shift_after {
                    Some((after, rates)) if start.elapsed() >= after => rates,
                    _ => (load.rates)(value),
                };
                let dt = last.elapsed().as_secs_f64();
                last = Instant::now();
                rs += read * MIB * dt / 512.0;
                ws += write * MIB * dt / 512.0;
                let (ri, wi) = ((rs / 128.0) as u64, (ws / 128.0) as u64);
                let text = format!(
                    "{ri} 0 {} {} {wi} 0 {} {} 0 0 0 0 0 0 0 0 0\n",
                    rs as u64,
                    ri / 2,
                    ws as u64,
                    wi / 2
                );
                let tmp = stat.with_extension("tmp");
                fs::write(&tmp, text).unwrap();
                fs::rename(&tmp, &stat).unwrap();
                thread::sleep(Duration::from_millis(10));
            }
        });
        Player { quit, thread }
    }

    fn stop(self) {
        self.quit.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
    }
}

/// The seed's figures: 172 MiB/s read and 43 written at `group_thread_cnt` 0, 420 and 105 at
/// any other value.
fn seed(v: u64) -> (f64, f64) {
    if v == 0 {
        (172.0, 43.0)
    } else {
        (420.0, 105.0)
    }
}

/// A raid5 `md0` over 3 NVMe drives, `group_thread_cnt` 0, no sync.
fn host(name: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let mut r = FakeRoot::new(&dir, 8);
    let drives: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let d: Vec<&str> = drives.iter().map(String::as_str).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &d);
    (dir, r)
}

fn measured(name: &str, load: Option<Load>, extra: Value) -> (Run, FakeRoot) {
    let (out, r, _) = measured_logged(name, load, extra);
    (out, r)
}

/// [`measured`], with what the run logged to the system log. A load the player plays is timed
/// by a thread that a busy test host can starve for part of a 500 ms sample; the run then says
/// `inconclusive` (the load shifted), rightly. Such a run is tried again on a fresh root, at
/// most twice: a played load is meant to be steady. An idle host is not retried.
fn measured_logged(name: &str, load: Option<Load>, extra: Value) -> (Run, FakeRoot, Vec<String>) {
    let mut attempt = 0;
    loop {
        let (out, r, log) = measured_once(&format!("{name}-{attempt}"), load, &extra);
        let shifted = effect(&out)["why"]
            .as_str()
            .is_some_and(|w| w.contains("load shifted"));
        let steady = load.is_some_and(|l| l.shift_after.is_none());
        if !(steady && shifted) || attempt == 2 {
            return (out, r, log);
        }
        attempt += 1;
    }
}

fn measured_once(name: &str, load: Option<Load>, extra: &Value) -> (Run, FakeRoot, Vec<String>) {
    let (dir, r) = host(name);
    let log = crate::common::syslog(&dir);
    if load.is_none() {
        // No load: the counters stand still.
        let stat = r.device_dir("md0").join("stat");
        fs::write(
            stat,
            "5000 0 80000 900 700 0 11200 300 0 800 1200 0 0 0 0 0 0\n",
        )
        .unwrap();
    }
    let player = load.map(|l| Player::play(&r, l));
    // The player has written `stat` before the run reads it.
    thread::sleep(Duration::from_millis(50));
    let mut input = json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}], "measure": 2});
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    let out = run(&dir, input);
    if let Some(p) = player {
        p.stop();
    }
    (out, r, crate::common::logged(&log))
}

fn effect(out: &Run) -> &Value {
    &out.array("md0")["effect"]
}

fn within(got: &Value, want: f64, tolerance: f64) -> bool {
    got.as_f64()
        .is_some_and(|g| (g - want).abs() <= want * tolerance)
}

#[test]
fn a_value_that_speeds_the_load_up_is_faster_with_the_players_ratios() {
    let load = Load {
        rates: seed,
        shift_after: None,
    };
    let (out, r) = measured("measure-faster", Some(load), json!({}));
    let e = effect(&out);
    assert_eq!(e["verdict"], "faster", "{}", out.stdout);
    assert_eq!(e["decided_by"], "bytes_per_second");
    assert_eq!(
        (e["reverted"].clone(), out.json["changed"].clone()),
        (json!(false), json!(true))
    );
    for (figure, want) in [
        ("read_bytes_per_second", 420.0 / 172.0),
        ("write_bytes_per_second", 105.0 / 43.0),
        ("ios_per_second", 525.0 / 215.0),
    ] {
        assert!(
            within(&e["ratio"][figure], want, 0.15),
            "{figure}: {}",
            e["ratio"]
        );
    }
    assert!(
        within(&e["before"]["read_bytes_per_second"], 172.0 * MIB, 0.15),
        "{e}"
    );
    assert!(
        within(&e["after"]["write_bytes_per_second"], 105.0 * MIB, 0.15),
        "{e}"
    );
    assert_eq!(
        (e["before"]["samples"].clone(), e["seconds"].clone()),
        (json!(4), json!(2))
    );
    assert!(e["before"]["sync_speed_kib_s"].is_null() && e["before"]["latency_ms"].is_number());
    assert!(
        out.msg().contains("md0 faster (bytes_per_second"),
        "{}",
        out.msg()
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "4");
}

#[test]
fn a_slower_value_is_reverted_through_the_rollback_and_nothing_is_left_changed() {
    let load = Load {
        rates: |v| {
            if v == 0 {
                (420.0, 105.0)
            } else {
                (172.0, 43.0)
            }
        },
        shift_after: None,
    };
    let (out, r, log) = measured_logged(
        "measure-slower",
        Some(load),
        json!({"revert_if_slower": true}),
    );
    let e = effect(&out);
    assert_eq!(e["verdict"], "slower", "{}", out.stdout);
    assert_eq!(e["reverted"], true);
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    assert_eq!(out.json["failed"], false);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    let s = out.setting("md0", "group_thread_cnt");
    assert_eq!(
        (s["after"].clone(), s["changed"].clone()),
        (json!(0), json!(false))
    );
    let msg = out.msg();
    assert!(
        msg.contains("md0 slower") && msg.contains("bytes_per_second"),
        "{msg}"
    );
    assert!(msg.contains("nothing is left changed"), "{msg}");
    // The trail tells the two writes, though nothing is left changed.
    assert!(
        log.iter()
            .any(|l| l.contains("revert_if_slower put back md0: group_thread_cnt 4 -> 0")),
        "{log:?}"
    );
    // Without revert_if_slower the value stays, said slower.
    let (out, r) = measured("measure-slower-kept", Some(load), json!({}));
    assert_eq!(effect(&out)["verdict"], "slower", "{}", out.stdout);
    assert_eq!(
        (
            out.json["changed"].clone(),
            r.read_md("md0", "group_thread_cnt")
        ),
        (json!(true), "4".into())
    );
}

#[test]
fn a_constant_load_is_same_and_a_shift_or_no_io_is_never_faster_or_slower() {
    let steady = Load {
        rates: |_| (172.0, 43.0),
        shift_after: None,
    };
    let (out, _) = measured(
        "measure-same",
        Some(steady),
        json!({"revert_if_slower": true}),
    );
    assert_eq!(effect(&out)["verdict"], "same", "{}", out.stdout);
    assert_eq!(out.json["changed"], true);
    // The load drops to a tenth 3 s into the run: mid after-window.
    let shifting = Load {
        rates: |_| (172.0, 43.0),
        shift_after: Some((Duration::from_millis(3000), (17.0, 4.0))),
    };
    let (out, _) = measured("measure-shift", Some(shifting), json!({}));
    let e = effect(&out);
    assert_eq!(e["verdict"], "inconclusive", "{}", out.stdout);
    assert!(e["why"].as_str().unwrap().contains("load shifted"), "{e}");
    let (out, r) = measured("measure-idle", None, json!({"revert_if_slower": true}));
    let e = effect(&out);
    assert_eq!(e["verdict"], "inconclusive", "{}", out.stdout);
    assert!(e["why"].as_str().unwrap().contains("too little I/O"), "{e}");
    assert_eq!(
        (e["reverted"].clone(), r.read_md("md0", "group_thread_cnt")),
        (json!(false), "4".into())
    );
}

#[test]
fn check_mode_takes_the_before_window_only_and_writes_nothing() {
    let load = Load {
        rates: seed,
        shift_after: None,
    };
    let (out, r) = measured("measure-check", Some(load), json!({"check_mode": true}));
    let e = effect(&out);
    assert!(e["after"].is_null() && e["verdict"].is_null(), "{e}");
    assert!(
        within(&e["before"]["read_bytes_per_second"], 172.0 * MIB, 0.15),
        "{e}"
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}

#[test]
fn measure_and_revert_if_slower_are_refused_outside_their_range_and_state() {
    let (dir, _r) = host("measure-refused");
    for (extra, key, allowed) in [
        (json!({"measure": 0}), "measure: 0", "1..600"),
        (json!({"measure": 601}), "measure: 601", "1..600"),
        (json!({"measure": 1.5}), "measure: 1.5", "1..600"),
        (
            json!({"measure": 5, "state": "query"}),
            "measure: 5",
            "state: query",
        ),
        (
            json!({"revert_if_slower": true}),
            "revert_if_slower: true",
            "with measure",
        ),
        (
            json!({"measure": 5, "revert_if_slower": true, "persist": true}),
            "revert_if_slower: true",
            "persist",
        ),
    ] {
        let mut input = json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]});
        for (k, v) in extra.as_object().unwrap() {
            input[k] = v.clone();
        }
        let out = run(&dir, input);
        assert_eq!(out.code, 2, "{extra}: {}", out.stdout);
        assert!(
            out.msg().starts_with(key) && out.msg().contains(allowed),
            "{}",
            out.msg()
        );
    }
}

#[test]
fn the_measure_command_reads_the_counters_as_json_or_a_table_and_writes_nothing() {
    let (dir, r) = host("measure-command");
    let player = Player::play(
        &r,
        Load {
            rates: seed,
            shift_after: None,
        },
    );
    thread::sleep(Duration::from_millis(50));
    let root = dir.display().to_string();
    let json_run = crate::common::run_args(
        &["--measure", "--root", &root, "--seconds", "1", "--json"],
        "",
        &[],
    );
    let table = crate::common::run_args(
        &["--measure", "md0", "--root", &root, "--seconds", "1"],
        "",
        &[],
    );
    player.stop();
    assert_eq!(json_run.code, 0, "{}", json_run.stderr);
    let a = &json_run.json["arrays"][0];
    assert_eq!(a["name"], "md0");
    assert!(
        within(&a["read_bytes_per_second"], 172.0 * MIB, 0.15),
        "{a}"
    );
    assert!(
        within(&a["write_bytes_per_second"], 43.0 * MIB, 0.15),
        "{a}"
    );
    assert_eq!(
        (a["samples"].clone(), a["sync"].clone()),
        (json!(4), Value::Null)
    );
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("READ MiB/s") && table.stdout.contains("md0"),
        "{}",
        table.stdout
    );
    let bad = crate::common::run_args(&["--measure", "--root", &root, "--seconds", "0"], "", &[]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("--seconds") && bad.stderr.contains("1..600"),
        "{}",
        bad.stderr
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}
