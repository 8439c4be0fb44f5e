//! The originals saved before the first change (contract section 6), under `run/mdtune/`: one
//! file per array keyed by its uuid (so they survive a re-assembly under another kernel name but
//! not a reboot, when the kernel defaults are back anyway), and one for the system limits.
//! This module stores and loads them; `state: reverted` turns them into a plan
//! (`crate::plan::revert`) and applies it through the same write/read-back/rollback path as any
//! run. The persisted desired state lives in [`super::state`].

use super::state::{read_opt, PersistError};
use crate::apply::{ApplyError, Target, Write};
use crate::host::Inventory;
use crate::md::{Attr, Kind, SpeedLimit, Value};
use crate::plan::{self, Plan, Saved};
use crate::sys::write_atomic;
use crate::sys::Root;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

/// The originals saved before the first change, by key (array uuid, `md-<name>`, `system`).
#[derive(Debug)]
pub(crate) struct Originals {
    root: Root,
    dir: PathBuf,
    files: BTreeMap<String, Saved>,
}

fn value_to_json(v: Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

fn value_from_json(kind: Kind, v: &Json) -> Option<Value> {
    match (kind, v) {
        (Kind::SyncSpeed, Json::String(s)) if s == "system" => Some(Value::System),
        (Kind::Bool, Json::Bool(b)) => Some(Value::Bool(*b)),
        (Kind::Int, Json::Number(n)) => n.as_u64().map(Value::Int),
        (Kind::CInt | Kind::SyncSpeed, Json::Number(n)) => n.as_i64().map(Value::signed),
        _ => None,
    }
}

/// The kind of a saved setting name, `None` for names mdtune never writes.
fn kind_of(setting: &str) -> Option<Kind> {
    if let Some(a) = Attr::from_name(setting) {
        return Some(a.kind());
    }
    SpeedLimit::ALL
        .iter()
        .any(|l| l.name() == setting)
        .then_some(Kind::CInt)
}

impl Originals {
    /// Loads every saved file under `run/mdtune/`.
    pub(crate) fn load(root: &Root) -> Result<Originals, PersistError> {
        let dir = root.saved_state();
        let mut files = BTreeMap::new();
        // The directory must not lead out of the root (each file is read with O_NOFOLLOW).
        let real = match root.real_file(&dir) {
            Ok(r) => r.unwrap_or_else(|| dir.clone()),
            Err(source) => {
                return Err(PersistError::Read {
                    path: dir.display().to_string(),
                    source,
                })
            }
        };
        let entries = match fs::read_dir(&real) {
            Ok(rd) => rd
                .filter_map(Result::ok)
                .map(|e| e.path())
                .collect::<Vec<_>>(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(source) => {
                return Err(PersistError::Read {
                    path: dir.display().to_string(),
                    source,
                })
            }
        };
        for path in entries {
            let Some(key) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|n| !n.starts_with('.'))
            else {
                continue;
            };
            let bytes = read_opt(root, &path)?.unwrap_or_default();
            let corrupt = |why: &str| PersistError::Corrupt {
                path: path.display().to_string(),
                why: why.to_string(),
            };
            let json: Json = serde_json::from_slice(&bytes).map_err(|e| corrupt(&e.to_string()))?;
            let mut saved = Saved {
                array: json.get("array").and_then(Json::as_str).map(String::from),
                uuid: json.get("uuid").and_then(Json::as_str).map(String::from),
                values: BTreeMap::new(),
            };
            let Some(map) = json.get("saved").and_then(Json::as_object) else {
                return Err(corrupt("no \"saved\" object"));
            };
            for (k, v) in map {
                let value = kind_of(k)
                    .and_then(|kind| value_from_json(kind, v))
                    .ok_or_else(|| corrupt(&format!("{k}: {v} is not a saved value")))?;
                saved.values.insert(k.clone(), value);
            }
            files.insert(key.to_string(), saved);
        }
        Ok(Originals {
            root: root.clone(),
            dir,
            files,
        })
    }

    /// Saves the value a write is about to replace, unless an original is already saved for it.
    pub(crate) fn remember(&mut self, w: &Write, inv: &Inventory) -> Result<(), ApplyError> {
        let (key, array, uuid, setting) = match &w.target {
            Target::Md { array, attr } => {
                let uuid = inv
                    .arrays
                    .iter()
                    .find(|a| a.name == *array)
                    .and_then(|a| a.uuid.clone());
                let key = uuid.clone().unwrap_or_else(|| format!("md-{array}"));
                (key, Some(array.clone()), uuid, attr.name())
            }
            Target::Limit(l) => ("system".to_string(), None, None, l.name()),
        };
        let saved = self.files.entry(key.clone()).or_default();
        if saved.values.contains_key(setting) {
            return Ok(());
        }
        saved.values.insert(setting.to_string(), w.before);
        saved.array = array;
        saved.uuid = uuid;
        let body = json!({
            "array": saved.array,
            "uuid": saved.uuid,
            "saved": saved.values.iter().map(|(k, v)| (k.clone(), value_to_json(*v))).collect::<Map<_, _>>(),
        });
        let mut text = serde_json::to_string_pretty(&body).unwrap_or_default();
        text.push('\n');
        write_atomic(
            &self.root,
            &self.dir.join(format!("{key}.json")),
            text.as_bytes(),
            0o600,
        )
        .map_err(|source| ApplyError::SaveOriginal {
            target: w.target.clone(),
            value: w.before,
            source,
        })
    }

    /// The plan that writes the originals back over the live values in `inv`.
    pub(crate) fn revert_plan(&self, inv: &Inventory) -> Plan {
        plan::revert(&self.files, inv)
    }

    /// The speed limits a revert needs to read.
    pub(crate) fn limits(&self) -> Vec<SpeedLimit> {
        self.files
            .get("system")
            .map(|s| {
                SpeedLimit::ALL
                    .into_iter()
                    .filter(|l| s.values.contains_key(l.name()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The saved files, for removal.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        self.files
            .keys()
            .map(|k| self.dir.join(format!("{k}.json")))
            .collect()
    }
}
