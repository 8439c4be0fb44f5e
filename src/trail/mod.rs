//! The trail (docs/reference.md §6): every run that changes or fails to change something writes
//! one line to the system log (tag `mdtune`, read with `journalctl -t mdtune`) naming who ran
//! it and what it changed, old and new values and the persisted files; and leaves a record of
//! itself in the lock file, which `--show` and `--metrics` read as the last run. `caller` says
//! who ran a run, `line` builds its line from the report (pure), with the
//! input's `reason` for what it changed (`reason`), `syslog` sends it, `last` is the
//! lock file's record. `crate::run` calls it once a run has ended.

mod caller;
mod last;
mod line;
mod reason;
mod syslog;

pub use caller::{Caller, CALLER_ENV};
pub(crate) use last::{read as read_last_run, record};
pub use syslog::TAG;

use crate::report::Report;
use std::path::Path;

/// Writes the trail's line for a run that ended as `report`, if it changed or failed to change
/// something. `removing`: its persisted files were removed, not written.
pub(crate) fn report(root: &Path, caller: &Caller, report: &Report, removing: bool) {
    if let Some((priority, line)) = line::of_report(caller, report, removing) {
        syslog::log(root, priority, &line);
    }
}

/// Writes the trail's line for the syncs `--tick` resumed, if it resumed any.
pub(crate) fn tick(root: &Path, resumed: &[crate::apply::Resumed]) {
    if let Some((priority, line)) = line::of_tick(&Caller::tick(), resumed) {
        syslog::log(root, priority, &line);
    }
}

/// Writes the trail's line for a run that failed before it had a report.
pub(crate) fn failure(root: &Path, caller: &Caller, error: &str) {
    let (priority, line) = line::of_failure(caller, error);
    syslog::log(root, priority, &line);
}
