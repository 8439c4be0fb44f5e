//! Why a run stopped before it could report (docs/reference.md §1), and what that means for the
//! exit status and the failure object.

use super::exit::Exit;
use super::lock::LockError;
use crate::host::InventoryError;
use crate::persist::PersistError;
use crate::plan::PlanError;
use crate::spec::SpecError;

/// Why a run stopped before it could report. The exit status is decided from the kind
/// ([`RunError::exit`]), at the edge; the message is the `msg` of the failure object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error(transparent)]
    Input(#[from] SpecError),
    #[error("root: {path} {problem}")]
    Root { path: String, problem: String },
    #[error("--udev {name:?}: not an md kernel name (md and a number, such as md0, or md_ and a name of letters, digits, _ . -, such as md_d0; at most {max} characters)")]
    NotMdName { name: String, max: usize },
    /// The host refuses the input (an exact name that matches nothing, ...): nothing written.
    #[error(transparent)]
    Refused(PlanError),
    #[error("the host changed while this run waited for the lock: {0}")]
    ChangedWhileWaiting(PlanError),
    #[error("the persisted state: {0}")]
    Replay(PlanError),
    #[error("the persisted state {path} is unusable: {source}")]
    Persisted { path: String, source: SpecError },
    #[error(transparent)]
    Host(#[from] InventoryError),
    #[error(transparent)]
    Persist(#[from] PersistError),
    #[error(transparent)]
    Lock(#[from] LockError),
}

impl RunError {
    /// True when the operating system refused the lock or a persisted file (EACCES, EPERM).
    pub(crate) fn permission_denied(&self) -> bool {
        let source = match self {
            RunError::Lock(LockError::Open { source, .. })
            | RunError::Persist(PersistError::Write { source, .. })
            | RunError::Persist(PersistError::HalfWritten { source, .. }) => source,
            _ => return false,
        };
        source.kind() == std::io::ErrorKind::PermissionDenied
    }

    /// True when something is still different from before the run.
    pub(crate) fn left_changed(&self) -> bool {
        matches!(self, RunError::Persist(PersistError::HalfWritten { .. }))
    }

    /// The exit status (docs/reference.md §1): 2 for unusable input, which writes nothing, 1 for
    /// a run that failed.
    pub(crate) fn exit(&self) -> Exit {
        match self {
            RunError::Input(_)
            | RunError::Root { .. }
            | RunError::NotMdName { .. }
            | RunError::Refused(_) => Exit::Input,
            _ => Exit::Failed,
        }
    }
}
