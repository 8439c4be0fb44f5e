//! Fault injection with real failures, not mocks: writes the kernel refuses, values it does not
//! keep, arrays that vanish mid-run and rollbacks that fail themselves. Each test is named after
//! the promise of docs/reference.md §4 it checks (all or nothing: if any write fails, every value
//! this run changed is restored, newest first, then the run fails; nothing is left half-applied
//! without saying so).
//!
//! The failures are made with the operating system's own mechanisms: an unprivileged user
//! (`setpriv`) meeting a root-owned read-only file, a FIFO fed by a thread standing in for a
//! kernel that keeps less than it was given, a device node that reads back empty, directories in
//! place of attributes, array directories removed between the inventory and the writes. Tests
//! that need the library's sequencing (something breaking between inventory and apply, or
//! between two writes) drive `host::read`, `plan::plan` and `apply::apply` directly; the
//! `save_original` callback runs before each write and is where the earlier damage is done.

use crate::common::{assert_same_values, bin, finish_with_input, kernel_snapshot, scratch};
use crate::common::{needs, Requirement};
use crate::kernel_fifo::{make_fifo, run_fed, Step};
use mdtune::apply::{self, ApplyError, Outcome, Target};
use mdtune::host::{self, Inventory, Scope};
use mdtune::md::Attr;
use mdtune::persist::Persist;
use mdtune::plan::{self, Plan};
use mdtune::report;
use mdtune::spec::Spec;
use mdtune::sys::Root;
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a paused sync may take to stop (no fake root here runs one).
const STOP_WAIT: Duration = Duration::from_secs(1);

/// `rolled_back` of a report as "array setting" strings, in report order.
fn rolled_back(report: &Value) -> Vec<String> {
    report["rolled_back"]
        .as_array()
        .unwrap_or_else(|| panic!("no rolled_back in {report}"))
        .iter()
        .map(|w| format!("{} {}", w["target"].as_str().unwrap(), w["setting"]))
        .map(|s| s.replace('"', ""))
        .collect()
}

/// Names of restored or unrestored writes as "array attr".
fn names<'a>(writes: impl Iterator<Item = &'a apply::Write>) -> Vec<String> {
    writes
        .map(|w| match &w.target {
            Target::Md { array, attr } => format!("{array} {attr}"),
            Target::Limit(l) => format!("system {}", l.name()),
        })
        .collect()
}

/// Reads the host, plans `input` and returns everything apply and report need.
fn plan_for(dir: &Path, input: Value) -> (Root, Spec, Inventory, Plan) {
    let root = Root::new(dir).unwrap();
    let spec = Spec::from_json(&input.to_string()).unwrap();
    let inv = host::read(&root, &Scope::default()).unwrap();
    let plan = plan::plan(&spec, &inv).unwrap();
    (root, spec, inv, plan)
}

/// The report a run with this outcome prints, as JSON.
fn report_of(spec: &Spec, inv: &Inventory, plan: &Plan, outcome: &Outcome) -> Value {
    let r = report::build(spec, inv, plan, outcome, Persist::default());
    serde_json::from_str(&r.to_text()).unwrap()
}

/// Runs the binary with `input` on stdin through `wrapper` (e.g. setpriv), with a deadline.
fn run_wrapped(wrapper: &[&str], input: &Value, deadline: Duration) -> (Value, i32, String) {
    let (prog, pre) = match wrapper.split_first() {
        Some((p, rest)) => (*p, rest.to_vec()),
        None => (bin(), Vec::new()),
    };
    let mut cmd = Command::new(prog);
    cmd.args(&pre);
    if !wrapper.is_empty() {
        cmd.arg(bin());
    }
    let child = cmd
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {prog}: {e}"));
    let out = finish_with_input(child, input, deadline, "mdtune did not finish");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|_| panic!("stdout is not one JSON object: {stdout:?}"));
    (json, out.status.code().unwrap_or(-1), stdout)
}

fn need(tool: &str, package: &str) {
    let found = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .any(|d| Path::new(d).join(tool).exists());
    assert!(
        found,
        "{tool} is missing: this test needs it (apt-get install {package})"
    );
}

/// Changes the owner of everything under `dir` (links themselves, not their targets).
fn chown_tree(dir: &Path, uid: u32) {
    let ok = Command::new("chown")
        .args(["-R", "-h", &format!("{uid}:{uid}")])
        .arg(dir)
        .status()
        .unwrap()
        .success();
    assert!(
        ok,
        "chown -R {uid} {} failed: this test needs root",
        dir.display()
    );
}

#[test]
fn a_write_the_kernel_refuses_mid_run_restores_every_value_the_run_changed() {
    if !needs(Requirement::Root) {
        return;
    }
    need("setpriv", "util-linux");
    let dir = scratch("refused");
    let r = demo_host(&dir);
    // The run is unprivileged (uid 65534) and owns the whole root except md0's skip_copy, which
    // is root's and read-only: the third write of the run gets EACCES from open(2).
    chown_tree(&dir, 65534);
    let refused = r.md_attr("md0", "skip_copy");
    std::os::unix::fs::chown(&refused, Some(0), Some(0)).unwrap();
    fs::set_permissions(
        &refused,
        std::os::unix::fs::PermissionsExt::from_mode(0o444),
    )
    .unwrap();
    let before = kernel_snapshot(&dir);
    let input = json!({"root": dir, "arrays": [{"name": "md0", "group_thread_cnt": 4,
        "stripe_cache_size": 4096, "skip_copy": true}]});
    let (out, code, stdout) = run_wrapped(
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ],
        &input,
        Duration::from_secs(60),
    );
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(out["failed"], true);
    assert_eq!(out["changed"], false, "{stdout}");
    let msg = out["msg"].as_str().unwrap();
    assert!(
        msg.contains("md0: skip_copy") && msg.contains("os error 13"),
        "{msg}"
    );
    assert_eq!(
        rolled_back(&out),
        ["md0 stripe_cache_size", "md0 group_thread_cnt"],
        "newest first"
    );
    assert!(out.get("not_restored").is_none(), "{stdout}");
    assert_eq!(
        out["arrays"][0]["settings"]["stripe_cache_size"]["after"],
        256
    );
    assert_same_values(&before, &kernel_snapshot(&dir));
}

#[test]
fn a_value_the_kernel_does_not_keep_fails_the_run_and_is_rolled_back() {
    let dir = scratch("not-kept");
    let r = demo_host(&dir);
    // md0's stripe_cache_size is a FIFO: it reads 256, takes 4096 and then reads 2048, as the
    // kernel does when it cannot allocate the whole cache (ENOMEM part way).
    let fifo = make_fifo(&r.md_attr("md0", "stripe_cache_size"));
    let input = json!({"root": dir, "arrays": [{"name": "md0", "group_thread_cnt": 4,
        "stripe_cache_size": 4096}]});
    let (out, written) = run_fed(
        &input,
        fifo,
        vec![
            Step::Serve("256\n"),  // inventory, planned before the lock
            Step::Serve("256\n"),  // inventory, read again under the lock
            Step::Consume,         // the write
            Step::Serve("2048\n"), // read-back: the kernel kept less
            Step::Serve("2048\n"), // rollback: the live value
            Step::Consume,         // rollback: the original
            Step::Serve("256\n"),  // rollback: read-back
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(written, ["4096\n", "256\n"], "the write, then the original");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(json["failed"], true);
    assert_eq!(json["changed"], false, "{stdout}");
    let msg = json["msg"].as_str().unwrap();
    assert!(
        msg.contains("md0: stripe_cache_size: wrote 4096 but the kernel kept 2048"),
        "{msg}"
    );
    assert_eq!(
        rolled_back(&json),
        ["md0 stripe_cache_size", "md0 group_thread_cnt"]
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}

#[test]
fn a_value_that_reads_back_empty_fails_and_earlier_writes_are_rolled_back() {
    if !needs(Requirement::Root) {
        return;
    }
    need("mknod", "coreutils");
    let dir = scratch("null-node");
    let r = demo_host(&dir);
    let (root, spec, inv, plan) = plan_for(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 4096,
            "skip_copy": true}]}),
    );
    // After the inventory, skip_copy becomes a character device like /dev/null: it takes every
    // write and reads back nothing.
    let attr = r.md_attr("md0", "skip_copy");
    fs::remove_file(&attr).unwrap();
    let ok = Command::new("mknod")
        .arg(&attr)
        .args(["c", "1", "3"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "mknod failed: this test needs root");
    assert!(
        OpenOptions::new().write(true).open(&attr).is_ok(),
        "cannot open a device node under {}: is $TMPDIR mounted nodev?",
        dir.display()
    );
    let outcome = apply::apply(&root, apply::writes(&plan), STOP_WAIT, &mut |_| Ok(()));
    let failure = outcome.failure.as_ref().expect("the run must fail");
    assert!(
        matches!(&failure.error, ApplyError::NotKept { kept, .. } if kept == "nothing (empty read)"),
        "{}",
        failure.error
    );
    assert_eq!(
        names(failure.rolled_back.iter()),
        ["md0 stripe_cache_size", "md0 group_thread_cnt"]
    );
    // What cannot be read back cannot be confirmed restored: it is said so, not hidden.
    assert_eq!(
        names(failure.not_restored.iter().map(|n| &n.write)),
        ["md0 skip_copy"]
    );
    let report = report_of(&spec, &inv, &plan, &outcome);
    assert_eq!(report["failed"], true);
    let msg = report["msg"].as_str().unwrap();
    assert!(
        msg.contains("md0: skip_copy: wrote true but the kernel kept"),
        "{msg}"
    );
    assert!(msg.contains("NOT RESTORED: md0: skip_copy"), "{msg}");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
}

#[test]
fn an_array_that_disappears_between_inventory_and_apply_fails_and_earlier_writes_are_rolled_back() {
    let dir = scratch("vanished");
    let r = demo_host(&dir);
    let (root, spec, inv, plan) = plan_for(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 4096},
            {"name": "md2", "stripe_cache_size": 4096}]}),
    );
    let before = kernel_snapshot(&dir);
    // mdadm --stop md2: the kernel removes its block device and every md/ file with it.
    fs::remove_dir_all(r.device_dir("md2")).unwrap();
    fs::remove_file(dir.join("sys/block/md2")).unwrap();
    let outcome = apply::apply(&root, apply::writes(&plan), STOP_WAIT, &mut |_| Ok(()));
    let failure = outcome.failure.as_ref().expect("the run must fail");
    assert!(
        matches!(&failure.error, ApplyError::Missing { target: Target::Md { array, .. }, .. } if array == "md2"),
        "{}",
        failure.error
    );
    assert_eq!(
        names(failure.rolled_back.iter()),
        ["md0 stripe_cache_size", "md0 group_thread_cnt"]
    );
    assert!(failure.not_restored.is_empty());
    let report = report_of(&spec, &inv, &plan, &outcome);
    assert_eq!(
        (report["failed"].clone(), report["changed"].clone()),
        (json!(true), json!(false))
    );
    assert!(
        report["msg"]
            .as_str()
            .unwrap()
            .starts_with("md2: group_thread_cnt"),
        "{report}"
    );
    let gone = |p: &PathBuf| p.starts_with(r.device_dir("md2"));
    let before: Vec<_> = before.into_iter().filter(|(p, _, _)| !gone(p)).collect();
    assert_same_values(&before, &kernel_snapshot(&dir));
}

#[test]
fn a_rollback_that_fails_reports_exactly_what_is_left_changed() {
    let dir = scratch("rollback-fails");
    let r = demo_host(&dir);
    let (root, spec, inv, plan) = plan_for(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 4096},
            {"name": "md2", "stripe_cache_size": 4096}]}),
    );
    let md0_threads = r.md_attr("md0", "group_thread_cnt");
    let md2 = r.device_dir("md2");
    let md2_link = dir.join("sys/block/md2");
    // Just before md2's first write: md0's group_thread_cnt (already written) turns into
    // something nothing can be written to, and md2 is stopped, so its write fails.
    let mut save = |w: &apply::Write| -> Result<(), ApplyError> {
        if matches!(&w.target, Target::Md { array, .. } if array == "md2") && md2.exists() {
            fs::remove_file(&md0_threads).unwrap();
            fs::create_dir(&md0_threads).unwrap();
            fs::remove_dir_all(&md2).unwrap();
            fs::remove_file(&md2_link).unwrap();
        }
        Ok(())
    };
    let outcome = apply::apply(&root, apply::writes(&plan), STOP_WAIT, &mut save);
    let failure = outcome.failure.as_ref().expect("the run must fail");
    assert_eq!(names(failure.rolled_back.iter()), ["md0 stripe_cache_size"]);
    assert_eq!(
        names(failure.not_restored.iter().map(|n| &n.write)),
        ["md0 group_thread_cnt"]
    );
    let report = report_of(&spec, &inv, &plan, &outcome);
    assert_eq!(report["failed"], true);
    assert_eq!(report["changed"], true, "a value is still changed");
    let msg = report["msg"].as_str().unwrap();
    assert!(
        msg.contains("NOT RESTORED: md0: group_thread_cnt is still 4 (was 0)")
            && msg.contains("os error 21"),
        "{msg}"
    );
    let left = report["not_restored"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{report}");
    assert_eq!(rolled_back(&report), ["md0 stripe_cache_size"]);
    assert_eq!(
        report["arrays"][0]["settings"]["group_thread_cnt"]["changed"],
        true
    );
    assert_eq!(
        report["arrays"][0]["settings"]["stripe_cache_size"]["changed"],
        false
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
}

/// A write whose file cannot even be opened (here a directory, EISDIR; on a live system the
/// file vanishing between the path check and open(2), ENOENT) changed nothing: it is not rolled
/// back, not reported as left changed, and `changed` stays false.
#[test]
fn a_write_that_never_reached_the_kernel_is_not_reported_as_left_changed() {
    let dir = scratch("never-written");
    let r = demo_host(&dir);
    let (root, spec, inv, plan) = plan_for(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 4096}]}),
    );
    let cache = r.md_attr("md0", "stripe_cache_size");
    let mut save = |w: &apply::Write| -> Result<(), ApplyError> {
        if matches!(
            &w.target,
            Target::Md {
                attr: Attr::StripeCacheSize,
                ..
            }
        ) {
            fs::remove_file(&cache).unwrap();
            fs::create_dir(&cache).unwrap();
        }
        Ok(())
    };
    let outcome = apply::apply(&root, apply::writes(&plan), STOP_WAIT, &mut save);
    let failure = outcome.failure.as_ref().expect("the run must fail");
    assert!(
        matches!(failure.error, ApplyError::Open { .. }),
        "{}",
        failure.error
    );
    assert_eq!(names(failure.rolled_back.iter()), ["md0 group_thread_cnt"]);
    let report = report_of(&spec, &inv, &plan, &outcome);
    assert_eq!(
        names(failure.not_restored.iter().map(|n| &n.write)),
        Vec::<String>::new(),
        "open(2) failed, so nothing was written to stripe_cache_size; the report says: {}",
        report["msg"]
    );
    assert_eq!(report["changed"], false);
}
