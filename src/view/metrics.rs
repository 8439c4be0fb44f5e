//! `mdtune --metrics` (docs/reference.md §1): the host in Prometheus' text exposition format,
//! for node_exporter's textfile collector. Every metric is a gauge named after Prometheus'
//! conventions: `mdtune_` and what it measures, base units as suffixes (sync limits and speeds
//! in `_bytes_per_second`, KiB/s × 1024), counts and 0/1 states without one, the array as the
//! label `array`. A setting's family is named after the setting (`mdtune_array_stripe_cache_size`),
//! so a setting added later has its own family by itself. Rendered from the JSON `--show`
//! gathers; every label value is escaped for a terminal first, then for the format. Pure, and
//! without floating point (a ratio is printed from integers).

use crate::md::{Attr, Kind, SpeedLimit};
use serde_json::Value as Json;
use std::fmt::Write as _;

/// The families in the order they are first met, each with its samples.
#[derive(Default)]
struct Families {
    list: Vec<(String, String, Vec<String>)>,
}

impl Families {
    /// Adds one sample of `name` (a gauge described by `help`) with `labels`.
    fn add(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: &str) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", label(v)))
            .collect();
        let sample = if labels.is_empty() {
            format!("{name} {value}")
        } else {
            format!("{name}{{{}}} {value}", labels.join(","))
        };
        match self.list.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, _, samples)) => samples.push(sample),
            None => self
                .list
                .push((name.to_string(), help.replace('\\', "\\\\"), vec![sample])),
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, samples) in &self.list {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for s in samples {
                let _ = writeln!(out, "{s}");
            }
        }
        out
    }
}

/// A label value in the exposition format: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The unit suffix and factor of a setting: KiB/s become bytes per second.
fn unit(setting: &str) -> (&'static str, i128) {
    let speed = Attr::from_name(setting).is_some_and(|a| a.kind() == Kind::SyncSpeed)
        || SpeedLimit::ALL.iter().any(|l| l.name() == setting);
    if speed {
        ("_bytes_per_second", 1024)
    } else {
        ("", 1)
    }
}

/// A value as a sample: a number times `factor`, a boolean as 0/1, `system` as `follows` (the
/// system limit it follows). `None` when it has no number.
fn number(v: &Json, factor: i128, follows: Option<&Json>) -> Option<String> {
    match v {
        Json::Bool(b) => Some(u8::from(*b).to_string()),
        Json::Number(n) => Some((i128::from(n.as_i64()?) * factor).to_string()),
        Json::String(s) if s == "system" => number(follows?, factor, None),
        _ => None,
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

/// `done / total` with six decimals, from integers.
fn ratio(done: u64, total: u64) -> Option<String> {
    let q = u128::from(done).checked_mul(1_000_000)? / u128::from(total).max(1);
    Some(format!("{}.{:06}", q / 1_000_000, q % 1_000_000))
}

/// The whole exposition, from `--show`'s JSON.
pub fn metrics(view: &Json) -> String {
    let v = &super::escape::safe(view);
    let mut f = Families::default();
    host(&mut f, v);
    for a in v["arrays"].as_array().into_iter().flatten() {
        array(&mut f, a, v);
    }
    system(&mut f, v);
    f.render()
}

/// The run's own facts: version, the comparison, persistence and the last run.
fn host(f: &mut Families, v: &Json) {
    f.add(
        "mdtune_info",
        "The mdtune that wrote these metrics.",
        &[("version", crate::persist::VERSION)],
        "1",
    );
    let c = &v["compared"];
    let ok = c["error"].is_null();
    f.add("mdtune_check_success", "1 if the host could be compared with its desired state (the persisted state, else the defaults); 0 if the persisted state cannot be queried on this host.", &[], flag(ok));
    if ok {
        f.add("mdtune_compliant", "1 if every setting is as the desired state wants (the persisted state, else the defaults).", &[], flag(c["compliant"] == true));
    }
    let p = &v["persistence"];
    f.add("mdtune_persisted", "1 if a desired state is persisted (/etc/mdtune/mdtune.json), to be put back at boot and re-assembly.", &[], flag(p["persisted"] == true));
    if let Some(t) = p["written_unix"].as_u64() {
        f.add(
            "mdtune_persisted_timestamp_seconds",
            "When the persisted state was last written (Unix time).",
            &[],
            &t.to_string(),
        );
    }
    let r = &p["rule"];
    let in_force = r["installed"] == true && r["runs"].is_string() && r["binary_present"] == true;
    f.add("mdtune_persist_rule_in_force", "1 if the udev rule that puts the persisted state back is installed and the mdtune it runs is there.", &[], flag(in_force));
    f.add(
        "mdtune_persist_rule_as_written",
        "1 if the udev rule is exactly what persist wrote (not edited).",
        &[],
        flag(r["as_written"] == true),
    );
    if ok && c["rolled_out"] == true {
        let drifted = v["arrays"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["wanted"]["settings"].as_object().into_iter().flatten())
            .chain(v["wanted_system"].as_object().into_iter().flatten())
            .filter(|(_, s)| s["compliant"] == false)
            .count();
        f.add("mdtune_persist_diverged_settings", "Settings whose live value differs from what the persisted state puts back at the next boot or re-assembly.", &[], &drifted.to_string());
    }
    let saved: usize = p["originals"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, s)| s.as_object().map_or(0, |m| m.len()))
        .sum();
    f.add(
        "mdtune_saved_original_settings",
        "Settings whose value before mdtune's first change since boot is saved for a revert.",
        &[],
        &saved.to_string(),
    );
    let l = &p["last_run"];
    if let Some(t) = l["unix"].as_u64() {
        let state = l["state"].as_str().unwrap_or("");
        f.add(
            "mdtune_last_run_timestamp_seconds",
            "When the last run that held the host lock ended (Unix time), since boot.",
            &[("state", state)],
            &t.to_string(),
        );
        f.add(
            "mdtune_last_run_changed",
            "1 if the last run changed something.",
            &[],
            flag(l["changed"] == true),
        );
        f.add(
            "mdtune_last_run_failed",
            "1 if the last run failed.",
            &[],
            flag(l["failed"] == true),
        );
    }
}

/// One array: what it is, its tunables live and wanted, its members and queues, what `auto`
/// derived, its sync.
fn array(f: &mut Families, a: &Json, v: &Json) {
    let name = a["name"].as_str().unwrap_or("");
    let text = |k: &str| a[k].as_str().unwrap_or("").to_string();
    f.add(
        "mdtune_array_info",
        "An md array: its mdadm name, uuid, level and state.",
        &[
            ("array", name),
            ("devname", &text("devname")),
            ("uuid", &text("uuid")),
            ("level", &text("level")),
            ("array_state", &text("array_state")),
        ],
        "1",
    );
    let limit = |setting: &str| {
        let l = setting.strip_prefix("sync_speed_")?;
        v["system_limits"][format!("speed_limit_{l}")]
            .get("live")
            .cloned()
    };
    for (setting, live) in a["values"].as_object().into_iter().flatten() {
        let (suffix, factor) = unit(setting);
        if let Some(n) = number(live, factor, limit(setting).as_ref()) {
            let family = format!("mdtune_array_{setting}{suffix}");
            let help = format!(
                "The array's live md/{setting}{}.",
                if suffix.is_empty() {
                    ""
                } else {
                    " (KiB/s × 1024; one that follows the system's limit: that limit)"
                }
            );
            f.add(&family, &help, &[("array", name)], &n);
        }
        if live.is_string() && live == "system" {
            f.add(
                "mdtune_array_setting_follows_system",
                "1 if the array's sync limit follows the system limit.",
                &[("array", name), ("setting", setting)],
                "1",
            );
        }
    }
    let wanted = &a["wanted"];
    if let Some(c) = wanted["compliant"].as_bool() {
        f.add(
            "mdtune_array_compliant",
            "1 if the array's settings are as the desired state wants.",
            &[("array", name)],
            flag(c),
        );
    }
    for (setting, s) in wanted["settings"].as_object().into_iter().flatten() {
        let (suffix, factor) = unit(setting);
        let want = s["held_back"].get("wanted").unwrap_or(&s["after"]);
        let follows = setting
            .strip_prefix("sync_speed_")
            .and_then(|l| wanted_limit(v, &format!("speed_limit_{l}")));
        if let Some(n) = number(want, factor, follows.as_ref()) {
            let source = s["source"].as_str().unwrap_or("");
            let family = format!("mdtune_array_wanted_{setting}{suffix}");
            let help = format!("The md/{setting} the desired state wants; source is the entry of the input that wants it.");
            f.add(&family, &help, &[("array", name), ("source", source)], &n);
        }
        f.add(
            "mdtune_array_setting_compliant",
            "1 if the tunable is as the desired state wants (a held-back one is not).",
            &[("array", name), ("setting", setting)],
            flag(s["compliant"] == true),
        );
    }
    members(f, a, name);
    if let Some(s) = a["settings"]["group_thread_cnt"]
        .as_object()
        .filter(|s| s.get("source") == Some(&Json::from("auto")))
    {
        let auto = s
            .get("held_back")
            .and_then(|h| h.get("wanted"))
            .or(s.get("after"));
        if let Some(n) = auto.and_then(|x| number(x, 1, None)) {
            f.add(
                "mdtune_array_auto_group_thread_cnt",
                "The group_thread_cnt auto derives from the members' hardware queues and the CPUs.",
                &[("array", name)],
                &n,
            );
        }
    }
    sync(f, &a["sync"], name);
}

/// The system limit the desired state wants, else the live one: what `system` follows.
fn wanted_limit(v: &Json, limit: &str) -> Option<Json> {
    let w = &v["wanted_system"][limit];
    let live = &v["system_limits"][limit]["live"];
    Some(if w.is_object() {
        w["after"].clone()
    } else {
        live.clone()
    })
    .filter(|x| !x.is_null())
}

fn members(f: &mut Families, a: &Json, name: &str) {
    if let Some(q) = a["hw_queues"].as_u64() {
        f.add(
            "mdtune_array_hw_queues",
            "The counted members' hardware queues, combined as the thread policy says.",
            &[("array", name)],
            &q.to_string(),
        );
    }
    for m in a["members"].as_array().into_iter().flatten() {
        let member = m["name"].as_str().unwrap_or("");
        let role = m["role"].as_str().unwrap_or("");
        if let Some(q) = m["hw_queues"].as_u64() {
            let device = m["device"].as_str().unwrap_or("");
            f.add(
                "mdtune_array_member_hw_queues",
                "A member's hardware queues (its smallest path's).",
                &[
                    ("array", name),
                    ("member", member),
                    ("device", device),
                    ("role", role),
                ],
                &q.to_string(),
            );
        }
        f.add(
            "mdtune_array_member_counted",
            "1 if the member's queues count for auto (an active member).",
            &[("array", name), ("member", member), ("role", role)],
            flag(m["counted"] == true),
        );
    }
}

/// The actions md shows in `sync_action`, each a series of the state set.
const ACTIONS: [&str; 7] = [
    "idle", "resync", "recover", "check", "repair", "reshape", "frozen",
];

fn sync(f: &mut Families, s: &Json, name: &str) {
    let Some(action) = s["action"].as_str() else {
        return;
    };
    for a in ACTIONS {
        f.add(
            "mdtune_array_sync_action",
            "1 for the array's sync action (md/sync_action).",
            &[("array", name), ("action", a)],
            flag(a == action),
        );
    }
    if let Some([done, total]) = s["completed"]
        .as_array()
        .and_then(|c| Some([c.first()?.as_u64()?, c.get(1)?.as_u64()?]))
    {
        f.add(
            "mdtune_array_sync_completed_bytes",
            "How far the running sync is (md/sync_completed, 512-byte sectors).",
            &[("array", name)],
            &(u128::from(done) * 512).to_string(),
        );
        f.add(
            "mdtune_array_sync_total_bytes",
            "How far the running sync goes.",
            &[("array", name)],
            &(u128::from(total) * 512).to_string(),
        );
        if let Some(r) = ratio(done, total) {
            f.add(
                "mdtune_array_sync_progress_ratio",
                "The running sync's progress, 0 to 1.",
                &[("array", name)],
                &r,
            );
        }
    }
    if let Some(kib) = s["speed_kib_s"].as_u64() {
        f.add(
            "mdtune_array_sync_speed_bytes_per_second",
            "The running sync's speed (md/sync_speed).",
            &[("array", name)],
            &(u128::from(kib) * 1024).to_string(),
        );
    }
}

/// The system limits the kernel has, live and wanted.
fn system(f: &mut Families, v: &Json) {
    for (limit, o) in v["system_limits"].as_object().into_iter().flatten() {
        let (suffix, factor) = unit(limit);
        if let Some(n) = number(&o["live"], factor, None) {
            let help = format!("The live /proc/sys/dev/raid/{limit}.");
            f.add(&format!("mdtune_system_{limit}{suffix}"), &help, &[], &n);
        }
    }
    for (limit, s) in v["wanted_system"].as_object().into_iter().flatten() {
        let (suffix, factor) = unit(limit);
        if let Some(n) = number(&s["after"], factor, None) {
            let help = format!("The /proc/sys/dev/raid/{limit} the desired state wants.");
            f.add(
                &format!("mdtune_system_wanted_{limit}{suffix}"),
                &help,
                &[],
                &n,
            );
        }
        f.add(
            "mdtune_system_setting_compliant",
            "1 if the system limit is as the desired state wants.",
            &[("setting", limit)],
            flag(s["compliant"] == true),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn families_are_contiguous_gauges_with_help_and_escaped_labels() {
        let view = json!({"compared": {"rolled_out": true, "compliant": false},
            "persistence": {"persisted": true, "written_unix": 1_748_772_000_u64,
                "rule": {"installed": true, "runs": "/usr/sbin/mdtune", "binary_present": true,
                    "as_written": true}, "originals": {}},
            "system_limits": {"speed_limit_min": {"live": 1000}},
            "wanted_system": {},
            "arrays": [{"name": "md0", "devname": "a\"b\\c\nd", "values": {"stripe_cache_size": 1024,
                "sync_speed_min": "system", "skip_copy": true},
                "wanted": {"compliant": false, "settings": {"stripe_cache_size":
                    {"before": 1024, "after": 4096, "compliant": false, "source": "arrays[1]"}}},
                "sync": {"action": "check", "completed": [1, 4], "speed_kib_s": 100},
                "members": [], "settings": {}}]});
        let m = metrics(&view);
        assert!(
            m.contains("mdtune_array_stripe_cache_size{array=\"md0\"} 1024\n"),
            "{m}"
        );
        assert!(
            m.contains(
                "mdtune_array_wanted_stripe_cache_size{array=\"md0\",source=\"arrays[1]\"} 4096\n"
            ),
            "{m}"
        );
        assert!(
            m.contains("mdtune_array_sync_speed_min_bytes_per_second{array=\"md0\"} 1024000\n"),
            "{m}"
        );
        assert!(
            m.contains("mdtune_array_skip_copy{array=\"md0\"} 1\n"),
            "{m}"
        );
        assert!(m.contains("mdtune_persist_diverged_settings 1\n"), "{m}");
        assert!(
            m.contains("mdtune_array_sync_progress_ratio{array=\"md0\"} 0.250000\n"),
            "{m}"
        );
        assert!(
            m.contains("mdtune_array_sync_action{array=\"md0\",action=\"check\"} 1\n"),
            "{m}"
        );
        assert!(m.contains("devname=\"a\\\"b\\\\\\\\c\\\\x0ad\""), "{m}");
        // Every family's samples follow its HELP and TYPE, and no family appears twice.
        let mut seen = Vec::new();
        for l in m.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = l.split_whitespace().nth(2).unwrap();
            assert!(!seen.contains(&name), "{name} twice");
            seen.push(name);
        }
        assert_eq!(ratio(1, 3).unwrap(), "0.333333");
    }
}
