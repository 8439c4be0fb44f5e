//! Persistence (docs/reference.md §6): the files that make the desired state survive reboots and
//! re-assembly, and their removal by `state: reverted`. The saved originals live in
//! [`super::originals`]; the atomic writes themselves in `crate::sys`.
//!
//! `persist: true` saves the input under `etc/mdtune/`, installs the running binary as
//! `usr/local/sbin/mdtune` (unless the running binary is the packaged `usr/sbin/mdtune`, which
//! the rule then runs instead; a link at `usr/local/sbin/mdtune` is replaced, never written
//! through) and a udev rule that runs `mdtune --udev %k` on md `change` events. `persist: false`
//! and `state: reverted` remove only the files the manifest records. The manifest
//! `etc/mdtune/installed.json` (what `persist` created, and when and by which version the state
//! was last written: [`super::manifest`]) is written first, so an interrupted run never loses
//! track of a file it installed. Each file is written atomically
//! (a temp file beside it, then a rename) and only when its content differs; temp files left by
//! an interrupted run are removed by the next run that writes or removes in that directory.

use crate::plan::Diff;

use super::error::{display, PersistError};
use super::manifest::{self, Manifest, Written};
use super::rule::{udev_rule, RULE_FILE};
use super::trust::{read_trusted, untrusted};
use crate::sys::{self, Root};
use serde_json::{Map, Value as Json};
use std::io;
use std::path::{Path, PathBuf};

/// The persisted desired state, under `etc/mdtune/`.
pub(crate) const STATE_FILE: &str = "mdtune.json";
/// Under `etc/mdtune/`: the persisted files mdtune created (that did not exist before), so a
/// revert removes those and never a binary that a package or a formula put in place.
pub(crate) const MANIFEST_FILE: &str = "installed.json";
/// Where a distribution package installs the binary (relative to the root). When this is the
/// running binary, the rule runs it and no copy goes to `usr/local/sbin`.
pub(crate) const PACKAGED_BINARY: &str = "usr/sbin/mdtune";
/// One persisted file: what it holds now and what it should hold (`None`: removed).
#[derive(Debug)]
pub(crate) struct FilePlan {
    /// The path as the run names it (under the root). A link there is replaced, never
    /// written through.
    pub(crate) path: PathBuf,
    pub(crate) old: Option<Vec<u8>>,
    pub(crate) new: Option<Vec<u8>>,
    pub(crate) mode: u32,
    /// The file is there but not root's alone (`super::trust`): written again, root's and with
    /// `mode`, even when it holds what is wanted.
    pub(crate) untrusted: bool,
}

impl FilePlan {
    pub(crate) fn is_due(&self) -> bool {
        self.old != self.new || self.untrusted
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

/// Reads a file inside the root, `None` when it does not exist. Neither its directory nor the
/// file itself may be a link out of the root.
pub(crate) fn read_opt(root: &Root, path: &Path) -> Result<Option<Vec<u8>>, PersistError> {
    let err = |source| PersistError::Read {
        path: path.display().to_string(),
        source,
    };
    sys::read_file(root, path).map_err(err)
}

/// The running binary's bytes (`crate::sys::running_binary`: the file the kernel runs, even when
/// a package upgrade has replaced it on disk); `exe` is for messages.
fn running_binary(exe: &Path) -> Result<&'static [u8], PersistError> {
    sys::running_binary().map_err(|source| PersistError::Read {
        path: exe.display().to_string(),
        source,
    })
}

/// True if and only if the running binary is the root's packaged `usr/sbin/mdtune`: the same
/// file (device and inode), whatever paths or hard links lead to either. The packaged one is
/// opened beneath the root, not followed if it is a link.
fn is_packaged(root: &Root) -> bool {
    let packaged = root.identity(&root.base().join(PACKAGED_BINARY));
    let running = sys::running_identity();
    matches!((packaged, running), (Ok(p), Ok(r)) if p == r)
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
/// `by` is the run's caller, which the manifest records when the state is written.
pub(crate) fn plan_files(
    root: &Root,
    persisted: &Map<String, Json>,
    by: Option<&str>,
) -> Result<Vec<FilePlan>, PersistError> {
    let exe = sys::running_binary_path().map_err(|source| PersistError::Read {
        path: "the running binary".into(),
        source,
    })?;
    let mut plans = Vec::new();
    let state = root.etc().join(STATE_FILE);
    plans.push(FilePlan {
        old: read_opt(root, &state)?,
        untrusted: untrusted(root, &state),
        path: state,
        new: Some(state_text(persisted)),
        mode: 0o644,
    });
    let rule_binary = if is_packaged(root) {
        format!("/{PACKAGED_BINARY}")
    } else {
        let path = root.installed_binary();
        // A link there (to the packaged binary, an alternatives entry) is not mdtune's copy:
        // it is replaced by one, and what it leads to is never read or written.
        let is_link = root.is_link(&path);
        plans.push(FilePlan {
            old: if is_link {
                None
            } else {
                read_opt(root, &path)?
            },
            untrusted: !is_link && untrusted(root, &path),
            path,
            new: Some(running_binary(&exe)?.to_vec()),
            mode: 0o755,
        });
        display(root, &root.installed_binary())
    };
    let rule = root.udev_rule(RULE_FILE);
    plans.push(FilePlan {
        old: read_opt(root, &rule)?,
        untrusted: untrusted(root, &rule),
        path: rule,
        new: Some(udev_rule(&rule_binary).into_bytes()),
        mode: 0o644,
    });
    let path = root.etc().join(MANIFEST_FILE);
    let old = read_opt(root, &path)?;
    let old_created = manifest_entries(root, old.as_deref())?;
    let mut created = old_created.clone();
    created.extend(
        plans
            .iter()
            .filter(|f| f.old.is_none())
            .map(|f| display(root, &f.path)),
    );
    created.sort();
    created.dedup();
    // The time is that of the persisted input: a rule or binary put back leaves it alone.
    let state_due = plans[0].is_due();
    let new = manifest::next(old.as_deref(), &old_created, created, state_due, by);
    plans.insert(
        0,
        FilePlan {
            untrusted: untrusted(root, &path),
            path,
            old,
            new: Some(new),
            mode: 0o644,
        },
    );
    Ok(plans)
}

/// The paths a manifest lists (none when there is no manifest). One that does not parse is
/// refused: treating it as empty would lose track of what `persist` installed.
fn manifest_entries(root: &Root, bytes: Option<&[u8]>) -> Result<Vec<String>, PersistError> {
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    Manifest::parse(bytes)
        .map(|m| m.created)
        .map_err(|why| PersistError::Corrupt {
            path: display(root, &root.etc().join(MANIFEST_FILE)),
            why,
        })
}

/// When and by which version the persisted state was last written, from the manifest: `None`
/// when nothing is persisted or the manifest predates the record.
pub(crate) fn written(root: &Root) -> Result<Option<Written>, PersistError> {
    let path = root.etc().join(MANIFEST_FILE);
    let Some(bytes) = read_opt(root, &path)? else {
        return Ok(None);
    };
    Manifest::parse(&bytes)
        .map(|m| m.written)
        .map_err(|why| PersistError::Corrupt {
            path: display(root, &path),
            why,
        })
}

/// Writes (or removes) one file as planned.
fn carry_out(root: &Root, f: &FilePlan) -> io::Result<()> {
    match &f.new {
        Some(bytes) => sys::write_atomic(root, &f.path, bytes, f.mode),
        None => sys::remove_file(root, &f.path).map(|_| ()),
    }
}

/// Writes the due files, in order. On failure, the files already written get their old contents
/// back; the error names those that could not be put back.
pub(crate) fn write_files(root: &Root, files: &[FilePlan]) -> Result<(), PersistError> {
    for (i, f) in files.iter().enumerate().filter(|(_, f)| f.is_due()) {
        if let Err(source) = carry_out(root, f) {
            let path = display(root, &f.path);
            // A file renamed into place whose directory could not be synced is put back too.
            let end = if sys::in_place(&source) { i + 1 } else { i };
            let left = undo_files(root, &files[..end]);
            if left.is_empty() {
                return Err(PersistError::Write { path, source });
            }
            let left = left.into_iter().map(|(_, why)| why).collect();
            return Err(PersistError::HalfWritten { path, source, left });
        }
    }
    Ok(())
}

/// Puts back the previous contents of due files (removing the ones that did not exist), newest
/// first, so the manifest goes last. Returns the files that still hold the new state, each with
/// the line that says why: when one cannot be put back, the manifest keeps naming it (a later
/// `persist: false` or revert removes it), so the manifest stays too.
pub(crate) fn undo_files(root: &Root, files: &[FilePlan]) -> Vec<(PathBuf, String)> {
    let manifest = root.etc().join(MANIFEST_FILE);
    let mut left = Vec::new();
    for f in files.iter().rev().filter(|f| f.is_due()) {
        let shown = display(root, &f.path);
        if f.path == manifest && !left.is_empty() {
            left.push((f.path.clone(), format!("{shown}: kept, it names them")));
            continue;
        }
        let undone = match &f.old {
            Some(old) => sys::write_atomic(root, &f.path, old, f.mode),
            None => sys::remove_file(root, &f.path).map(|_| ()),
        };
        if let Err(e) = undone {
            let why = format!("{shown} still holds the new state: {e}");
            left.push((f.path.clone(), why));
        }
    }
    left
}

/// Reads the persisted input, `None` when nothing is persisted; refused when it is not root's
/// alone (`super::trust`).
pub(crate) fn load_state(root: &Root) -> Result<Option<String>, PersistError> {
    let path = root.etc().join(STATE_FILE);
    Ok(read_trusted(root, &path)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// What `persist: false` and a revert remove, in order: of the files the manifest records
/// (docs/reference.md §6: what `persist` created; an admin's own rule or a packaged binary is
/// never listed), the udev rule (so udev stops replaying), the state and the binary; then the
/// saved originals (`originals`, for a revert), and the manifest last (so a removal that stops
/// part-way still knows what is left). Only files that exist. A manifest that is garbage or
/// not root's alone removes what only mdtune writes, and the note says what was kept.
pub(crate) fn removal_plan(
    root: &Root,
    originals: &[PathBuf],
) -> Result<(Vec<FilePlan>, Option<String>), PersistError> {
    let manifest = root.etc().join(MANIFEST_FILE);
    let listed =
        read_trusted(root, &manifest).and_then(|bytes| manifest_entries(root, bytes.as_deref()));
    let (created, note) = match listed {
        Ok(created) => (created, None),
        // A manifest that is garbage or not root's does not block the removal: the files only
        // mdtune writes go, the binary (which may be someone else's) stays, and that is said.
        Err(e @ (PersistError::Corrupt { .. } | PersistError::Untrusted { .. })) => {
            let binary = display(root, &root.installed_binary());
            let note = format!(
                "{e}; removed only what mdtune alone writes (the persisted state, a rule it \
                 installed, the manifest); {binary} is kept: without the manifest it is not \
                 known that persist installed it, remove it by hand if it did"
            );
            (own_files(root), Some(note))
        }
        Err(e) => return Err(e),
    };
    let mut paths: Vec<PathBuf> = [
        root.udev_rule(RULE_FILE),
        root.etc().join(STATE_FILE),
        root.installed_binary(),
    ]
    .into_iter()
    .filter(|p| created.contains(&display(root, p)))
    .collect();
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
            path,
            old: Some(old),
            new: None,
            mode: 0,
            untrusted: false,
        });
    }
    Ok((plans, note))
}

/// The files only mdtune writes, as a manifest lists them: the persisted state, and the rule
/// when it is the one `persist` installs (its first line says so).
fn own_files(root: &Root) -> Vec<String> {
    let rule = root.udev_rule(RULE_FILE);
    let ours = read_opt(root, &rule)
        .ok()
        .flatten()
        .is_some_and(|b| b.starts_with(udev_rule("").lines().next().unwrap_or("#").as_bytes()));
    let mut own = vec![display(root, &root.etc().join(STATE_FILE))];
    own.extend(ours.then(|| display(root, &rule)));
    own
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
