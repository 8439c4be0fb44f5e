//! Writes that must not go into a running sync (docs/reference.md §4). Before the first write of
//! an array that suspends it ([`kernel::PAUSED_FOR`]), the array's `sync_action` is read again;
//! when it shows a resync, recovery, check or repair, the sync is frozen and mdtune waits until
//! no sync thread runs. A check or repair is then set to start again where it stopped
//! (`sync_min`, as mdcheck resumes one); a resync or recovery keeps the kernel's own checkpoint.
//! The array's writes go in, and before the next array's writes (or at the end) the sync is
//! resumed. One array is paused at a time, and every pause is recorded under `run/mdtune/`
//! before its freeze and until its resume (`super::record`), so that one a killed run left is
//! found and resumed. `sync_min` and `sync_max` are read before the freeze and put back before
//! the resume: the kernel resets `sync_min` of a sync that read `delayed`. An array whose
//! `sync_action` already reads `frozen` (another tool's freeze, not mdtune's) is written only
//! once its sync thread has stopped (`sync_completed` reads `none`; from 6.7 `frozen` shows
//! before the thread has stopped), and mdtune never resumes it.
//!
//! What the kernel does (drivers/md/md.c, every kernel from 5.10 to 7.x): `action_store` with
//! `frozen` sets `MD_RECOVERY_FROZEN` and interrupts the sync thread, returning once it has
//! exited (`md_reap_sync_thread` up to 6.6, `stop_sync_thread` from 6.7); `md_do_sync`, when
//! interrupted, keeps where a requested sync stood in `resync_min` (`sync_min`), a resync's in
//! `recovery_cp` and a recovery's in each member's `recovery_offset`; `check` or `repair` starts
//! a requested sync at `resync_min`, and `idle` lets `md_check_recovery` start a resync or
//! recovery again from its checkpoint.

use super::one_write::{ApplyError, Target};
use super::record::{self, control, put, read};
use crate::host::PauseRecord as Record;
use crate::md::kernel;
use crate::md::sync::{FREEZE, STOPPED, SYNC_ACTION, SYNC_COMPLETED, SYNC_MAX, SYNC_MIN};
use crate::md::{parse_progress, Attr, SyncRun};
use crate::sys::Root;
use serde::Serialize;
use std::io;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How often a pause looks whether the sync has stopped.
const POLL: Duration = Duration::from_millis(20);

/// A sync paused around writes, as the report tells it (`arrays[].sync_pause`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Paused {
    #[serde(skip)]
    pub(crate) array: String,
    pub(crate) action: SyncRun,
    /// The settings written while it was paused.
    pub(crate) settings: Vec<Attr>,
    /// `[done, total]` sectors when it was paused; `None` while it waited its turn (`delayed`).
    pub(crate) paused_at: Option<[u64; 2]>,
    /// Where a check or repair starts again (`sync_min`); `None` for a resync or a recovery,
    /// which start again from the kernel's own checkpoint.
    pub(crate) resumed_from: Option<u64>,
    pub(crate) resumed: bool,
    /// What resuming it needs, as recorded under `run/mdtune/`.
    #[serde(skip)]
    pub(crate) record: Box<Record>,
}

impl Paused {
    /// What to do by hand to resume it.
    pub(crate) fn how_to_resume(&self) -> String {
        self.record.how_to_resume()
    }
}

/// The pauses of one run (or one rollback): the one held, and those that ended.
pub(crate) struct Pauses {
    held: Option<Paused>,
    wait: Duration,
    done: Vec<Paused>,
}

impl Pauses {
    /// `wait`: how long a frozen sync may take to stop.
    pub(crate) fn new(wait: Duration) -> Pauses {
        Pauses {
            held: None,
            wait,
            done: Vec::new(),
        }
    }

    /// Before writing `target`: ends the pause of another array (or before a system limit), and
    /// pauses the sync of `target`'s array when the write needs it and none is paused yet.
    pub(crate) fn before(&mut self, root: &Root, target: &Target) -> Result<(), ApplyError> {
        let Target::Md { array, attr } = target else {
            return self.end(root);
        };
        if self.held.as_ref().is_some_and(|p| p.array != *array) {
            self.end(root)?;
        }
        if self.held.is_none() && kernel::PAUSED_FOR.contains(attr) {
            self.held = pause(root, target, self.wait)?;
        }
        Ok(())
    }

    /// `target` was written: with its array's sync paused, if it is.
    pub(crate) fn wrote(&mut self, target: &Target) {
        if let (Some(p), Target::Md { attr, .. }) = (self.held.as_mut(), target) {
            p.settings.push(*attr);
        }
    }

    /// Resumes the sync held paused, if any, with its window put back, and removes its record.
    /// On failure it stays held (and recorded), so that a later `end` or `mdtune --tick` tries
    /// again.
    pub(crate) fn end(&mut self, root: &Root) -> Result<(), ApplyError> {
        let Some(mut p) = self.held.take() else {
            return Ok(());
        };
        match record::resume(root, &p.record) {
            Ok(()) => {
                // A record left behind names a sync that runs: the next run drops it.
                let _ = record::remove(root, &p.array);
                p.resumed = true;
                self.done.push(p);
                Ok(())
            }
            Err(source) => {
                let e = ApplyError::Resume {
                    array: p.array.clone(),
                    run: p.action,
                    source,
                };
                self.held = Some(p);
                Err(e)
            }
        }
    }

    /// Every pause, ended or not, and for one still held (its resume failed twice) what is left:
    /// the sync frozen, and how to resume it.
    pub(crate) fn finish(mut self) -> (Vec<Paused>, Option<String>) {
        let left = self.held.take().map(|p| {
            let text = format!(
                "{}: the {} is left frozen (paused at {}): resume it with {}",
                p.array,
                p.action,
                p.paused_at
                    .map_or("an unknown position".into(), |[d, t]| format!("{d} / {t}")),
                p.how_to_resume()
            );
            self.done.push(p);
            text
        });
        (self.done, left)
    }
}

/// Pauses the sync running on `target`'s array, if one runs: records the pause, freezes it,
/// waits until it has stopped, and for a check or repair makes sure it starts again where it
/// stopped. `Ok(None)` when no sync runs (or the array has no sync files); an array another tool
/// froze is waited for until its sync has stopped, and not paused.
fn pause(root: &Root, target: &Target, wait: Duration) -> Result<Option<Paused>, ApplyError> {
    let Target::Md { array, .. } = target else {
        return Ok(None);
    };
    let refuse = |why: String| ApplyError::Pause {
        target: target.clone(),
        why,
    };
    let action = match read(root, array, SYNC_ACTION) {
        Ok(a) => a,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(format!("md/{SYNC_ACTION} cannot be read: {e}"))),
    };
    if action == "reshape" {
        return Err(ApplyError::Reshaping {
            target: target.clone(),
        });
    }
    if action == FREEZE {
        return match stopped(root, array, wait) {
            Ok(()) => Ok(None),
            Err(shown) => Err(refuse(format!(
                "md/{SYNC_ACTION} reads {FREEZE} (not mdtune's pause), but its sync did not stop \
                 within {} ms (md/{SYNC_COMPLETED} reads {shown})",
                wait.as_millis()
            ))),
        };
    }
    let Some(run) = SyncRun::running(&action) else {
        return Ok(None);
    };
    let mut rec = Record::new(
        array,
        run,
        read(root, array, SYNC_COMPLETED)
            .ok()
            .and_then(|t| parse_progress(&t)),
    );
    rec.sync_min = read(root, array, SYNC_MIN)
        .ok()
        .and_then(|t| t.parse().ok());
    rec.sync_max = read(root, array, SYNC_MAX).ok();
    record::write(root, &rec).map_err(|e| {
        refuse(format!(
            "the {run} it runs was not paused: the pause cannot be recorded under \
             /run/mdtune/: {e}"
        ))
    })?;
    freeze(root, &mut rec, wait).map_err(refuse)?;
    Ok(Some(Paused {
        array: array.clone(),
        action: run,
        settings: Vec::new(),
        paused_at: rec.paused_at,
        resumed_from: rec.start_again(),
        resumed: false,
        record: Box::new(rec),
    }))
}

/// Freezes the recorded sync and waits until it has stopped, then puts its window back. On
/// failure the sync runs again, unrecorded, or the error says it may be left frozen.
fn freeze(root: &Root, rec: &mut Record, wait: Duration) -> Result<(), String> {
    let (array, run) = (rec.array.clone(), rec.run().unwrap_or(SyncRun::Check));
    if let Err(e) = control(root, &array, SYNC_ACTION, FREEZE) {
        let _ = record::remove(root, &array);
        return Err(format!(
            "the {run} it runs could not be paused: writing {FREEZE} to md/{SYNC_ACTION} \
             failed: {e}"
        ));
    }
    if let Err(shown) = stopped(root, &array, wait) {
        let resumed = control(root, &array, SYNC_ACTION, run.resume_command());
        if resumed.is_ok() {
            let _ = record::remove(root, &array);
        }
        return Err(format!(
            "the {run} it runs did not stop within {} ms of {FREEZE} (md/{SYNC_COMPLETED} \
             reads {shown}); {}",
            wait.as_millis(),
            match resumed {
                Ok(()) => format!("the {run} was resumed"),
                Err(e) => format!(
                    "resuming it failed too ({e}): it is left frozen; resume it with {}",
                    rec.how_to_resume()
                ),
            }
        ));
    }
    if run.resumes_from_sync_min() {
        rec.resume_from = Some(resume_point(root, rec));
        // Best effort: a record without it resumes from where the sync stood.
        let _ = record::write(root, rec);
    }
    Ok(())
}

/// Waits until no sync thread runs on `array` (`sync_completed` reads `none`), at most `wait`;
/// on time-out, what `sync_completed` read last.
fn stopped(root: &Root, array: &str, wait: Duration) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let now = read(root, array, SYNC_COMPLETED);
        if now.as_deref().is_ok_and(|t| t == STOPPED) {
            return Ok(());
        }
        if start.elapsed() >= wait {
            return Err(now.unwrap_or_else(|e| format!("cannot be read: {e}")));
        }
        sleep(POLL);
    }
}

/// Where a stopped check or repair starts again, set in `sync_min` now (it cannot be while the
/// sync runs: `min_sync_store` returns EBUSY). The kernel keeps where it stopped in `sync_min`
/// (`md_do_sync`: `resync_min = curr_resync_completed` when a requested sync is interrupted);
/// where that is behind the progress read before the pause, or was reset to 0 for a `delayed`
/// sync, `sync_min` is set from the record (rounded down to 8 sectors, as mdcheck does), and
/// `sync_max` put back as it read before the freeze.
fn resume_point(root: &Root, rec: &Record) -> u64 {
    let kept = read(root, &rec.array, SYNC_MIN)
        .ok()
        .and_then(|t| t.parse::<u64>().ok());
    let from = match (rec.paused_at, kept) {
        (Some([done, _]), Some(k)) if k >= done => k,
        _ => rec.start_again().unwrap_or(0),
    };
    if let Some(max) = &rec.sync_max {
        let _ = put(root, &rec.array, SYNC_MAX, max);
    }
    if kept == Some(from) || control(root, &rec.array, SYNC_MIN, &from.to_string()).is_ok() {
        from
    } else {
        // Not set: it starts again where the kernel keeps it.
        kept.unwrap_or(from)
    }
}
