//! What a fleet can bet on when something goes wrong (docs/reference.md §3, §6; docs/fleet.md):
//! a revert says what it restored and removed, a failed persist is never half in force, an
//! array's originals have one key, and a failure report gives what was rolled back and what the
//! kernel holds now. Each test runs the real binary on a fake root; the rest of the promises are
//! `fleet_report.rs`'s.

use crate::common::{needs, Requirement};
use crate::common::{run, scratch, Immutable};
use crate::fleet_report::{tree, warnings, MANIFEST, RULE, STATE};
use crate::kernel_fifo::{make_fifo, run_fed, Step};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Turns md0's `stripe_cache_size` into a FIFO (the lock file already there, so the host is
/// read once), runs `input` through the binary and plays `steps` on the FIFO as the kernel.
fn run_with_fifo(dir: &Path, r: &FakeRoot, input: Value, steps: Vec<Step>) -> (Value, i32, String) {
    let fifo = make_fifo(&r.md_attr("md0", "stripe_cache_size"));
    fs::write(dir.join("run/mdtune.lock"), "").unwrap();
    let (out, _) = run_fed(&input, fifo, steps);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (json, out.status.code().unwrap_or(-1), stdout)
}

#[test]
fn a_revert_that_restored_values_and_then_failed_reports_changed_and_what_it_restored() {
    // A manifest that is garbage no longer stops a revert (persist_truth.rs): it is no case here.
    for case in ["etc/mdtune links out", "manifest unreadable"] {
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
            _ => fs::create_dir_all(dir.join(MANIFEST)).unwrap(),
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
    let files = out.persist_files();
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

#[test]
fn a_failed_persist_whose_undo_fails_says_which_files_hold_the_new_state() {
    if !needs(Requirement::ImmutableFiles) {
        return;
    }
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

#[test]
fn a_run_rolled_back_in_full_has_no_diff() {
    if !needs(Requirement::ImmutableFiles) {
        return;
    }
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
