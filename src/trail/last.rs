//! The record of the last run that held the host lock (docs/reference.md §6): when, by which
//! version, who, its state and how it ended. It is kept in the lock file itself,
//! `run/mdtune.lock`, written through the descriptor that holds the lock, so it needs no file
//! of its own and is as old as the boot (a `run/` on tmpfs starts empty; the udev replay that
//! tunes an array at boot is the first record). `mdtune --show` and `--metrics` read it.
//! `query` and check mode take no lock and leave it alone.

use crate::persist;
use crate::report::Report;
use serde::{Deserialize, Serialize};

/// The last run that held the lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// RFC 3339, UTC.
    pub time: String,
    pub unix: u64,
    pub version: String,
    /// The caller, as the trail names it.
    pub by: String,
    /// `present`, `reverted`, or `udev`.
    pub state: String,
    pub changed: bool,
    pub failed: bool,
}

impl LastRun {
    /// The record of a run that ended now as `report` (or failed before it had one).
    pub(crate) fn now(by: String, state: &str, report: Option<&Report>) -> LastRun {
        let unix = persist::now();
        LastRun {
            time: persist::rfc3339(unix),
            unix,
            version: persist::VERSION.to_string(),
            by,
            state: state.to_string(),
            changed: report.is_some_and(|r| r.changed),
            failed: report.is_none_or(|r| r.failed),
        }
    }

    /// One line of JSON.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string(self).unwrap_or_default();
        text.push('\n');
        text.into_bytes()
    }

    /// Reads a record; `None` for an empty lock file (no run since boot, or one of an mdtune
    /// that kept none) or one being rewritten at this moment.
    pub(crate) fn parse(bytes: &[u8]) -> Option<LastRun> {
        serde_json::from_slice(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_an_empty_lock_file_has_none() {
        let r = LastRun::now("command line, uid 0".into(), "present", None);
        assert!(r.failed && !r.changed);
        assert_eq!(LastRun::parse(&r.to_bytes()), Some(r));
        assert_eq!(LastRun::parse(b""), None);
        assert_eq!(LastRun::parse(b"{\"time\": "), None);
    }
}
