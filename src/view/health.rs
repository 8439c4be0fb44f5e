//! The health families of `mdtune --metrics` (docs/reference.md §1, `--metrics`): per redundant
//! array what md says of it now (members missing, the mismatches counted, how long the running
//! sync has left), the last check or repair of each kind that `mdtune --tick` recorded
//! (`crate::health`), since when the tick watches the array, and when the tick last ran. Every
//! per-array family has `array` and `device` (the kernel name, node_exporter's md collector's
//! label); the mismatch families also `level`, since what a mismatch means depends on it.
//! Rendered from `--show`'s JSON (`health`, `checks`, `sync`, `tick`). Pure.

use super::families::Families;
use serde_json::Value as Json;

/// An array's health families; nothing for an array whose health was not read (not redundant).
pub(super) fn array(f: &mut Families, a: &Json, name: &str) {
    let h = &a["health"];
    if !h.is_object() {
        return;
    }
    let of = [("array", name), ("device", name)];
    let level = a["level"].as_str().unwrap_or("");
    let with_level = [("array", name), ("device", name), ("level", level)];
    if let Some(n) = h["degraded"].as_u64() {
        let help = "Members the array misses (md/degraded): 0 when it has all it should.";
        f.add("mdtune_array_degraded", help, &of, &n.to_string());
    }
    if let Some(n) = h["mismatch_cnt"].as_u64() {
        let help = "Sectors the last check or repair found different, or a running one so far \
                    (md/mismatch_cnt).";
        f.add(
            "mdtune_array_mismatch_sectors",
            help,
            &with_level,
            &n.to_string(),
        );
    }
    remaining(f, &a["sync"], &of);
    // 1 while a boost is recorded in force for the array (its values written, not yet ended).
    let help = "1 while a sync boost's values are in force for the array's running sync.";
    let b = &a["sync_boost"];
    let active = b["active"] == true && b["since"].is_u64();
    f.add(
        "mdtune_array_sync_boost_active",
        help,
        &of,
        if active { "1" } else { "0" },
    );
    if let (true, Some(t)) = (active, b["since"].as_u64()) {
        let help = "When the sync boost in force started.";
        let name = "mdtune_array_sync_boost_since_timestamp_seconds";
        f.add(name, help, &of, &t.to_string());
    }
    let c = &a["checks"];
    if let Some(t) = c["watched_since"].as_u64() {
        let help = "When mdtune --tick first watched the array for checks (the record's start).";
        let name = "mdtune_array_checks_watched_since_timestamp_seconds";
        f.add(name, help, &of, &t.to_string());
    }
    for check in c["last"].as_array().into_iter().flatten() {
        let action = check["action"].as_str().unwrap_or("");
        let whole = if check["whole"] == true {
            "true"
        } else {
            "false"
        };
        let labels = [
            ("array", name),
            ("device", name),
            ("action", action),
            ("whole", whole),
        ];
        if let Some(t) = check["end_unix"].as_u64() {
            let help = "When the last check or repair of this action that mdtune --tick recorded \
                        ended; whole=\"true\" only for one that covered the whole array (not \
                        interrupted, not an mdcheck window).";
            let family = "mdtune_array_last_check_end_timestamp_seconds";
            f.add(family, help, &labels, &t.to_string());
        }
        if let Some(n) = check["mismatch_cnt"].as_u64() {
            let labels = [
                ("array", name),
                ("device", name),
                ("level", level),
                ("action", action),
                ("whole", whole),
            ];
            let help = "The mismatches (md/mismatch_cnt, sectors) the last recorded check or \
                        repair of this action left.";
            let family = "mdtune_array_last_check_mismatch_sectors";
            f.add(family, help, &labels, &n.to_string());
        }
    }
}

/// A running sync's time left: the sectors to go at its current speed (md/sync_completed and
/// md/sync_speed); nothing when no sync runs or it does not move.
fn remaining(f: &mut Families, s: &Json, of: &[(&str, &str)]) {
    let (done, total) = (s["completed"][0].as_u64(), s["completed"][1].as_u64());
    let speed = s["speed_kib_s"].as_u64().filter(|&k| k > 0);
    if let (Some(done), Some(total), Some(kib)) = (done, total, speed) {
        // Sectors of 512 bytes at KiB/s: two sectors a KiB.
        let seconds = total.saturating_sub(done) / kib.saturating_mul(2);
        let help = "The running sync's time left at its current speed (md/sync_completed, \
                    md/sync_speed).";
        let family = "mdtune_array_sync_remaining_seconds";
        f.add(family, help, of, &seconds.to_string());
    }
}

/// When `mdtune --tick` last ran (its state under `run/mdtune/`): a host whose arrays
/// node_exporter sees without a recent one has no fresh mdtune metrics.
pub(super) fn host(f: &mut Families, v: &Json) {
    if let Some(t) = v["tick"]["last_unix"].as_u64() {
        let help = "When mdtune --tick last ran (it writes the textfile every minute).";
        f.add(
            "mdtune_last_tick_timestamp_seconds",
            help,
            &[],
            &t.to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_has;
    use serde_json::json;

    #[test]
    fn health_families_name_the_array_as_node_exporter_does() {
        let a = json!({"level": "raid5",
            "health": {"degraded": 1, "mismatch_cnt": 8},
            "sync": {"action": "recover", "completed": [1000, 121_000], "speed_kib_s": 1000},
            "checks": {"watched_since": 100, "last": [
                {"action": "check", "whole": true, "end_unix": 500, "mismatch_cnt": 0},
                {"action": "check", "whole": false, "end_unix": 600, "mismatch_cnt": null}]}});
        let mut f = Families::default();
        array(&mut f, &a, "md0");
        host(&mut f, &json!({"tick": {"last_unix": 700}}));
        let m: String = f.list.into_iter().map(|(_, t)| t).collect();
        assert_has(
            &m,
            &[
                "mdtune_array_degraded{array=\"md0\",device=\"md0\"} 1\n",
                "mdtune_array_mismatch_sectors{array=\"md0\",device=\"md0\",level=\"raid5\"} 8\n",
                "mdtune_array_sync_remaining_seconds{array=\"md0\",device=\"md0\"} 60\n",
                "mdtune_array_sync_boost_active{array=\"md0\",device=\"md0\"} 0\n",
                "mdtune_array_checks_watched_since_timestamp_seconds{array=\"md0\",device=\"md0\"} 100\n",
                "mdtune_array_last_check_end_timestamp_seconds{array=\"md0\",device=\"md0\",action=\"check\",whole=\"true\"} 500\n",
                "mdtune_array_last_check_end_timestamp_seconds{array=\"md0\",device=\"md0\",action=\"check\",whole=\"false\"} 600\n",
                "mdtune_array_last_check_mismatch_sectors{array=\"md0\",device=\"md0\",level=\"raid5\",action=\"check\",whole=\"true\"} 0\n",
                "mdtune_last_tick_timestamp_seconds 700\n",
            ],
        );
        assert!(!m.contains("whole=\"false\"} \n"));
        let mut f = Families::default();
        array(&mut f, &json!({"level": "raid0"}), "md1");
        assert!(f.list.is_empty());
    }
}
