//! One write: what it targets (an md attribute of an array, or a system limit), the value it
//! takes from and to, how it is written and read back, and why one fails. The file is opened
//! beneath the root for the write and again for the read-back, never by a path resolved earlier
//! (docs/reference.md §4).

use crate::md::{Attr, Kind, SpeedLimit, SyncRun, Value};
use crate::sys::{self, KernelFile, Root};
use std::fmt;
use std::io;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The file could not be opened: nothing reached the kernel.
    #[error("{target}: cannot open the file to write {value}: {source}")]
    Open {
        target: Target,
        value: Value,
        source: io::Error,
    },
    /// The write itself failed: the kernel refused the value, or took part of it.
    #[error("{target}: the kernel refused {value}: {source}")]
    Write {
        target: Target,
        value: Value,
        source: io::Error,
    },
    #[error("{target}: wrote {wrote} but the kernel kept {kept}")]
    NotKept {
        target: Target,
        wrote: Value,
        kept: String,
    },
    #[error("{target}: wrote it, but reading it back failed: {source}")]
    ReadBack { target: Target, source: io::Error },
    #[error("{target}: {path} does not exist")]
    Missing { target: Target, path: String },
    #[error("{target}: refusing to write {path}: it leads out of the root")]
    Escape { target: Target, path: String },
    #[error("{target}: cannot save the original value {value} for revert: {source}")]
    SaveOriginal {
        target: Target,
        value: Value,
        source: io::Error,
    },
    /// The sync running on the array could not be paused: nothing of the array was written.
    #[error("{target}: not written: {why}")]
    Pause { target: Target, why: String },
    /// A sync paused for this run's writes could not be resumed (the failure's `not_resumed`
    /// says how to, if a second try failed too).
    #[error("{array}: the {run} paused for this run's writes could not be resumed: {source}")]
    Resume {
        array: String,
        run: SyncRun,
        source: io::Error,
    },
    /// SIGINT, SIGTERM or SIGHUP arrived while the run wrote: it wrote nothing more, restored
    /// what it had changed and resumed what it had paused (`crate::sys::SignalsDeferred`).
    #[error("interrupted by {signal}: this run's writes were rolled back and every sync it paused was resumed")]
    Interrupted { signal: &'static str },
    /// The array began to reshape after it was read; a write that suspends it waits for that.
    #[error("{target}: not written: the array began to reshape after it was read (a later run applies it)")]
    Reshaping { target: Target },
}

/// A value mdtune writes: an md attribute of an array, or a system speed limit.
impl ApplyError {
    /// True when the operating system refused to open or write the file for want of
    /// privileges (EACCES, EPERM).
    pub(crate) fn permission_denied(&self) -> bool {
        match self {
            ApplyError::Open { source, .. } | ApplyError::Write { source, .. } => {
                source.kind() == io::ErrorKind::PermissionDenied
            }
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Md { array: String, attr: Attr },
    Limit(SpeedLimit),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Md { array, attr } => write!(f, "{array}: {attr}"),
            Target::Limit(l) => write!(f, "system: {}", l.name()),
        }
    }
}

impl Target {
    pub(super) fn kind(&self) -> Kind {
        match self {
            Target::Md { attr, .. } => attr.kind(),
            Target::Limit(_) => Kind::CInt,
        }
    }

    /// The file the value lives in, for the floor.
    pub(super) fn file(&self) -> KernelFile<'_> {
        match self {
            Target::Md { array, attr } => KernelFile::Md {
                array,
                attr: attr.name(),
            },
            Target::Limit(l) => KernelFile::Limit(*l),
        }
    }

    /// The path a refusal names.
    fn shown(&self, root: &Root) -> String {
        match self {
            Target::Md { array, attr } => root.md_attr(array, attr.name()),
            Target::Limit(l) => root.speed_limit(*l),
        }
        .display()
        .to_string()
    }

    /// `e` from opening the file, as the refusal it is when the file is missing or resolving it
    /// leads out of the root (`Err(e)` otherwise).
    fn refusal(&self, root: &Root, e: io::Error) -> Result<ApplyError, io::Error> {
        let path = self.shown(root);
        if sys::leads_out(&e) {
            Ok(ApplyError::Escape {
                target: self.clone(),
                path,
            })
        } else if e.kind() == io::ErrorKind::NotFound {
            Ok(ApplyError::Missing {
                target: self.clone(),
                path,
            })
        } else {
            Err(e)
        }
    }
}

/// One value to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    pub target: Target,
    pub before: Value,
    pub after: Value,
}

/// Writes `value` to `target` and checks the kernel kept it.
///
/// The file is opened beneath the root for the write and again for the read-back
/// (docs/reference.md §4), never by a path resolved earlier.
pub(super) fn write_checked(root: &Root, target: &Target, value: Value) -> Result<(), ApplyError> {
    let mut file = root.open_kernel(target.file(), true).map_err(|e| {
        target
            .refusal(root, e)
            .unwrap_or_else(|source| ApplyError::Open {
                target: target.clone(),
                value,
                source,
            })
    })?;
    sys::write_value(&mut file, &crate::md::kernel_text(target.kind(), value)).map_err(
        |source| ApplyError::Write {
            target: target.clone(),
            value,
            source,
        },
    )?;
    drop(file);
    let text = root
        .read_kernel(target.file())
        .map_err(|source| ApplyError::ReadBack {
            target: target.clone(),
            source,
        })?;
    // A value the kernel did not keep (stripe_cache_size after ENOMEM reads back lower) failed.
    if crate::md::parse_value(target.kind(), &text) != Some(value) {
        return Err(ApplyError::NotKept {
            target: target.clone(),
            wrote: value,
            kept: match text.trim() {
                "" => "nothing (empty read)".to_string(),
                kept => kept.to_string(),
            },
        });
    }
    Ok(())
}
