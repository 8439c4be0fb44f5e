//! mdtune for people (docs/reference.md §1 and §3): `--show` (a read-only view of the host as
//! text), `--text` (any run, its report printed for a person) and the short `msg`, through the
//! real binary on fake roots that hold every layout `layouts.rs` builds.
//!
//! `--show` and `--text` are checked against the JSON run of the same host, not against a copy of
//! their own output: every array, member, path and queue count the JSON reports appears in the
//! view, and every setting a run changed, would change or held back appears in the text with its
//! before and after.

use crate::common::{
    bin, give_to_nobody_except, kernel_snapshot, run, run_args, scratch, snapshot, Run,
};
use mdtune_fakeroot::{bench_host, demo_host, FakeRoot, MdSpec, Use};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// One host with every layout `layouts.rs` builds, each array named after its layout: block
/// stacks, member roles and HBAs, reshapes and an IMSM container, multipath and odd values.
fn layouts_host(dir: &Path) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 64);
    stacks(&mut r);
    roles_and_hbas(&mut r);
    reshapes_and_container(&mut r);
    multipath_and_odd_values(&mut r);
    r
}

/// md0 raid5 over LVM on NVMe partitions; md10/md11 raid1 of partitions under the raid5 md12;
/// md20 raid5 over partitions of NVMe multipath heads.
fn stacks(r: &mut FakeRoot) {
    let lvs: Vec<String> = (0..3)
        .map(|c| {
            let disk = r.nvme(c, 8);
            let part = r.partition(&disk, 2);
            r.dm_linear(c, &[&part])
        })
        .collect();
    r.md(
        "md0",
        &MdSpec::level("raid5", 1).devname("lvm"),
        &refs(&lvs),
    );
    let parts: Vec<String> = (10..14)
        .map(|c| {
            let disk = r.nvme(c, 6);
            r.partition(&disk, 1)
        })
        .collect();
    r.md("md10", &MdSpec::level("raid1", 2), &[&parts[0], &parts[1]]);
    r.md("md11", &MdSpec::level("raid1", 3), &[&parts[2], &parts[3]]);
    r.md(
        "md12",
        &MdSpec::level("raid5", 4).devname("nested"),
        &["md10", "md11"],
    );
    let heads: Vec<String> = (20..23)
        .map(|s| {
            let head = r.nvme_multipath(s, &[(s, 4), (s + 10, 6)]);
            r.partition(&head, 1)
        })
        .collect();
    r.md("md20", &MdSpec::level("raid5", 5), &refs(&heads));
}

/// md30 raid5 with a rebuilding member, a spare, a journal and a faulty member; md40 raid6 of
/// rotational disks behind a 48-queue SAS HBA and md41 raid5 of SAS SSDs on the same kind of HBA.
fn roles_and_hbas(r: &mut FakeRoot) {
    let nvme: Vec<String> = (40..44).map(|c| r.nvme(c, 8)).collect();
    let (spare, journal, faulty) = (r.scsi("sda", 1), r.scsi("sdb", 1), r.scsi("sdc", 1));
    r.md_with(
        "md30",
        &MdSpec::level("raid5", 6).devname("roles"),
        &[
            (&nvme[0], Use::Active),
            (&nvme[1], Use::Active),
            (&nvme[2], Use::Active),
            (&nvme[3], Use::Rebuilding),
            (&spare, Use::Spare),
            (&journal, Use::Journal),
            (&faulty, Use::Faulty),
        ],
    );
    let hdds: Vec<String> = ["sdd", "sde", "sdf", "sdg"]
        .iter()
        .map(|n| r.hdd(n, 48))
        .collect();
    r.md("md40", &MdSpec::level("raid6", 7), &refs(&hdds));
    let ssds: Vec<String> = ["sdh", "sdi", "sdj"]
        .iter()
        .map(|n| r.scsi(n, 48))
        .collect();
    r.md("md41", &MdSpec::level("raid5", 8), &refs(&ssds));
}

/// md50 reshaping, md51 with a frozen reshape position; md127 an IMSM container holding md126
/// and md125 (no mdmon).
fn reshapes_and_container(r: &mut FakeRoot) {
    let grow: Vec<String> = (50..54).map(|c| r.nvme(c, 8)).collect();
    r.md(
        "md50",
        &MdSpec::reshaping(9).devname("growing"),
        &refs(&grow),
    );
    r.set_md("md50", "stripe_cache_size", "2048");
    let frozen: Vec<String> = (55..58).map(|c| r.nvme(c, 8)).collect();
    let mut spec = MdSpec::level("raid5", 10);
    spec.reshape_position = "2097152".into();
    r.md("md51", &spec, &refs(&frozen));
    let vroc: Vec<String> = (60..63).map(|c| r.nvme(c, 8)).collect();
    r.md("md127", &MdSpec::imsm_container(0x127), &refs(&vroc));
    r.md(
        "md126",
        &MdSpec::imsm_member("md127", 0, 0x126).devname("vroc0"),
        &refs(&vroc),
    );
    r.md(
        "md125",
        &MdSpec::imsm_member("md127", 1, 0x125),
        &refs(&vroc),
    );
}

/// md60 raid6 over dm-multipath; md61 raid1 whose sync_speed_max reads -1; md62 an array that
/// reads empty; md63 raid10 over NVMe multipath heads, mid-resync.
fn multipath_and_odd_values(r: &mut FakeRoot) {
    let mpaths: Vec<String> = (0..4u8)
        .map(|i| {
            let a = r.scsi(&format!("sdm{}", (b'a' + 2 * i) as char), 16);
            let b = r.scsi(&format!("sdm{}", (b'a' + 2 * i + 1) as char), 16);
            r.dm_multipath(10 + u32::from(i), &[&a, &b])
        })
        .collect();
    r.md("md60", &MdSpec::level("raid6", 11), &refs(&mpaths));
    let mirror: Vec<String> = (70..72).map(|c| r.nvme(c, 4)).collect();
    r.md("md61", &MdSpec::level("raid1", 12), &refs(&mirror));
    r.set_md("md61", "sync_speed_max", "-1 (local)");
    let stopping: Vec<String> = (73..76).map(|c| r.nvme(c, 4)).collect();
    r.md("md62", &MdSpec::level("raid5", 13), &refs(&stopping));
    fs::write(r.md_attr("md62", "stripe_cache_size"), "").unwrap();
    let log_heads: Vec<String> = (80..84)
        .map(|s| r.nvme_multipath(s, &[(s, 4), (s + 10, 4)]))
        .collect();
    let mut log = MdSpec::level("raid10", 14).devname("log");
    log.sync_action = "resync".into();
    log.sync_completed = "1048576 / 4194304".into();
    log.sync_speed = "187000".into();
    r.md("md63", &log, &refs(&log_heads));
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `mdtune --show --root DIR`: (exit status, stdout, stderr).
fn show(root: &Path) -> (i32, String, String) {
    let r = run_args(&["--show", "--root", &root.display().to_string()], "", &[]);
    (r.code, r.stdout, r.stderr)
}

/// `mdtune --text -` with `input` (its `root` set to `root`).
fn text(root: &Path, mut input: Value) -> Run {
    input["root"] = json!(root.display().to_string());
    run_args(&["--text", "-"], &input.to_string(), &[])
}

/// The lines of a text view that belong to array `name`: from the line that starts with the
/// name (unindented) to the next unindented line.
fn block<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = out
        .lines()
        .skip_while(|l| l.starts_with(' ') || l.split_whitespace().next() != Some(name));
    let head = lines
        .next()
        .unwrap_or_else(|| panic!("no line for {name} in:\n{out}"));
    let mut block = vec![head];
    block.extend(lines.take_while(|l| l.starts_with(' ') || l.is_empty()));
    block
}

/// The one line of `lines` whose first word is `word`.
fn line<'a>(lines: &[&'a str], word: &str) -> &'a str {
    let found: Vec<&&str> = lines
        .iter()
        .filter(|l| {
            l.trim_start_matches([' ', '|', '`', '-', '├', '└', '│', '─'])
                .split_whitespace()
                .next()
                == Some(word)
        })
        .collect();
    assert!(
        !found.is_empty(),
        "no line for {word} in:\n{}",
        lines.join("\n")
    );
    found[0]
}

/// A JSON value as the text shows it: numbers and booleans as they are, strings unquoted.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Checks `--show` against the JSON of a check-mode run of the same host: every array with its
/// names, level, state and sync progress; every member with its role, queues, and why it is not
/// counted; every device below it; `group_thread_cnt` live and what `auto` would set.
fn assert_show_agrees_with_json(dir: &Path) {
    let before = snapshot(dir);
    let (code, out, err) = show(dir);
    assert_eq!(code, 0, "--show failed: {out}{err}");
    assert!(err.is_empty(), "stderr: {err}");
    assert!(serde_json::from_str::<Value>(&out).is_err(), "JSON: {out}");
    assert_eq!(snapshot(dir), before, "--show changed a file");
    assert!(
        !dir.join("run/mdtune.lock").exists(),
        "--show took the lock"
    );
    let json = run(dir, json!({"check_mode": true}));
    for a in json.json["arrays"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap();
        let b = block(&out, name);
        let head = b[0];
        for key in ["devname", "level", "array_state"] {
            if let Some(v) = a[key].as_str().filter(|v| !v.is_empty()) {
                assert!(head.contains(v), "{name}: no {key} {v} in {head:?}");
            }
        }
        let all = b.join("\n");
        if let Some(done) = a["sync"]["completed"].as_array() {
            let (d, t) = (done[0].as_u64().unwrap(), done[1].as_u64().unwrap());
            let pct = format!("{}%", d * 100 / t);
            let action = a["sync"]["action"].as_str().unwrap();
            assert!(
                all.contains(action) && all.contains(&pct),
                "{name}: no {action} {pct} in\n{all}"
            );
        }
        for m in a["members"].as_array().unwrap() {
            let l = line(&b, m["name"].as_str().unwrap());
            assert!(l.contains(m["role"].as_str().unwrap()), "{name}: {l} / {m}");
            if let Some(q) = m["hw_queues"].as_u64() {
                assert!(
                    l.contains(&format!("{q} queue")),
                    "{name}: no {q} queues in {l:?} / {m}"
                );
            }
            if m["counted"] == false {
                let reason = m["reason"].as_str().unwrap();
                assert!(
                    l.contains("not counted") && l.contains(reason),
                    "{name}: {l:?} / {m}"
                );
            }
            if let Some(note) = m["note"].as_str() {
                assert!(all.contains(note), "{name}: no note {note:?} in\n{all}");
            }
            let device = m["device"].as_str().unwrap_or("");
            if !device.is_empty() && m["device"] != m["name"] {
                line(&b, device);
            }
            for p in m["paths"].as_array().into_iter().flatten() {
                let l = line(&b, p["name"].as_str().unwrap());
                if let Some(q) = p["hw_queues"].as_u64() {
                    assert!(l.contains(&format!("{q} queue")), "{name}: {l:?} / {p}");
                }
            }
        }
        if let Some(s) = a["settings"].get("group_thread_cnt") {
            let l = line(&b, "group_thread_cnt");
            let words: Vec<&str> = l.split_whitespace().collect();
            let auto = s["held_back"].get("wanted").unwrap_or(&s["after"]);
            assert_eq!(words[1], shown(&s["before"]), "{name} live: {l:?}");
            assert_eq!(words[2], shown(auto), "{name} auto: {l:?}");
            if s.get("held_back").is_some() {
                assert!(l.contains("held back"), "{name}: {l:?}");
            }
            if s["source"] == "auto" && a["hw_queues"].is_u64() {
                assert!(l.contains("queue"), "{name}: no why in {l:?}");
            }
        }
    }
}

#[test]
fn show_describes_every_layout_as_the_json_run_sees_it() {
    let dir = scratch("show-layouts");
    layouts_host(&dir);
    assert_show_agrees_with_json(&dir);
    let dir = scratch("show-demo");
    demo_host(&dir);
    assert_show_agrees_with_json(&dir);
}

#[test]
fn show_says_what_a_person_checks_by_eye() {
    let dir = scratch("show-eye");
    layouts_host(&dir);
    let (code, out, _) = show(&dir);
    assert_eq!(code, 0, "{out}");
    let roles = block(&out, "md30");
    assert!(line(&roles, "sda").contains("spare"), "{out}");
    assert!(line(&roles, "sdb").contains("journal"), "{out}");
    assert!(line(&roles, "sdc").contains("faulty"), "{out}");
    assert!(line(&roles, "nvme43n1").contains("rebuilding"), "{out}");
    // The tree goes down to the devices whose queues count: LVM -> partition -> disk.
    let lvm = block(&out, "md0");
    for dev in ["dm-0", "nvme0n1"] {
        line(&lvm, dev);
    }
    let nested = block(&out, "md12");
    for dev in ["md10", "md11", "nvme10n1", "nvme13n1"] {
        line(&nested, dev);
    }
    assert!(block(&out, "md40")
        .join("\n")
        .contains("SCSI disk, counted as 1 queue"));
    let reshape = block(&out, "md50").join("\n");
    assert!(reshape.contains("reshape"), "{reshape}");
    assert!(
        line(&block(&out, "md50"), "group_thread_cnt").contains("held back"),
        "{reshape}"
    );
    // Every tunable's live value, not only those a run would plan.
    let md0 = block(&out, "md0");
    for (attr, live) in [
        ("stripe_cache_size", "256"),
        ("preread_bypass_threshold", "1"),
        ("skip_copy", "false"),
        ("sync_speed_min", "system"),
        ("sync_speed_max", "system"),
        ("sync_force_parallel", "false"),
    ] {
        let l = line(&md0, attr);
        assert_eq!(l.split_whitespace().nth(1), Some(live), "{l:?}");
    }
    assert_eq!(
        line(&block(&out, "md61"), "sync_speed_max")
            .split_whitespace()
            .nth(1),
        Some("-1")
    );
    let container = block(&out, "md127");
    assert!(
        container[0].contains("inactive") && container[0].contains("external:imsm"),
        "{}",
        container[0]
    );
    let member = block(&out, "md126");
    assert!(member[0].contains("external:/md127/0"), "{}", member[0]);
    assert!(member.join("\n").contains("mdmon"), "{}", member.join("\n"));
    let stopping = block(&out, "md62").join("\n");
    assert!(stopping.contains("read empty"), "{stopping}");
    // The host facts auto divides by.
    assert!(out.contains("64 CPUs"), "{out}");
}

#[test]
fn show_of_an_unusable_root_says_which_and_exits_2() {
    let dir = scratch("show-bad-root");
    let missing = dir.join("nothing-here");
    let (code, out, err) = show(&missing);
    assert_eq!(code, 2, "{out}{err}");
    let said = format!("{out}{err}");
    assert!(said.contains(&missing.display().to_string()), "{said}");
    assert!(!said.contains("unknown arguments"), "{said}");
    assert!(serde_json::from_str::<Value>(&out).is_err(), "JSON: {out}");
    let r = run_args(&["--show", "extra"], "", &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
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
fn failing_host(dir: &Path) {
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

fn unprivileged(args: &[&str], input: &Value) -> Run {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
        .args(args);
    crate::common::run_command(cmd, &input.to_string())
}

#[test]
fn text_of_a_failed_run_says_what_failed_and_what_was_rolled_back() {
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

// --- the short msg (docs/reference.md §3), on a host of 16 raid5 arrays --------------------------

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

// --- text that came from the host or the input, safe for a terminal (docs/reference.md §1) -------

/// One character of each class that must not reach a terminal raw, and how the views show it:
/// an escape (CSI: clear the screen), a carriage return, a newline, a bell (ends an OSC title), a
/// tab, DEL, a C1 control (8-bit CSI), each bidirectional override, embedding and isolate, the
/// direction marks and the line separator.
const HOSTILE: [(&str, &str); 19] = [
    ("\u{1b}", "\\x1b"),
    ("\r", "\\x0d"),
    ("\n", "\\x0a"),
    ("\u{7}", "\\x07"),
    ("\t", "\\x09"),
    ("\u{7f}", "\\x7f"),
    ("\u{9b}", "\\x9b"),
    ("\u{202a}", "\\u{202a}"),
    ("\u{202b}", "\\u{202b}"),
    ("\u{202c}", "\\u{202c}"),
    ("\u{202d}", "\\u{202d}"),
    ("\u{202e}", "\\u{202e}"),
    ("\u{2066}", "\\u{2066}"),
    ("\u{2067}", "\\u{2067}"),
    ("\u{2068}", "\\u{2068}"),
    ("\u{2069}", "\\u{2069}"),
    ("\u{200f}", "\\u{200f}"),
    ("\u{61c}", "\\u{61c}"),
    ("\u{2028}", "\\u{2028}"),
];

/// Fails naming the class when `out` holds any hostile character raw. A newline is the views' own
/// line break: whether one came from a field is checked by counting lines.
fn assert_no_raw_control(out: &str, what: &str) {
    for (raw, shown) in HOSTILE {
        if raw == "\n" {
            continue;
        }
        assert!(
            !out.contains(raw),
            "{what}: a raw {shown} reached the terminal:\n{}",
            out.escape_debug()
        );
    }
}

/// Every string leaf of `v` (not its keys, which the views look fields up by) with `bad` in its
/// middle.
fn poison(v: &mut Value, bad: &str) {
    match v {
        Value::String(s) => *s = format!("{}{bad}{}", &s[..s.len() / 2], &s[s.len() / 2..]),
        Value::Array(items) => items.iter_mut().for_each(|i| poison(i, bad)),
        Value::Object(map) => map.values_mut().for_each(|i| poison(i, bad)),
        _ => {}
    }
}

#[test]
fn show_and_text_escape_every_class_in_every_field_they_print() {
    // The JSON the views render, from real runs: a check-mode run of every layout with a diff,
    // warnings and held-back settings; a failed run with rolled_back; --show's view of the same
    // host. Each class goes into every string of each, and none may come out raw.
    let dir = scratch("escape-every-field");
    layouts_host(&dir);
    let checked = run(
        &dir,
        json!({"check_mode": true, "diff": true, "speed_limit_max": 400000,
               "arrays": [{"name": "*", "stripe_cache_size": 4096}, {"name": "md_none*"}]}),
    );
    let failed = scratch("escape-failed");
    failing_host(&failed);
    let failure = unprivileged(
        &["-"],
        &json!({"root": failed, "thread_policy": "off",
                "arrays": [{"name": "md0", "stripe_cache_size": 256}, {"name": "md1", "group_thread_cnt": 2}]}),
    );
    let shown_host = mdtune::run::show(&dir).expect("show");
    for (raw, shown) in HOSTILE {
        for (what, json, view) in [
            (
                "--text of a check run",
                &checked.json,
                mdtune::view::report as fn(&Value) -> String,
            ),
            (
                "--text of a failed run",
                &failure.json,
                mdtune::view::report,
            ),
            ("--show", &shown_host, mdtune::view::host),
        ] {
            let mut poisoned = json.clone();
            poison(&mut poisoned, raw);
            let clean = view(json);
            let out = view(&poisoned);
            assert_no_raw_control(&out, &format!("{what} with {shown}"));
            assert_eq!(
                out.lines().count(),
                clean.lines().count(),
                "{what}: {shown} in a field added or removed lines:\n{}",
                out.escape_debug()
            );
            assert!(out.contains(shown), "{what}: {shown} is not shown: {out}");
        }
    }
}

#[test]
fn a_hostile_array_name_and_devname_reach_the_terminal_escaped() {
    // A kernel name and a udev name from the host itself (sys/block/<name>, dev/md/<name>) with
    // an escape sequence that would clear the screen, a carriage return that would overwrite the
    // line, a newline that would fake one and an override that would reverse it.
    let dir = scratch("escape-host");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    let name = "md_a\u{1b}[2J\r\n\u{202e}b";
    r.md(
        name,
        &MdSpec::level("raid5", 1).devname("data\u{1b}]0;owned\u{7}"),
        &refs(&d),
    );
    let (code, out, err) = show(&dir);
    assert_eq!(code, 0, "{out}{err}");
    let text = text(&dir, json!({"check_mode": true}));
    assert_eq!(text.code, 0, "{}", text.stdout);
    for (what, out) in [("--show", &out), ("--text", &text.stdout)] {
        assert_no_raw_control(out, what);
        assert!(
            out.contains("md_a\\x1b[2J\\x0d\\x0a\\u{202e}b"),
            "{what} does not show the name escaped:\n{out}"
        );
    }
    assert!(out.contains("data\\x1b]0;owned\\x07"), "{out}");
    // The JSON of the same run keeps the name exactly: serde_json escapes it for the parser.
    let json = run(&dir, json!({"check_mode": true}));
    assert_eq!(json.json["arrays"][0]["name"], name, "{}", json.stdout);
}
