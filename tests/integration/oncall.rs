//! The person on call and the fleet's monitoring (docs/reference.md §1, §2, §3, §6;
//! docs/operations.md), through the real binary on fake roots. On a host persisted with
//! `[{"name": "*"}, {"name": "hana_data", "stripe_cache_size": 4096}]` whose md0 stripe cache
//! someone then set to 1024 by hand, the first commands a person tries (`{"state": "query"}`,
//! `--show`, `--verify`, `--metrics`) name the drift, and `--verify` fails like saptune's. When
//! and by whom: `trail`.

use crate::common::{bin, run, scratch};
use mdtune_fakeroot::{demo_host, FakeRoot};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const MANIFEST: &str = "etc/mdtune/installed.json";

pub(crate) fn rolled_out() -> Value {
    json!([{"name": "*"}, {"name": "hana_data", "stripe_cache_size": 4096}])
}

/// The demo host, persisted as the issue says, then md0's stripe cache set to 1024 by hand.
fn drifted(name: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let r = demo_host(&dir);
    let out = run(&dir, json!({"persist": true, "arrays": rolled_out()}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    r.set_md("md0", "stripe_cache_size", "1024");
    (dir, r)
}

/// `mdtune ARGS` with no input, as a person types it: (exit status, stdout, stderr).
pub(crate) fn mdtune(args: &[&str], root: &Path) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .args(["--root", root.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The words of the line of `out` that starts (after spaces) with `first`.
fn row<'a>(out: &'a str, first: &str, second: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() > 1 && w[0] == first && w[1] == second)
        .unwrap_or_else(|| panic!("no line {first} {second} in:\n{out}"))
}

#[test]
fn a_drifted_host_is_named_by_query_show_verify_and_metrics() {
    let (dir, r) = drifted("oncall-drift");
    // {"state": "query"}: compares with what was rolled out, says so, names the drift.
    let q = run(&dir, json!({"state": "query"}));
    assert_eq!(
        (q.code, &q.json["compliant"]),
        (0, &json!(false)),
        "{}",
        q.stdout
    );
    let msg = q.msg();
    assert!(
        msg.starts_with("not compliant with the persisted state (/etc/mdtune/mdtune.json): ")
            && msg.contains("md0: stripe_cache_size 1024 (rolled out 4096)"),
        "{msg}"
    );
    assert_eq!(
        q.json["persist"]["compared_with"]["file"],
        "/etc/mdtune/mdtune.json"
    );
    let s = q.setting("md0", "stripe_cache_size");
    assert_eq!(
        (&s["before"], &s["after"], &s["source"]),
        (&json!(1024), &json!(4096), &json!("arrays[1]"))
    );
    // With persist: true (docs/install.md's "after a reboot"), the files are still in force.
    let q = run(&dir, json!({"state": "query", "persist": true}));
    assert_eq!(q.json["persist"]["files"], json!([]), "{}", q.stdout);
    assert!(
        q.msg()
            .contains("md0: stripe_cache_size 1024 (rolled out 4096)"),
        "{}",
        q.msg()
    );
    // --show: the row names live, rolled out and where the live value came from.
    let (code, show, err) = mdtune(&["--show"], &dir);
    assert_eq!(code, 0, "{show}{err}");
    let cache = row(&show, "stripe_cache_size", "1024");
    assert_eq!(cache[2..], ["-", "4096", "other"], "{show}");
    let threads = row(&show, "group_thread_cnt", "8");
    assert_eq!(threads[2..5], ["8", "8", "auto"], "{show}");
    assert!(
        show.contains("drift: not compliant with the persisted state")
            && show.contains("md0: stripe_cache_size 1024 (rolled out 4096)"),
        "{show}"
    );
    // --verify: the row and exit 3.
    let (code, table, _) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 3, "{table}");
    assert_eq!(
        row(&table, "md0", "stripe_cache_size"),
        [
            "md0",
            "stripe_cache_size",
            "4096",
            "1024",
            "arrays[1]",
            "no"
        ]
    );
    assert_eq!(row(&table, "md0", "group_thread_cnt")[5], "yes");
    // One row per managed setting: md1 (raid10) and md126 (a container) manage none here.
    assert_eq!(table.lines().count(), 7, "{table}");
    // --metrics: live, wanted and not compliant.
    let (code, metrics, err) = mdtune(&["--metrics"], &dir);
    assert_eq!(code, 0, "{err}");
    for line in [
        "mdtune_array_stripe_cache_size{array=\"md0\",device=\"md0\"} 1024",
        "mdtune_array_wanted_stripe_cache_size{array=\"md0\",device=\"md0\",source=\"arrays[1]\"} 4096",
        "mdtune_array_setting_compliant{array=\"md0\",device=\"md0\",setting=\"stripe_cache_size\"} 0",
        "mdtune_compliant 0",
        "mdtune_persist_diverged_settings 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line} in:\n{metrics}"
        );
    }
    // Put back by hand: every command says compliant again, and --verify exits 0.
    r.set_md("md0", "stripe_cache_size", "4096");
    let q = run(&dir, json!({"state": "query"}));
    assert!(
        q.msg().starts_with("compliant with the persisted state"),
        "{}",
        q.msg()
    );
    assert_eq!(mdtune(&["--verify"], &dir).0, 0);
    let (_, metrics, _) = mdtune(&["--metrics"], &dir);
    assert!(
        metrics.lines().any(|l| l == "mdtune_compliant 1"),
        "{metrics}"
    );
}

#[test]
fn no_query_message_contradicts_itself() {
    let (dir, _r) = drifted("oncall-contradict");
    // The persisted input changed by hand: the arrays are as the query wants, the file is not.
    fs::write(
        dir.join("etc/mdtune/mdtune.json"),
        "{\"arrays\": [{\"name\": \"*\"}]}\n",
    )
    .unwrap();
    let q = run(
        &dir,
        json!({"state": "query", "persist": true, "arrays": [{"name": "*"}],
        "thread_policy": "auto"}),
    );
    assert_eq!(q.json["compliant"], false, "{}", q.stdout);
    let msg = q.msg();
    // The manifest is due too when the state file is and the second has changed since it was
    // written (its time would be rewritten): either way the reason comes first.
    let due = msg
        .strip_prefix("not compliant: persist due: ")
        .unwrap_or("");
    assert!(
        due.starts_with("/etc/mdtune/mdtune.json")
            || due.starts_with("/etc/mdtune/installed.json, /etc/mdtune/mdtune.json"),
        "the reason comes before the count: {msg}"
    );
    for q in [q, run(&dir, json!({"state": "query"}))] {
        let msg = q.msg().to_string();
        let body = msg.split_once(": ").map_or("", |(_, b)| b);
        let first = body.split("; ").next().unwrap_or("");
        assert!(
            q.json["compliant"] == true || !first.ends_with("compliant"),
            "a query that is not compliant opens with a count of compliant arrays: {msg}"
        );
    }
}

#[test]
fn a_query_with_desired_state_of_its_own_keeps_its_meaning() {
    let (dir, _r) = drifted("oncall-explicit");
    let q = run(
        &dir,
        json!({"state": "query",
        "arrays": [{"name": "hana_data", "stripe_cache_size": 1024}]}),
    );
    assert!(
        q.json["persist"].get("compared_with").is_none(),
        "{}",
        q.stdout
    );
    assert_eq!(q.setting("md0", "stripe_cache_size")["compliant"], true);
    // Still not compliant: the next boot puts back what was rolled out.
    assert_eq!(q.json["compliant"], false);
    assert_eq!(
        q.json["persist"]["diverged"],
        json!([{"target": "md0", "setting": "stripe_cache_size", "value": 4096, "wanted": 1024}])
    );
    assert!(q.msg().starts_with("not compliant: "), "{}", q.msg());
    // Nothing persisted: a query without desired state compares with the defaults, as before.
    let dir = scratch("oncall-nothing-persisted");
    demo_host(&dir);
    let q = run(&dir, json!({"state": "query"}));
    assert!(
        q.json["persist"].get("compared_with").is_none(),
        "{}",
        q.stdout
    );
    assert!(
        q.msg()
            .starts_with("not compliant: md0: group_thread_cnt 0 -> 8"),
        "{}",
        q.msg()
    );
}

#[test]
fn verify_exits_0_compliant_3_not_1_could_not_check_2_unusable_and_json_runs_keep_0() {
    let dir = scratch("oncall-verify");
    let r = demo_host(&dir);
    // Nothing persisted: against the defaults, which want threads on md0 and md2.
    let (code, table, _) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 3, "{table}");
    assert!(table.starts_with("mdtune --verify: nothing persisted: compared with the defaults"));
    assert_eq!(
        run(&dir, json!({"state": "query"})).code,
        0,
        "a JSON query keeps exit 0"
    );
    assert_eq!(
        run(&dir, json!({"persist": true, "arrays": rolled_out()})).code,
        0
    );
    let (code, json, _) = mdtune(&["--verify", "--json"], &dir);
    assert_eq!(code, 0, "{json}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["compliant"], true);
    // The same run as JSON: the report of the query, which --verify's table is rendered from.
    assert!(v["persist"]["compared_with"].is_object(), "{json}");
    let md0 = v["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "md0")
        .unwrap();
    let s = &md0["settings"]["stripe_cache_size"];
    assert_eq!(
        (&s["after"], &s["before"], &s["source"], &s["compliant"]),
        (
            &json!(4096),
            &json!(4096),
            &json!("arrays[1]"),
            &json!(true)
        ),
        "{json}"
    );
    // The persisted state names an array this host no longer has: it could not check.
    fs::write(
        dir.join("etc/mdtune/mdtune.json"),
        "{\"arrays\": [{\"name\": \"md9\", \"stripe_cache_size\": 4096}]}\n",
    )
    .unwrap();
    let (code, out, err) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.is_empty() && err.contains("could not check") && err.contains("md9"),
        "{err}"
    );
    let (code, out, _) = mdtune(&["--verify", "--json"], &dir);
    assert_eq!(code, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["failed"],
        true,
        "{out}"
    );
    // Unusable input: a root that is not there.
    let (code, _, err) = mdtune(&["--verify"], &dir.join("missing"));
    assert_eq!(code, 2, "{err}");
    drop(r);
}

#[test]
fn show_says_whether_it_is_persisted_the_rule_the_originals_and_the_system_limits() {
    let (dir, _r) = drifted("oncall-show");
    let (code, show, _) = mdtune(&["--show"], &dir);
    assert_eq!(code, 0);
    for line in [
        "system: speed_limit_max 200000, speed_limit_min 1000",
        "  udev rule: /etc/udev/rules.d/90-mdtune.rules installed, runs /usr/sbin/mdtune",
        "  saved originals: md0 (group_thread_cnt 0, stripe_cache_size 256); md2 (group_thread_cnt 0)",
        "  this boot's replays: unknown: the root is",
    ] {
        assert!(show.lines().any(|l| l.starts_with(line)), "no {line:?} in:\n{show}");
    }
    // md1 follows the system limits: the value in force is shown beside it.
    assert_eq!(
        row(&show, "sync_speed_min", "system")[2],
        "(1000)",
        "{show}"
    );
    // The rule edited and its binary gone: said.
    fs::remove_file(dir.join("usr/sbin/mdtune")).unwrap();
    let rule = dir.join("etc/udev/rules.d/90-mdtune.rules");
    let text = fs::read_to_string(&rule).unwrap();
    fs::write(&rule, format!("{text}# edited\n")).unwrap();
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(
        show.contains("runs /usr/sbin/mdtune (MISSING) (edited since persist wrote it)"),
        "{show}"
    );
    let (_, metrics, _) = mdtune(&["--metrics"], &dir);
    assert!(
        metrics.contains("mdtune_persist_rule_in_force 0\n"),
        "{metrics}"
    );
}

#[test]
fn metrics_are_gauges_with_help_in_contiguous_families_and_fail_cleanly() {
    let dir = scratch("oncall-metrics");
    let r = demo_host(&dir);
    let (code, m, err) = mdtune(&["--metrics"], &dir);
    assert_eq!(code, 0, "{err}");
    let mut families: Vec<&str> = Vec::new();
    let mut current = "";
    for l in m.lines() {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            current = rest.split(' ').next().unwrap();
            assert!(!families.contains(&current), "{current} twice");
            assert!(
                current.starts_with("mdtune_")
                    && current
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{current}"
            );
            families.push(current);
        } else if let Some(rest) = l.strip_prefix("# TYPE ") {
            assert_eq!(rest, format!("{current} gauge"));
        } else {
            let name = l.split(['{', ' ']).next().unwrap();
            assert_eq!(name, current, "{l} outside its family");
        }
    }
    // md1 mid-resync: its action, progress and speed; its limits follow the system's.
    for line in [
        "mdtune_array_sync_action{array=\"md1\",device=\"md1\",action=\"resync\"} 1",
        "mdtune_array_sync_action{array=\"md1\",device=\"md1\",action=\"idle\"} 0",
        "mdtune_array_sync_progress_ratio{array=\"md1\",device=\"md1\"} 0.250000",
        "mdtune_array_sync_speed_bytes_per_second{array=\"md1\",device=\"md1\"} 191488000",
        "mdtune_array_sync_speed_min_bytes_per_second{array=\"md1\",device=\"md1\"} 1024000",
        "mdtune_array_auto_group_thread_cnt{array=\"md0\",device=\"md0\"} 8",
        "mdtune_array_hw_queues{array=\"md0\",device=\"md0\"} 8",
        "mdtune_array_member_hw_queues{array=\"md0\",member=\"nvme0n1p1\",device=\"nvme0n1\",role=\"active\",counted=\"true\"} 8",
        "mdtune_array_member_hw_queues{array=\"md0\",member=\"sdn\",device=\"sdn\",role=\"spare\",counted=\"false\"} 1",
        "mdtune_system_speed_limit_max_bytes_per_second 204800000",
        "mdtune_persisted 0",
    ] {
        assert!(m.lines().any(|l| l == line), "no {line} in:\n{m}");
    }
    // A host that cannot be read: exit 1, nothing on stdout; an unusable root: exit 2.
    fs::write(dir.join("proc/sys/dev/raid/speed_limit_min"), "garbage\n").unwrap();
    let (code, out, err) = mdtune(&["--metrics"], &dir);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.starts_with("mdtune --metrics: "), "{err}");
    assert_eq!(mdtune(&["--metrics"], &dir.join("missing")).0, 2);
    drop(r);
}
