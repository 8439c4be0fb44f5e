//! What a fleet can bet on (docs/reference.md §3, §6; docs/fleet.md): a compliance sweep, an
//! Ansible play or a Salt state decides from the report alone, so the report is never vacuously
//! compliant, persistence never silently diverges from the live host, and revert and rollback
//! say exactly what they did. Each test runs the real binary on a fake root.

use crate::common::{
    assert_same_values, bin, kernel_snapshot, run, run_args, run_unpackaged, run_unprivileged,
    scratch, Run,
};
use crate::faults::{run_fed, Step};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

const RULE: &str = "etc/udev/rules.d/90-mdtune.rules";
const STATE: &str = "etc/mdtune/mdtune.json";
const MANIFEST: &str = "etc/mdtune/installed.json";
const BINARY: &str = "usr/local/sbin/mdtune";

/// Every path under `dir` (files, links, directories) with what it holds.
fn tree(dir: &Path) -> Vec<(PathBuf, String)> {
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

fn warnings(r: &Run) -> Vec<String> {
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

/// Makes `path` immutable (`chattr +i`: even root gets EPERM) for as long as the guard lives.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Immutable {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .map(|s| s.success());
        assert!(
            matches!(ok, Ok(true)),
            "chattr +i {} failed: this test needs root, e2fsprogs (apt-get install e2fsprogs) and a filesystem with immutable files (ext4, xfs) under $TMPDIR",
            path.display()
        );
        Immutable(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// Turns md0's `stripe_cache_size` into a FIFO (the lock file already there, so the host is
/// read once), runs `input` through the binary and plays `steps` on the FIFO as the kernel.
fn run_with_fifo(dir: &Path, r: &FakeRoot, input: Value, steps: Vec<Step>) -> (Value, i32, String) {
    let attr = r.md_attr("md0", "stripe_cache_size");
    fs::remove_file(&attr).unwrap();
    let ok = Command::new("mkfifo")
        .arg(&attr)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo failed (apt-get install coreutils)");
    fs::write(dir.join("run/mdtune.lock"), "").unwrap();
    let fifo = fs::canonicalize(&attr).unwrap();
    let (out, _) = run_fed(&input, fifo, steps);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (json, out.status.code().unwrap_or(-1), stdout)
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

// --- 3. revert says what it did ------------------------------------------------------------

#[test]
fn a_revert_that_restored_values_and_then_failed_reports_changed_and_what_it_restored() {
    for case in [
        "etc/mdtune links out",
        "manifest unreadable",
        "manifest not mdtune's",
    ] {
        let base = scratch("revert-late-failure");
        let dir = base.join("root");
        let r = demo_host(&dir);
        let outside = base.join("outside");
        fs::create_dir_all(&outside).unwrap();
        let out = run(
            &dir,
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
        );
        assert_eq!(out.code, 0, "{}", out.stdout);
        match case {
            "etc/mdtune links out" => symlink(&outside, dir.join("etc/mdtune")).unwrap(),
            "manifest unreadable" => fs::create_dir_all(dir.join(MANIFEST)).unwrap(),
            _ => {
                fs::create_dir_all(dir.join("etc/mdtune")).unwrap();
                fs::write(dir.join(MANIFEST), "{ half a manifest").unwrap();
            }
        }
        let out = run(&dir, json!({"state": "reverted"}));
        assert_eq!(r.read_md("md0", "stripe_cache_size"), "256", "{case}");
        assert_eq!(out.code, 1, "{case}: {}", out.stdout);
        assert_eq!(out.json["changed"], true, "{case}: {}", out.stdout);
        let s = out.setting("md0", "stripe_cache_size");
        assert_eq!(
            (
                s["before"].clone(),
                s["after"].clone(),
                s["changed"].clone()
            ),
            (json!(4096), json!(256), json!(true)),
            "{case}: {}",
            out.stdout
        );
        assert!(out.msg().contains("md0"), "{case}: {}", out.msg());
        assert!(out.msg().contains("etc/mdtune"), "{case}: {}", out.msg());
    }
}

#[test]
fn revert_removes_only_the_files_its_manifest_records() {
    let dir = scratch("revert-manifest-only");
    demo_host(&dir);
    // The admin's own rule and state, put there by hand, never by persist: no manifest.
    fs::create_dir_all(dir.join("etc/udev/rules.d")).unwrap();
    fs::write(dir.join(RULE), "# the admin's own rule\n").unwrap();
    fs::create_dir_all(dir.join("etc/mdtune")).unwrap();
    fs::write(dir.join(STATE), "{}\n").unwrap();
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        dir.join(RULE).exists(),
        "the admin's rule was removed: {}",
        out.stdout
    );
    assert_eq!(
        fs::read_to_string(dir.join(RULE)).unwrap(),
        "# the admin's own rule\n"
    );
    assert_eq!(fs::read_to_string(dir.join(STATE)).unwrap(), "{}\n");
    let files: Vec<&str> = out.json["persist"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files.iter().all(|f| f.starts_with("/run/mdtune/")),
        "{}",
        out.stdout
    );
}

#[test]
fn revert_keeps_the_saved_originals_of_an_array_it_cannot_read() {
    let dir = scratch("revert-unreadable");
    let r = demo_host(&dir);
    let out = run(
        &dir,
        json!({"thread_policy": "off",
        "arrays": [{"name": "md0", "stripe_cache_size": 4096}, {"name": "md2", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let saved = |uuid: &str| dir.join(format!("run/mdtune/{uuid}.json"));
    let (md0, md2) = (
        "a1b2c3d4e5f60718293a4b5c6d7e8f90",
        "c3d4e5f6e5f60718293a4b5c6d7e8f90",
    );
    assert!(
        saved(md0).exists() && saved(md2).exists(),
        "{:?}",
        tree(&dir.join("run"))
    );
    // md0 is being stopped: group_thread_cnt reads empty.
    r.set_md("md0", "group_thread_cnt", "");
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(r.read_md("md2", "stripe_cache_size"), "256");
    assert!(
        saved(md0).exists(),
        "md0's originals were deleted: {}",
        out.stdout
    );
    assert!(
        !saved(md2).exists(),
        "md2's originals were kept: {}",
        out.stdout
    );
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.contains("md0") && w.contains("kept")),
        "{}",
        out.stdout
    );
}

// --- 4. a failed persist is never half in force --------------------------------------------

#[test]
fn a_failed_persist_whose_undo_fails_says_which_files_hold_the_new_state() {
    let dir = scratch("persist-undo-fails");
    let r = demo_host(&dir);
    let state = dir.join(STATE);
    let guard: std::sync::Arc<std::sync::Mutex<Option<Immutable>>> = Default::default();
    let g = guard.clone();
    let s = state.clone();
    let input = json!({"root": dir, "persist": true, "thread_policy": "off",
        "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let (out, code, stdout) = run_with_fifo(
        &dir,
        &r,
        input,
        vec![
            Step::Serve("256\n"), // inventory
            Step::Consume,        // the write: the persisted files are in place by now
            // The file system goes read-only under etc/mdtune: the undo cannot remove the state.
            Step::Then(Box::new(move || {
                *g.lock().unwrap() = Some(Immutable::set(&s))
            })),
            Step::Serve("2048\n"), // read-back: not kept
            Step::Serve("2048\n"), // rollback: the live value
            Step::Consume,         // rollback: the original
            Step::Serve("256\n"),  // rollback: read-back
        ],
    );
    let held = fs::read_to_string(&state).unwrap_or_default();
    drop(guard.lock().unwrap().take());
    assert_eq!(code, 1, "{stdout}");
    assert!(
        held.contains("4096"),
        "the test did not keep the new state: {held:?}"
    );
    // The next --udev applies what mdtune.json holds: the report must say so.
    assert_eq!(out["changed"], true, "{stdout}");
    assert!(
        out["persist"]["files"]
            .as_array()
            .unwrap()
            .contains(&json!("/etc/mdtune/mdtune.json")),
        "{stdout}"
    );
    assert!(
        out["msg"]
            .as_str()
            .unwrap()
            .contains("/etc/mdtune/mdtune.json"),
        "{stdout}"
    );
}

// --- 5. originals have one key -------------------------------------------------------------

#[test]
fn an_external_array_whose_uuid_is_briefly_unknown_gets_no_second_originals_file() {
    let dir = scratch("one-key");
    let mut r = FakeRoot::new(&dir, 64);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 8)).collect();
    let dv: Vec<&str> = d.iter().map(String::as_str).collect();
    r.md("md127", &MdSpec::imsm_container(0x127), &dv);
    let spec = MdSpec::imsm_member("md127", 0, 0x126);
    r.md("md126", &spec, &dv);
    r.mdmon("md127", 4242, Some("mdmon"));
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md126", "group_thread_cnt": 4}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // udev is re-creating the by-id link (a change event): the uuid is unknown for a moment.
    let link = dir.join(format!("dev/disk/by-id/md-uuid-{}", spec.uuid));
    let target = fs::read_link(&link).unwrap();
    fs::remove_file(&link).unwrap();
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md126", "group_thread_cnt": 8}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    symlink(&target, &link).unwrap();
    let saved: Vec<String> = fs::read_dir(dir.join("run/mdtune"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let out = run(&dir, json!({"state": "reverted"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        r.read_md("md126", "group_thread_cnt"),
        "0",
        "{}",
        out.stdout
    );
    let arrays = out.json["arrays"].as_array().unwrap();
    assert_eq!(arrays.len(), 1, "{}", out.stdout);
    // Without the link, mdadm's map still tells the uuid.
    fs::remove_file(&link).unwrap();
    fs::write(
        dir.join("run/mdadm/map"),
        format!("md126 /md127/0 {} /dev/md/vol0\n", spec.uuid),
    )
    .unwrap();
    let out = run(
        &dir,
        json!({"state": "query", "arrays": [{"name": "md126"}]}),
    );
    assert_eq!(
        out.array("md126")["uuid"],
        json!(spec.uuid),
        "{}",
        out.stdout
    );
}

// --- 6. the failure report is exact --------------------------------------------------------

#[test]
fn a_run_rolled_back_in_full_has_no_diff() {
    let dir = scratch("no-diff-after-rollback");
    let r = demo_host(&dir);
    let _guard = Immutable::set(&r.md_attr("md0", "stripe_cache_size"));
    let files = |d: &Path| -> Vec<(PathBuf, String)> {
        tree(d).into_iter().filter(|(_, w)| w != "dir").collect()
    };
    let before = files(&dir.join("etc"));
    let out = run(
        &dir,
        json!({"persist": true, "diff": true,
        "arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    assert_eq!(out.json["diff"], json!([]), "{}", out.stdout);
    assert_eq!(
        files(&dir.join("etc")),
        before,
        "the persisted files were not undone"
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
}

#[test]
fn not_restored_gives_the_value_the_kernel_holds_now() {
    let dir = scratch("not-restored-now");
    let r = demo_host(&dir);
    let input = json!({"root": dir, "thread_policy": "off",
        "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let (out, code, stdout) = run_with_fifo(
        &dir,
        &r,
        input,
        vec![
            Step::Serve("256\n"),  // inventory
            Step::Consume,         // the write of 4096
            Step::Serve("2048\n"), // read-back: the kernel kept 2048
            Step::Serve("2048\n"), // rollback: the live value
            Step::Consume,         // rollback: the write of 256
            Step::Serve("1024\n"), // read-back: the kernel kept 1024 this time
        ],
    );
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(out["changed"], true, "{stdout}");
    let left = out["not_restored"]
        .as_array()
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(left.len(), 1, "{stdout}");
    let left = left[0].as_str().unwrap();
    assert!(left.contains("md0: stripe_cache_size is 1024"), "{left}");
    assert!(!left.contains("still 4096"), "{left}");
    assert!(out["msg"].as_str().unwrap().contains("is 1024"), "{stdout}");
}

// --- 7. persist never writes a packaged binary ---------------------------------------------

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

// --- 8. messages answer the question asked -------------------------------------------------

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
