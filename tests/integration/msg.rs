//! The short `msg` (docs/reference.md §3), on a host of 16 raid5 arrays: it names only the arrays
//! that need attention and counts the rest, says compliant or not for a query, names the array
//! that failed, and for a revert the arrays and settings, not the files.

use crate::common::{needs, Requirement};
use crate::common::{run, scratch};
use crate::people_text::{failing_host, unprivileged};
use mdtune_fakeroot::{bench_host, FakeRoot};
use serde_json::json;
use std::fs;
use std::path::Path;

/// 16 raid5 arrays md0..md15 over 4 NVMe drives of 8 queues each (auto: 8), 64 CPUs.
fn sixteen(dir: &Path) -> FakeRoot {
    bench_host(dir, 16, 4, 8)
}

/// The parts of a msg, split at `; `, after an optional `check mode: ` / `compliant: ` prefix.
fn parts(msg: &str) -> Vec<String> {
    msg.split("; ").map(str::to_string).collect()
}

/// The arrays a msg names: every word `mdN` at the start of a part or after `: `.
fn named(msg: &str) -> Vec<String> {
    let mut out: Vec<String> = msg
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            w.len() > 2 && w.starts_with("md") && w[2..].chars().all(|c| c.is_ascii_digit())
        })
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Builds the host, checks that a first run names every array (every one changes), converges
/// it, then makes md3 drift, md5 reshape with its threads undone and md7 read empty: three
/// arrays that need attention, 13 that do not.
fn three_of_sixteen(dir: &Path) -> FakeRoot {
    let r = sixteen(dir);
    let first = run(dir, json!({"check_mode": true}));
    assert_eq!(named(first.msg()).len(), 16, "{}", first.msg());
    let out = run(dir, json!({}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md15", "group_thread_cnt"), "8");
    r.set_md("md3", "group_thread_cnt", "0");
    r.set_md("md5", "group_thread_cnt", "0");
    r.set_md("md5", "sync_action", "reshape");
    r.set_md("md5", "reshape_position", "1048576");
    fs::write(r.md_attr("md7", "stripe_cache_size"), "").unwrap();
    r
}

fn assert_three_of_sixteen(msg: &str) {
    assert_eq!(named(msg), ["md3", "md5", "md7"], "{msg}");
    assert!(msg.contains("md3: group_thread_cnt 0 -> 8"), "{msg}");
    assert!(
        msg.contains("md5: group_thread_cnt 0 -> 8 held back (reshape"),
        "{msg}"
    );
    let md7 = parts(msg)
        .into_iter()
        .find(|p| p.contains("md7"))
        .unwrap_or_default();
    assert!(md7.contains("skipped"), "{msg}");
    assert!(msg.contains("13 arrays compliant"), "{msg}");
    assert!(!msg.contains("unchanged"), "{msg}");
}

#[test]
fn msg_names_only_the_arrays_that_need_attention_and_counts_the_rest() {
    let dir = scratch("msg-16");
    let r2 = three_of_sixteen(&dir);
    for input in [json!({"check_mode": true}), json!({})] {
        let out = run(&dir, input.clone());
        assert_eq!(out.code, 0, "{input}: {}", out.stdout);
        assert_three_of_sixteen(out.msg());
    }
    assert_eq!(r2.read_md("md3", "group_thread_cnt"), "8");
    // Converged (md5's reshape over, md7 readable again): a count and nothing else.
    r2.set_md("md5", "sync_action", "idle");
    r2.set_md("md5", "reshape_position", "none");
    r2.set_md("md7", "stripe_cache_size", "256");
    run(&dir, json!({}));
    let out = run(&dir, json!({}));
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    assert_eq!(named(out.msg()), Vec::<String>::new(), "{}", out.msg());
    assert!(out.msg().contains("16 arrays compliant"), "{}", out.msg());
    assert!(out.msg().len() < 60, "{}", out.msg());
}

#[test]
fn query_msg_says_compliant_or_not_compliant_and_never_unchanged() {
    let dir = scratch("msg-query");
    let r = three_of_sixteen(&dir);
    let out = run(&dir, json!({"state": "query"}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.msg().starts_with("not compliant"), "{}", out.msg());
    assert_three_of_sixteen(out.msg());
    r.set_md("md5", "sync_action", "idle");
    r.set_md("md5", "reshape_position", "none");
    r.set_md("md7", "stripe_cache_size", "256");
    run(&dir, json!({}));
    let out = run(&dir, json!({"state": "query"}));
    assert!(out.msg().starts_with("compliant"), "{}", out.msg());
    assert!(out.msg().contains("16 arrays compliant"), "{}", out.msg());
    assert!(!out.msg().contains("unchanged"), "{}", out.msg());
    assert_eq!(named(out.msg()), Vec::<String>::new(), "{}", out.msg());
}

#[test]
fn a_failed_run_msg_names_the_array_that_failed() {
    if !needs(Requirement::Root) {
        return;
    }
    let dir = scratch("msg-fail");
    failing_host(&dir);
    let out = unprivileged(
        &["-"],
        &json!({"root": dir, "thread_policy": "off", "arrays": [
            {"name": "md0", "stripe_cache_size": 256},
            {"name": "md1", "group_thread_cnt": 2}]}),
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    let msg = out.msg();
    assert!(
        msg.contains("md1") && msg.contains("group_thread_cnt"),
        "{msg}"
    );
    assert!(msg.contains("rolled back") && msg.contains("md0"), "{msg}");
}

#[test]
fn revert_msg_names_arrays_and_settings_not_files() {
    let dir = scratch("msg-revert");
    sixteen(&dir);
    let out = run(
        &dir,
        json!({"persist": true, "arrays": [{"name": "md*", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.json["persist"]["files"].as_array().unwrap().is_empty());
    for check_mode in [true, false] {
        let out = run(&dir, json!({"state": "reverted", "check_mode": check_mode}));
        assert_eq!(out.code, 0, "{}", out.stdout);
        let msg = out.msg();
        assert!(
            msg.contains("md0") && msg.contains("md15") && msg.contains("stripe_cache_size"),
            "{msg}"
        );
        assert!(!msg.contains('/') && !msg.contains(".json"), "{msg}");
        assert!(!msg.contains("unchanged"), "{msg}");
    }
}
