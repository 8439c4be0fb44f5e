//! When and by whom (docs/reference.md §6, the trail; docs/operations.md), through the real
//! binary on fake roots: every run that changes or fails to change something leaves one line in
//! the system log (read here from a real datagram socket at `<root>/dev/log`) naming the caller
//! and each change, and a record of itself in the lock file that `--show` and `--metrics` read;
//! the persisted state says when and by which version it was written.

use crate::common::{bin, hold_lock, logged, run, run_command, scratch, syslog};
use crate::oncall::{mdtune, rolled_out, MANIFEST};
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `mdtune -` with `input` (its root set) and only the environment given.
fn run_as(root: &Path, mut input: Value, env: &[(&str, &str)]) -> Value {
    input["root"] = json!(root);
    let mut cmd = Command::new(bin());
    cmd.arg("-").env_clear().envs(env.iter().copied());
    let r = run_command(cmd, &input.to_string());
    assert!(r.json.is_object(), "{}", r.stdout);
    r.json
}

#[test]
fn every_run_that_changes_or_fails_logs_one_line_naming_the_caller_and_the_change() {
    let dir = scratch("oncall-trail");
    let r = demo_host(&dir);
    let log = syslog(&dir);
    let ansible = json!({"_ansible_module_name": "mdtune.mdraid.mdtune",
        "_ansible_version": "2.19.0", "arrays": [{"name": "hana_data", "stripe_cache_size": 4096}]});
    run_as(
        &dir,
        ansible.clone(),
        &[("SUDO_USER", "alice"), ("LOGNAME", "root")],
    );
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("<30>mdtune["), "{}", lines[0]);
    assert!(
        lines[0].ends_with(
            "]: ansible mdtune.mdraid.mdtune (ansible 2.19.0), user alice via \
                            sudo: changed md0: group_thread_cnt 0 -> 8, stripe_cache_size 256 -> \
                            4096"
        ),
        "{}",
        lines[0]
    );
    // Converged, a query, check mode and unusable input change nothing: no line.
    run_as(&dir, ansible, &[]);
    run_as(&dir, json!({"state": "query"}), &[]);
    r.set_md("md0", "stripe_cache_size", "1024");
    run_as(&dir, json!({"check_mode": true}), &[]);
    run_as(&dir, json!({"arrays": [{"name": "md9"}]}), &[]);
    assert_eq!(logged(&log), Vec::<String>::new());
    // Salt names itself through MDTUNE_CALLER; persisting names the files.
    run_as(
        &dir,
        json!({"persist": true, "arrays": rolled_out()}),
        &[("MDTUNE_CALLER", "salt mdtune.apply"), ("LOGNAME", "root")],
    );
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("]: salt mdtune.apply, user root: changed md0: stripe_cache_size 1024 -> 4096; md2: group_thread_cnt 0 -> 16; persisted /etc/mdtune/installed.json, /etc/mdtune/mdtune.json, "),
        "{}",
        lines[0]
    );
    // A run that fails to change something: the lock is held, the run gives up.
    r.set_md("md0", "stripe_cache_size", "2048");
    let held = hold_lock(&dir);
    let out = run_as(
        &dir,
        json!({"arrays": rolled_out()}),
        &[("MDTUNE_LOCK_WAIT", "0.1")],
    );
    drop(held);
    assert_eq!(out["failed"], true);
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("<27>mdtune["), "{}", lines[0]);
    assert!(
        lines[0].contains("]: command line, uid 0: FAILED: another mdtune run holds"),
        "{}",
        lines[0]
    );
    // A revert says what it put back and removed.
    run_as(&dir, json!({"state": "reverted"}), &[("USER", "bob")]);
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("]: command line, user bob: reverted md0: "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("stripe_cache_size 2048 -> 256")
            && lines[0].contains("; removed /etc/udev/rules.d/90-mdtune.rules"),
        "{}",
        lines[0]
    );
}

#[test]
fn the_persisted_state_records_when_and_by_which_version_it_was_written() {
    let dir = scratch("oncall-written");
    demo_host(&dir);
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    run(&dir, json!({"persist": true, "arrays": rolled_out()}));
    let manifest = || -> Value {
        serde_json::from_str(&fs::read_to_string(dir.join(MANIFEST)).unwrap()).unwrap()
    };
    let m = manifest();
    let unix = m["written_unix"].as_u64().unwrap();
    assert!(unix >= t0 && unix <= t0 + 60, "{m}");
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    assert!(m["written"].as_str().unwrap().ends_with('Z'), "{m}");
    // The persisted input is the input alone, so a query of it compares equal.
    let state: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("etc/mdtune/mdtune.json")).unwrap())
            .unwrap();
    assert_eq!(state, json!({"arrays": rolled_out()}));
    // The same persist again writes nothing: the time stays that of the change.
    let bytes = fs::read(dir.join(MANIFEST)).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let again = run(&dir, json!({"persist": true, "arrays": rolled_out()}));
    assert_eq!(
        again.json["persist"]["files"],
        json!([]),
        "{}",
        again.stdout
    );
    assert_eq!(fs::read(dir.join(MANIFEST)).unwrap(), bytes);
    let q = run(
        &dir,
        json!({"state": "query", "persist": true, "arrays": rolled_out()}),
    );
    assert_eq!(q.json["compliant"], true, "{}", q.stdout);
    // A manifest of an earlier version (a bare list) is read and kept until the next change.
    fs::write(
        dir.join(MANIFEST),
        "[\"/etc/mdtune/mdtune.json\", \"/etc/udev/rules.d/90-mdtune.rules\"]\n",
    )
    .unwrap();
    let q = run(&dir, json!({"state": "query", "persist": true}));
    assert_eq!(q.json["compliant"], true, "{}", q.stdout);
    assert!(
        q.json["persist"]["compared_with"]
            .get("written")
            .is_some_and(Value::is_null),
        "{}",
        q.stdout
    );
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(
        show.contains("persisted: yes, since an unknown time"),
        "{show}"
    );
    run(&dir, json!({"persist": true, "arrays": [{"name": "*"}]}));
    assert!(
        manifest()["written_unix"].as_u64().unwrap() > unix,
        "{}",
        manifest()
    );
    let (_, show, _) = mdtune(&["--show"], &dir);
    let since = format!(
        "persisted: yes, since {} by mdtune {}",
        manifest()["written"].as_str().unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    assert!(show.contains(&since), "{show}");
}

#[test]
fn the_last_run_is_recorded_in_the_lock_file_and_shown_and_exported() {
    let dir = scratch("oncall-last");
    let r = demo_host(&dir);
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(show.contains("  last run: none since boot"), "{show}");
    run_as(
        &dir,
        json!({"arrays": rolled_out()}),
        &[("SUDO_USER", "alice")],
    );
    let record: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("run/mdtune.lock")).unwrap()).unwrap();
    assert_eq!(
        (
            &record["by"],
            &record["state"],
            &record["changed"],
            &record["failed"]
        ),
        (
            &json!("command line, user alice via sudo"),
            &json!("present"),
            &json!(true),
            &json!(false)
        ),
        "{record}"
    );
    // A query takes no lock, and a converged run writes nothing: the record stays.
    let before = fs::read(dir.join("run/mdtune.lock")).unwrap();
    run(&dir, json!({"state": "query"}));
    run(&dir, json!({"arrays": rolled_out()}));
    assert_eq!(fs::read(dir.join("run/mdtune.lock")).unwrap(), before);
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(
        show.contains(&format!(
            "  last run: {} by command line, user alice via sudo, present, changed",
            record["time"].as_str().unwrap()
        )),
        "{show}"
    );
    let (_, metrics, _) = mdtune(&["--metrics"], &dir);
    assert!(
        metrics.contains(&format!(
            "mdtune_last_run_timestamp_seconds{{state=\"present\"}} {}\n",
            record["unix"]
        )),
        "{metrics}"
    );
    assert!(metrics.contains("mdtune_last_run_changed 1\n"), "{metrics}");
    drop(r);
}
