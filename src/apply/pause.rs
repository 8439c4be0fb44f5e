//! Writes that must not go into a running sync (docs/reference.md §4). Before the first write of
//! an array that suspends it ([`kernel::PAUSED_FOR`]), the array's `sync_action` is read again;
//! when it shows a resync, recovery, check or repair, the sync is frozen and mdtune waits until
//! no sync thread runs. A check or repair is then set to start again where it stopped
//! (`sync_min`, as mdcheck resumes one); a resync or recovery keeps the kernel's own checkpoint.
//! The array's writes go in, and before the next array's writes (or at the end) the sync is
//! resumed. One array is paused at a time.
//!
//! What the kernel does (drivers/md/md.c, every kernel from 5.10 to 7.x): `action_store` with
//! `frozen` sets `MD_RECOVERY_FROZEN` and interrupts the sync thread, returning once it has
//! exited (`md_reap_sync_thread` up to 6.6, `stop_sync_thread` from 6.7); `md_do_sync`, when
//! interrupted, keeps where a requested sync stood in `resync_min` (`sync_min`), a resync's in
//! `recovery_cp` and a recovery's in each member's `recovery_offset`; `check` or `repair` starts
//! a requested sync at `resync_min`, and `idle` lets `md_check_recovery` start a resync or
//! recovery again from its checkpoint.

use super::write::{ApplyError, Target};
use crate::md::kernel;
use crate::md::sync::{FREEZE, STOPPED, SYNC_ACTION, SYNC_COMPLETED, SYNC_MIN};
use crate::md::{parse_progress, Attr, SyncRun};
use crate::sys::{self, KernelFile, Root};
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
}

impl Paused {
    /// What to do by hand to resume it.
    pub(crate) fn how_to_resume(&self) -> String {
        let write =
            |file: &str, text: &str| format!("echo {text} > /sys/block/{}/md/{file}", self.array);
        match (self.action.resumes_from_sync_min(), self.resumed_from) {
            (true, Some(from)) => format!(
                "{}; {}",
                write(SYNC_MIN, &from.to_string()),
                write(SYNC_ACTION, self.action.resume_command())
            ),
            _ => write(SYNC_ACTION, self.action.resume_command()),
        }
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

    /// Resumes the sync held paused, if any. On failure it stays held, so that a later `end`
    /// tries again.
    pub(crate) fn end(&mut self, root: &Root) -> Result<(), ApplyError> {
        let Some(mut p) = self.held.take() else {
            return Ok(());
        };
        match control(root, &p.array, SYNC_ACTION, p.action.resume_command()) {
            Ok(()) => {
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
                "{}: the {} is left frozen (paused at {}): resume it with: {}",
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

/// Pauses the sync running on `target`'s array, if one runs: freezes it, waits until it has
/// stopped, and for a check or repair makes sure it starts again where it stopped. `Ok(None)`
/// when no sync runs (or the array has no sync files).
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
    let Some(run) = SyncRun::running(&action) else {
        return Ok(None);
    };
    let paused_at = read(root, array, SYNC_COMPLETED)
        .ok()
        .and_then(|t| parse_progress(&t));
    control(root, array, SYNC_ACTION, FREEZE).map_err(|e| {
        refuse(format!(
            "the {run} it runs could not be paused: writing {FREEZE} to md/{SYNC_ACTION} \
             failed: {e}"
        ))
    })?;
    let start = Instant::now();
    loop {
        let now = read(root, array, SYNC_COMPLETED);
        if now.as_deref().is_ok_and(|t| t == STOPPED) {
            break;
        }
        if start.elapsed() >= wait {
            let resumed = control(root, array, SYNC_ACTION, run.resume_command());
            let shown = now.unwrap_or_else(|e| format!("cannot be read: {e}"));
            return Err(refuse(format!(
                "the {run} it runs did not stop within {} ms of {FREEZE} (md/{SYNC_COMPLETED} \
                 reads {shown}); {}",
                wait.as_millis(),
                match resumed {
                    Ok(()) => format!("the {run} was resumed"),
                    Err(e) => format!("resuming it failed too ({e}): it may be left frozen"),
                }
            )));
        }
        sleep(POLL);
    }
    let resumed_from = if run.resumes_from_sync_min() {
        resume_point(root, array, paused_at.map(|[done, _]| done))
    } else {
        None
    };
    Ok(Some(Paused {
        array: array.clone(),
        action: run,
        settings: Vec::new(),
        paused_at,
        resumed_from,
        resumed: false,
    }))
}

/// Where a stopped check or repair starts again: the kernel keeps where it stopped in
/// `sync_min` (`md_do_sync`: `resync_min = curr_resync_completed` when a requested sync is
/// interrupted); where that is behind the progress read before the pause, `sync_min` is set to
/// it, as mdcheck does (`min_sync_store` rounds it down to 8 sectors).
fn resume_point(root: &Root, array: &str, done: Option<u64>) -> Option<u64> {
    let min = read(root, array, SYNC_MIN)
        .ok()
        .and_then(|t| t.parse::<u64>().ok());
    match (min, done) {
        (Some(m), Some(d)) if m >= d => Some(m),
        (_, Some(d)) => {
            let from = d - d % 8;
            match control(root, array, SYNC_MIN, &from.to_string()) {
                Ok(()) => Some(from),
                // Not set: it starts again where the kernel keeps it.
                Err(_) => min,
            }
        }
        (m, None) => m,
    }
}

/// The trimmed text of `md/<file>` of `array`.
fn read(root: &Root, array: &str, file: &str) -> io::Result<String> {
    root.read_kernel(KernelFile::Md { array, attr: file })
        .map(sys::trimmed)
}

/// Writes `text` to `md/<file>` of `array` (a sync control: no value to read back).
fn control(root: &Root, array: &str, file: &str, text: &str) -> io::Result<()> {
    let mut f = root.open_kernel(KernelFile::Md { array, attr: file }, true)?;
    sys::write_value(&mut f, text)
}
