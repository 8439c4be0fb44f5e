//! The pauses mdtune recorded on this host (docs/reference.md §4, "A pause that always ends"):
//! `run/mdtune/pause-<array>.json`, written by `crate::apply` before it writes `frozen` and
//! removed once the sync is resumed. A record found while no run holds the host lock is stale:
//! a run was killed (SIGKILL, an OOM kill) between the two, and left the sync frozen; while it
//! stays frozen md starts no sync and adds no spare (`md_check_recovery` skips a frozen array),
//! so a member that fails is not rebuilt onto the hot spare. Here the records are read, for the
//! inventory to say who froze a sync ([`FrozenBy`]) and for `crate::apply` to resume it.
//!
//! A record holds what resuming needs: the sync that ran, where it stood, and `sync_min` and
//! `sync_max` as they read before the freeze (an mdcheck window's bounds, which the kernel resets
//! for a sync that read `delayed`). `run/` is cleared by a reboot, with the freeze itself.

use crate::md::sync::{SYNC_ACTION, SYNC_MAX, SYNC_MIN};
use crate::md::SyncRun;
use crate::sys::Root;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// A record file's name: `pause-<array>.json`.
const PREFIX: &str = "pause-";
const SUFFIX: &str = ".json";

/// One pause, as recorded before its freeze.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub array: String,
    /// The sync that ran: `check`, `repair`, `resync` or `recover`.
    pub action: String,
    /// `[done, total]` sectors before the freeze; `None` for a sync that read `delayed`.
    pub paused_at: Option<[u64; 2]>,
    /// `sync_min` before the freeze.
    pub sync_min: Option<u64>,
    /// `sync_max` before the freeze (`max` or a number of sectors).
    pub sync_max: Option<String>,
    /// Where a check or repair starts again, once the pause has decided it.
    #[serde(default)]
    pub resume_from: Option<u64>,
    /// The run that paused it, and when (seconds since the epoch).
    pub pid: u32,
    pub since: u64,
}

impl Record {
    pub(crate) fn new(array: &str, run: SyncRun, paused_at: Option<[u64; 2]>) -> Record {
        Record {
            array: array.to_string(),
            action: run.name().to_string(),
            paused_at,
            sync_min: None,
            sync_max: None,
            resume_from: None,
            pid: std::process::id(),
            since: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// The sync it paused (`None` for a record mdtune did not write).
    pub(crate) fn run(&self) -> Option<SyncRun> {
        SyncRun::running(&self.action)
    }

    /// Where a check or repair starts again: where the pause decided, else where it stood (to a
    /// multiple of 8 sectors, as `min_sync_store` rounds), but never before the window's start;
    /// a `delayed` one at the window's start (the kernel reset `sync_min` to 0 for it).
    pub(crate) fn start_again(&self) -> Option<u64> {
        if !self.run()?.resumes_from_sync_min() {
            return None;
        }
        self.resume_from.or_else(|| match self.paused_at {
            Some([done, _]) => Some((done - done % 8).max(self.sync_min.unwrap_or(0))),
            None => self.sync_min,
        })
    }

    /// The commands that resume it by hand.
    pub(crate) fn how_to_resume(&self) -> String {
        let write =
            |file: &str, text: &str| format!("echo {text} > /sys/block/{}/md/{file}", self.array);
        let mut steps = Vec::new();
        // `max` is what the kernel keeps anyway: only a window's end is worth the line.
        if let Some(max) = self.sync_max.as_deref().filter(|m| *m != "max") {
            steps.push(write(SYNC_MAX, max));
        }
        if let Some(from) = self.start_again() {
            steps.push(write(SYNC_MIN, &from.to_string()));
        }
        let resume = self.run().map_or("idle", SyncRun::resume_command);
        steps.push(write(SYNC_ACTION, resume));
        format!("mdtune --tick (or by hand: {})", steps.join("; "))
    }
}

pub(crate) fn path(root: &Root, array: &str) -> PathBuf {
    root.saved_state().join(format!("{PREFIX}{array}{SUFFIX}"))
}

/// Every pause record under `run/mdtune/`, each read, or the file and why it cannot be.
pub fn records(root: &Root) -> Vec<Result<Record, String>> {
    let Ok(Some(dir)) = root.dir_beneath(&root.saved_state()) else {
        return Vec::new();
    };
    let mut names = dir.list_with(PREFIX).unwrap_or_default();
    names.retain(|n| n.ends_with(SUFFIX));
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let shown = format!("/run/mdtune/{name}");
            let bytes = dir
                .read_bytes(&name)
                .map_err(|e| format!("{shown} cannot be read: {e}"))?;
            serde_json::from_slice::<Record>(&bytes)
                .ok()
                .filter(|r| format!("{PREFIX}{}{SUFFIX}", r.array) == name && r.run().is_some())
                .ok_or_else(|| format!("{shown} is not a pause record mdtune wrote"))
        })
        .collect()
}

/// Who froze an array's sync (`sync_action` reads `frozen`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "lowercase")]
pub enum FrozenBy {
    /// An mdtune run's pause, still recorded: `running` while that run's process is alive
    /// (`proc/<pid>/comm` reads `mdtune`), else a killed run's, which `resume` resumes.
    Mdtune {
        pid: u32,
        since: u64,
        running: bool,
        resume: String,
    },
    /// Something else (`echo frozen`, another tool): mdtune never resumes it.
    Other,
}

impl FrozenBy {
    /// `mdtune` or `other`, as the metrics' `by` label says it.
    pub fn label(&self) -> &'static str {
        match self {
            FrozenBy::Mdtune { .. } => "mdtune",
            FrozenBy::Other => "other",
        }
    }

    /// One sentence for `--show`, `--verify` and the warnings.
    pub fn describe(&self, array: &str) -> String {
        let why = "while frozen, md starts no resync and no rebuild onto a spare";
        match self {
            FrozenBy::Mdtune {
                pid, running: true, ..
            } => format!(
                "{array}: its sync is paused by a running mdtune (pid {pid}) around its writes"
            ),
            FrozenBy::Mdtune { pid, resume, .. } => format!(
                "{array}: its sync is frozen by an mdtune run (pid {pid}) that was killed \
                 mid-pause; {why}: resume it with {resume}"
            ),
            FrozenBy::Other => format!(
                "{array}: its sync is frozen (md/sync_action reads frozen), not by mdtune; {why}: \
                 resume it with echo idle > /sys/block/{array}/md/sync_action once whoever froze \
                 it is done"
            ),
        }
    }
}

/// Who froze the sync of `array`, whose `sync_action` reads `frozen`.
pub(crate) fn frozen_by(root: &Root, array: &str, recorded: &[Record]) -> FrozenBy {
    match recorded.iter().find(|r| r.array == array) {
        Some(r) => FrozenBy::Mdtune {
            pid: r.pid,
            since: r.since,
            running: root
                .read_text(&root.proc_comm(r.pid))
                .is_ok_and(|c| c.trim() == "mdtune"),
            resume: r.how_to_resume(),
        },
        None => FrozenBy::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(action: &str, paused_at: Option<[u64; 2]>, min: u64) -> Record {
        Record {
            sync_min: Some(min),
            sync_max: Some("max".into()),
            ..Record::new("md0", SyncRun::running(action).unwrap(), paused_at)
        }
    }

    #[test]
    fn a_check_starts_again_where_it_stood_never_before_its_window() {
        assert_eq!(
            rec("check", Some([4099, 9000]), 0).start_again(),
            Some(4096)
        );
        assert_eq!(
            rec("check", Some([4099, 9000]), 8000).start_again(),
            Some(8000)
        );
    }

    #[test]
    fn a_delayed_check_starts_again_at_its_window_not_at_zero() {
        assert_eq!(rec("check", None, 2048).start_again(), Some(2048));
    }

    #[test]
    fn a_resync_starts_again_from_the_kernels_checkpoint() {
        assert_eq!(rec("resync", Some([4099, 9000]), 0).start_again(), None);
        assert!(rec("resync", None, 0)
            .how_to_resume()
            .ends_with("sync_action)"));
    }
}
