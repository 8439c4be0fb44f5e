//! What a run does, read from its system calls (docs/reference.md §4, docs/reliability.md):
//! under `strace -f`, no run starts a shell or any other program, and a persist run, a udev
//! replay and a revert write only the paths the contract names. Needs strace.

use crate::common::{bin, run_unpackaged, scratch};
use crate::common::{needs, Requirement};
use crate::security::{assert_only_contract_paths, changed, tree};
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the binary under `strace -f` and returns the traced program starts (execve/execveat)
/// and the process ids seen.
fn traced(args: &[&str], stdin: &str) -> (Vec<String>, BTreeSet<String>, Value) {
    assert!(
        Path::new("/usr/bin/strace").exists(),
        "strace is missing: this test needs it (apt-get install strace)"
    );
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let log = std::env::temp_dir().join(format!("mdtune-strace-{}-{n}.log", std::process::id()));
    let mut child = Command::new("/usr/bin/strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=execve,execveat,fork,vfork,clone,clone3",
            "-o",
        ])
        .arg(&log)
        .arg("--")
        .arg(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = fs::read_to_string(&log).unwrap_or_default();
    let _ = fs::remove_file(&log);
    assert!(
        !text.is_empty(),
        "strace produced nothing (is ptrace allowed here?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let execs = text
        .lines()
        .filter(|l| l.contains("execve(") || l.contains("execveat("))
        .map(String::from)
        .collect();
    let pids = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (execs, pids, json)
}

#[test]
fn no_shell_or_other_program_is_ever_started() {
    if !needs(Requirement::Strace) {
        return;
    }
    let dir = scratch("no-exec");
    demo_host(&dir);
    let root = dir.display().to_string();
    let tune = json!({"root": root, "persist": true, "speed_limit_max": 300000,
        "arrays": [{"name": "md*", "stripe_cache_size": 4096, "sync_speed_max": 50000}]});
    let refused = json!({"root": root, "arrays": [{"name": "md0", "stripe_cache_size": 4096,
        "preread_bypass_threshold": 5000}]});
    let runs: Vec<(Vec<&str>, String)> = vec![
        (vec!["-"], tune.to_string()),
        (vec!["--udev", "md0", "--root", &root], String::new()),
        (
            vec!["-"],
            json!({"root": root, "state": "query"}).to_string(),
        ),
        (vec!["-"], refused.to_string()),
        (
            vec!["-"],
            json!({"root": root, "state": "reverted"}).to_string(),
        ),
        (vec!["-"], "not json".to_string()),
    ];
    for (args, stdin) in runs {
        let (execs, pids, json) = traced(&args, &stdin);
        assert_eq!(
            execs.len(),
            1,
            "mdtune {args:?} started another program: {execs:#?}"
        );
        assert!(execs[0].contains(bin()), "{execs:?}");
        assert_eq!(
            pids.len(),
            1,
            "mdtune {args:?} made a child process: {pids:?}"
        );
        if args == ["-"] && stdin.starts_with('{') {
            assert!(json.is_object(), "mdtune {args:?} printed no JSON");
        }
    }
}

#[test]
fn a_persist_run_a_udev_replay_and_a_revert_write_only_the_paths_the_contract_names() {
    let dir = scratch("paths");
    let r = demo_host(&dir);
    r.set_md("md0", "evil", "0");
    // A 6.16 kernel's sync I/O depth, system-wide and md0's (fakeroot's with_sync_io_depth, for
    // a host whose arrays exist already).
    fs::write(dir.join("proc/sys/dev/raid/sync_io_depth"), "32").unwrap();
    r.set_md("md0", "sync_io_depth", "32 (system)");
    let before = tree(&dir);
    let out = run_unpackaged(
        &dir,
        json!({"persist": true, "speed_limit_min": 2000, "speed_limit_max": 300000,
            "sync_io_depth": 64,
            "arrays": [{"name": "md*", "stripe_cache_size": 4096, "preread_bypass_threshold": 2,
            "skip_copy": true, "sync_speed_min": 5000, "sync_speed_max": 50000,
            "sync_force_parallel": true}, {"name": "md0", "sync_io_depth": 128}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let written = changed(&before, &tree(&dir));
    for expected in [
        "usr/local/sbin/mdtune",
        "etc/udev/rules.d/90-mdtune.rules",
        "etc/mdtune/mdtune.json",
        "run/mdtune.lock",
        "proc/sys/dev/raid/speed_limit_max",
        "proc/sys/dev/raid/sync_io_depth",
        "sys/devices/virtual/block/md0/md/sync_io_depth",
    ] {
        assert!(
            written.iter().any(|p| p == expected),
            "{expected} not written: {written:?}"
        );
    }
    assert_only_contract_paths("a persist run", &before, &dir);

    r.set_md("md0", "stripe_cache_size", "256");
    let ok = Command::new(bin())
        .args(["--udev", "md0", "--root"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0));
    assert_only_contract_paths("a udev replay", &before, &dir);

    let out = run_unpackaged(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_only_contract_paths("a revert", &before, &dir);
    let after = tree(&dir);
    assert!(!after.contains_key("usr/local/sbin/mdtune"));
    assert!(!after.contains_key("etc/mdtune/mdtune.json"));
}
