//! `mdtune --show` (docs/reference.md §1): the host as a person wants to see it, read only. It is
//! the report of a `query` with the default input (every array, `thread_policy: auto`), read with
//! every tunable, and beside each array what only the host knows: its metadata, every tunable's
//! live value, a reshape, its container's mdmon, why it cannot be read; and the CPUs and NUMA
//! nodes `auto`'s ceiling comes from (the ceiling itself is in each `why`). Beside that, what was
//! rolled out (`super::look`): per tunable the persisted value and where the live value came
//! from, the system limits, whether the host is as rolled out, the persistence status, this
//! boot's replays and the last run. `crate::view` turns it into text. Nothing is written: no
//! lock, no file.

use super::error::RunError;
use super::exit::Exit;
use super::look::{look, Look};
use super::module::root_warning;
use crate::host::Array;
use crate::md::{default_of, kernel, Attr, SpeedLimit, Value};
use crate::persist;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

/// What `--show` prints, as JSON for `crate::view::host`, or why it cannot be had.
pub fn show(root: &Path) -> Result<Json, (String, Exit)> {
    gather(root, true).map_err(|e| (e.to_string(), e.exit()))
}

/// What `--metrics` prints (`crate::view::metrics`), or why it cannot be had: the same view,
/// without asking the journal (a timer runs it every few minutes).
pub fn metrics(root: &Path) -> Result<String, (String, Exit)> {
    gather(root, false)
        .map(|v| crate::view::metrics(&v))
        .map_err(|e| (e.to_string(), e.exit()))
}

/// A report as JSON, through its own text: the one serializer the JSON run uses.
fn json_of(report: &crate::report::Report) -> Json {
    serde_json::from_str(&report.to_text()).unwrap_or(Json::Null)
}

fn gather(root: &Path, journal: bool) -> Result<Json, RunError> {
    let look = look(root)?;
    let mut view = json_of(&look.auto);
    let wanted = look.wanted.as_ref().map(json_of).unwrap_or(Json::Null);
    let rolled_out = !wanted["persist"]["compared_with"].is_null();
    for a in view["arrays"].as_array_mut().into_iter().flatten() {
        let Some(array) = look
            .inv
            .arrays
            .iter()
            .find(|x| a["name"] == x.name.as_str())
        else {
            continue;
        };
        host_facts(a, array, &look.inv.speed_limits);
        let theirs = wanted["arrays"]
            .as_array()
            .and_then(|w| w.iter().find(|w| w["name"] == a["name"]))
            .map_or(Json::Null, |w| {
                object([
                    ("settings", w["settings"].clone()),
                    ("compliant", w["compliant"].clone()),
                ])
            });
        // The boost as the rolled-out state gives it, else as recorded in force.
        let boost = wanted["arrays"]
            .as_array()
            .and_then(|w| w.iter().find(|w| w["name"] == a["name"]))
            .map_or(&Json::Null, |w| &w["sync_boost"]);
        if boost.is_object() {
            a["sync_boost"] = boost.clone();
        }
        if let Some(t) = a["sync_boost"]["since"].as_u64() {
            a["sync_boost"]["since_time"] = Json::from(crate::persist::rfc3339(t));
        }
        a["origin"] = origins(&a["values"], &theirs["settings"], rolled_out);
        a["wanted"] = theirs;
    }
    if let (Some(w), Some(list)) = (root_warning(&look.root), view["warnings"].as_array_mut()) {
        list.insert(0, Json::from(w));
    }
    view["system_limits"] = system_limits(&look);
    view["wanted_system"] = wanted["system"].clone();
    view["compared"] = match &look.wanted {
        Ok(_) => object([
            ("rolled_out", Json::from(rolled_out)),
            ("compliant", wanted["compliant"].clone()),
            ("msg", wanted["msg"].clone()),
            ("warnings", wanted["warnings"].clone()),
        ]),
        Err(e) => object([
            ("rolled_out", Json::from(true)),
            ("error", Json::from(e.to_string())),
        ]),
    };
    view["persistence"] = persistence(&look, journal);
    crate::health::annotate(&mut view, &look.root, &look.inv);
    view["now_unix"] = Json::from(persist::now());
    let c = &look.inv.cpus;
    view["host"] = json!({
        "online_cpus": c.online,
        "unbound_cpus": c.unbound,
        "nodes_with_cpus": c.nodes_with_cpus,
        "possible_nodes": c.possible_nodes,
    });
    Ok(view)
}

/// A JSON object of `fields`, without a serializer (`json!` of a JSON value costs one).
fn object<const N: usize>(fields: [(&str, Json); N]) -> Json {
    Json::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// What only the host knows of an array: every tunable's live value, its metadata, a reshape,
/// its container's mdmon, why it cannot be read.
fn host_facts(a: &mut Json, array: &Array, system: &BTreeMap<SpeedLimit, Value>) {
    let values: Map<String, Json> = Attr::ALL
        .iter()
        .filter_map(|attr| {
            let v = array.values.get(attr)?;
            Some((attr.name().to_string(), v.to_json()))
        })
        .collect();
    a["values"] = Json::Object(values);
    a["sync_limits"] = sync_limits(array, system);
    a["metadata_version"] = json!(array.metadata_version);
    a["reshape"] = json!(array.reshape);
    a["unreadable"] = json!(array.unreadable);
    if let Some(e) = &array.external {
        a["mdmon"] = json!(match &e.mdmon {
            Ok(pid) => format!("runs for {} (pid {pid})", e.container),
            Err(why) => format!("none runs for {} ({why})", e.container),
        });
    }
}

/// Per live value: what the rolled-out state wants (`rolled_out`, with the entry it comes from)
/// and where the live value came from (`source`).
fn origins(values: &Json, theirs: &Json, rolled_out: bool) -> Json {
    let mut out = Map::new();
    for (attr, live) in values.as_object().into_iter().flatten() {
        let s = &theirs[attr];
        let wanted = s["held_back"].get("wanted").unwrap_or(&s["after"]);
        let mut o = object([("source", live_source(attr, live, s, rolled_out))]);
        if rolled_out && s.is_object() {
            o["rolled_out"] = wanted.clone();
            o["rolled_out_source"] = s["source"].clone();
            o["reason"] = s["reason"].clone();
        }
        out.insert(attr.clone(), o);
    }
    Json::Object(out)
}

/// Where a live value came from: the entry of the persisted input that wants it (`auto`,
/// `arrays[N]`, `thread_policy`, or for a system limit its key) when it is in place as rolled
/// out, else `kernel default` when it is the kernel's, else `other` (a person, mdadm at
/// assembly, a run of mdtune that did not persist).
fn live_source(setting: &str, live: &Json, wanted: &Json, rolled_out: bool) -> Json {
    if rolled_out && wanted["compliant"] == true {
        if let Some(src) = wanted["source"].as_str() {
            return Json::from(src);
        }
        return Json::from(setting);
    }
    let default = default_of(setting).map(Value::to_json);
    if default.as_ref() == Some(live) {
        Json::from("kernel default")
    } else {
        Json::from("other")
    }
}

/// The live value of each system limit the kernel has (what a `system` sync limit follows).
fn system_limits(look: &Look) -> Json {
    let limits = look.inv.speed_limits.iter();
    Json::Object(
        limits
            .map(|(l, v)| (l.name().to_string(), v.to_json()))
            .collect(),
    )
}

/// Whether the state is persisted and in force after a reboot, this boot's replays (when the
/// journal is asked), the last run.
fn persistence(look: &Look, journal: bool) -> Json {
    let mut p = look.status.clone();
    if journal {
        p["boot"] = persist::this_boot(&look.root);
    }
    p["last_run"] = look.last.clone();
    p
}

/// Each sync limit the array has: the value in effect (its own, or the system's it follows), the
/// unit it counts in on this level, and for a raid10's speed limits what each member runs at in
/// a resync, check or repair (docs/reference.md §3).
fn sync_limits(array: &Array, system: &BTreeMap<SpeedLimit, Value>) -> Json {
    let mut out = Map::new();
    for (attr, follows) in [
        (Attr::SyncSpeedMin, SpeedLimit::Min),
        (Attr::SyncSpeedMax, SpeedLimit::Max),
        (Attr::SyncIoDepth, SpeedLimit::IoDepth),
    ] {
        let Some(&value) = array.values.get(&attr) else {
            continue;
        };
        let effective = match value {
            Value::System => system.get(&follows).copied(),
            v => Some(v),
        };
        let per_member = match (array.raid10, effective, attr) {
            (Some(r), Some(Value::Int(n)), Attr::SyncSpeedMin | Attr::SyncSpeedMax) => {
                kernel::raid10_per_member(n, r.copies, r.raid_disks)
            }
            _ => None,
        };
        out.insert(
            attr.name().to_string(),
            json!({"effective": effective, "unit": kernel::sync_unit(&array.level, attr.name()),
                   "per_member_kib_s": per_member, "copies": array.raid10.map(|r| r.copies),
                   "raid_disks": array.raid10.map(|r| r.raid_disks)}),
        );
    }
    Json::Object(out)
}
