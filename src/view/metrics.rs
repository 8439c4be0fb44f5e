//! `mdtune --metrics` (docs/reference.md §1): the host in Prometheus' text exposition format,
//! for node_exporter's textfile collector. Every metric is a gauge named after Prometheus'
//! conventions: `mdtune_` and what it measures, base units as suffixes (sync limits and speeds
//! in `_bytes_per_second`, KiB/s × 1024), counts and 0/1 states without one, the array as the
//! label `array` and again as `device` (the kernel name, as node_exporter's md collector labels
//! it, so that the two join without a `label_replace`; a member's family keeps `device` for the
//! member). The health families are `super::health`'s. A setting's family is named after the setting (`mdtune_array_stripe_cache_size`),
//! so a setting added later has its own family by itself. Rendered from the JSON `--show`
//! gathers; every label value is escaped for a terminal first, then for the format. Pure, and
//! without floating point (a ratio is printed from integers).

use super::families::Families;
use crate::md::{Attr, SpeedLimit};
use serde_json::Value as Json;

/// The unit suffix and factor of a setting: the speed limits' KiB/s become bytes per second;
/// `sync_io_depth` (the array's and the system's) is a count of sync I/Os, without a unit.
fn unit(setting: &str) -> (&'static str, i64) {
    let speed = [Attr::SyncSpeedMin, Attr::SyncSpeedMax]
        .map(Attr::name)
        .contains(&setting)
        || [SpeedLimit::Min, SpeedLimit::Max]
            .map(SpeedLimit::name)
            .contains(&setting);
    if speed {
        ("_bytes_per_second", 1024)
    } else {
        ("", 1)
    }
}

/// A value as a sample: a number times `factor`, a boolean as 0/1, `system` as `follows` (the
/// system limit it follows). `None` when it has no number.
fn number(v: &Json, factor: i64, follows: &Json) -> Option<String> {
    let v = if v == "system" { follows } else { v };
    match v {
        Json::Bool(b) => Some(flag(*b).to_string()),
        _ => Some(v.as_i64()?.saturating_mul(factor).to_string()),
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
    let q = done.checked_mul(1_000_000)? / total.max(1);
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
    super::health::host(&mut f, v);
    f.list.into_iter().map(|(_, text)| text).collect()
}

/// The run's own facts: version, the comparison, persistence and the last run.
fn host(f: &mut Families, v: &Json) {
    let (c, p) = (&v["compared"], &v["persistence"]);
    let (r, l) = (&p["rule"], &p["last_run"]);
    let version = [("version", crate::persist::VERSION)];
    f.add(
        "mdtune_info",
        "The mdtune that wrote these metrics.",
        &version,
        "1",
    );
    let ok = c["error"].is_null();
    let in_force = r["in_force"] == true;
    let mut drifted = 0;
    for a in v["arrays"].as_array().into_iter().flatten() {
        for (_, s) in a["wanted"]["settings"].as_object().into_iter().flatten() {
            drifted += u64::from(s["compliant"] == false);
        }
    }
    for (_, s) in v["wanted_system"].as_object().into_iter().flatten() {
        drifted += u64::from(s["compliant"] == false);
    }
    let rolled_out = ok && c["rolled_out"] == true;
    let facts: [(&str, &str, Option<u64>); 8] = [
        ("mdtune_check_success", "1 if the host could be compared with its desired state (the persisted state, else the defaults).", Some(u64::from(ok))),
        ("mdtune_compliant", "1 if every setting is as the desired state wants.", ok.then(|| u64::from(c["compliant"] == true))),
        ("mdtune_persisted", "1 if a desired state is persisted (/etc/mdtune/mdtune.json) to be put back at boot.", Some(u64::from(p["persisted"] == true))),
        ("mdtune_persisted_timestamp_seconds", "When the persisted state was last written.", p["written_unix"].as_u64()),
        ("mdtune_persist_rule_in_force", "1 if the next boot replays the persisted state: the udev rule as udevd reads it runs an executable mdtune, and the files are root's alone.", Some(u64::from(in_force))),
        ("mdtune_persist_diverged_settings", "Settings whose live value differs from what the persisted state puts back at the next boot.", rolled_out.then_some(drifted)),
        ("mdtune_last_run_changed", "1 if the last run that changed or failed to change something since boot changed something.", l["changed"].as_bool().map(u64::from)),
        ("mdtune_last_run_failed", "1 if the last run that changed or failed to change something since boot failed.", l["failed"].as_bool().map(u64::from)),
    ];
    for (name, help, value) in facts {
        if let Some(value) = value {
            f.add(name, help, &[], &value.to_string());
        }
    }
    if let Some(t) = l["unix"].as_u64() {
        let state = [("state", l["state"].as_str().unwrap_or(""))];
        f.add(
            "mdtune_last_run_timestamp_seconds",
            "When the last run that changed or failed to change something since boot ended.",
            &state,
            &t.to_string(),
        );
    }
}

/// A string field of `v`, or empty.
fn text<'a>(v: &'a Json, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// One sample of a setting's family, `{prefix}{setting}{unit}`: `value` in the setting's unit
/// (a boolean as 0/1; `system` counts as `follows`, the system limit it follows), described as
/// `what` and the setting's file.
fn setting(
    f: &mut Families,
    prefix: &str,
    name: &str,
    value: &Json,
    follows: &Json,
    what: &str,
    labels: &[(&str, &str)],
) {
    let (suffix, factor) = unit(name);
    if let Some(n) = number(value, factor, follows) {
        let help = format!("{what} {name}.");
        f.add(&format!("{prefix}{name}{suffix}"), &help, labels, &n);
    }
}

/// One array: what it is, its tunables live and wanted, its members and queues, what `auto`
/// derived, its sync.
fn array(f: &mut Families, a: &Json, v: &Json) {
    let name = text(a, "name");
    let info = [
        ("array", name),
        ("device", name),
        ("devname", text(a, "devname")),
        ("level", text(a, "level")),
    ];
    f.add(
        "mdtune_array_info",
        "An md array: its mdadm name and level.",
        &info,
        "1",
    );
    let of = [("array", name), ("device", name)];
    let wanted = &a["wanted"];
    let (live, want) = (a["values"].as_object(), wanted["settings"].as_object());
    for (key, value) in live.into_iter().flatten() {
        // A sync limit that follows the system's counts as that limit.
        let limit = &v["system_limits"][key.replace("sync_speed_", "speed_limit_")];
        let what = "The array's live md/";
        setting(f, "mdtune_array_", key, value, limit, what, &of);
    }
    for (key, s) in want.into_iter().flatten() {
        let limit = key.replace("sync_speed_", "speed_limit_");
        let w = &v["wanted_system"][&limit]["after"];
        let follows = if w.is_null() {
            &v["system_limits"][&limit]
        } else {
            w
        };
        let value = s["held_back"].get("wanted").unwrap_or(&s["after"]);
        let labels = [
            ("array", name),
            ("device", name),
            ("source", text(s, "source")),
        ];
        let what = "The value the desired state wants (source: the input's entry) for md/";
        setting(
            f,
            "mdtune_array_wanted_",
            key,
            value,
            follows,
            what,
            &labels,
        );
        let labels = [("array", name), ("device", name), ("setting", key.as_str())];
        let help = "1 if the tunable is as the desired state wants (a held-back one is not).";
        let compliant = flag(s["compliant"] == true);
        f.add("mdtune_array_setting_compliant", help, &labels, compliant);
    }
    if let Some(c) = wanted["compliant"].as_bool() {
        let help = "1 if the array's settings are as the desired state wants.";
        f.add("mdtune_array_compliant", help, &of, flag(c));
    }
    let auto = &a["settings"]["group_thread_cnt"];
    let derived = auto["held_back"].get("wanted").unwrap_or(&auto["after"]);
    let counts = [
        (
            "mdtune_array_hw_queues",
            "The counted members' hardware queues, combined as the thread policy says.",
            &a["hw_queues"],
        ),
        (
            "mdtune_array_auto_group_thread_cnt",
            "The group_thread_cnt auto derives from the members' queues and the CPUs.",
            if auto["source"] == "auto" {
                derived
            } else {
                &Json::Null
            },
        ),
    ];
    for (family, help, value) in counts {
        if let Some(n) = value.as_u64() {
            f.add(family, help, &of, &n.to_string());
        }
    }
    members(f, a, name);
    sync(f, &a["sync"], name);
    super::health::array(f, a, name);
}

/// Each member's hardware queues, and whether `auto` counts it.
fn members(f: &mut Families, a: &Json, name: &str) {
    for m in a["members"].as_array().into_iter().flatten() {
        let counted = if m["counted"] == true {
            "true"
        } else {
            "false"
        };
        let labels = [
            ("array", name),
            ("member", text(m, "name")),
            ("device", text(m, "device")),
            ("role", text(m, "role")),
            ("counted", counted),
        ];
        if let Some(q) = m["hw_queues"].as_u64() {
            let help = "A member's hardware queues (its smallest path's); counted: whether auto counts it.";
            f.add(
                "mdtune_array_member_hw_queues",
                help,
                &labels,
                &q.to_string(),
            );
        }
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
        let labels = [("array", name), ("device", name), ("action", a)];
        let help = "1 for the array's sync action (md/sync_action).";
        f.add("mdtune_array_sync_action", help, &labels, flag(a == action));
    }
    for by in ["mdtune", "other"] {
        let labels = [("array", name), ("device", name), ("by", by)];
        let help = "1 if the array's sync is frozen (md/sync_action reads frozen), by an mdtune \
                    pause (by=\"mdtune\": a run's, or one a killed run left, which mdtune --tick \
                    resumes) or by something else (by=\"other\"). While frozen, md starts no \
                    rebuild onto a spare.";
        let frozen = s["frozen_by"]["by"].as_str() == Some(by);
        f.add("mdtune_array_sync_frozen", help, &labels, flag(frozen));
    }
    let of = [("array", name), ("device", name)];
    let (done, total) = (s["completed"][0].as_u64(), s["completed"][1].as_u64());
    if let Some(r) = done.zip(total).and_then(|(d, t)| ratio(d, t)) {
        let help = "The running sync's progress, 0 to 1 (md/sync_completed).";
        f.add("mdtune_array_sync_progress_ratio", help, &of, &r);
    }
    if let Some(kib) = s["speed_kib_s"].as_u64() {
        let help = "The running sync's speed (md/sync_speed).";
        let bytes = kib.saturating_mul(1024).to_string();
        f.add(
            "mdtune_array_sync_speed_bytes_per_second",
            help,
            &of,
            &bytes,
        );
    }
}

/// The system limits the kernel has, live and wanted.
fn system(f: &mut Families, v: &Json) {
    for (limit, o) in v["system_limits"].as_object().into_iter().flatten() {
        let what = "The live /proc/sys/dev/raid/";
        setting(f, "mdtune_system_", limit, o, &Json::Null, what, &[]);
    }
    for (limit, s) in v["wanted_system"].as_object().into_iter().flatten() {
        let what = "The value the desired state wants for /proc/sys/dev/raid/";
        let (family, after) = ("mdtune_system_wanted_", &s["after"]);
        setting(f, family, limit, after, &Json::Null, what, &[]);
        let labels = [("setting", limit.as_str())];
        let help = "1 if the system limit is as the desired state wants.";
        let compliant = flag(s["compliant"] == true);
        f.add("mdtune_system_setting_compliant", help, &labels, compliant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_has;
    use serde_json::json;

    #[test]
    fn the_speed_limits_count_bytes_per_second_and_the_io_depth_sync_ios() {
        for speed in [
            "sync_speed_min",
            "sync_speed_max",
            "speed_limit_min",
            "speed_limit_max",
        ] {
            assert_eq!(unit(speed), ("_bytes_per_second", 1024), "{speed}");
        }
        assert_eq!(unit("sync_io_depth"), ("", 1));
        assert_eq!(unit("stripe_cache_size"), ("", 1));
    }

    #[test]
    fn families_are_contiguous_gauges_with_help_and_escaped_labels() {
        let view = json!({"compared": {"rolled_out": true, "compliant": false},
            "persistence": {"persisted": true, "written_unix": 1_748_772_000_u64,
                "rule": {"installed": true, "runs": "/usr/sbin/mdtune", "binary_present": true,
                    "in_force": true},
                "originals": {}},
            "system_limits": {"speed_limit_min": 1000},
            "wanted_system": {},
            "arrays": [{"name": "md0", "devname": "a\"b\\c\nd", "values": {"stripe_cache_size": 1024,
                "sync_speed_min": "system", "skip_copy": true},
                "wanted": {"compliant": false, "settings": {"stripe_cache_size":
                    {"before": 1024, "after": 4096, "compliant": false, "source": "arrays[1]"}}},
                "sync": {"action": "check", "completed": [1, 4], "speed_kib_s": 100},
                "members": [], "settings": {}}]});
        let m = metrics(&view);
        assert!(
            m.contains("mdtune_array_stripe_cache_size{array=\"md0\",device=\"md0\"} 1024\n"),
            "{m}"
        );
        assert!(
            m.contains(
                "mdtune_array_wanted_stripe_cache_size{array=\"md0\",device=\"md0\",source=\"arrays[1]\"} 4096\n"
            ),
            "{m}"
        );
        assert_has(
            &m,
            &[
                "mdtune_array_sync_speed_min_bytes_per_second{array=\"md0\",device=\"md0\"} 1024000\n",
                "mdtune_array_skip_copy{array=\"md0\",device=\"md0\"} 1\n",
                "mdtune_persist_diverged_settings 1\n",
                "mdtune_array_sync_progress_ratio{array=\"md0\",device=\"md0\"} 0.250000\n",
                "mdtune_array_sync_action{array=\"md0\",device=\"md0\",action=\"check\"} 1\n",
                "devname=\"a\\\"b\\\\\\\\c\\\\x0ad\"",
            ],
        );
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
