//! The files a persist run writes (docs/reference.md §6), through the real binary on fake roots:
//! the state, the manifest, the binary and the udev rule, installed atomically and once, the
//! manifest before the files it lists, nothing rewritten by a converged second run; a link in the
//! binary's place replaced, a packaged binary run by the rule with no copy installed; and a write
//! that fails with an undo that fails too. Check mode and compliance: `persistence.rs`.

use crate::common::{bin, package, run, run_command, run_unpackaged, scratch, snapshot};
use crate::common::{needs, Requirement};
use crate::persistence::{desired, BINARY, RULE, STATE};
use mdtune_fakeroot::demo_host;
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[test]
fn persist_installs_state_binary_and_udev_rule_atomically_and_once() {
    let dir = scratch("persist");
    demo_host(&dir);
    // The build's binary, from outside the root, as on a host without the package: persist
    // installs a copy of it.
    let out = run_unpackaged(&dir, desired());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["persist"]["changed"], true);
    assert_eq!(
        out.json["persist"]["files"],
        json!([
            "/etc/mdtune/installed.json",
            "/etc/mdtune/mdtune.json",
            "/usr/local/sbin/mdtune",
            "/etc/udev/rules.d/90-mdtune.rules"
        ])
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
    // change: an array starts running; add: coldplug of an array the initramfs assembled.
    assert!(rule.contains("ACTION==\"add|change\""), "{rule}");
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
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("etc/mdtune/installed.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["created"],
        json!([
            "/etc/mdtune/mdtune.json",
            "/etc/udev/rules.d/90-mdtune.rules",
            "/usr/local/sbin/mdtune"
        ])
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
    let again = run_unpackaged(&dir, desired());
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

/// Runs the binary under `strace -f -y -e trace=rename*` and returns the renamed-to paths in
/// order: a name relative to a directory descriptor (`renameat`) is joined to the directory's
/// path, which `-y` shows as `3</root/etc/mdtune>`.
fn renames(input: &serde_json::Value) -> Vec<String> {
    assert!(
        Path::new("/usr/bin/strace").exists(),
        "strace is missing: this test needs it (apt-get install strace)"
    );
    let log = scratch("strace").join("log");
    let mut child = Command::new("/usr/bin/strace")
        .args([
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=rename,renameat,renameat2",
            "-o",
        ])
        .arg(&log)
        .arg("--")
        .arg(bin())
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        input.to_string().as_bytes(),
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let name = l.rsplit('"').nth(1)?;
            if name.starts_with('/') {
                return Some(name.to_string());
            }
            // `..., 3</root/etc/mdtune>, "installed.json")`: the directory before the name.
            let before = l.rsplit_once(&format!("\"{name}\""))?.0;
            let dir = before.rsplit_once('<')?.1.split_once('>')?.0;
            Some(format!("{dir}/{name}"))
        })
        .collect()
}

#[test]
fn persist_writes_the_manifest_before_the_files_it_lists_and_removes_stale_temp_files() {
    if !needs(Requirement::Strace) {
        return;
    }
    let dir = scratch("manifest-first");
    demo_host(&dir);
    // Temp files an interrupted run left behind.
    for stale in [
        "etc/mdtune/.mdtune.json.mdtune-99999",
        "usr/local/sbin/.mdtune.mdtune-12345",
    ] {
        fs::create_dir_all(dir.join(stale).parent().unwrap()).unwrap();
        fs::write(dir.join(stale), "half").unwrap();
    }
    let mut input = desired();
    input["root"] = json!(dir);
    let order = renames(&input);
    let pos = |f: &str| {
        order
            .iter()
            .position(|p| p.ends_with(f))
            .unwrap_or_else(|| panic!("{f} never renamed into place: {order:?}"))
    };
    let manifest = pos("etc/mdtune/installed.json");
    for f in [STATE, BINARY, RULE] {
        assert!(
            manifest < pos(f),
            "{f} written before the manifest: {order:?}"
        );
    }
    for (d, n) in [("etc/mdtune", 2), ("usr/local/sbin", 1)] {
        let names: Vec<_> = fs::read_dir(dir.join(d))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), n, "{d}: {names:?}");
    }
}

#[test]
fn persist_replaces_a_binary_link_and_never_writes_where_it_leads() {
    // stow: /usr/local/sbin/mdtune -> ../stow/mdtune/sbin/mdtune, an older build; and a link
    // out of the root. Either is replaced by mdtune's own copy (docs/reference.md §6).
    let base = scratch("binary-link");
    let outside = base.join("outside/mdtune");
    fs::create_dir_all(outside.parent().unwrap()).unwrap();
    fs::write(&outside, "not ours").unwrap();
    for inside in [true, false] {
        let dir = base.join(if inside { "stow" } else { "out" });
        demo_host(&dir);
        let real = dir.join("usr/local/stow/mdtune/sbin/mdtune");
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(&real, "an older mdtune").unwrap();
        fs::create_dir_all(dir.join("usr/local/sbin")).unwrap();
        let target = if inside {
            std::path::PathBuf::from("../stow/mdtune/sbin/mdtune")
        } else {
            outside.clone()
        };
        std::os::unix::fs::symlink(&target, dir.join(BINARY)).unwrap();
        let out = run_unpackaged(&dir, desired());
        assert_eq!(out.code, 0, "{}", out.stdout);
        let meta = fs::symlink_metadata(dir.join(BINARY)).unwrap();
        assert!(meta.file_type().is_file(), "the link is still there");
        assert_eq!(
            fs::read(dir.join(BINARY)).unwrap(),
            fs::read(bin()).unwrap()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "an older mdtune");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "not ours");
        assert_eq!(run_unpackaged(&dir, desired()).json["changed"], false);
        // The copy is persist's own: revert removes it, and what the link led to stays.
        assert_eq!(run_unpackaged(&dir, json!({"state": "reverted"})).code, 0);
        assert!(fs::symlink_metadata(dir.join(BINARY)).is_err());
        assert!(real.exists());
    }
}

#[test]
fn a_packaged_binary_is_what_the_rule_runs_and_no_copy_is_installed() {
    let dir = scratch("packaged");
    demo_host(&dir);
    // The run's binary, hard-linked at usr/sbin/mdtune, and started from there.
    let packaged = package(&dir);
    let mut input = desired();
    input["root"] = json!(dir);
    let mut cmd = Command::new(&packaged);
    cmd.arg("-");
    let out = run_command(cmd, &input.to_string());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let rule = fs::read_to_string(dir.join(RULE)).unwrap();
    assert!(
        rule.contains("RUN+=\"/usr/sbin/mdtune --udev %k\""),
        "{rule}"
    );
    assert!(!dir.join(BINARY).exists(), "a second copy was installed");
    let revert = run(&dir, json!({"state": "reverted"}));
    assert_eq!(revert.code, 0, "{}", revert.stdout);
    assert!(!dir.join(RULE).exists());
    assert!(packaged.exists(), "revert removed the packaged binary");
}

#[test]
fn a_persisted_file_that_fails_and_an_undo_that_fails_too_are_reported_as_left_changed() {
    if !needs(Requirement::Strace) {
        return;
    }
    // persist writes the manifest first, then the state, the binary and the rule, each by a
    // rename. strace fails every rename after the first (the state's) and every unlink, so the
    // manifest, new on this host, cannot be removed again: the run must fail, say that the
    // manifest still holds the new state, and count as changed.
    crate::common::require_strace();
    let dir = scratch("halfwritten");
    let r = demo_host(&dir);
    let before = r.read_md("md0", "stripe_cache_size");
    let mut input =
        json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    input["root"] = json!(dir.display().to_string());
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null"])
        .args(["-e", "inject=/^renameat:error=EIO:when=2+"])
        .args(["-e", "inject=/^unlinkat:error=EROFS"])
        .args([bin(), "-"]);
    let out = crate::common::run_command(cmd, &input.to_string());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json["failed"], true);
    assert_eq!(out.json["changed"], true, "{}", out.stdout);
    let msg = out.json["msg"].as_str().unwrap();
    assert!(msg.contains("cannot write"), "{msg}");
    assert!(
        msg.contains("mdtune.json"),
        "the failed write is named: {msg}"
    );
    assert!(
        msg.contains("NOT UNDONE") && msg.contains("installed.json still holds the new state"),
        "{msg}"
    );
    let manifest = fs::read_to_string(dir.join("etc/mdtune/installed.json")).unwrap();
    assert!(manifest.contains("mdtune.json"), "{manifest}");
    assert!(!dir.join("etc/mdtune/mdtune.json").exists());
    assert_eq!(
        r.read_md("md0", "stripe_cache_size"),
        before,
        "no value is left written"
    );
}
