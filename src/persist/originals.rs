//! The originals saved before the first change (docs/reference.md §6), under `run/mdtune/`: one
//! file per array keyed by its uuid (so they survive a re-assembly under another kernel name but
//! not a reboot, when the kernel defaults are back anyway), and one for the system limits.
//! This module stores and loads them; `state: reverted` turns them into a plan
//! (`crate::plan::revert`) and applies it through the same write/read-back/rollback path as any
//! run. The persisted desired state lives in [`super::state`].

use super::error::PersistError;
use crate::apply::{ApplyError, Target, Write};
use crate::host::Inventory;
use crate::md::{Attr, Kind, SpeedLimit, Value};
use crate::plan::{self, Plan, Saved};
use crate::sys::write_atomic;
use crate::sys::Root;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
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
        // The directory is opened beneath the root (each file is read with O_NOFOLLOW).
        let read_err = |source| PersistError::Read {
            path: dir.display().to_string(),
            source,
        };
        let opened = root.dir_beneath(&dir).map_err(read_err)?;
        let entries = match &opened {
            Some(d) => d.list().map_err(read_err)?,
            None => Vec::new(),
        };
        for name in &entries {
            let path = dir.join(name);
            let Some(key) = path
                .file_name()
                .and_then(|n| n.to_str())
                // The records of a pause or a sync boost beside them are not originals.
                .filter(|n| !crate::host::is_boost_record(n) && !n.starts_with("pause-"))
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|n| !n.starts_with('.'))
            else {
                continue;
            };
            // Read in the directory just listed, not opened again for each file.
            let read = opened
                .as_ref()
                .map_or(Ok(None), |d| match d.read_bytes(name) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    read => read.map(Some),
                });
            let bytes = read
                .map_err(|source| PersistError::Read {
                    path: path.display().to_string(),
                    source,
                })?
                .unwrap_or_default();
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
        let key = match &w.target {
            Target::Md { array, attr } => {
                let uuid = inv
                    .arrays
                    .iter()
                    .find(|a| a.name == *array)
                    .and_then(|a| a.uuid.clone());
                let (key, joined) = self.key_of(array, uuid.as_deref());
                (key, joined, Some(array.clone()), uuid, attr.name())
            }
            Target::Limit(l) => ("system".to_string(), None, None, None, l.name()),
        };
        let (key, joined, array, uuid, setting) = key;
        let saved = self.files.entry(key.clone()).or_default();
        if saved.values.contains_key(setting) && joined.is_none() {
            return Ok(());
        }
        saved.values.entry(setting.to_string()).or_insert(w.before);
        saved.array = array;
        // A file found by the array's name keeps the uuid it was saved with.
        saved.uuid = uuid.or(saved.uuid.take());
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
        })?;
        if let Some(old) = joined {
            let _ = crate::sys::remove_file(&self.root, &self.dir.join(format!("{old}.json")));
        }
        Ok(())
    }

    /// The one key of an array's originals (docs/reference.md §6): its uuid. While the uuid
    /// cannot be established (an all-zero `md/uuid` and udev's link briefly missing), the file
    /// already saved for the same kernel name, so a second file never holds tuned values as
    /// originals; `md-<name>` only when there is none. Once the uuid is known, a `md-<name>`
    /// file saved without it joins the uuid's file (what the uuid's file holds wins).
    /// Returns the key and the `md-<name>` key that joined it, whose file goes once the
    /// joined file is written.
    fn key_of(&mut self, array: &str, uuid: Option<&str>) -> (String, Option<String>) {
        let Some(uuid) = uuid else {
            let by_name = self
                .files
                .iter()
                .find(|(k, s)| *k != "system" && s.array.as_deref() == Some(array))
                .map(|(k, _)| k.clone());
            return (by_name.unwrap_or_else(|| format!("md-{array}")), None);
        };
        let nameless = format!("md-{array}");
        let joined = self.files.remove(&nameless).map(|old| {
            let saved = self.files.entry(uuid.to_string()).or_default();
            for (k, v) in old.values {
                saved.values.entry(k).or_insert(v);
            }
            nameless
        });
        (uuid.to_string(), joined)
    }

    /// Every saved file, by key (array uuid, `md-<name>`, `system`): what `--show` lists as the
    /// originals a revert would put back.
    pub(crate) fn saved(&self) -> &BTreeMap<String, Saved> {
        &self.files
    }

    /// The plan that writes the originals back over the live values in `inv`.
    /// With the keys whose originals a revert keeps (arrays it cannot read).
    pub(crate) fn revert_plan(&self, inv: &Inventory) -> (Plan, Vec<String>) {
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

    /// The saved files but those of `kept`, for removal.
    pub(crate) fn paths_except(&self, kept: &[String]) -> Vec<PathBuf> {
        self.files
            .keys()
            .filter(|k| !kept.contains(k))
            .map(|k| self.dir.join(format!("{k}.json")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fixtures::{host, raid};
    use crate::testing::scratch;
    use std::fs;

    fn write(array: &str, before: u64, after: u64) -> Write {
        Write {
            target: Target::Md {
                array: array.into(),
                attr: Attr::GroupThreadCnt,
            },
            before: Value::Int(before),
            after: Value::Int(after),
        }
    }

    #[test]
    fn the_first_original_is_saved_by_uuid_and_never_overwritten() {
        let dir = scratch("first");
        let root = Root::new(&dir).unwrap();
        let inv = host(vec![raid("md0", "raid5", &[Some(8)])]);
        let uuid = inv.arrays[0].uuid.clone().unwrap();
        let mut o = Originals::load(&root).unwrap();
        o.remember(&write("md0", 0, 8), &inv).unwrap();
        o.remember(&write("md0", 8, 4), &inv).unwrap();
        let file = dir.join(format!("run/mdtune/{uuid}.json"));
        let json: Json = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
        assert_eq!(json["saved"]["group_thread_cnt"], 0, "{json}");
        assert_eq!(json["array"], "md0");

        let again = Originals::load(&root).unwrap();
        assert_eq!(again.paths_except(&[]), vec![file]);
        let (plan, _) = again.revert_plan(&inv);
        let change = &plan.arrays[0].changes[0];
        assert_eq!(
            (change.attr, change.after),
            (Attr::GroupThreadCnt, Value::Int(0))
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_saved_file_mdtune_did_not_write_is_refused_naming_it() {
        let dir = scratch("corrupt");
        fs::create_dir_all(dir.join("run/mdtune")).unwrap();
        fs::write(
            dir.join("run/mdtune/x.json"),
            r#"{"saved": {"group_thread_cnt": "many"}}"#,
        )
        .unwrap();
        let root = Root::new(&dir).unwrap();
        let e = Originals::load(&root).unwrap_err().to_string();
        assert!(
            e.contains("x.json") && e.contains("group_thread_cnt"),
            "{e}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_system_limits_are_saved_under_their_own_key() {
        let dir = scratch("system");
        let root = Root::new(&dir).unwrap();
        let inv = host(Vec::new());
        let mut o = Originals::load(&root).unwrap();
        let w = Write {
            target: Target::Limit(SpeedLimit::Max),
            before: Value::Int(200000),
            after: Value::Int(1),
        };
        o.remember(&w, &inv).unwrap();
        let again = Originals::load(&root).unwrap();
        assert_eq!(again.limits(), vec![SpeedLimit::Max]);
        assert!(dir.join("run/mdtune/system.json").is_file());
        fs::remove_dir_all(&dir).unwrap();
    }
}
