//! md's sync controls: which of the actions `md/sync_action` shows is a sync that runs, what
//! pausing one and resuming it writes, and where each kind starts again. Pure vocabulary: the
//! files are written by `crate::apply`, and whether a write needs a pause is
//! [`super::kernel::PAUSED_FOR`]'s.

use serde::{Serialize, Serializer};
use std::fmt;

/// `md/sync_action`: what a write of `frozen` stops, and what a later write resumes.
pub(crate) const SYNC_ACTION: &str = "sync_action";
/// `md/sync_completed`: `N / M` sectors while a sync runs, `none` once no sync thread runs
/// (`sync_completed_show`: `MD_RECOVERY_RUNNING` clear), `delayed` while it waits its turn.
pub(crate) const SYNC_COMPLETED: &str = "sync_completed";
/// `md/sync_min`: where a requested sync (check, repair) starts (`min_sync_store`: EBUSY while
/// a sync runs; rounded down to 8 sectors).
pub(crate) const SYNC_MIN: &str = "sync_min";
/// `md/sync_max`: where a requested sync stops (`max` or sectors; an mdcheck window's end).
pub(crate) const SYNC_MAX: &str = "sync_max";
/// What stops a running sync and keeps md from starting another (`action_store`: sets
/// `MD_RECOVERY_FROZEN`, interrupts the sync thread and waits until it has exited).
pub(crate) const FREEZE: &str = "frozen";
/// What `sync_completed` reads once no sync thread runs.
pub(crate) const STOPPED: &str = "none";

/// A sync that runs: the four actions of `sync_action` a pause may interrupt. A reshape is not
/// one of them (writes that need a pause wait for it to end instead, `crate::plan::hold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncRun {
    /// The array's own resync (a new array, or one stopped uncleanly).
    Resync,
    /// A rebuild onto a spare or a re-added member.
    Recover,
    /// A scrub that counts mismatches (`mdcheck`, `checkarray`).
    Check,
    /// A scrub that corrects them.
    Repair,
}

impl SyncRun {
    /// The sync `sync_action` shows running, if it shows one (`action_show`, md.c).
    pub(crate) fn running(action: &str) -> Option<SyncRun> {
        match action.trim() {
            "resync" => Some(SyncRun::Resync),
            "recover" => Some(SyncRun::Recover),
            "check" => Some(SyncRun::Check),
            "repair" => Some(SyncRun::Repair),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SyncRun::Resync => "resync",
            SyncRun::Recover => "recover",
            SyncRun::Check => "check",
            SyncRun::Repair => "repair",
        }
    }

    /// What to write to `sync_action` to resume it once it was frozen. A check or repair is
    /// asked for again and starts at `sync_min` (`md_do_sync`: `j = mddev->resync_min` for a
    /// requested sync); a resync or recovery comes back by itself once the array is no longer
    /// frozen (`idle`: `md_check_recovery` starts it again from the kernel's own checkpoint,
    /// `recovery_cp` or each member's `recovery_offset`).
    pub(crate) fn resume_command(self) -> &'static str {
        match self {
            SyncRun::Resync | SyncRun::Recover => "idle",
            SyncRun::Check | SyncRun::Repair => self.name(),
        }
    }

    /// True if and only if it resumes from `sync_min`, which mdtune can read and set (a check
    /// or repair, as mdcheck resumes one).
    pub(crate) fn resumes_from_sync_min(self) -> bool {
        matches!(self, SyncRun::Check | SyncRun::Repair)
    }
}

impl fmt::Display for SyncRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for SyncRun {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_four_syncs_run_and_each_resumes_as_md_restarts_it() {
        let runs: Vec<Option<SyncRun>> = [
            "resync\n", "recover", "check", "repair", "idle", "frozen", "reshape", "",
        ]
        .into_iter()
        .map(SyncRun::running)
        .collect();
        assert_eq!(
            runs,
            [
                Some(SyncRun::Resync),
                Some(SyncRun::Recover),
                Some(SyncRun::Check),
                Some(SyncRun::Repair),
                None,
                None,
                None,
                None
            ]
        );
        assert_eq!(SyncRun::Check.resume_command(), "check");
        assert_eq!(SyncRun::Repair.resume_command(), "repair");
        assert_eq!(SyncRun::Resync.resume_command(), "idle");
        assert_eq!(SyncRun::Recover.resume_command(), "idle");
        assert!(SyncRun::Check.resumes_from_sync_min() && !SyncRun::Resync.resumes_from_sync_min());
    }
}
