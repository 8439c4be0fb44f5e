//! Persistence and revert (contract section 6), through the real binary on fake roots: a persist
//! run, a converged second run, a simulated reboot, the udev replay for one array, a repeated
//! udev event, revert and a second revert.

mod common;

use common::fakeroot::{demo_host, FakeRoot, MdSpec};
use common::{assert_same_values, bin, kernel_snapshot, run, scratch, snapshot};
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const RULE: &str = "etc/udev/rules.d/90-mdtune.rules";
const STATE: &str = "etc/mdtune/mdtune.json";
const BINARY: &str = "usr/local/sbin/mdtune";

fn desired() -> serde_json::Value {
    json!({"persist": true, "diff": true, "_ansible_check_mode": false,
        "arrays": [{"name": "hana_data", "stripe_cache_size": 4096, "sync_speed_max": 600000}],
        "speed_limit_min": 50000})
}

/// Runs `mdtune --udev NAME --root ROOT` as udev would (no stdin), and checks stdout is one JSON
/// object (udev discards it) and stderr empty. Returns the exit status and `changed`.
fn udev(root: &Path, name: &str) -> (i32, bool) {
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

/// A syslog socket at `<root>/dev/log`, as journald or rsyslog provides it.
fn syslog(root: &Path) -> UnixDatagram {
    let path = root.join("dev/log");
    let _ = fs::remove_file(&path);
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    sock
}

fn logged(sock: &UnixDatagram) -> Vec<String> {
    let mut buf = [0u8; 4096];
    let mut out = Vec::new();
    while let Ok(n) = sock.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    out
}

/// What a reboot does to the fake host: kernel defaults are back and `run/` is empty.
fn reboot(r: &FakeRoot) {
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
fn persist_installs_state_binary_and_udev_rule_atomically_and_once() {
    let dir = scratch("persist");
    demo_host(&dir);
    let out = run(&dir, desired());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.json["persist"],
        json!({"changed": true, "files": ["/etc/mdtune/mdtune.json", "/usr/local/sbin/mdtune",
            "/etc/udev/rules.d/90-mdtune.rules", "/etc/mdtune/installed.json"]})
    );
    // The saved input has no root, check_mode, diff or _ansible_* keys.
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join(STATE)).unwrap()).unwrap();
    assert_eq!(
        saved,
        json!({"arrays": [{"name": "hana_data", "stripe_cache_size": 4096, "sync_speed_max": 600000}],
            "speed_limit_min": 50000})
    );
    assert_eq!(
        fs::read(dir.join(BINARY)).unwrap(),
        fs::read(bin()).unwrap()
    );
    assert_eq!(
        fs::metadata(dir.join(BINARY)).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let rule = fs::read_to_string(dir.join(RULE)).unwrap();
    assert!(rule.contains("ACTION==\"change\""), "{rule}");
    assert!(
        rule.contains("RUN+=\"/usr/local/sbin/mdtune --udev %k\""),
        "{rule}"
    );
    let headers: Vec<&str> = out.json["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["after_header"].as_str().unwrap())
        .collect();
    assert!(headers.contains(&"/etc/udev/rules.d/90-mdtune.rules"));
    assert!(headers.contains(&"md0"));
    // The manifest names what persist created, so a revert removes exactly that.
    let created: Vec<String> =
        serde_json::from_str(&fs::read_to_string(dir.join("etc/mdtune/installed.json")).unwrap())
            .unwrap();
    assert_eq!(
        created,
        [
            "/etc/mdtune/mdtune.json",
            "/etc/udev/rules.d/90-mdtune.rules",
            "/usr/local/sbin/mdtune"
        ]
    );
    // No temp files are left beside the installed ones.
    for (d, n) in [
        ("etc/mdtune", 2),
        ("etc/udev/rules.d", 1),
        ("usr/local/sbin", 1),
    ] {
        assert_eq!(fs::read_dir(dir.join(d)).unwrap().count(), n, "{d}");
    }

    let files = snapshot(&dir.join("etc"));
    let again = run(&dir, desired());
    assert_eq!(again.json["changed"], false, "{}", again.stdout);
    assert_eq!(
        again.json["persist"],
        json!({"changed": false, "files": []})
    );
    assert_eq!(
        snapshot(&dir.join("etc")),
        files,
        "a converged run rewrote a file"
    );
}

#[test]
fn persist_in_check_mode_writes_no_file() {
    let dir = scratch("persistcheck");
    demo_host(&dir);
    let mut input = desired();
    input["check_mode"] = json!(true);
    let out = run(&dir, input);
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
fn udev_replays_the_persisted_state_for_one_array_after_a_reboot() {
    let dir = scratch("udev");
    let r = demo_host(&dir);
    let input = json!({"persist": true, "thread_policy": "auto",
        "arrays": [{"name": "md*", "sync_speed_max": 600000}, {"name": "hana_data", "stripe_cache_size": 4096}]});
    assert_eq!(run(&dir, input).code, 0);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    reboot(&r);
    let log = syslog(&dir);

    assert_eq!(udev(&dir, "md0"), (0, true));
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert_eq!(r.read_md("md0", "sync_speed_max"), "600000");
    // Other arrays wait for their own event.
    assert_eq!(r.read_md("md2", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md2", "sync_speed_max"), "200000 (system)");
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("<30>mdtune["), "{}", lines[0]);
    assert!(
        lines[0].contains("md0: group_thread_cnt 0 -> 8"),
        "{}",
        lines[0]
    );

    // mdadm's watch option repeats change events: they cost reads only, and log nothing.
    let before = kernel_snapshot(&dir);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(udev(&dir, "md0"), (0, false));
    assert_eq!(kernel_snapshot(&dir), before);
    assert!(logged(&log).is_empty());

    assert_eq!(udev(&dir, "md2").0, 0);
    assert_eq!(r.read_md("md2", "group_thread_cnt"), "16");
}

#[test]
fn udev_without_persisted_state_or_with_a_bad_name_does_nothing() {
    let dir = scratch("udevnothing");
    demo_host(&dir);
    let before = kernel_snapshot(&dir);
    assert_eq!(udev(&dir, "md0"), (0, false));
    assert_eq!(run(&dir, desired()).code, 0);
    let before_bad = kernel_snapshot(&dir);
    assert_eq!(udev(&dir, "../md0").0, 2);
    assert_eq!(
        udev(&dir, "md9").0,
        0,
        "an array not in the state: nothing to do"
    );
    assert_eq!(kernel_snapshot(&dir), before_bad);
    assert_ne!(before, before_bad);
}

#[test]
fn revert_restores_originals_removes_files_and_a_second_revert_changes_nothing() {
    let dir = scratch("revert");
    let r = demo_host(&dir);
    let original = kernel_snapshot(&dir);
    assert_eq!(run(&dir, desired()).code, 0);
    // A later run changes md0 again: the saved original stays the first one.
    assert_eq!(
        run(
            &dir,
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 8192}]})
        )
        .code,
        0
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "8192");

    // Revert restores every saved original: a selection is ignored, and says so.
    let check = run(
        &dir,
        json!({"state": "reverted", "check_mode": true, "arrays": [{"name": "md0"}]}),
    );
    assert_eq!(check.json["changed"], true);
    assert!(
        check.json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("arrays ignored"),
        "{}",
        check.stdout
    );
    assert!(dir.join(STATE).exists(), "check mode removed a file");

    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["changed"], true);
    assert_eq!(out.setting("md0", "stripe_cache_size")["before"], 8192);
    assert_eq!(out.setting("md0", "stripe_cache_size")["after"], 256);
    assert_eq!(out.json["system"]["speed_limit_min"]["after"], 1000);
    let files: Vec<&str> = out.json["persist"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"/etc/udev/rules.d/90-mdtune.rules"));
    assert!(files.contains(&"/run/mdtune/system.json"));
    assert_same_values(&original, &kernel_snapshot(&dir));
    for f in [STATE, BINARY, RULE] {
        assert!(!dir.join(f).exists(), "{f} left after revert");
    }
    assert_eq!(fs::read_dir(dir.join("run/mdtune")).unwrap().count(), 0);

    let again = run(&dir, json!({"state": "reverted"}));
    assert_eq!(again.json["changed"], false, "{}", again.stdout);
}

#[test]
fn revert_finds_a_reassembled_array_by_uuid_under_its_new_name() {
    let first = scratch("uuid-a");
    let mut a = FakeRoot::new(&first, 8);
    let d: Vec<String> = (0..3).map(|c| a.nvme(c, 4)).collect();
    let spec = MdSpec::level("raid5", 0x5eed);
    a.md("md0", &spec, &[&d[0], &d[1], &d[2]]);
    assert_eq!(run(&first, json!({})).code, 0);
    assert_eq!(a.read_md("md0", "group_thread_cnt"), "4");

    // The same array, re-assembled as md9 on a host whose run/ still holds the originals.
    let second = scratch("uuid-b");
    let mut b = FakeRoot::new(&second, 8);
    let d: Vec<String> = (0..3).map(|c| b.nvme(c, 4)).collect();
    b.md("md9", &spec, &[&d[0], &d[1], &d[2]]);
    b.set_md("md9", "group_thread_cnt", "4");
    fs::remove_dir_all(second.join("run")).unwrap();
    assert!(Command::new("cp")
        .args([
            "-a",
            first.join("run").to_str().unwrap(),
            second.to_str().unwrap()
        ])
        .status()
        .unwrap()
        .success());
    let out = run(&second, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(b.read_md("md9", "group_thread_cnt"), "0");
}

#[test]
fn revert_keeps_a_binary_that_persist_did_not_install() {
    let dir = scratch("keepbinary");
    demo_host(&dir);
    // A package put the same binary in place before mdtune ever ran.
    fs::create_dir_all(dir.join("usr/local/sbin")).unwrap();
    fs::copy(bin(), dir.join(BINARY)).unwrap();
    let out = run(&dir, desired());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let files = out.json["persist"]["files"].as_array().unwrap().clone();
    assert!(
        !files.contains(&json!("/usr/local/sbin/mdtune")),
        "{files:?}"
    );
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        dir.join(BINARY).exists(),
        "revert removed a binary it did not install"
    );
    for f in [STATE, RULE, "etc/mdtune/installed.json"] {
        assert!(!dir.join(f).exists(), "{f} left after revert");
    }
}
