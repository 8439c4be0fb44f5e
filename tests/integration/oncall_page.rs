//! The on-call page's second level through the real binary on fake roots (docs/reference.md
//! §1 `--show`, `--verify`, `--text`; §2 `reason`; §6 the manifest and the trail): the health
//! lines beside the settings (degraded members named, the last whole check and its
//! mismatches, the running sync's time left), health rows in `--verify` that do not change its
//! exit status, the `reason` of a value from the input to `--show`, `--verify`, the trail and
//! the manifest (with the caller that persisted it), and `--text` saying what is true after a
//! run.

use crate::common::{bin, logged, run, run_args, run_command, scratch, syslog};
use crate::oncall::mdtune;
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec, Use};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// md0, a raid5 of four drives, one of them faulty: md counts one missing.
fn degraded(name: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..4).map(|c| r.nvme(c, 4)).collect();
    let members = [
        (d[0].as_str(), Use::Active),
        (d[1].as_str(), Use::Active),
        (d[2].as_str(), Use::Active),
        (d[3].as_str(), Use::Faulty),
    ];
    r.md_with("md0", &MdSpec::level("raid5", 7), &members);
    r.set_md("md0", "degraded", "1");
    (dir, r)
}

/// Ticks while md0 runs a whole check that then ends with `mismatches`: the record has it.
fn whole_check(dir: &Path, r: &FakeRoot, mismatches: &str) {
    let tick = || {
        let out = run_args(&["--tick", "--root", dir.to_str().unwrap()], "", &[]);
        assert_eq!(out.code, 0, "{}", out.stdout);
    };
    tick();
    r.set_md("md0", "sync_action", "check");
    r.set_md("md0", "sync_completed", "1000 / 4001000");
    r.set_md("md0", "sync_speed", "1000");
    tick();
    r.set_md("md0", "sync_action", "idle");
    r.set_md("md0", "last_sync_action", "check");
    r.set_md("md0", "sync_completed", "none");
    r.set_md("md0", "sync_speed", "none");
    r.set_md("md0", "mismatch_cnt", mismatches);
    tick();
}

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    let found = text.lines().find(|l| l.trim_start().starts_with(start));
    found.unwrap_or_else(|| panic!("no line starting with {start:?} in:\n{text}"))
}

#[test]
fn show_names_the_missing_member_the_last_whole_check_and_the_time_left() {
    let (dir, r) = degraded("oncall-page-show");
    whole_check(&dir, &r, "128");
    r.set_md("md0", "sync_action", "recover");
    r.set_md("md0", "sync_completed", "1000 / 7201000");
    r.set_md("md0", "sync_speed", "1000");
    let (code, show, err) = mdtune(&["--show"], &dir);
    assert_eq!(code, 0, "{err}");
    let degraded = line(&show, "degraded:");
    assert!(
        degraded.contains("1 member missing (md/degraded); faulty: nvme3n1"),
        "{show}"
    );
    let check = line(&show, "last whole check:");
    assert!(check.contains(", 128 mismatched sectors"), "{show}");
    assert!(
        line(&show, "sync:").ends_with(", about 1h 0m left"),
        "{show}"
    );
}

#[test]
fn verify_shows_what_is_not_healthy_and_only_tuning_and_persistence_decide_its_exit() {
    let (dir, r) = degraded("oncall-page-verify");
    let out = run(&dir, json!({"persist": true}));
    assert_eq!(out.code, 0, "{}", out.stdout);
    whole_check(&dir, &r, "128");
    let (code, text, err) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 0, "compliant, however unhealthy: {err}\n{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("  health  ")).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        rows[0].starts_with("md0") && rows[0].contains("degraded"),
        "{text}"
    );
    assert!(
        rows[1].contains("mismatch_cnt") && rows[1].contains("128"),
        "{text}"
    );
    assert!(
        text.ends_with("decide the exit status (0 compliant, 3 not)\n"),
        "{text}"
    );
    // A drifted setting still exits 3, with the health rows beside it.
    r.set_md("md0", "group_thread_cnt", "0");
    let (code, text, _) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 3, "{text}");
    r.set_md("md0", "degraded", "0");
    r.set_md("md0", "mismatch_cnt", "0");
    let (code, _, _) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 3);
}

#[test]
fn a_reason_is_persisted_shown_verified_logged_and_the_manifest_names_who_persisted_it() {
    let dir = scratch("oncall-page-reason");
    let r = demo_host(&dir);
    let log = syslog(&dir);
    let input = json!({"root": dir, "persist": true, "reason": "CHG0042 \\ HANA go-live",
        "arrays": [{"name": "hana_data", "stripe_cache_size": 4096,
                    "reason": "SAP note 2382421"}],
        "_ansible_module_name": "mdtune.mdraid.mdtune", "_ansible_version": "2.19.0"});
    let mut cmd = Command::new(bin());
    cmd.arg("-").env_clear().env("SUDO_USER", "alice");
    let out = run_command(cmd, &input.to_string());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let s = &out.json["arrays"][0]["settings"];
    assert_eq!(s["stripe_cache_size"]["reason"], "SAP note 2382421");
    assert_eq!(s["group_thread_cnt"]["reason"], "CHG0042 \\ HANA go-live");
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    eprintln!("the trail's line: {}", lines[0]);
    assert!(
        lines[0].contains(": changed md0: group_thread_cnt 0 -> 8, stripe_cache_size 256 -> 4096"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("; reason for md0 stripe_cache_size: SAP note 2382421"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("group_thread_cnt: CHG0042 \\\\ HANA go-live"),
        "{}",
        lines[0]
    );
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("etc/mdtune/installed.json")).unwrap())
            .unwrap();
    let by = "ansible mdtune.mdraid.mdtune (ansible 2.19.0), user alice via sudo";
    assert_eq!(manifest["by"], by);
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(
        line(&show, "persisted:").contains(&format!(", run by {by} (")),
        "{show}"
    );
    assert_eq!(
        line(&show, "reason:").trim(),
        "reason: CHG0042 \\\\ HANA go-live"
    );
    assert!(
        line(&show, "stripe_cache_size").ends_with("reason: SAP note 2382421"),
        "{show}"
    );
    r.set_md("md0", "stripe_cache_size", "1024");
    let (code, verify, _) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 3, "{verify}");
    assert!(
        verify.lines().nth(1).unwrap().ends_with("compliant  why"),
        "{verify}"
    );
    let row = line(&verify, "md0    stripe_cache_size");
    assert!(row.ends_with("no         SAP note 2382421"), "{verify}");
}

#[test]
fn a_reason_that_is_not_printable_text_is_refused_naming_the_key_and_the_escaped_value() {
    let dir = scratch("oncall-page-reason-refused");
    demo_host(&dir);
    for (input, key) in [
        (json!({"reason": "a\u{1b}[2J"}), "reason: "),
        (
            json!({"arrays": [{"name": "md0", "reason": "x\u{202e}y"}]}),
            "arrays[0].reason: ",
        ),
        (json!({"reason": "z".repeat(201)}), "reason: "),
        (json!({"reason": 5}), "reason: 5"),
    ] {
        let out = run(&dir, input.clone());
        assert_eq!(out.code, 2, "{input}: {}", out.stdout);
        let msg = out.msg();
        assert!(
            msg.starts_with(key) && msg.contains("at most 200 characters"),
            "{msg}"
        );
        assert!(
            !msg.contains('\u{1b}') && !msg.contains('\u{202e}'),
            "{msg:?}"
        );
    }
}

#[test]
fn text_says_compliant_after_a_successful_apply_and_renders_persist_as_text() {
    let dir = scratch("oncall-page-text");
    demo_host(&dir);
    let text = |input: Value| {
        let mut input = input;
        input["root"] = json!(dir);
        let out = run_args(&["--text", "-"], &input.to_string(), &[]);
        assert_eq!(out.code, 0, "{}", out.stdout);
        out.stdout
    };
    let applied =
        text(json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]}));
    let md0 = applied
        .lines()
        .find(|l| l.starts_with("md0 ") && l.contains("raid5"));
    let md0 = md0.unwrap_or_else(|| panic!("no row of md0 in:\n{applied}"));
    assert!(
        md0.ends_with("yes"),
        "the table says what is true after the run:\n{applied}"
    );
    // A run that sets md0 otherwise than the persisted state says what the next boot puts
    // back, as text.
    let diverged = text(json!({"arrays": [{"name": "md0", "stripe_cache_size": 2048}]}));
    assert!(
        diverged.contains(
            "persist: the next boot would put back:\n  md0 stripe_cache_size 4096 (this run: 2048)\n"
        ),
        "{diverged}"
    );
    assert!(!diverged.contains('{'), "{diverged}");
}
