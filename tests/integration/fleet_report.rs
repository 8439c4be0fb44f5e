//! What a fleet can bet on (docs/reference.md §3, §6; docs/fleet.md): a compliance sweep, an
//! Ansible play or a Salt state decides from the report alone, so the report is never vacuously
//! compliant, persistence never silently diverges from the live host, persist never writes a
//! packaged binary, and messages answer the question asked. Each test runs the real binary on a
//! fake root. What revert and rollback say: `fleet_failures.rs`.

use crate::common::{
    assert_same_values, bin, kernel_snapshot, run, run_args, run_unpackaged, run_unprivileged,
    scratch, Run,
};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::{demo_host, FakeRoot};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const RULE: &str = "etc/udev/rules.d/90-mdtune.rules";
pub(crate) const STATE: &str = "etc/mdtune/mdtune.json";
pub(crate) const MANIFEST: &str = "etc/mdtune/installed.json";
pub(crate) const BINARY: &str = "usr/local/sbin/mdtune";

/// Every path under `dir` (files, links, directories) with what it holds.
pub(crate) fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = fs::symlink_metadata(&p).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else if meta.is_file() {
                String::from_utf8_lossy(&fs::read(&p).unwrap()).into_owned()
            } else {
                "special".to_string()
            };
            out.push((p, what));
        }
    }
    out.sort();
    out
}

pub(crate) fn warnings(r: &Run) -> Vec<String> {
    r.json["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings in {}", r.stdout))
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

/// `persist.diverged` as `"<target> <setting> <value>"`, empty when absent.
fn diverged(r: &Run) -> Vec<String> {
    r.json["persist"]["diverged"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|e| {
                    format!(
                        "{} {} {}",
                        e["target"].as_str().unwrap(),
                        e["setting"].as_str().unwrap(),
                        e["value"]
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

// --- 1. never vacuously compliant ----------------------------------------------------------

#[test]
fn a_root_without_sys_block_is_unusable_exit_2_nothing_written_no_lock() {
    let base = scratch("no-sys-block");
    let empty = base.join("empty");
    fs::create_dir_all(&empty).unwrap();
    // A root one level too deep: the user gave the host's /sys.
    let host = base.join("host");
    demo_host(&host);
    let deep = host.join("sys");
    let before = tree(&base);
    for root in [&empty, &deep] {
        for extra in [
            json!({}),
            json!({"state": "query"}),
            json!({"check_mode": true}),
            json!({"persist": true}),
            json!({"state": "reverted"}),
        ] {
            let out = run_unpackaged(root, extra.clone());
            assert_eq!(out.code, 2, "{}: {extra}: {}", root.display(), out.stdout);
            assert!(
                out.msg().contains("sys/block") && out.msg().contains(&root.display().to_string()),
                "{extra}: {}",
                out.msg()
            );
            assert_eq!(out.json["compliant"], Value::Null, "{}", out.stdout);
        }
        let out = run_args(
            &["--udev", "md0", "--root", root.to_str().unwrap()],
            "",
            &[],
        );
        assert_eq!(out.code, 2, "--udev: {}", out.stdout);
    }
    assert_eq!(tree(&base), before, "an unusable root was written to");
}

#[test]
fn a_run_that_selects_no_array_and_no_system_setting_is_not_compliant_and_says_so() {
    let dir = scratch("vacuous");
    FakeRoot::new(&dir, 8); // md did not assemble: sys/block has no md device
    for extra in [
        json!({"state": "query"}),
        json!({}),
        json!({"arrays": [{"name": "md*"}]}),
    ] {
        let out = run(&dir, extra.clone());
        assert_eq!(out.code, 0, "{extra}: {}", out.stdout);
        assert_eq!(out.json["compliant"], false, "{extra}: {}", out.stdout);
        assert_eq!(out.json["changed"], false, "{extra}: {}", out.stdout);
        assert!(
            warnings(&out)
                .iter()
                .any(|w| w.contains("nothing was checked")),
            "{extra}: {}",
            out.stdout
        );
    }
    // A system setting is something checked.
    let out = run(&dir, json!({"state": "query", "speed_limit_max": 200000}));
    assert_eq!(out.json["compliant"], true, "{}", out.stdout);
}

#[test]
fn an_array_whose_values_cannot_be_read_is_not_compliant() {
    let dir = scratch("unreadable-compliant");
    let r = demo_host(&dir);
    // md0 is being stopped: its stripe_cache_size reads empty.
    r.set_md("md0", "stripe_cache_size", "");
    let out = run(&dir, json!({"state": "query", "thread_policy": "off"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.array("md0")["compliant"], false, "{}", out.stdout);
    assert_eq!(out.array("md2")["compliant"], true, "{}", out.stdout);
    assert_eq!(out.json["compliant"], false, "{}", out.stdout);
    assert!(out.msg().starts_with("not compliant"), "{}", out.msg());
}

#[test]
fn an_array_whose_read_fails_with_ebusy_is_not_compliant_and_the_others_are_read() {
    if !needs(Requirement::Strace) {
        return;
    }
    // md0 is being stopped: the kernel's show functions fail with EBUSY once mddev_get fails.
    // strace makes every read of md0's stripe_cache_size fail so.
    crate::common::require_strace();
    let dir = scratch("ebusy-compliant");
    let r = demo_host(&dir);
    let attr = fs::canonicalize(dir.join("sys/block/md0/md/stripe_cache_size")).unwrap();
    let input =
        json!({"root": dir.display().to_string(), "state": "query", "thread_policy": "off"});
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=read"])
        .args(["-e", "inject=read:error=EBUSY", "-P"])
        .arg(&attr)
        .args([crate::common::bin(), "-"]);
    let out = crate::common::run_command(cmd, &input.to_string());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.array("md0")["compliant"], false, "{}", out.stdout);
    assert_eq!(out.array("md2")["compliant"], true, "{}", out.stdout);
    assert_eq!(out.json["compliant"], false, "{}", out.stdout);
    assert!(out.msg().starts_with("not compliant"), "{}", out.msg());
    let warnings = out.json["warnings"].to_string();
    assert!(warnings.contains("md0"), "{warnings}");
    assert_eq!(
        r.read_md("md0", "stripe_cache_size"),
        "256",
        "nothing is written"
    );
}

// --- 2. persistence never silently diverges ------------------------------------------------

fn persisted_input() -> Value {
    json!({"persist": true,
        "arrays": [{"name": "hana_data", "stripe_cache_size": 4096, "sync_speed_max": 600000}],
        "speed_limit_min": 50000})
}

#[test]
fn persist_false_removes_what_persist_installed_and_keeps_the_live_values() {
    let dir = scratch("persist-false");
    let r = demo_host(&dir);
    assert_eq!(run_unpackaged(&dir, persisted_input()).code, 0);
    fs::write(
        dir.join("etc/udev/rules.d/60-admin.rules"),
        "# the admin's\n",
    )
    .unwrap();
    for f in [RULE, STATE, MANIFEST, BINARY] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let live = kernel_snapshot(&dir);
    let saved = tree(&dir.join("run/mdtune"));
    let mut input = persisted_input();
    input["persist"] = json!(false);
    input["diff"] = json!(true);
    let out = run_unpackaged(&dir, input.clone());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["changed"], true, "{}", out.stdout);
    assert_eq!(out.json["persist"]["changed"], true, "{}", out.stdout);
    let files = out.json["persist"]["files"].as_array().unwrap().len();
    assert_eq!(files, 4, "{}", out.stdout);
    for f in [RULE, STATE, MANIFEST, BINARY] {
        assert!(!dir.join(f).exists(), "{f} left after persist: false");
    }
    assert!(dir.join("etc/udev/rules.d/60-admin.rules").exists());
    // The live values stay, and so do the originals a revert restores.
    assert_same_values(&live, &kernel_snapshot(&dir));
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert_eq!(tree(&dir.join("run/mdtune")), saved);
    // Nothing left to remove: converged.
    let again = run_unpackaged(&dir, input);
    assert_eq!(again.json["changed"], false, "{}", again.stdout);
    assert_eq!(again.json["compliant"], true, "{}", again.stdout);
}

#[test]
fn a_run_without_persist_that_differs_from_the_persisted_state_warns_and_reports_diverged() {
    let dir = scratch("diverged");
    let r = demo_host(&dir);
    assert_eq!(run(&dir, persisted_input()).code, 0);
    let state = fs::read(dir.join(STATE)).unwrap();
    let other = json!({"arrays": [{"name": "md0", "stripe_cache_size": 8192}]});
    let out = run(&dir, other.clone());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "8192");
    assert_eq!(
        diverged(&out),
        ["md0 stripe_cache_size 4096"],
        "{}",
        out.stdout
    );
    assert_eq!(out.json["compliant"], false, "{}", out.stdout);
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.contains("md0") && w.contains("4096") && w.contains("persist")),
        "{}",
        out.stdout
    );
    assert_eq!(
        fs::read(dir.join(STATE)).unwrap(),
        state,
        "unset persist rewrote the state"
    );
    // A query of the same input says the same, and a converged run is still not compliant.
    let mut q = other.clone();
    q["state"] = json!("query");
    let out = run(&dir, q);
    assert_eq!(
        diverged(&out),
        ["md0 stripe_cache_size 4096"],
        "{}",
        out.stdout
    );
    assert_eq!(out.json["compliant"], false, "{}", out.stdout);
    let out = run(&dir, other);
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    assert_eq!(out.json["compliant"], false, "{}", out.stdout);
    assert!(
        out.msg()
            .contains("the next boot puts back md0 stripe_cache_size 4096"),
        "{}",
        out.msg()
    );
    // A run that agrees with the persisted state has nothing diverged, and converges.
    let agree = json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let out = run(&dir, agree.clone());
    assert_eq!(diverged(&out), Vec::<String>::new(), "{}", out.stdout);
    let out = run(&dir, agree);
    assert_eq!(out.json["compliant"], true, "{}", out.stdout);
}

#[test]
fn mdtune_info_accepts_persist_true_and_checks_the_persisted_files_without_writing() {
    let dir = scratch("info-persist");
    demo_host(&dir);
    assert_eq!(run(&dir, persisted_input()).code, 0);
    let mut info = persisted_input();
    info["_ansible_module_name"] = json!("mdtune.mdraid.mdtune_info");
    let out = run(&dir, info.clone());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["compliant"], true, "{}", out.stdout);
    assert_eq!(out.json["state"], "query", "{}", out.stdout);
    // The rule is gone: the next reboot would not replay the tuning.
    fs::remove_file(dir.join(RULE)).unwrap();
    let before = tree(&dir);
    let out = run(&dir, info);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["compliant"], false, "{}", out.stdout);
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    assert!(
        out.json["persist"]["files"]
            .as_array()
            .unwrap()
            .contains(&json!("/etc/udev/rules.d/90-mdtune.rules")),
        "{}",
        out.stdout
    );
    assert_eq!(tree(&dir), before, "mdtune_info wrote something");
}

// --- 3. persist never writes a packaged binary ---------------------------------------------

#[test]
fn persist_replaces_a_link_at_usr_local_sbin_mdtune_and_never_writes_through_it() {
    let dir = scratch("binary-link");
    demo_host(&dir);
    let packaged = dir.join("usr/sbin/mdtune");
    fs::create_dir_all(packaged.parent().unwrap()).unwrap();
    fs::write(&packaged, "#!/bin/sh\n# the packaged mdtune\n").unwrap();
    fs::set_permissions(&packaged, fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir_all(dir.join("usr/local/sbin")).unwrap();
    symlink("../../sbin/mdtune", dir.join(BINARY)).unwrap();
    let out = run_unpackaged(&dir, persisted_input());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        fs::read(&packaged).unwrap(),
        b"#!/bin/sh\n# the packaged mdtune\n",
        "persist wrote through the link into the packaged binary"
    );
    let meta = fs::symlink_metadata(dir.join(BINARY)).unwrap();
    assert!(meta.file_type().is_file(), "the link is still there");
    assert_eq!(
        fs::read(dir.join(BINARY)).unwrap(),
        fs::read(bin()).unwrap()
    );
}

// --- 4. messages answer the question asked -------------------------------------------------

#[test]
fn an_exact_name_that_matches_nothing_lists_the_arrays_with_their_mdadm_names() {
    let dir = scratch("no-match-names");
    demo_host(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "hana_dta", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    for shown in [
        "md0 (hana_data)",
        "md1 (hana_log)",
        "md2 (archive)",
        "md126",
    ] {
        assert!(out.msg().contains(shown), "{shown}: {}", out.msg());
    }
}

#[test]
fn a_name_whose_uuid_differs_says_the_uuid_it_has_in_the_form_given() {
    let dir = scratch("uuid-differs");
    demo_host(&dir);
    for (given, has) in [
        (
            "b2c3d4e5-e5f6-0718-293a-4b5c6d7e8f90",
            "a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90",
        ),
        (
            "b2c3d4e5:e5f60718:293a4b5c:6d7e8f90",
            "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90",
        ),
    ] {
        let out = run(&dir, json!({"arrays": [{"name": "md0", "uuid": given}]}));
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(
            out.msg().contains(&format!("md0 has uuid {has}")),
            "{given}: {}",
            out.msg()
        );
    }
}

#[test]
fn a_run_without_root_that_fails_on_the_lock_or_a_write_says_mdtune_needs_root() {
    if !needs(Requirement::Root) {
        return;
    }
    let dir = scratch("needs-root");
    demo_host(&dir);
    let input = json!({"root": dir, "thread_policy": "off",
        "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    // The lock: run/ is root's.
    let out = run_unprivileged(&input);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.msg().contains("needs root") && out.msg().contains("become: true"),
        "{}",
        out.msg()
    );
    // A write: run/ is open to all, md0's files are root's.
    fs::set_permissions(dir.join("run"), fs::Permissions::from_mode(0o1777)).unwrap();
    fs::write(dir.join("run/mdtune.lock"), "").unwrap();
    fs::set_permissions(
        dir.join("run/mdtune.lock"),
        fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    let out = run_unprivileged(&input);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.msg().contains("md0: stripe_cache_size"),
        "{}",
        out.msg()
    );
    assert!(
        out.msg().contains("needs root") && out.msg().contains("become: true"),
        "{}",
        out.msg()
    );
}
