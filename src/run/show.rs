//! `mdtune --show` (docs/reference.md §1): the host as a person wants to see it, read only. It is
//! the report of a `query` with the default input (every array, `thread_policy: auto`), read with
//! every tunable, and beside each array what only the host knows: its metadata, every tunable's
//! live value, a reshape, its container's mdmon, why it cannot be read, each sync limit's value
//! in effect and unit; and the CPUs and NUMA nodes `auto`'s ceiling comes from (the ceiling itself
//! is in each `why`), and the system's sync limits. `crate::view` turns it into text. Nothing is
//! written: no lock, no file.

use super::error::RunError;
use super::exit::Exit;
use super::module::{open_root, root_warning, tune, Against, Refusal};
use crate::host::{self, Array, Scope};
use crate::md::{kernel, Attr, SpeedLimit, Value};
use crate::spec::Spec;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

/// What `--show` prints, as JSON for `crate::view::host`, or why it cannot be had.
pub fn show(root: &Path) -> Result<Json, (String, Exit)> {
    gather(root).map_err(|e| (e.to_string(), e.exit()))
}

fn gather(root: &Path) -> Result<Json, RunError> {
    let input = json!({"root": root.display().to_string(), "state": "query"});
    let spec = Spec::from_json(&input.to_string())?;
    let root = open_root(&spec.root)?;
    let scope = Scope {
        speed_limits: SpeedLimit::ALL.to_vec(),
        ..Scope::default()
    };
    let inv = host::read(&root, &scope)?;
    let mut report = tune(&spec, &root, &inv, Refusal::Input, &Against::Nothing)?;
    report.warnings.splice(0..0, root_warning(&root));
    // Through the report's own text: the one serializer the JSON run uses (no second one for
    // `Value`, which would cost the binary tens of KiB).
    let mut view: Json = serde_json::from_str(&report.to_text()).unwrap_or(Json::Null);
    for a in view["arrays"].as_array_mut().into_iter().flatten() {
        let Some(array) = inv.arrays.iter().find(|x| a["name"] == x.name.as_str()) else {
            continue;
        };
        let values: Map<String, Json> = Attr::ALL
            .iter()
            .filter_map(|attr| {
                let v = array.values.get(attr)?;
                Some((attr.name().to_string(), json!(v)))
            })
            .collect();
        a["values"] = Json::Object(values);
        a["sync_limits"] = sync_limits(array, &inv.speed_limits);
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
    view["system_limits"] = SpeedLimit::ALL
        .iter()
        .filter_map(|l| Some((l.name().to_string(), json!(inv.speed_limits.get(l)?))))
        .collect::<Map<String, Json>>()
        .into();
    let c = &inv.cpus;
    view["host"] = json!({
        "online_cpus": c.online,
        "unbound_cpus": c.unbound,
        "nodes_with_cpus": c.nodes_with_cpus,
        "possible_nodes": c.possible_nodes,
    });
    Ok(view)
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
