//! Persistence and revert (contract section 6): the files that make the desired state survive
//! reboots and re-assembly, and the originals saved before the first change.
//!
//! `persist: true` saves the input under `etc/mdtune/`, installs the running binary as
//! `usr/local/sbin/mdtune` and a udev rule that runs `mdtune --udev %k` on md `change` events;
//! each file is written atomically (temp file, then rename) and only when its content differs.
//! Originals live under `run/mdtune/`, one file per array keyed by its uuid, so they survive a
//! re-assembly under another kernel name but not a reboot (when the kernel defaults are back
//! anyway). `state: reverted` turns the originals into a plan, applies it through the same
//! write/read-back/rollback path as any run, then removes the saved and persisted files.

use crate::apply::{ApplyError, Target, Write};
use crate::inventory::Inventory;
use crate::plan::{ArrayPlan, Change, LimitChange, Plan, Source};
use crate::report::Diff;
use crate::sysfs::{self, Attr, Kind, Root, SpeedLimit, Value};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::fs;
use std::fs::OpenOptions;
use std::io;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The persisted desired state, under `etc/mdtune/`.
pub const STATE_FILE: &str = "mdtune.json";
/// The udev rule, under `etc/udev/rules.d/`.
pub const RULE_FILE: &str = "90-mdtune.rules";
/// Under `etc/mdtune/`: the persisted files mdtune created (that did not exist before), so a
/// revert removes those and never a binary that a package or a formula put in place.
pub const MANIFEST_FILE: &str = "installed.json";

/// The udev rule: md devices only, `change` events only (on `add` the md/ files do not exist
/// yet). mdtune reads before it writes, so the repeated events from mdadm's `watch` option cost
/// reads only.
pub const UDEV_RULE: &str = "\
# Installed by mdtune (persist: true); removed by state: reverted.
# Re-applies the desired state saved in /etc/mdtune/mdtune.json to an md array whenever it
# changes (assembly, re-assembly, reshape). mdtune compares before it writes, so the repeated
# change events caused by mdadm's udev watch option cost reads only, never a write.
SUBSYSTEM==\"block\", ACTION==\"change\", KERNEL==\"md*\", ENV{DEVTYPE}==\"disk\", TEST==\"md/level\", RUN+=\"/usr/local/sbin/mdtune --udev %k\"
";

#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("cannot remove {path}: {source}")]
    Remove { path: String, source: io::Error },
    #[error("{path} is not a saved state mdtune wrote: {why}")]
    Corrupt { path: String, why: String },
}

/// One persisted file: what it holds now and what it should hold.
#[derive(Debug)]
pub struct FilePlan {
    pub path: PathBuf,
    pub old: Option<Vec<u8>>,
    pub new: Vec<u8>,
    pub mode: u32,
}

impl FilePlan {
    pub fn is_due(&self) -> bool {
        self.old.as_deref() != Some(self.new.as_slice())
    }

    /// A diff a person can read; the binary is described, not dumped.
    pub fn diff(&self, root: &Root) -> Diff {
        let show = |b: &[u8]| match std::str::from_utf8(b) {
            Ok(s) if !b.contains(&0) => s.to_string(),
            _ => format!("<binary, {} bytes>\n", b.len()),
        };
        let header = display(root, &self.path);
        Diff {
            before_header: header.clone(),
            after_header: header,
            before: self.old.as_deref().map(show).unwrap_or_default(),
            after: show(&self.new),
        }
    }
}

/// The path as it is on the target system (without the root prefix).
pub fn display(root: &Root, path: &Path) -> String {
    match path.strip_prefix(root.base()) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => path.display().to_string(),
    }
}

/// Reads a file inside the root, `None` when it does not exist. Neither its directory nor the
/// file itself may be a link out of the root.
fn read_opt(root: &Root, path: &Path) -> Result<Option<Vec<u8>>, PersistError> {
    let err = |source| PersistError::Read {
        path: path.display().to_string(),
        source,
    };
    let Some(real) = root.real_file(path).map_err(err)? else {
        return Ok(None);
    };
    match sysfs::read_bytes(&real) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(err(source)),
    }
}

/// The three persisted files and their wanted contents.
pub fn plan_files(
    root: &Root,
    persisted: &Map<String, Json>,
) -> Result<Vec<FilePlan>, PersistError> {
    let mut state = persisted.clone();
    state.remove("persist");
    let mut text = serde_json::to_string_pretty(&state).unwrap_or_default();
    text.push('\n');
    let exe = std::env::current_exe().map_err(|source| PersistError::Read {
        path: "the running binary".into(),
        source,
    })?;
    let binary = fs::read(&exe).map_err(|source| PersistError::Read {
        path: exe.display().to_string(),
        source,
    })?;
    let files = [
        (root.etc().join(STATE_FILE), text.into_bytes(), 0o644),
        (root.installed_binary(), binary, 0o755),
        (
            root.udev_rule(RULE_FILE),
            UDEV_RULE.as_bytes().to_vec(),
            0o644,
        ),
    ];
    let mut plans = files
        .into_iter()
        .map(|(path, new, mode)| {
            Ok(FilePlan {
                old: read_opt(root, &path)?,
                path,
                new,
                mode,
            })
        })
        .collect::<Result<Vec<_>, PersistError>>()?;
    let path = root.etc().join(MANIFEST_FILE);
    let old = read_opt(root, &path)?;
    let mut created = manifest_entries(old.as_deref());
    created.extend(
        plans
            .iter()
            .filter(|f| f.old.is_none())
            .map(|f| display(root, &f.path)),
    );
    created.sort();
    created.dedup();
    let mut new = serde_json::to_string_pretty(&created).unwrap_or_default();
    new.push('\n');
    plans.push(FilePlan {
        path,
        old,
        new: new.into_bytes(),
        mode: 0o644,
    });
    Ok(plans)
}

/// The paths a manifest lists (empty when there is none or it is unreadable).
fn manifest_entries(bytes: Option<&[u8]>) -> Vec<String> {
    bytes
        .and_then(|b| serde_json::from_slice::<Vec<String>>(b).ok())
        .unwrap_or_default()
}

/// Writes `bytes` to `path` atomically: a new temp file beside it, then a rename (which replaces
/// a link in place of `path` rather than following it). The directory must stay in the root.
fn write_atomic(root: &Root, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = root.make_dir(path.parent().unwrap_or(Path::new(".")))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.mdtune-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let result = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| fs::set_permissions(&tmp, fs::Permissions::from_mode(mode)))
        .and_then(|()| fs::rename(&tmp, dir.join(name.as_ref())));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Removes a file inside the root (a link in its place is removed, not followed); `Ok(false)`
/// when it does not exist.
fn remove_file(root: &Root, path: &Path) -> io::Result<bool> {
    let Some(real) = root.real_file(path)? else {
        return Ok(false);
    };
    match fs::remove_file(real) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes the due files. On failure, the files already written get their old contents back.
pub fn write_files(root: &Root, files: &[FilePlan]) -> Result<(), PersistError> {
    for (i, f) in files.iter().enumerate().filter(|(_, f)| f.is_due()) {
        if let Err(source) = write_atomic(root, &f.path, &f.new, f.mode) {
            undo_files(root, &files[..i]);
            return Err(PersistError::Write {
                path: f.path.display().to_string(),
                source,
            });
        }
    }
    Ok(())
}

/// Puts back the previous contents of due files (removing the ones that did not exist).
pub fn undo_files(root: &Root, files: &[FilePlan]) {
    for f in files.iter().filter(|f| f.is_due()) {
        let _ = match &f.old {
            Some(old) => write_atomic(root, &f.path, old, f.mode),
            None => remove_file(root, &f.path).map(|_| ()),
        };
    }
}

/// Reads the persisted input, `None` when nothing is persisted.
pub fn load_state(root: &Root) -> Result<Option<String>, PersistError> {
    let path = root.etc().join(STATE_FILE);
    Ok(read_opt(root, &path)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

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

/// Removes `paths` that exist; returns the ones removed.
pub fn remove(root: &Root, paths: &[PathBuf]) -> Result<Vec<PathBuf>, PersistError> {
    let mut removed = Vec::new();
    for p in paths {
        match remove_file(root, p) {
            Ok(true) => removed.push(p.clone()),
            Ok(false) => {}
            Err(source) => {
                return Err(PersistError::Remove {
                    path: p.display().to_string(),
                    source,
                })
            }
        }
    }
    Ok(removed)
}

/// The files a revert removes: the saved state, the udev rule, the manifest, and the binary
/// only when the manifest says `persist` created it.
pub fn persisted_paths(root: &Root) -> Result<Vec<PathBuf>, PersistError> {
    let manifest = root.etc().join(MANIFEST_FILE);
    let created = manifest_entries(read_opt(root, &manifest)?.as_deref());
    let mut paths = vec![root.etc().join(STATE_FILE), root.udev_rule(RULE_FILE)];
    let binary = root.installed_binary();
    if created.contains(&display(root, &binary)) {
        paths.push(binary);
    }
    paths.push(manifest);
    Ok(paths)
}
