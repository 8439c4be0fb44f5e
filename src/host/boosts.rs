//! The sync boosts in force on this host (docs/reference.md §2, `sync_boost`):
//! `run/mdtune/boost-<array>.json`, written by `crate::boost` before it writes an array's boost
//! values and removed once the sync has ended and the values before the boost are back. A record
//! says which values the boost wrote, which were in force before it (what comes back), during
//! which syncs it stays, and since when. `run/` is cleared by a reboot, with the values: the
//! kernel's come back. Here the records are read, for the inventory to say that a boost is in
//! force and for `crate::boost` to end it.

use crate::md::{parse_value, Attr, Value};
use crate::sys::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A record file's name: `boost-<array>.json`.
const PREFIX: &str = "boost-";
const SUFFIX: &str = ".json";

/// One boost in force, as recorded before its values were written. Values are kept as the
/// kernel takes them (`500000`, `system`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub array: String,
    /// The sync that ran when the boost started.
    pub action: String,
    /// The syncs the boost stays in force during (`md/sync_action` words).
    pub during: Vec<String>,
    /// The boost's values, by setting.
    pub values: BTreeMap<String, String>,
    /// The values in force before the boost (the steady state), by setting: what comes back.
    pub saved: BTreeMap<String, String>,
    /// When the boost started (seconds since the epoch).
    pub since: u64,
}

impl Record {
    /// The boost's values, typed (a setting or value mdtune did not write is left out).
    pub fn boost_values(&self) -> BTreeMap<Attr, Value> {
        typed(&self.values)
    }

    /// The values before the boost, typed.
    pub fn saved_values(&self) -> BTreeMap<Attr, Value> {
        typed(&self.saved)
    }
}

/// Settings and values as the kernel prints them, typed.
fn typed(text: &BTreeMap<String, String>) -> BTreeMap<Attr, Value> {
    text.iter()
        .filter_map(|(k, v)| {
            let attr = Attr::from_name(k)?;
            Some((attr, parse_value(attr.kind(), v)?))
        })
        .collect()
}

/// Settings and values as the kernel takes them.
pub fn untyped(values: &BTreeMap<Attr, Value>) -> BTreeMap<String, String> {
    values
        .iter()
        .map(|(a, v)| (a.name().to_string(), v.to_kernel()))
        .collect()
}

pub(crate) fn path(root: &Root, array: &str) -> PathBuf {
    root.saved_state().join(format!("{PREFIX}{array}{SUFFIX}"))
}

/// True if and only if `name` (a file under `run/mdtune/`) is a boost record's.
pub(crate) fn is_record_name(name: &str) -> bool {
    name.starts_with(PREFIX) && name.ends_with(SUFFIX)
}

/// Every boost record under `run/mdtune/`, each read, or the file and why it cannot be.
pub fn records(root: &Root) -> Vec<Result<Record, String>> {
    let Ok(Some(dir)) = root.dir_beneath(&root.saved_state()) else {
        return Vec::new();
    };
    let mut names = dir.list_with(PREFIX).unwrap_or_default();
    names.retain(|n| n.ends_with(SUFFIX));
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let shown = format!("/run/mdtune/{name}");
            let bytes = dir
                .read_bytes(&name)
                .map_err(|e| format!("{shown} cannot be read: {e}"))?;
            serde_json::from_slice::<Record>(&bytes)
                .ok()
                .filter(|r| format!("{PREFIX}{}{SUFFIX}", r.array) == name)
                .ok_or_else(|| format!("{shown} is not a boost record mdtune wrote"))
        })
        .collect()
}
