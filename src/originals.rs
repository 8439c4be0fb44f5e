//! The originals saved before the first change (contract section 6), under `run/mdtune/`: one
//! file per array keyed by its uuid (so they survive a re-assembly under another kernel name but
//! not a reboot, when the kernel defaults are back anyway), and one for the system limits.
//! `state: reverted` turns them into a plan and applies it through the same
//! write/read-back/rollback path as any run. The persisted files themselves live in
//! [`crate::persist`].

use crate::apply::{ApplyError, Target, Write};
use crate::inventory::Inventory;
use crate::persist::{read_opt, write_atomic, PersistError};
use crate::plan::{ArrayPlan, Change, LimitChange, Plan, Source};
use crate::sysfs::{Attr, Kind, Root, SpeedLimit, Value};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

/// The originals saved before the first change, by key (array uuid, `md-<name>`, `system`).
#[derive(Debug)]
pub struct Originals {
    root: Root,
    dir: PathBuf,
    files: BTreeMap<String, Saved>,
}

/// One saved file: the array it belongs to and its original values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Saved {
    pub array: Option<String>,
    pub uuid: Option<String>,
    pub values: BTreeMap<String, Value>,
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
    pub fn load(root: &Root) -> Result<Originals, PersistError> {
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

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Saves the value a write is about to replace, unless an original is already saved for it.
    pub fn remember(&mut self, w: &Write, inv: &Inventory) -> Result<(), ApplyError> {
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

    /// The plan that writes the originals back over the live values in `inv`. Saved arrays
    /// that are gone are named in the plan's warnings.
    pub fn revert_plan(&self, inv: &Inventory) -> Plan {
        let mut plan = Plan::default();
        for (key, saved) in &self.files {
            if key == "system" {
                for l in SpeedLimit::ALL {
                    if let (Some(&orig), Some(&live)) =
                        (saved.values.get(l.name()), inv.speed_limits.get(&l))
                    {
                        plan.limits.push(LimitChange {
                            limit: l,
                            before: live,
                            after: orig,
                        });
                    }
                }
                continue;
            }
            // By uuid first: a re-assembled array may have another kernel name.
            let found = inv
                .arrays
                .iter()
                .position(|a| match (&saved.uuid, &a.uuid) {
                    (Some(s), Some(u)) => s == u,
                    _ => saved.array.as_deref() == Some(a.name.as_str()),
                });
            let Some(i) = found else {
                plan.warnings.push(format!(
                    "saved originals of {} (uuid {}) not restored: the array is not running",
                    saved.array.as_deref().unwrap_or("?"),
                    saved.uuid.as_deref().unwrap_or("?")
                ));
                continue;
            };
            let a = &inv.arrays[i];
            let mut ap = ArrayPlan {
                array: i,
                name: a.name.clone(),
                hw_queues: None,
                changes: Vec::new(),
                skipped: Vec::new(),
            };
            for attr in Attr::ALL {
                if let (Some(&orig), Some(&live)) =
                    (saved.values.get(attr.name()), a.values.get(&attr))
                {
                    ap.changes
                        .push(Change::new(attr, live, orig, Source::Saved));
                }
            }
            // A revert waits for a reshape or a missing mdmon like any run.
            crate::hold::hold_back(a, &mut ap, &mut plan.warnings);
            plan.arrays.push(ap);
        }
        plan.arrays.sort_by_key(|a| a.array);
        plan
    }

    /// The speed limits a revert needs to read.
    pub fn limits(&self) -> Vec<SpeedLimit> {
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
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files
            .keys()
            .map(|k| self.dir.join(format!("{k}.json")))
            .collect()
    }
}
