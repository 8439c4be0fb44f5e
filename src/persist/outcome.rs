//! What the persist step did, as the report prints it (`persist` in docs/reference.md §3, §6):
//! the files a run wrote or removed (or would have), what the persisted state would put back
//! otherwise than this run, why the next boot would not replay it, the udev reload, and which
//! persisted state a `query` compared with. Filled in by the step (`super::step`);
//! `crate::report` prints it as it is, and `crate::run` adds a failed reload's warning.

use super::diverge::Diverged;
use super::rule::Reload;
use serde::Serialize;

/// The persisted files a run wrote or removed, or would have (check mode, `query`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Persist {
    /// True if and only if a file was (or, in check mode, would be) written or removed.
    pub(crate) changed: bool,
    /// `present` and `query`: the files due (written, or due to be); `reverted`: the files
    /// removed (or due to be).
    pub(crate) files: Vec<String>,
    /// A removal that stopped part-way (a revert, `persist: false`) or a failed persist whose
    /// undo failed: the files still there, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) left: Vec<String>,
    /// `persist` unset: what the persisted state would put back at the next boot otherwise than
    /// this run (docs/reference.md §6). Not compliant while there is any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) diverged: Vec<Diverged>,
    /// `persist` unset and the persisted state cannot be read or planned: not compliant.
    #[serde(skip)]
    pub(crate) unknown: bool,
    /// A run that compared with the persisted state (or `persist: true` without writing): why
    /// the next boot would not replay it (`crate::persist::replay`). Not compliant while there
    /// is any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_in_force: Vec<String>,
    /// Present when the udev rule was (or would be) installed or removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) udev_reload: Option<Reload>,
    /// A `query` with no desired state of its own compared with the persisted state
    /// (docs/reference.md §2): which file, and when and by which version it was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) compared_with: Option<ComparedWith>,
}

/// The persisted state a `query` compared with, when it had no desired state of its own.
#[derive(Clone, Debug, Serialize)]
pub struct ComparedWith {
    /// `/etc/mdtune/mdtune.json`.
    pub(crate) file: String,
    /// When the persisted state was last written (RFC 3339, UTC), if the manifest says.
    pub(crate) written: Option<String>,
    /// The mdtune version that wrote it, if the manifest says.
    pub(crate) version: Option<String>,
}

impl Persist {
    /// The warning a udev reload that ran and failed gives: the rule is in place, and udevd picks
    /// it up by itself within a few seconds.
    pub(crate) fn reload_warning(&self) -> Option<String> {
        let r = self.udev_reload.as_ref()?;
        (r.ran && r.result != "reloaded").then(|| {
            format!(
                "{}: {}; udevd reads the new rules at its next event after 3 s",
                r.command, r.result
            )
        })
    }
}
