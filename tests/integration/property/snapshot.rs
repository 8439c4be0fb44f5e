//! What is under a root, as snapshots: every file, link and directory, read once per change;
//! which files a run changed; and a setting's value as a report and as a file show it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What is under a directory: every file's content, every link's target, every directory.
pub(super) type Tree = BTreeMap<PathBuf, Node>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Node {
    File(Vec<u8>),
    /// A file too big to read on every snapshot (an installed binary): its size, inode and
    /// modification time, which a rewrite (temp file and rename) always changes.
    Big(u64, u64, i64, i64),
    Link(PathBuf),
    Dir,
}

/// The contents of the files read so far, by path, with the size, inode and modification time
/// they had then: a file whose metadata did not change is not read again.
pub(super) type Cache = std::collections::HashMap<PathBuf, ((u64, u64, i64, i64), Vec<u8>)>;

thread_local! {
    static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(Cache::new());
}

/// Forgets the files read so far (a host's root is gone, and a new one may reuse its paths).
pub(super) fn forget_reads() {
    CACHE.with_borrow_mut(|c| c.clear());
}

pub(super) fn tree(dir: &Path) -> Tree {
    use std::os::unix::fs::MetadataExt;
    let mut out = Tree::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let meta = fs::symlink_metadata(&p).unwrap();
            let key = (meta.len(), meta.ino(), meta.mtime(), meta.mtime_nsec());
            let node = if meta.file_type().is_symlink() {
                Node::Link(fs::read_link(&p).unwrap())
            } else if meta.is_dir() {
                stack.push(p.clone());
                Node::Dir
            } else if meta.file_type().is_file() && meta.len() > 65536 {
                Node::Big(key.0, key.1, key.2, key.3)
            } else if meta.file_type().is_file() {
                Node::File(CACHE.with_borrow_mut(|c| match c.get(&p) {
                    Some((k, bytes)) if *k == key => bytes.clone(),
                    _ => {
                        let bytes = fs::read(&p).unwrap();
                        c.insert(p.clone(), (key, bytes.clone()));
                        bytes
                    }
                }))
            } else {
                continue; // sockets
            };
            out.insert(rel, node);
        }
    }
    out
}

/// The files (not directories) that differ between two trees, without the lock file, which
/// holds nothing.
pub(super) fn changed_files(before: &Tree, after: &Tree) -> Vec<PathBuf> {
    fn file<'a>(t: &'a Tree, p: &PathBuf) -> Option<&'a Node> {
        t.get(p).filter(|n| **n != Node::Dir)
    }
    before
        .keys()
        .chain(after.keys().filter(|p| !before.contains_key(*p)))
        .filter(|p| !p.ends_with("run/mdtune.lock"))
        .filter(|p| file(before, p) != file(after, p))
        .cloned()
        .collect()
}

/// A value as the report types it, as text: `"1"`/`"0"` for booleans, `"system"`, or digits.
pub(super) fn report_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "1" } else { "0" }.to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value as a fake kernel file holds it, in the same form as [`report_value`].
pub(super) fn file_value(text: &str, boolean: bool) -> String {
    let t = text.trim();
    if t == "system" || t.ends_with("(system)") {
        return "system".to_string();
    }
    let t = t.trim_end_matches(" (local)");
    if boolean {
        return if t == "0" { "0" } else { "1" }.to_string();
    }
    t.to_string()
}

/// True if and only if the table's row of `setting` is a boolean (`skip_copy`).
fn is_boolean(setting: &str) -> bool {
    mdtune::md::tunables().any(|t| t.name == setting && t.kind == mdtune::md::Kind::Bool)
}

/// The kernel file behind a report's setting.
pub(super) fn setting_file(root: &Path, target: &str, setting: &str) -> PathBuf {
    if target == "system" {
        root.join("proc/sys/dev/raid").join(setting)
    } else {
        root.join("sys/block").join(target).join("md").join(setting)
    }
}

/// Every `(target, setting, before, after, changed)` in a report.
pub(super) fn settings(report: &Value) -> Vec<(String, String, Value, Value, bool)> {
    let mut out = Vec::new();
    for a in report["arrays"].as_array().into_iter().flatten() {
        let name = a["name"].as_str().unwrap().to_string();
        for (k, s) in a["settings"].as_object().into_iter().flatten() {
            let s = s.clone();
            out.push((
                name.clone(),
                k.clone(),
                s["before"].clone(),
                s["after"].clone(),
                s["changed"] == true,
            ));
        }
    }
    for (k, s) in report["system"].as_object().into_iter().flatten() {
        out.push((
            "system".into(),
            k.clone(),
            s["before"].clone(),
            s["after"].clone(),
            s["changed"] == true,
        ));
    }
    out
}

pub(super) fn read_value(root: &Path, target: &str, setting: &str) -> String {
    let text = fs::read_to_string(setting_file(root, target, setting)).unwrap();
    file_value(&text, is_boolean(setting))
}

/// Reads a setting's value from a tree taken before the run.
pub(super) fn read_value_in(t: &Tree, target: &str, setting: &str) -> Option<String> {
    let path = setting_file(Path::new("root"), target, setting);
    // sys/block/<name> is a link into devices/: follow it inside the tree.
    let real = if target == "system" {
        path
    } else {
        let Some(Node::Link(l)) = t.get(&Path::new("root/sys/block").join(target)) else {
            return None;
        };
        let dir = normalize(&Path::new("root/sys/block").join(l));
        dir.join("md").join(setting)
    };
    match t.get(&real) {
        Some(Node::File(b)) => Some(file_value(&String::from_utf8_lossy(b), is_boolean(setting))),
        _ => None,
    }
}

/// The text of a setting's file in a tree taken before the run, as it is.
pub(super) fn raw_in(t: &Tree, target: &str, setting: &str) -> Option<String> {
    let Some(Node::Link(l)) = t.get(&Path::new("root/sys/block").join(target)) else {
        return None;
    };
    let dir = normalize(&Path::new("root/sys/block").join(l));
    match t.get(&dir.join("md").join(setting)) {
        Some(Node::File(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// True if and only if one of `array`'s tunable files (every attribute of the table) read
/// empty (an array being stopped).
pub(super) fn reads_empty(t: &Tree, array: &str) -> bool {
    mdtune::md::Attr::ALL
        .iter()
        .any(|a| raw_in(t, array, a.name()).is_some_and(|v| v.trim().is_empty()))
}

/// Resolves `..` in a relative path without touching the filesystem.
pub(super) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
