//! The host as text for a person (`mdtune --show`, docs/reference.md §1): every array with its
//! kernel and mdadm names, level, state and sync progress; its members as a tree down to the
//! devices whose queues were counted, each with its role and queues and, when it does not count,
//! why; each tunable's live value and what `auto` would set, with why. Rendered from the report
//! of a `query` with the default input, each array carrying what only the host knows beside it
//! (`metadata_version`, every tunable's live value in `values`, each sync limit's value in
//! effect and unit in `sync_limits`, `reshape`, `mdmon`, `unreadable`) and per tunable the
//! rolled-out value and the live value's source (`origin`);
//! the system limits a `system` value follows (`system_limits`); and `host` (the CPUs and nodes
//! `auto`'s ceiling comes from). The head above the arrays (the system limits, the persistence
//! status, drift from what was rolled out) is `super::host_head`.

use super::cells::{level, shown, sync, Table};
use crate::md::Attr;
use serde_json::Value as Json;
use std::fmt::Write as _;

/// The whole view.
pub fn host(view: &Json) -> String {
    let view = &super::escape::safe(view);
    let mut out = String::from("mdtune --show: read only, nothing was written\n");
    out.push_str(&host_line(&view["host"]));
    out.push_str(&super::host_head::head(view));
    let arrays = view["arrays"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if arrays.is_empty() {
        out.push_str("no md arrays\n");
    }
    for a in arrays {
        out.push('\n');
        array(&mut out, a, view["now_unix"].as_u64());
    }
    let warnings = view["warnings"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !warnings.is_empty() {
        out.push_str("\nwarnings:\n");
    }
    for w in warnings {
        let _ = writeln!(out, "  {}", shown(w));
    }
    out
}

/// The CPUs and NUMA nodes `auto`'s ceiling comes from, as the kernel shows them.
fn host_line(h: &Json) -> String {
    let mut l = match h["online_cpus"].as_u64() {
        Some(n) => format!("host: {n} CPUs online"),
        None => "host: online CPUs unknown".into(),
    };
    if let Some(u) = h["unbound_cpus"]
        .as_u64()
        .filter(|u| Some(*u) != h["online_cpus"].as_u64())
    {
        let _ = write!(l, ", {u} of them open to the raid5 workers");
    }
    match (h["nodes_with_cpus"].as_u64(), h["possible_nodes"].as_u64()) {
        (Some(n), Some(p)) if n != p => {
            let _ = write!(l, "; {n} of {p} NUMA nodes have CPUs");
        }
        (Some(n), _) | (None, Some(n)) => {
            let _ = write!(l, "; {n} NUMA node{}", if n == 1 { "" } else { "s" });
        }
        (None, None) => l.push_str("; no NUMA nodes listed (one node)"),
    }
    l.push('\n');
    l
}

fn array(out: &mut String, a: &Json, now: Option<u64>) {
    let mut head = vec![shown(&a["name"])];
    if let Some(d) = a["devname"].as_str() {
        head.push(format!("/dev/md/{d}"));
    }
    head.push(level(a));
    head.push(shown(&a["array_state"]));
    if let Some(m) = a["metadata_version"].as_str().filter(|m| !m.is_empty()) {
        head.push(format!("metadata {m}"));
    }
    if let Some(u) = a["uuid"].as_str() {
        head.push(format!("uuid {u}"));
    }
    let _ = writeln!(out, "{}", head.join("  "));
    if a["sync"].is_object() {
        let mut s = sync(&a["sync"]);
        if let Some(done) = a["sync"]["completed"].as_array() {
            let _ = write!(s, " ({} / {} sectors)", shown(&done[0]), shown(&done[1]));
        }
        if let Some(speed) = a["sync"]["speed_kib_s"].as_u64() {
            let _ = write!(s, ", {speed} KiB/s");
        }
        if let Some(eta) = super::oncall::eta(&a["sync"]) {
            let _ = write!(s, ", {eta}");
        }
        let _ = writeln!(out, "  sync: {s}");
        if let Some(line) = frozen(&a["sync"]["frozen_by"]) {
            let _ = writeln!(out, "  frozen: {line}");
        }
    }
    if let Some(line) = boost(a) {
        let _ = writeln!(out, "  boost: {line}");
    }
    super::oncall::show_lines(out, a, now);
    for (key, label) in [
        ("reshape", "reshape"),
        ("mdmon", "mdmon"),
        ("unreadable", "cannot be read"),
    ] {
        if let Some(v) = a[key].as_str() {
            let _ = writeln!(out, "  {label}: {v}");
        }
    }
    members(out, a);
    tunables(out, a);
    for s in a["skipped"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  skipped: {}: {}",
            shown(&s["setting"]),
            shown(&s["reason"])
        );
    }
}

/// The array's sync boost (docs/reference.md §2): in force, `sync_speed_min 50000 -> 500000 while
/// the resync runs (since ...)`; else its values and the syncs it waits for.
pub(super) fn boost(a: &Json) -> Option<String> {
    let b = &a["sync_boost"];
    let limits = b["limits"].as_object()?;
    let during: Vec<String> = b["during"].as_array()?.iter().map(shown).collect();
    if b["active"] == true && b["saved"].is_object() {
        let changes: Vec<String> = limits
            .iter()
            .map(|(k, v)| {
                format!(
                    "{} {} -> {}",
                    shown(&k.as_str().into()),
                    shown(&b["saved"][k]),
                    shown(v)
                )
            })
            .collect();
        let since = b["since_time"]
            .as_str()
            .map_or_else(|| shown(&b["since"]), str::to_string);
        return Some(format!(
            "{} while the {} runs (since {since})",
            changes.join(", "),
            shown(&a["sync"]["action"])
        ));
    }
    let wanted: Vec<String> = limits
        .iter()
        .map(|(k, v)| format!("{} {}", shown(&k.as_str().into()), shown(v)))
        .collect();
    Some(format!(
        "{} during {} (not in force: none of them runs)",
        wanted.join(", "),
        during.join(", ")
    ))
}

/// Who froze the sync, and what to do about it (docs/reference.md §3): `None` when it is not
/// frozen.
pub(super) fn frozen(by: &Json) -> Option<String> {
    let why = "while frozen, md starts no resync and no rebuild onto a spare";
    Some(match (by["by"].as_str()?, by["running"] == true) {
        ("mdtune", true) => format!(
            "paused by a running mdtune (pid {}) around its writes",
            shown(&by["pid"])
        ),
        ("mdtune", false) => format!(
            "by an mdtune run (pid {}) killed mid-pause; {why}: resume it with {}",
            shown(&by["pid"]),
            shown(&by["resume"])
        ),
        _ => format!(
            "not by mdtune (md/sync_action reads frozen); {why}: resume it (echo idle > \
             md/sync_action) once whoever froze it is done"
        ),
    })
}

/// The members, each a line, with the devices below it as a tree.
fn members(out: &mut String, a: &Json) {
    let members = a["members"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if members.is_empty() {
        return;
    }
    let counted = members.iter().filter(|m| m["counted"] == true).count();
    let _ = writeln!(
        out,
        "  members: {counted} of {} counted; combined hardware queues: {}",
        members.len(),
        shown(&a["hw_queues"])
    );
    for m in members {
        let mut l = format!("    {}  {}", shown(&m["name"]), shown(&m["role"]));
        if let Some(q) = m["hw_queues"].as_u64() {
            let _ = write!(l, "  {}", queues(q));
        }
        if m["counted"] == false {
            let _ = write!(l, "  not counted: {}", shown(&m["reason"]));
        }
        if let Some(p) = m["problem"].as_str() {
            let _ = write!(l, "  queues unknown: {p}");
        }
        let _ = writeln!(out, "{l}");
        let paths = m["paths"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let mut indent = "      ".to_string();
        if let Some(d) = m["device"]
            .as_str()
            .filter(|d| Some(*d) != m["name"].as_str())
        {
            let q = if paths.is_empty() {
                m["hw_queues"].as_u64()
            } else {
                None
            };
            let _ = writeln!(
                out,
                "{indent}└─ {d}{}",
                q.map(|q| format!("  {}", queues(q))).unwrap_or_default()
            );
            indent.push_str("   ");
        }
        for (i, p) in paths.iter().enumerate() {
            let branch = if i + 1 == paths.len() {
                "└─"
            } else {
                "├─"
            };
            let q = p["hw_queues"]
                .as_u64()
                .map(|q| format!("  {}", queues(q)))
                .unwrap_or_default();
            let _ = writeln!(out, "{indent}{branch} {}{q}", shown(&p["name"]));
        }
        if let Some(n) = m["note"].as_str() {
            let _ = writeln!(out, "{indent}note: {n}");
        }
    }
}

fn queues(q: u64) -> String {
    format!("{q} queue{}", if q == 1 { "" } else { "s" })
}

/// Every tunable the array has: live value (and what it follows: `system (1000)`), what `auto`
/// (the default input) would set, the value rolled out, where the live one came from, and why
/// `auto` wants its value.
fn tunables(out: &mut String, a: &Json) {
    let values = &a["values"];
    // In the order writes happen, which is the order a person reads them.
    let present: Vec<&str> = Attr::ALL
        .into_iter()
        .map(Attr::name)
        .filter(|t| !values[*t].is_null())
        .collect();
    if present.is_empty() {
        return;
    }
    let dash = |v: &Json| {
        if v.is_null() {
            "-".to_string()
        } else {
            shown(v)
        }
    };
    let mut t = Table::new(&["  tunable", "live", "auto", "rolled out", "source", ""]);
    for attr in present {
        let s = &a["settings"][attr];
        let limit = &a["sync_limits"][attr];
        let (wanted, why) = if s.is_object() {
            let wanted = s["held_back"].get("wanted").unwrap_or(&s["after"]);
            (shown(wanted), why(a, s))
        } else {
            ("-".to_string(), unit(limit))
        };
        // A limit that follows the system's shows the value in effect beside it.
        let live = match (&values[attr], &limit["effective"]) {
            (Json::String(v), e) if v == "system" && !e.is_null() => format!("system ({e})"),
            (v, _) => shown(v),
        };
        let origin = &a["origin"][attr];
        let why = super::oncall::with_reason(why, &origin["reason"]);
        t.row(vec![
            format!("    {attr}"),
            live,
            wanted,
            dash(&origin["rolled_out"]),
            dash(&origin["source"]),
            why,
        ]);
    }
    out.push_str(&t.render());
}

/// In which unit a sync limit counts on this array, and for a raid10's speed limits what each
/// member runs at in a resync, check or repair.
fn unit(limit: &Json) -> String {
    let Some(unit) = limit["unit"].as_str() else {
        return String::new();
    };
    match limit["per_member_kib_s"].as_u64() {
        Some(n) => format!(
            "KiB/s of array sectors: each member {n} KiB/s in resync, check and repair (x {} \
             copies / {} raid disks); per device in recovery",
            shown(&limit["copies"]),
            shown(&limit["raid_disks"])
        ),
        None => unit.to_string(),
    }
}

/// Why `auto` wants its value: the plan's `why` when it gives one, else the queue count it
/// came from; a held-back setting says why it waits.
fn why(a: &Json, s: &Json) -> String {
    let mut why = match s["why"].as_str() {
        Some(w) => w.to_string(),
        None if s["source"] == "auto" => {
            let counted = a["members"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["counted"] == true)
                .count();
            match a["hw_queues"].as_u64() {
                Some(q) => format!(
                    "{} over {counted} counted member{}",
                    queues(q),
                    if counted == 1 { "" } else { "s" }
                ),
                None => "hardware queues unknown: left as it is".into(),
            }
        }
        None => s["source"]
            .as_str()
            .map(|src| format!("from {src}"))
            .unwrap_or_default(),
    };
    if let Some(h) = s["held_back"]["reason"].as_str() {
        // The first clause says what waits for what (`md5 is reshaping (sync_action is
        // reshape)`); the rest, why that matters, is in the report and the warnings.
        let what = h
            .split_once("): ")
            .map_or(h.to_string(), |(what, _)| format!("{what})"));
        why = format!("held back: {what}; {why}");
    }
    why
}

#[cfg(test)]
mod tests {
    use super::host;
    use crate::testing::assert_has;
    use serde_json::json;

    #[test]
    fn an_array_shows_its_members_as_a_tree_and_its_tunables_with_auto() {
        let view = json!({"host": {"online_cpus": 64, "nodes_with_cpus": 2, "possible_nodes": 4},
            "arrays": [{
            "name": "md0", "devname": "data", "level": "raid5", "array_state": "clean",
            "metadata_version": "1.2", "uuid": "a:b:c:d",
            "sync": {"action": "resync", "completed": [1, 4], "speed_kib_s": 100},
            "members": [
                {"name": "nvme0n1p1", "device": "nvme0n1", "hw_queues": 8, "role": "active", "counted": true},
                {"name": "dm-0", "device": "dm-0", "hw_queues": 4, "role": "active", "counted": true,
                 "paths": [{"name": "sda", "hw_queues": 4}, {"name": "sdb", "hw_queues": 6}]},
                {"name": "sdc", "device": "sdc", "hw_queues": 1, "role": "spare", "counted": false,
                 "reason": "spare: carries no data"}],
            "hw_queues": 4,
            "values": {"group_thread_cnt": 0, "stripe_cache_size": 256, "skip_copy": false},
            "settings": {"group_thread_cnt": {"before": 0, "after": 4, "source": "auto"}},
            "skipped": []}]});
        let t = host(&view);
        assert_has(
            &t,
            &[
                "host: 64 CPUs online; 2 of 4 NUMA nodes have CPUs\n",
                "\nmd0  /dev/md/data  raid5  clean  metadata 1.2  uuid a:b:c:d\n",
                "  sync: resync 25% (1 / 4 sectors), 100 KiB/s, about 0s left\n",
                "    nvme0n1p1  active  8 queues\n      └─ nvme0n1  8 queues\n",
            ],
        );
        assert!(
            t.contains(
                "    dm-0  active  4 queues\n      ├─ sda  4 queues\n      └─ sdb  6 queues\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("    sdc  spare  1 queue  not counted: spare: carries no data\n"),
            "{t}"
        );
        let threads = t
            .lines()
            .find(|l| l.trim_start().starts_with("group_thread_cnt"))
            .unwrap();
        let words: Vec<&str> = threads.split_whitespace().collect();
        assert_eq!(words[..5], ["group_thread_cnt", "0", "4", "-", "-"], "{t}");
        assert!(threads.ends_with("4 queues over 2 counted members"), "{t}");
        let cache = t
            .lines()
            .find(|l| l.trim_start().starts_with("stripe_cache_size"))
            .unwrap();
        assert_eq!(
            cache.split_whitespace().collect::<Vec<_>>(),
            ["stripe_cache_size", "256", "-", "-", "-"]
        );
    }
}
