//! mdtune for people (docs/reference.md §1 and §3), the `--show` half: a read-only view of the
//! host as text, through the real binary on fake roots that hold every layout `layouts.rs` builds
//! (`layouts_host`, the host of `people_text.rs` and `escaping.rs` too). `--text`:
//! `people_text.rs`; the short `msg`: `msg.rs`; what the views escape: `escaping.rs`.
//!
//! `--show` is checked against the JSON run of the same host, not against a copy of its own
//! output: every array, member, path and queue count the JSON reports appears in the view, with
//! the live value of every tunable and what `auto` would set.

use crate::common::{run, run_args, scratch, snapshot};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec, Use};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

/// One host with every layout `layouts.rs` builds, each array named after its layout: block
/// stacks, member roles and HBAs, reshapes and an IMSM container, multipath and odd values.
pub(crate) fn layouts_host(dir: &Path) -> FakeRoot {
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

pub(crate) fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `mdtune --show --root DIR`: (exit status, stdout, stderr).
pub(crate) fn show(root: &Path) -> (i32, String, String) {
    let r = run_args(&["--show", "--root", &root.display().to_string()], "", &[]);
    (r.code, r.stdout, r.stderr)
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
pub(crate) fn shown(v: &Value) -> String {
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
