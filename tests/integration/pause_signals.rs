//! docs/reference.md §4, "A pause that always ends", as a property: a signal (SIGTERM) delivered
//! at any system call a run makes between recording its pause and removing the record (the
//! freeze, the wait, the writes, the resume) ends with the check running again, no record left,
//! and either nothing changed (the run answered `interrupted by SIGTERM`) or, for a signal that
//! came after the window closed, the run's own result. The sweep injects the signal with strace
//! at each invocation of each system call seen in that window on a reference run.

use crate::common::{bin, require_strace, run_command};
use crate::common::{needs, Requirement};
use crate::pause_ends::{host, input, record, Kernel, Md};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const QUICK: Kernel = Kernel {
    stop_after: Duration::ZERO,
    delayed: false,
};

/// The system calls of a run on `dir` under strace, in order (name, and the line's text).
fn trace(dir: &Path, inject: &[String]) -> (crate::common::Run, Vec<(String, String)>) {
    let log = dir.with_extension("strace");
    let mut cmd = Command::new("strace");
    cmd.args(["-qq", "-o"]).arg(&log).args(["-e", "trace=all"]);
    for i in inject {
        cmd.args(["-e", i]);
    }
    cmd.args([bin(), "-"]);
    let out = run_command(cmd, &input(dir));
    let text = fs::read_to_string(&log).expect("strace wrote no log");
    let calls = text
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++"))
        .filter_map(|l| Some((l.split_once('(')?.0.to_string(), l.to_string())))
        .collect();
    (out, calls)
}

/// Each invocation in the pause's window, as `name` and its number among that name's calls.
fn window(calls: &[(String, String)]) -> Vec<(String, usize)> {
    let first = calls.iter().position(|(_, l)| l.contains("pause-md0.json"));
    let last = calls
        .iter()
        .rposition(|(_, l)| l.contains("pause-md0.json"));
    let (Some(first), Some(last)) = (first, last) else {
        panic!("the reference run recorded no pause: {calls:?}");
    };
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, (name, _)) in calls.iter().enumerate() {
        let n = seen.entry(name).or_default();
        *n += 1;
        if (first..=last).contains(&i) {
            out.push((name.clone(), *n));
        }
    }
    out
}

#[test]
fn a_signal_at_any_system_call_of_a_pause_leaves_the_check_running_and_nothing_changed() {
    if !needs(Requirement::Strace) {
        return;
    }
    require_strace();
    let (dir, r) = host("pause-sweep-ref", "check", "4096 / 65536");
    let md = Md::play(&r, QUICK);
    let (out, calls) = trace(&dir, &[]);
    md.stop();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let points = window(&calls);
    assert!(
        points.len() >= 10,
        "a pause of {} calls: {points:?}",
        points.len()
    );
    let mut interrupted = 0;
    for (i, (name, n)) in points.iter().enumerate() {
        let (dir, r) = host(&format!("pause-sweep-{i}"), "check", "4096 / 65536");
        let md = Md::play(&r, QUICK);
        let inject = format!("inject={name}:signal=TERM:when={n}");
        let (out, _) = trace(&dir, std::slice::from_ref(&inject));
        md.stop();
        let at = format!("SIGTERM at {name} #{n}: {}", out.stdout);
        assert_eq!(r.read_md("md0", "sync_action"), "check", "{at}");
        assert!(!record(&dir).exists(), "{at}: the pause is still recorded");
        let threads = r.read_md("md0", "group_thread_cnt");
        match out.code {
            // Inside the window: the run undid itself.
            1 => {
                let msg = out.json["msg"].as_str().unwrap_or("");
                assert!(msg.contains("interrupted by SIGTERM"), "{at}");
                assert_eq!(threads, "0", "{at}: a value is left changed");
                assert_eq!(out.json["changed"], false, "{at}");
                interrupted += 1;
            }
            // The calls of a run vary a little (how often it polls a stopping sync): a signal
            // that landed outside the window ends the run as SIGTERM does (strace reports it as
            // a death by the signal, or as 128 + 15), before its one write or after it.
            0 => assert_eq!(threads, "4", "{at}"),
            _ => {
                assert!(
                    out.json.is_null(),
                    "{at}: an answer from a run the signal ended"
                );
                assert!(threads == "0" || threads == "4", "{at}: {threads}");
            }
        }
    }
    assert!(
        interrupted * 3 >= points.len(),
        "only {interrupted} of {} signals were seen mid-pause",
        points.len()
    );
}
