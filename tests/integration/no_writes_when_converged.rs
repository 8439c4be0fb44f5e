//! "Read before write" (docs/reference.md §4), checked from the outside: on a host already in the
//! desired state a run opens no sysfs or procfs file for writing. The binary runs under strace,
//! which records every open; a test that only compared file contents could not see a write of
//! the value already in place, which is exactly the write that pauses an array on Linux 6.7+.
//!
//! Each test first proves that the check can fail: a run that does change values must show
//! writable opens under the same root, or the strace log is not what the check thinks it is.
//! strace is required: without it the tests fail and say how to install it.

use crate::common::{bin, scratch};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::bench_host;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const STRACE: &str = "strace";

/// What one traced run did.
struct Traced {
    json: Value,
    /// The exit status (strace exits with the traced program's).
    code: i32,
    /// Every open/creat/truncate of a path under `<root>/sys` or `<root>/proc` that could write.
    writes: Vec<String>,
    /// Every traced call on a path under `<root>/sys` or `<root>/proc`, writable or not.
    touched: usize,
}

/// Runs `mdtune ARGS_FILE` (as Ansible does) under `strace -f`, tracing every call that can open
/// a file for writing (`?` lets strace skip a call the architecture lacks: arm64 has no `open`).
fn traced_run(dir: &Path, root: &Path, input: Value, label: &str) -> Traced {
    let args = dir.join(format!("{label}.args.json"));
    fs::write(&args, input.to_string()).unwrap();
    let log = dir.join(format!("{label}.strace"));
    let out = Command::new(STRACE)
        .args([
            "-f",
            "-qq",
            // Print the path behind every descriptor: mdtune opens files relative to directory
            // descriptors (`openat(5</root/sys/.../md>, "group_thread_cnt", ...)`).
            "-y",
            "-e",
            "trace=?open,openat,?openat2,?creat,truncate",
            "-o",
        ])
        .arg(&log)
        .arg(bin())
        .arg(&args)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {STRACE} ({e}): these tests need it: apt-get install strace")
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON from mdtune under strace (exit {:?}); strace said: {}\nstdout: {stdout}\n\
             (strace must be able to trace: apt-get install strace, and allow ptrace)",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let text = fs::read_to_string(&log).expect("strace wrote no log");
    let prefixes = kernel_prefixes(root);
    let mut writes = Vec::new();
    let mut touched = 0;
    for line in text.lines() {
        let Some(path) = opened_path(line) else {
            continue;
        };
        if !prefixes.iter().any(|p| path.starts_with(p.as_str())) {
            continue;
        }
        touched += 1;
        let call = line
            .split_once(' ')
            .map_or(line, |(_, rest)| rest)
            .trim_start();
        let writable = call.starts_with("creat(")
            || call.starts_with("truncate(")
            || line.contains("O_WRONLY")
            || line.contains("O_RDWR");
        if writable {
            writes.push(line.to_string());
        }
    }
    Traced {
        json,
        code: out.status.code().unwrap_or(-1),
        writes,
        touched,
    }
}

/// `<root>/sys/` and `<root>/proc/`, as given and canonicalized (mdtune opens canonical paths).
fn kernel_prefixes(root: &Path) -> Vec<String> {
    let mut roots = vec![root.to_path_buf()];
    if let Ok(real) = fs::canonicalize(root) {
        roots.push(real);
    }
    roots
        .iter()
        .flat_map(|r| [r.join("sys"), r.join("proc")])
        .map(|p| format!("{}/", p.display()))
        .collect()
}

/// The path an strace line (made with `-y`) opens, creates or truncates: its first quoted
/// string, joined onto the directory when it is relative to a descriptor (`5</root/sys/...>`).
fn opened_path(line: &str) -> Option<String> {
    let args = &line[line.find('(')? + 1..];
    let start = args.find('"')? + 1;
    let len = args[start..].find('"')?;
    let name = &args[start..start + len];
    let dir = args
        .split_once('<')
        .filter(|(fd, _)| !fd.is_empty() && fd.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(dir, _)| dir);
    match dir {
        Some(dir) if !name.starts_with('/') => Some(format!("{dir}/{name}")),
        _ => Some(name.to_string()),
    }
}

#[test]
fn paths_opened_relative_to_a_descriptor_are_seen_in_full() {
    let line = r#"123 openat(5</r/sys/devices/virtual/block/md0/md>, "group_thread_cnt", O_WRONLY|O_TRUNC) = 6</r/x>"#;
    assert_eq!(
        opened_path(line).as_deref(),
        Some("/r/sys/devices/virtual/block/md0/md/group_thread_cnt")
    );
    let line = r#"openat(AT_FDCWD</w>, "/r/sys/block/md0/md/level", O_RDONLY) = 3</r/x>"#;
    assert_eq!(
        opened_path(line).as_deref(),
        Some("/r/sys/block/md0/md/level")
    );
    let line = r#"truncate("/r/proc/sys/dev/raid/speed_limit_max", 0) = 0"#;
    assert_eq!(
        opened_path(line).as_deref(),
        Some("/r/proc/sys/dev/raid/speed_limit_max")
    );
}

/// A host of two raid5 arrays over 4-queue NVMe drives, with every value at the kernel default.
fn host(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let root = dir.join("root");
    bench_host(&root, 2, 2, 4);
    (dir, root)
}

/// Settings that differ from the kernel defaults on every array and in proc/.
fn desired(root: &Path) -> Value {
    json!({
        "root": root,
        "thread_policy": "auto",
        "speed_limit_max": 300000,
        "arrays": [{"name": "md*", "stripe_cache_size": 4096, "sync_speed_max": 500000,
                    "skip_copy": true}]
    })
}

#[test]
fn a_converged_run_opens_no_sysfs_file_for_writing() {
    if !needs(Requirement::Strace) {
        return;
    }
    let (dir, root) = host("converged");
    let first = traced_run(&dir, &root, desired(&root), "first");
    assert_eq!(first.json["changed"], true, "{}", first.json);
    // The check can fail: the run that changed values shows writable opens in its log, at least
    // one per changed value (4 settings on 2 arrays, and speed_limit_max).
    let changed_values = 2 * 4 + 1;
    assert!(
        first.writes.len() >= changed_values,
        "the first run changed values but strace shows only {} writable opens under the root: \
         the check cannot see writes ({:?})",
        first.writes.len(),
        first.writes
    );
    let second = traced_run(&dir, &root, desired(&root), "second");
    assert!(
        second.touched > 0,
        "strace saw no call under the root at all"
    );
    assert!(
        second.writes.is_empty(),
        "a converged run opened kernel files for writing:\n{}",
        second.writes.join("\n")
    );
    assert_eq!(second.json["changed"], false, "{}", second.json);
    assert_eq!(second.json["compliant"], true, "{}", second.json);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn query_and_check_mode_open_no_sysfs_file_for_writing_even_when_values_differ() {
    if !needs(Requirement::Strace) {
        return;
    }
    let (dir, root) = host("readonly");
    for (label, extra) in [
        ("query", json!({"state": "query"})),
        ("check", json!({"check_mode": true})),
        ("ansible-check", json!({"_ansible_check_mode": true})),
    ] {
        let mut input = desired(&root);
        input
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let run = traced_run(&dir, &root, input, label);
        assert_eq!(run.json["failed"], false, "{label}: {}", run.json);
        assert_eq!(run.json["compliant"], false, "{label}: {}", run.json);
        assert!(
            run.writes.is_empty(),
            "{label}: opened kernel files for writing:\n{}",
            run.writes.join("\n")
        );
    }
    // The check can fail: the same input for real writes.
    let real = traced_run(&dir, &root, desired(&root), "real");
    assert_eq!(real.json["changed"], true, "{}", real.json);
    assert!(!real.writes.is_empty(), "strace shows no writable open");
    let _ = fs::remove_dir_all(&dir);
}

/// A converged `present` reads the host once: when `run/mdtune.lock` is already there, taking it
/// writes nothing, so the run need not plan before the lock and again under it.
#[test]
fn a_converged_present_reads_each_array_once_when_the_lock_file_exists() {
    if !needs(Requirement::Strace) {
        return;
    }
    let (dir, root) = host("read-once");
    let first = traced_run(&dir, &root, desired(&root), "first");
    assert_eq!(first.json["changed"], true, "{}", first.json);
    assert!(root.join("run/mdtune.lock").is_file());
    let second = traced_run(&dir, &root, desired(&root), "second");
    assert_eq!(second.json["changed"], false, "{}", second.json);
    let log = fs::read_to_string(dir.join("second.strace")).unwrap();
    let level_reads = log
        .lines()
        .filter_map(opened_path)
        .filter(|p| p.ends_with("/md/level"))
        .count();
    assert_eq!(
        level_reads, 2,
        "md/level of each of the 2 arrays read once:\n{log}"
    );
    let _ = fs::remove_dir_all(&dir);
}

/// With the lock file in place, input the host refuses is refused under the lock: still exit 2,
/// and still nothing written.
#[test]
fn a_refusal_under_an_existing_lock_is_exit_2_and_writes_nothing() {
    if !needs(Requirement::Strace) {
        return;
    }
    let (dir, root) = host("refusal-under-lock");
    traced_run(&dir, &root, desired(&root), "first");
    let before = crate::common::snapshot(&root);
    let mut input = desired(&root);
    input["arrays"] = json!([{"name": "md9", "stripe_cache_size": 4096}]);
    let refused = traced_run(&dir, &root, input, "refused");
    assert_eq!(refused.code, 2, "{}", refused.json);
    assert!(
        refused.json["msg"].as_str().unwrap_or("").contains("md9"),
        "{}",
        refused.json
    );
    assert!(
        crate::common::snapshot(&root) == before,
        "a refused run changed a file"
    );
    let _ = fs::remove_dir_all(&dir);
}
