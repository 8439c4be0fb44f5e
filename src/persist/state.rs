//! Persistence (docs/reference.md §6): the files that make the desired state survive reboots and
//! re-assembly, and their removal by `state: reverted`. The saved originals live in
//! [`super::originals`]; the atomic writes themselves in `crate::sys`.
//!
//! `persist: true` saves the input under `etc/mdtune/`, installs the running binary as
//! `usr/local/sbin/mdtune` (unless the running binary is the packaged `usr/sbin/mdtune`, which
//! the rule then runs instead) and a udev rule that runs `mdtune --udev %k` on md `change`
//! events. The manifest `etc/mdtune/installed.json` (what `persist` created) is written first, so
//! an interrupted run never loses track of a file it installed. Each file is written atomically
//! (a temp file beside it, then a rename) and only when its content differs; temp files left by
//! an interrupted run are removed by the next run that writes or removes in that directory.

use crate::plan::Diff;

use super::rule::{udev_rule, RULE_FILE};
use crate::sys::{self, Root};
use serde_json::{Map, Value as Json};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The persisted desired state, under `etc/mdtune/`.
pub(crate) const STATE_FILE: &str = "mdtune.json";
/// Under `etc/mdtune/`: the persisted files mdtune created (that did not exist before), so a
/// revert removes those and never a binary that a package or a formula put in place.
pub(crate) const MANIFEST_FILE: &str = "installed.json";
/// Where a distribution package installs the binary (relative to the root). When this is the
/// running binary, the rule runs it and no copy goes to `usr/local/sbin`.
pub(crate) const PACKAGED_BINARY: &str = "usr/sbin/mdtune";
#[derive(Debug, thiserror::Error)]
pub(crate) enum PersistError {
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path} is not a saved state mdtune wrote: {why}")]
    Corrupt { path: String, why: String },
    #[error("{path} is a link to {target}, outside the root: mdtune does not write through it (remove the link, or point it inside the root)")]
    LinkOut { path: String, target: String },
}

/// One persisted file: what it holds now and what it should hold (`None`: removed).
#[derive(Debug)]
pub(crate) struct FilePlan {
    /// The path as the run names it (under the root).
    pub(crate) path: PathBuf,
    /// Where the content really lives: `path`, or the file a link at `path` leads to (inside the
    /// root), which is then written in place of the link.
    pub(crate) target: PathBuf,
    pub(crate) old: Option<Vec<u8>>,
    pub(crate) new: Option<Vec<u8>>,
    pub(crate) mode: u32,
}

impl FilePlan {
    pub(crate) fn is_due(&self) -> bool {
        self.old != self.new
    }

    /// A diff a person can read; the binary is described, not dumped.
    pub(crate) fn diff(&self, root: &Root) -> Diff {
        let show = |b: &[u8]| match std::str::from_utf8(b) {
            Ok(s) if !b.contains(&0) => s.to_string(),
            _ => format!("<binary, {} bytes>\n", b.len()),
        };
        let header = display(root, &self.path);
        Diff {
            before_header: header.clone(),
            after_header: header,
            before: self.old.as_deref().map(show).unwrap_or_default(),
            after: self.new.as_deref().map(show).unwrap_or_default(),
        }
    }
}

/// The path as it is on the target system (without the root prefix).
pub(crate) fn display(root: &Root, path: &Path) -> String {
    match path.strip_prefix(root.base()) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => path.display().to_string(),
    }
}

/// Reads a file inside the root, `None` when it does not exist. Neither its directory nor the
/// file itself may be a link out of the root.
pub(crate) fn read_opt(root: &Root, path: &Path) -> Result<Option<Vec<u8>>, PersistError> {
    let err = |source| PersistError::Read {
        path: path.display().to_string(),
        source,
    };
    sys::read_file(root, path).map_err(err)
}

/// Where the installed binary's content lives: the path itself, or, when it is a link (an
/// alternatives or stow install), the file the link leads to, which must be inside the root.
fn binary_target(root: &Root, path: &Path) -> Result<PathBuf, PersistError> {
    let is_link = path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_path_buf());
    }
    let target = fs::read_link(path).unwrap_or_default();
    let real = path.parent().map(|d| d.join(&target)).unwrap_or_default();
    // A dangling link inside the root: the binary is written where it points.
    let resolved = fs::canonicalize(&real).ok().or_else(|| {
        let dir = fs::canonicalize(real.parent()?).ok()?;
        Some(dir.join(real.file_name()?))
    });
    match resolved {
        Some(r) if r.starts_with(root.base()) && r != path => Ok(r),
        _ => Err(PersistError::LinkOut {
            path: path.display().to_string(),
            target: target.display().to_string(),
        }),
    }
}

/// The running binary's bytes, read once per process.
fn running_binary(exe: &Path) -> Result<&'static [u8], PersistError> {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    if let Some(b) = BYTES.get() {
        return Ok(b);
    }
    let bytes = fs::read(exe).map_err(|source| PersistError::Read {
        path: exe.display().to_string(),
        source,
    })?;
    Ok(BYTES.get_or_init(|| bytes))
}

/// True if and only if the running binary is the root's packaged `usr/sbin/mdtune`.
fn is_packaged(root: &Root, exe: &Path) -> bool {
    let packaged = fs::canonicalize(root.base().join(PACKAGED_BINARY));
    matches!((packaged, fs::canonicalize(exe)), (Ok(p), Ok(e)) if p == e)
}

/// The state file's content: the input as `persist` saves it. `persist` and `state` are left
/// out, so that a `query` of the same input compares with what a `present` run saves.
fn state_text(persisted: &Map<String, Json>) -> Vec<u8> {
    let mut state = persisted.clone();
    state.remove("persist");
    state.remove("state");
    let mut text = serde_json::to_string_pretty(&state).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// The persisted files and their wanted contents, the manifest first (the order they are
/// written in).
pub(crate) fn plan_files(
    root: &Root,
    persisted: &Map<String, Json>,
) -> Result<Vec<FilePlan>, PersistError> {
    let exe = std::env::current_exe().map_err(|source| PersistError::Read {
        path: "the running binary".into(),
        source,
    })?;
    let mut plans = Vec::new();
    let state = root.etc().join(STATE_FILE);
    plans.push(FilePlan {
        old: read_opt(root, &state)?,
        target: state.clone(),
        path: state,
        new: Some(state_text(persisted)),
        mode: 0o644,
    });
    let rule_binary = if is_packaged(root, &exe) {
        format!("/{PACKAGED_BINARY}")
    } else {
        let path = root.installed_binary();
        let target = binary_target(root, &path)?;
        plans.push(FilePlan {
            old: read_opt(root, &target)?,
            target,
            path,
            new: Some(running_binary(&exe)?.to_vec()),
            mode: 0o755,
        });
        display(root, &root.installed_binary())
    };
    let rule = root.udev_rule(RULE_FILE);
    plans.push(FilePlan {
        old: read_opt(root, &rule)?,
        target: rule.clone(),
        path: rule,
        new: Some(udev_rule(&rule_binary).into_bytes()),
        mode: 0o644,
    });
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
    plans.insert(
        0,
        FilePlan {
            target: path.clone(),
            path,
            old,
            new: Some(new.into_bytes()),
            mode: 0o644,
        },
    );
    Ok(plans)
}

/// The paths a manifest lists (empty when there is none or it is unreadable).
fn manifest_entries(bytes: Option<&[u8]>) -> Vec<String> {
    bytes
        .and_then(|b| serde_json::from_slice::<Vec<String>>(b).ok())
        .unwrap_or_default()
}

/// Writes (or removes) one file as planned.
fn carry_out(root: &Root, f: &FilePlan) -> io::Result<()> {
    match &f.new {
        Some(bytes) => sys::write_atomic(root, &f.target, bytes, f.mode),
        None => sys::remove_file(root, &f.target).map(|_| ()),
    }
}

/// Writes the due files, in order. On failure, the files already written get their old contents
/// back.
pub(crate) fn write_files(root: &Root, files: &[FilePlan]) -> Result<(), PersistError> {
    for (i, f) in files.iter().enumerate().filter(|(_, f)| f.is_due()) {
        if let Err(source) = carry_out(root, f) {
            undo_files(root, &files[..i]);
            return Err(PersistError::Write {
                path: f.path.display().to_string(),
                source,
            });
        }
    }
    Ok(())
}

/// Puts back the previous contents of due files (removing the ones that did not exist), newest
/// first, so the manifest goes last.
pub(crate) fn undo_files(root: &Root, files: &[FilePlan]) {
    for f in files.iter().rev().filter(|f| f.is_due()) {
        let _ = match &f.old {
            Some(old) => sys::write_atomic(root, &f.target, old, f.mode),
            None => sys::remove_file(root, &f.target).map(|_| ()),
        };
    }
}

/// Reads the persisted input, `None` when nothing is persisted.
pub(crate) fn load_state(root: &Root) -> Result<Option<String>, PersistError> {
    let path = root.etc().join(STATE_FILE);
    Ok(read_opt(root, &path)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// What a revert removes, in order: the udev rule (so udev stops replaying), the state, the
/// binary when the manifest says `persist` created it, the saved originals, and the manifest last
/// (so a revert that stops part-way still knows about the binary). Only files that exist.
pub(crate) fn removal_plan(
    root: &Root,
    originals: &[PathBuf],
) -> Result<Vec<FilePlan>, PersistError> {
    let manifest = root.etc().join(MANIFEST_FILE);
    let created = manifest_entries(read_opt(root, &manifest)?.as_deref());
    let mut paths = vec![root.udev_rule(RULE_FILE), root.etc().join(STATE_FILE)];
    let binary = root.installed_binary();
    if created.contains(&display(root, &binary)) {
        paths.push(binary);
    }
    paths.extend(originals.iter().cloned());
    paths.push(manifest);
    let mut plans = Vec::new();
    for path in paths {
        if path.symlink_metadata().is_err() {
            continue;
        }
        // A file that cannot be read (a directory in its place) is still due for removal; the
        // removal then fails and says why.
        let old = read_opt(root, &path).ok().flatten().unwrap_or_default();
        plans.push(FilePlan {
            target: path.clone(),
            path,
            old: Some(old),
            new: None,
            mode: 0,
        });
    }
    Ok(plans)
}

/// What a removal did: the files removed, and the ones left with the error that kept each.
#[derive(Debug, Default)]
pub(crate) struct Removed {
    pub(crate) removed: Vec<PathBuf>,
    pub(crate) left: Vec<(PathBuf, io::Error)>,
}

/// Removes the planned files in order. When one cannot be removed, the others are still tried,
/// except the manifest, which stays so that a later revert can finish the job.
pub(crate) fn remove_files(root: &Root, files: &[FilePlan]) -> Removed {
    let manifest = root.etc().join(MANIFEST_FILE);
    let mut done = Removed::default();
    for f in files {
        if f.path == manifest && !done.left.is_empty() {
            let why = io::Error::other("kept because another file could not be removed");
            done.left.push((f.path.clone(), why));
            continue;
        }
        match sys::remove_file(root, &f.path) {
            Ok(true) => done.removed.push(f.path.clone()),
            Ok(false) => {}
            Err(e) => done.left.push((f.path.clone(), e)),
        }
    }
    done
}
