//! Why a persisted file cannot be used, and how one is named to a person: by its path on the
//! target system, without the root it was read under. Shared by every file of this folder.

use crate::sys::Root;
use std::io;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub(crate) enum PersistError {
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    /// A file root replays that someone other than root could have written (`super::trust`).
    #[error(
        "{path} {why} (owner uid {uid}, group {gid}, mode {mode:04o}): mdtune uses a file \
             that root replays only when root owns it and neither group nor others may write \
             it; fix it with `chown root:root {path}; chmod go-w {path}`, or run mdtune with \
             persist: true again"
    )]
    Untrusted {
        path: String,
        uid: u32,
        gid: u32,
        mode: u32,
        why: String,
    },
    #[error("{path} is not a saved state mdtune wrote: {why}")]
    Corrupt { path: String, why: String },
    /// A write failed and undoing the files written before it failed too (docs/reference.md
    /// §3): `left` names the files that still hold the new state.
    #[error("cannot write {path}: {source}; NOT UNDONE: {}", left.join("; "))]
    HalfWritten {
        path: String,
        source: io::Error,
        left: Vec<String>,
    },
}

/// The path as it is on the target system (without the root prefix).
pub(crate) fn display(root: &Root, path: &Path) -> String {
    match path.strip_prefix(root.base()) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => path.display().to_string(),
    }
}
