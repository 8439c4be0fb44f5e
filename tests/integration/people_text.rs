//! mdtune for people (docs/reference.md §1 and §3), the `--text` half: any run, its report
//! printed for a person, through the real binary on the every-layout host of `people.rs` and on a
//! host where a run fails part-way and rolls back (`failing_host`, the host of `msg.rs` and
//! `escaping.rs` too). `--show`: `people.rs`.
//!
//! The text is checked against the JSON run of the same host, not against a copy of its own
//! output: the same exit status and `msg`, every array, every warning, every setting a run
//! changed, would change or held back with its before and after, and what was rolled back.

use crate::common::{
    bin, give_to_nobody_except, kernel_snapshot, run, run_args, scratch, snapshot, Run,
};
use crate::common::{needs, Requirement};
use crate::people::{layouts_host, refs, shown};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// `mdtune --text -` with `input` (its `root` set to `root`).
pub(crate) fn text(root: &Path, mut input: Value) -> Run {
    input["root"] = json!(root.display().to_string());
    run_args(&["--text", "-"], &input.to_string(), &[])
}

/// Checks the text of a run against its JSON: the same exit status, the same `msg`, every array
/// in the table, every warning, and every setting changed, due or held back with its before and
/// after, and what was rolled back.
fn assert_text_agrees_with_json(text: &Run, json: &Run) {
    assert_eq!(text.code, json.code, "{}\n{}", text.stdout, json.stdout);
    let t = &text.stdout;
    assert!(text.json.is_null(), "--text printed JSON: {t}");
    assert!(t.contains(json.msg()), "msg {:?} not in\n{t}", json.msg());
    let j = &json.json;
    for a in j["arrays"].as_array().into_iter().flatten() {
        let name = a["name"].as_str().unwrap();
        assert!(
            t.lines().any(|l| l.split_whitespace().next() == Some(name)
                && l.contains(a["level"].as_str().unwrap())),
            "{name}: no table row in\n{t}"
        );
        for (attr, s) in a["settings"].as_object().unwrap() {
            let after = s["held_back"].get("wanted").unwrap_or(&s["after"]);
            if s["before"] == *after && s.get("held_back").is_none() {
                continue;
            }
            let want = format!("{name} {attr} {} -> {}", shown(&s["before"]), shown(after));
            let l = t
                .lines()
                .find(|l| l.contains(&want))
                .unwrap_or_else(|| panic!("no {want:?} in\n{t}"));
            if let Some(h) = s.get("held_back") {
                assert!(l.contains("held back"), "{l:?}: {h}");
            }
        }
    }
    for (attr, s) in j["system"].as_object().into_iter().flatten() {
        if s["before"] != s["after"] {
            let want = format!(
                "system {attr} {} -> {}",
                shown(&s["before"]),
                shown(&s["after"])
            );
            assert!(t.contains(&want), "no {want:?} in\n{t}");
        }
    }
    for w in j["warnings"].as_array().into_iter().flatten() {
        assert!(t.contains(w.as_str().unwrap()), "warning {w} not in\n{t}");
    }
    for r in j["rolled_back"].as_array().into_iter().flatten() {
        let want = format!(
            "{} {} = {}",
            shown(&r["target"]),
            shown(&r["setting"]),
            shown(&r["value"])
        );
        assert!(t.contains(&want), "rolled back {want:?} not in\n{t}");
    }
    if j["failed"] == true {
        assert!(t.to_lowercase().contains("failed"), "{t}");
    }
}

/// Kernel values of a root, keyed by the path inside it, to compare two roots.
fn values(dir: &Path) -> Vec<(String, Vec<u8>)> {
    kernel_snapshot(dir)
        .into_iter()
        .map(|(p, c, _)| (p.strip_prefix(dir).unwrap().display().to_string(), c))
        .collect()
}

#[test]
fn text_and_json_of_the_same_run_agree() {
    let input = json!({
        "speed_limit_max": 500000,
        "arrays": [
            {"name": "md*"},
            {"name": "md0", "stripe_cache_size": 4096, "skip_copy": true},
            {"name": "md50", "stripe_cache_size": 1024, "skip_copy": true, "sync_speed_max": 90000},
            {"name": "md126", "stripe_cache_size": 4096},
            {"name": "md61", "sync_speed_max": 80000},
        ]
    });
    // Check mode on one host, then a real run on two hosts built alike.
    let dir = scratch("text-check");
    layouts_host(&dir);
    let mut check = input.clone();
    check["check_mode"] = json!(true);
    let before = snapshot(&dir);
    let t = text(&dir, check.clone());
    assert_eq!(snapshot(&dir), before, "--text in check mode wrote");
    assert_text_agrees_with_json(&t, &run(&dir, check));
    let (a, b) = (scratch("text-json"), scratch("text-text"));
    layouts_host(&a);
    layouts_host(&b);
    let j = run(&a, input.clone());
    let t = text(&b, input.clone());
    assert_text_agrees_with_json(&t, &j);
    assert_eq!(
        values(&a),
        values(&b),
        "--text did not do what the JSON run did"
    );
    // The same again: nothing left to change, and the text says so.
    let t = text(&b, input.clone());
    assert_text_agrees_with_json(&t, &run(&a, input));
}

#[test]
fn text_reads_an_ansible_args_file_and_refuses_unusable_input_with_exit_2() {
    let dir = scratch("text-args");
    demo_host(&dir);
    let args = dir.join("args.json");
    let input = json!({"root": dir, "_ansible_check_mode": true, "_ansible_diff": true});
    fs::write(&args, input.to_string()).unwrap();
    let before = snapshot(&dir);
    let t = run_args(&["--text", &args.display().to_string()], "", &[]);
    assert_eq!(t.code, 0, "{}", t.stdout);
    assert_eq!(snapshot(&dir), before);
    let j = run_args(&[&args.display().to_string()], "", &[]);
    assert_text_agrees_with_json(&t, &j);
    assert!(
        t.stdout.contains("md0 group_thread_cnt 0 -> 8"),
        "{}",
        t.stdout
    );

    let t = text(
        &dir,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 5}]}),
    );
    assert_eq!(t.code, 2, "{}", t.stdout);
    assert!(
        t.stdout.contains("stripe_cache_size") && t.stdout.contains('5'),
        "{}",
        t.stdout
    );
    assert!(t.json.is_null(), "{}", t.stdout);
}

/// Two arrays on a root owned by user 65534, md1's group_thread_cnt root's and read only: a run
/// as that user lowers md0's stripe cache and threshold, then fails on md1 and rolls back.
pub(crate) fn failing_host(dir: &Path) {
    for tool in ["setpriv", "chown"] {
        assert!(
            Command::new(tool).arg("--version").output().is_ok(),
            "{tool} is missing: apt-get install util-linux coreutils"
        );
    }
    let mut r = FakeRoot::new(dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    r.md("md0", &MdSpec::level("raid5", 1), &refs(&d));
    r.md("md1", &MdSpec::level("raid5", 2), &refs(&d));
    r.set_md("md0", "stripe_cache_size", "1024");
    r.set_md("md0", "preread_bypass_threshold", "512");
    give_to_nobody_except(dir, &r.md_attr("md1", "group_thread_cnt"));
}

pub(crate) fn unprivileged(args: &[&str], input: &Value) -> Run {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
        .args(args);
    crate::common::run_command(cmd, &input.to_string())
}

#[test]
fn text_of_a_failed_run_says_what_failed_and_what_was_rolled_back() {
    if !needs(Requirement::Root) {
        return;
    }
    let (a, b) = (scratch("text-fail-json"), scratch("text-fail-text"));
    failing_host(&a);
    failing_host(&b);
    let input = |dir: &Path| {
        json!({"root": dir, "thread_policy": "off", "arrays": [
            {"name": "md0", "stripe_cache_size": 256, "preread_bypass_threshold": 100},
            {"name": "md1", "group_thread_cnt": 2}]})
    };
    let mut j = unprivileged(&["-"], &input(&a));
    let t = unprivileged(&["--text", "-"], &input(&b));
    assert_eq!(j.code, 1, "{}", j.stdout);
    // The message may name the file it could not write: the same file, under the other root.
    let msg = j
        .msg()
        .replace(&a.display().to_string(), &b.display().to_string());
    j.json["msg"] = json!(msg);
    assert_text_agrees_with_json(&t, &j);
    assert_eq!(values(&a), values(&b));
}
