//! Persistence (docs/reference.md §6), through the real binary on fake roots: check mode, the
//! compliance of the persisted files and the `msg` that says it, the udev reload a persist and a
//! revert report, and the log line of the replay after a reboot; and the input, the paths and the
//! reboot the other persistence tests share. The files persist writes: `persist_files.rs`; the
//! replay after a reboot: `udev_replay.rs`; revert: `revert.rs`.

use crate::common::{bin, logged, run, run_unpackaged, scratch, syslog};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::{demo_host, FakeRoot};
use serde_json::json;
use std::fs;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

pub(crate) const RULE: &str = "etc/udev/rules.d/90-mdtune.rules";
pub(crate) const STATE: &str = "etc/mdtune/mdtune.json";
pub(crate) const BINARY: &str = "usr/local/sbin/mdtune";

pub(crate) fn desired() -> serde_json::Value {
    json!({"persist": true, "diff": true, "_ansible_check_mode": false,
        "arrays": [{"name": "hana_data", "stripe_cache_size": 4096, "sync_speed_max": 600000}],
        "speed_limit_min": 50000})
}

/// Runs `mdtune --udev NAME --root ROOT` as udev would (no stdin), and checks stdout is one JSON
/// object (udev discards it) and stderr empty. Returns the exit status and `changed`.
pub(crate) fn udev(root: &Path, name: &str) -> (i32, bool) {
    let out = Command::new(bin())
        .args(["--udev", name, "--root", root.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("--udev stdout is not one JSON object ({e}): {stdout:?}"));
    assert!(out.stderr.is_empty(), "--udev wrote to stderr");
    let code = out.status.code().unwrap_or(-1);
    assert_eq!(json["failed"] == true, code != 0, "{stdout}");
    (code, json["changed"] == true)
}

/// What a reboot does to the fake host: kernel defaults are back and `run/` is empty.
pub(crate) fn reboot(r: &FakeRoot) {
    for md in ["md0", "md2", "md3"] {
        r.set_md(md, "group_thread_cnt", "0");
        r.set_md(md, "stripe_cache_size", "256");
        r.set_md(md, "sync_speed_max", "200000 (system)");
    }
    fs::write(r.dir.join("proc/sys/dev/raid/speed_limit_min"), "1000\n").unwrap();
    fs::remove_dir_all(r.dir.join("run")).unwrap();
    fs::create_dir(r.dir.join("run")).unwrap();
}

#[test]
fn persist_in_check_mode_writes_no_file() {
    let dir = scratch("persistcheck");
    demo_host(&dir);
    let mut input = desired();
    input["check_mode"] = json!(true);
    let out = run_unpackaged(&dir, input);
    assert_eq!(out.json["changed"], true);
    assert_eq!(out.json["persist"]["files"].as_array().unwrap().len(), 4);
    for f in [STATE, BINARY, RULE] {
        assert!(!dir.join(f).exists(), "{f} written in check mode");
    }
}

#[test]
fn query_after_a_persisted_apply_is_compliant_and_its_message_agrees() {
    let dir = scratch("persistquery");
    demo_host(&dir);
    let mut input = desired();
    input["state"] = json!("present");
    assert_eq!(run(&dir, input.clone()).json["failed"], false);
    input["state"] = json!("query");
    let out = run(&dir, input);
    assert_eq!(out.json["compliant"], true, "{}", out.stdout);
    assert!(
        out.json["msg"].as_str().unwrap().starts_with("compliant"),
        "{}",
        out.stdout
    );
}

#[test]
fn persist_and_revert_report_the_udev_reload_a_test_root_does_not_run() {
    let dir = scratch("reload");
    demo_host(&dir);
    let out = run(&dir, desired());
    let reload = &out.json["persist"]["udev_reload"];
    assert_eq!(
        reload["command"], "udevadm control --reload",
        "{}",
        out.stdout
    );
    assert_eq!(reload["ran"], false);
    assert!(
        reload["result"]
            .as_str()
            .unwrap()
            .starts_with("not run: the root is "),
        "{reload}"
    );
    // Nothing changed in the rule: nothing to reload.
    let again = run(&dir, desired());
    assert!(
        again.json["persist"].get("udev_reload").is_none(),
        "{}",
        again.stdout
    );
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(
        out.json["persist"]["udev_reload"]["ran"], false,
        "{}",
        out.stdout
    );
    assert_eq!(
        out.json["persist"]["udev_reload"]["command"],
        "udevadm control --reload"
    );
}

#[test]
fn compliant_covers_the_persisted_files_and_msg_agrees_in_every_state() {
    let dir = scratch("compliant-files");
    demo_host(&dir);
    let query = |extra: serde_json::Value| {
        let mut input = desired();
        input
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        run(&dir, input)
    };
    // Before persist: values and files due.
    let q = query(json!({"state": "query"}));
    assert_eq!(q.json["compliant"], false);
    assert!(q.msg().starts_with("not compliant: "), "{}", q.msg());
    assert_eq!(run(&dir, desired()).code, 0);
    // Right after persist, a query of the same input is compliant.
    let q = query(json!({"state": "query"}));
    assert_eq!(q.json["compliant"], true, "{}", q.stdout);
    assert!(q.msg().starts_with("compliant: "), "{}", q.msg());
    // Converged values, one file due: neither check mode nor query says compliant.
    fs::remove_file(dir.join(RULE)).unwrap();
    let c = query(json!({"check_mode": true}));
    assert_eq!(c.json["changed"], true, "{}", c.stdout);
    assert_eq!(c.json["compliant"], false, "{}", c.stdout);
    assert!(
        c.msg()
            .contains("would persist /etc/udev/rules.d/90-mdtune.rules"),
        "{}",
        c.msg()
    );
    let q = query(json!({"state": "query"}));
    assert_eq!(q.json["compliant"], false);
    assert!(q.msg().starts_with("not compliant: "), "{}", q.msg());
    assert!(
        q.msg()
            .contains("persist due: /etc/udev/rules.d/90-mdtune.rules"),
        "{}",
        q.msg()
    );
    assert_eq!(q.json["changed"], false);
}

/// `sendto`'s number: x86_64 has its own table, arm64, riscv64 and loongarch64 the generic one.
#[cfg(target_arch = "x86_64")]
const SYS_SENDTO: &str = "44";
#[cfg(not(target_arch = "x86_64"))]
const SYS_SENDTO: &str = "206";

#[test]
fn the_log_line_goes_to_the_socket_checked_even_when_another_is_renamed_onto_dev_log() {
    if !needs(Requirement::Strace) {
        return;
    }
    // `dev/log` is checked to be a socket, then sent to. A socket renamed onto `dev/log` in
    // between must not get the line: the run pins the socket it checked. The race is made
    // certain: strace holds the `sendto` at its entry while the test renames a decoy onto it.
    crate::common::require_strace();
    let dir = scratch("udevlograce");
    let r = demo_host(&dir);
    assert_eq!(
        run(&dir, json!({"persist": true, "thread_policy": "auto"})).code,
        0
    );
    reboot(&r);
    let log = syslog(&dir);
    let decoy_path = dir.join("decoy.sock");
    let decoy = UnixDatagram::bind(&decoy_path).unwrap();
    decoy
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=sendto"])
        .args(["-e", "inject=sendto:delay_enter=1000000"])
        .arg(bin())
        .args(["--udev", "md0", "--root", dir.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut swapped = false;
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the traced run did not end"
        );
        let held = crate::common::children(child.id()).into_iter().any(|pid| {
            fs::read_to_string(format!("/proc/{pid}/syscall"))
                .is_ok_and(|s| s.split_whitespace().next() == Some(SYS_SENDTO))
        });
        if held && !swapped {
            fs::rename(&decoy_path, dir.join("dev/log")).unwrap();
            swapped = true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(swapped, "the run never reached its sendto");
    assert!(child.wait().unwrap().success());
    let (checked, renamed) = (logged(&log), logged(&decoy));
    assert_eq!(renamed, Vec::<String>::new(), "the decoy got the line");
    assert_eq!(checked.len(), 1, "{checked:?}");
    assert!(
        checked[0].contains("md0: group_thread_cnt 0 -> 8"),
        "{}",
        checked[0]
    );
}
