//! Applying a plan's writes, all or nothing: the writes of a plan in order, each written and read
//! back, a sync paused around those that must not go into one ([`super::pause`]), and on the
//! first failure every value this run changed restored, newest first ([`super::order`]), before
//! the failure is reported with what was put back and what could not be. SIGINT, SIGTERM and
//! SIGHUP are held off for the whole of it (`crate::sys::SignalsDeferred`): one that arrives is a
//! failure like a write's, seen before the next write and once more at the end, so that an
//! interrupted run leaves nothing changed and no sync paused.

use super::one_write::{write_checked, ApplyError, Target, Write};
use super::order::{in_kernel_order, rollback_order};
use super::pause::{Paused, Pauses};
use crate::md::Value;
use crate::plan::Plan;
use crate::sys::{signal_caught, Root, SignalsDeferred};
use std::time::Duration;

/// Every due write of a plan that is not held back, in order: arrays in plan order (each in
/// attribute order, its stripe cache and threshold as `in_kernel_order` puts them), then the
/// system limits.
pub fn writes(plan: &Plan) -> Vec<Write> {
    let md = plan.arrays.iter().flat_map(|a| {
        let ws = a.changes.iter().filter(|c| c.is_write()).map(|c| Write {
            target: Target::Md {
                array: a.name.clone(),
                attr: c.attr,
            },
            before: c.before,
            after: c.after,
        });
        in_kernel_order(ws.collect(), true)
    });
    let limits = plan
        .limits
        .iter()
        .filter(|l| l.before != l.after)
        .map(|l| Write {
            target: Target::Limit(l.limit),
            before: l.before,
            after: l.after,
        });
    md.chain(limits).collect()
}

/// A failed run: what went wrong, what was put back, and what could not be.
#[derive(Debug)]
pub struct Failure {
    pub error: ApplyError,
    pub rolled_back: Vec<Write>,
    pub not_restored: Vec<NotRestored>,
    /// A sync paused for the run's writes that could not be resumed: what is left and how to
    /// resume it.
    pub not_resumed: Vec<String>,
}

/// A value a rollback could not put back (docs/reference.md §3).
#[derive(Debug)]
pub struct NotRestored {
    pub write: Write,
    pub error: ApplyError,
    /// The value the kernel holds now, as far as it could be read: after a second failed write
    /// it is neither the original nor the value wanted.
    pub now: Option<Value>,
}

/// What applying did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Writes that took effect (and stayed, unless `failure` says they were rolled back).
    pub(crate) done: Vec<Write>,
    pub failure: Option<Failure>,
    /// The syncs paused around writes (a rollback's included), in order.
    pub(crate) paused: Vec<Paused>,
}

/// Applies `writes` in order. `save_original` runs before each write (the persistence layer saves
/// the value for `state: reverted` there); if it fails, nothing more is written. A sync that a
/// write must not go into is paused around the array's writes; `stop_wait` bounds how long it may
/// take to stop.
pub fn apply(
    root: &Root,
    writes: Vec<Write>,
    stop_wait: Duration,
    save_original: &mut dyn FnMut(&Write) -> Result<(), ApplyError>,
) -> Outcome {
    // A converged run writes nothing and installs no handler.
    let _deferred = (!writes.is_empty()).then(SignalsDeferred::start);
    let mut outcome = Outcome::default();
    let mut pauses = Pauses::new(stop_wait);
    for w in writes {
        let step = interrupted()
            .and_then(|()| pauses.before(root, &w.target))
            .and_then(|()| save_original(&w))
            .and_then(|()| write_checked(root, &w.target, w.after));
        if let Err(error) = step {
            // A write that reached the kernel and failed may still have changed the value (a
            // partial store, a value not kept): restore it too. One that never got that far
            // (refused path, unopenable file, original not saved, a sync not paused) changed
            // nothing.
            let mut undo = outcome.done.clone();
            if matches!(
                error,
                ApplyError::Write { .. } | ApplyError::NotKept { .. } | ApplyError::ReadBack { .. }
            ) {
                undo.push(w);
            }
            fail(root, &mut outcome, pauses, undo, error, stop_wait);
            return outcome;
        }
        pauses.wrote(&w.target);
        outcome.done.push(w);
    }
    // The last array's sync goes on; one that cannot is a failure like a write's, and so is a
    // signal that came at any point until it runs again.
    match interrupted()
        .and_then(|()| pauses.end(root))
        .and_then(|()| interrupted())
    {
        Ok(()) => outcome.paused = pauses.finish().0,
        Err(error) => {
            let undo = outcome.done.clone();
            fail(root, &mut outcome, pauses, undo, error, stop_wait);
        }
    }
    outcome
}

/// `Err` once SIGINT, SIGTERM or SIGHUP has arrived during the run's writes.
fn interrupted() -> Result<(), ApplyError> {
    match signal_caught() {
        Some(signal) => Err(ApplyError::Interrupted { signal }),
        None => Ok(()),
    }
}

/// Ends a run that failed with `error`: restores `undo` (with the sync still paused where one
/// is), then resumes the sync held paused, and says what could not be resumed.
fn fail(
    root: &Root,
    outcome: &mut Outcome,
    mut pauses: Pauses,
    undo: Vec<Write>,
    error: ApplyError,
    stop_wait: Duration,
) {
    let (mut failure, rollback_paused) = rollback(root, undo, error, stop_wait);
    // A resume that failed is tried once more, after the rollback.
    let _ = pauses.end(root);
    let (paused, left) = pauses.finish();
    outcome.paused = paused;
    outcome.paused.extend(rollback_paused);
    failure.not_resumed.extend(left);
    outcome.failure = Some(failure);
}

/// Restores `done` in [`rollback_order`], pausing a sync around a restore that needs it like
/// any write; returns the failure and the syncs it paused.
fn rollback(
    root: &Root,
    done: Vec<Write>,
    error: ApplyError,
    stop_wait: Duration,
) -> (Failure, Vec<Paused>) {
    let r = restore(root, done, stop_wait);
    let failure = Failure {
        error,
        rolled_back: r.rolled_back,
        not_restored: r.not_restored,
        not_resumed: r.not_resumed,
    };
    (failure, r.paused)
}

/// What putting a run's writes back did.
#[derive(Debug, Default)]
pub struct Restored {
    pub rolled_back: Vec<Write>,
    pub not_restored: Vec<NotRestored>,
    /// A sync paused for the restores that could not be resumed: what is left and how to.
    pub not_resumed: Vec<String>,
    pub paused: Vec<Paused>,
}

/// Puts `done` back (each write's `before`), the rollback's way: in [`rollback_order`], a sync
/// paused around a restore that needs it, a value already back left alone, and what could not
/// be restored said with the value the kernel holds. A failed run's rollback, and the revert of
/// a measured run whose verdict was `slower` (`crate::measure`), both come here.
pub fn restore(root: &Root, done: Vec<Write>, stop_wait: Duration) -> Restored {
    let mut r = Restored::default();
    let mut pauses = Pauses::new(stop_wait);
    for w in rollback_order(done) {
        // The write that failed may have left the value untouched; then there is nothing to undo.
        let live = root
            .read_kernel(w.target.file())
            .ok()
            .and_then(|t| crate::md::parse_value(w.target.kind(), &t));
        if live == Some(w.before) {
            continue;
        }
        let restored = pauses
            .before(root, &w.target)
            .and_then(|()| write_checked(root, &w.target, w.before));
        match restored {
            Ok(()) => {
                pauses.wrote(&w.target);
                r.rolled_back.push(w);
            }
            Err(error) => {
                let now = match &error {
                    ApplyError::NotKept { kept, .. } => {
                        crate::md::parse_value(w.target.kind(), kept)
                    }
                    // The restore reached the kernel: read what it holds once more.
                    ApplyError::Write { .. } | ApplyError::ReadBack { .. } => root
                        .read_kernel(w.target.file())
                        .ok()
                        .and_then(|t| crate::md::parse_value(w.target.kind(), &t)),
                    // Nothing reached the kernel: what was there before the restore is there.
                    _ => live.or(Some(w.after)),
                };
                r.not_restored.push(NotRestored {
                    write: w,
                    error,
                    now,
                });
            }
        }
    }
    // Resume what the restores paused; tried twice, then said.
    if pauses.end(root).is_err() {
        let _ = pauses.end(root);
    }
    let (paused, left) = pauses.finish();
    r.not_resumed.extend(left);
    r.paused = paused;
    r
}
