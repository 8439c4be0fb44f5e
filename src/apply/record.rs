//! Writing, resuming and removing the record of a pause (`crate::host::PauseRecord`, under
//! `run/mdtune/`): written before `frozen`, removed once the sync is resumed. [`resume_stale`]
//! resumes the syncs a killed run left frozen, from their records; the caller holds the host
//! lock, so no live run is in the middle of a pause.

use crate::host::{pause_path, pause_records, PauseRecord as Record};
use crate::md::sync::{FREEZE, SYNC_ACTION, SYNC_MAX, SYNC_MIN};
use crate::md::SyncRun;
use crate::sys::{self, KernelFile, Root};
use serde::Serialize;
use std::io;

/// Writes (or rewrites) the record, durably, before the freeze it records.
pub(crate) fn write(root: &Root, record: &Record) -> io::Result<()> {
    let bytes = serde_json::to_vec(record).map_err(io::Error::other)?;
    sys::write_atomic(root, &pause_path(root, &record.array), &bytes, 0o600)
}

/// Removes the record of `array`'s pause once its sync runs again.
pub(crate) fn remove(root: &Root, array: &str) -> io::Result<()> {
    sys::remove_file(root, &pause_path(root, array)).map(|_| ())
}

/// What resuming a stale pause did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resumed {
    pub array: String,
    pub action: String,
    /// Where a check or repair starts again.
    pub from: Option<u64>,
    /// The run that paused it, and when.
    pub pid: u32,
    pub since: u64,
    /// `resumed`, `not frozen` (someone resumed it or the array was stopped: the record is
    /// dropped), or why it could not be resumed (the record stays).
    pub outcome: String,
}

/// Resumes every sync a killed run left frozen, from its record, and removes the record. The
/// caller holds the host lock, so no live run is in the middle of a pause. A sync that no
/// longer reads `frozen` (resumed by hand, the array stopped or re-assembled) is left as it is.
pub fn resume_stale(root: &Root) -> Vec<Resumed> {
    let mut done = Vec::new();
    for rec in pause_records(root).into_iter().flatten() {
        let outcome = match read(root, &rec.array, SYNC_ACTION) {
            Ok(a) if a == FREEZE => match resume(root, &rec) {
                Ok(()) => "resumed".to_string(),
                Err(e) => format!(
                    "could not be resumed: {e}; resume it with {}",
                    rec.how_to_resume()
                ),
            },
            Ok(_) => "not frozen".to_string(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => "not frozen".to_string(),
            Err(e) => format!("md/{SYNC_ACTION} cannot be read: {e}"),
        };
        if outcome == "resumed" || outcome == "not frozen" {
            let _ = remove(root, &rec.array);
        }
        done.push(Resumed {
            array: rec.array.clone(),
            action: rec.action.clone(),
            from: rec.start_again(),
            pid: rec.pid,
            since: rec.since,
            outcome,
        });
    }
    done
}

/// Puts back the window (`sync_max`, then `sync_min`; `sync_max` once more if the kernel refused
/// it below the old `sync_min`), then writes the command that resumes the sync.
pub(super) fn resume(root: &Root, rec: &Record) -> io::Result<()> {
    let max_first = match &rec.sync_max {
        Some(max) => put(root, &rec.array, SYNC_MAX, max),
        None => Ok(()),
    };
    if let Some(from) = rec.start_again() {
        put(root, &rec.array, SYNC_MIN, &from.to_string())?;
    }
    if max_first.is_err() {
        if let Some(max) = &rec.sync_max {
            put(root, &rec.array, SYNC_MAX, max)?;
        }
    }
    let resume = rec.run().map_or("idle", SyncRun::resume_command);
    control(root, &rec.array, SYNC_ACTION, resume)
}

/// Writes `text` to `md/<file>` unless it already reads so.
pub(super) fn put(root: &Root, array: &str, file: &str, text: &str) -> io::Result<()> {
    if read(root, array, file).is_ok_and(|now| now == text) {
        return Ok(());
    }
    control(root, array, file, text)
}

/// The trimmed text of `md/<file>` of `array`.
pub(super) fn read(root: &Root, array: &str, file: &str) -> io::Result<String> {
    root.read_kernel(KernelFile::Md { array, attr: file })
        .map(sys::trimmed)
}

/// Writes `text` to `md/<file>` of `array` (a sync control: no value to read back).
pub(super) fn control(root: &Root, array: &str, file: &str, text: &str) -> io::Result<()> {
    let mut f = root.open_kernel(KernelFile::Md { array, attr: file }, true)?;
    sys::write_value(&mut f, text)
}
