//! Applying a plan: the only code that writes kernel values. Under the host lock its caller holds
//! (`crate::run`), it writes each due value in plan order, reads it back, and on the first
//! failure restores everything this run changed before reporting the failure, newest first. An
//! array's `stripe_cache_size` and `preread_bypass_threshold`, written or restored, go in the
//! order the values call for (`crate::plan::cache_order`): the kernel refuses a threshold above
//! the cache in force, and a threshold above the cache is a state it allows (docs/reference.md §4).
//!
//! Invariants: a value already in place is never written (on Linux 6.7+ every write to
//! `group_thread_cnt` or `skip_copy` suspends the array, and a `stripe_cache_size` write dirties
//! the superblock); only attributes from [`Attr::ALL`] are written; each write and its read-back
//! is opened beneath `sys/` (the speed limits: beneath the root), and one whose path leads out
//! of it is refused (docs/reference.md §4).

use crate::md::{kernel, Attr, Kind, SpeedLimit, Value};
use crate::plan::{cache_order, CacheOrder, Plan};
use crate::sys::{self, KernelFile, Root};
use std::fmt;
use std::io;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The file could not be opened: nothing reached the kernel.
    #[error("{target}: cannot open the file to write {value}: {source}")]
    Open {
        target: Target,
        value: Value,
        source: io::Error,
    },
    /// The write itself failed: the kernel refused the value, or took part of it.
    #[error("{target}: the kernel refused {value}: {source}")]
    Write {
        target: Target,
        value: Value,
        source: io::Error,
    },
    #[error("{target}: wrote {wrote} but the kernel kept {kept}")]
    NotKept {
        target: Target,
        wrote: Value,
        kept: String,
    },
    #[error("{target}: wrote it, but reading it back failed: {source}")]
    ReadBack { target: Target, source: io::Error },
    #[error("{target}: {path} does not exist")]
    Missing { target: Target, path: String },
    #[error("{target}: refusing to write {path}: it leads out of the root")]
    Escape { target: Target, path: String },
    #[error("{target}: cannot save the original value {value} for revert: {source}")]
    SaveOriginal {
        target: Target,
        value: Value,
        source: io::Error,
    },
}

/// A value mdtune writes: an md attribute of an array, or a system speed limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Md { array: String, attr: Attr },
    Limit(SpeedLimit),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Md { array, attr } => write!(f, "{array}: {attr}"),
            Target::Limit(l) => write!(f, "system: {}", l.name()),
        }
    }
}

impl Target {
    fn kind(&self) -> Kind {
        match self {
            Target::Md { attr, .. } => attr.kind(),
            Target::Limit(_) => Kind::CInt,
        }
    }

    /// The file the value lives in, for the floor.
    fn file(&self) -> KernelFile<'_> {
        match self {
            Target::Md { array, attr } => KernelFile::Md {
                array,
                attr: attr.name(),
            },
            Target::Limit(l) => KernelFile::Limit(*l),
        }
    }

    /// The path a refusal names.
    fn shown(&self, root: &Root) -> String {
        match self {
            Target::Md { array, attr } => root.md_attr(array, attr.name()),
            Target::Limit(l) => root.speed_limit(*l),
        }
        .display()
        .to_string()
    }

    /// `e` from opening the file, as the refusal it is when the file is missing or resolving it
    /// leads out of the root (`Err(e)` otherwise).
    fn refusal(&self, root: &Root, e: io::Error) -> Result<ApplyError, io::Error> {
        let path = self.shown(root);
        if sys::leads_out(&e) {
            Ok(ApplyError::Escape {
                target: self.clone(),
                path,
            })
        } else if e.kind() == io::ErrorKind::NotFound {
            Ok(ApplyError::Missing {
                target: self.clone(),
                path,
            })
        } else {
            Err(e)
        }
    }
}

/// One value to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    pub target: Target,
    pub before: Value,
    pub after: Value,
}

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
}

/// Writes `value` to `target` and checks the kernel kept it.
///
/// The file is opened beneath the root for the write and again for the read-back
/// (docs/reference.md §4), never by a path resolved earlier.
pub(crate) fn write_checked(root: &Root, target: &Target, value: Value) -> Result<(), ApplyError> {
    let mut file = root.open_kernel(target.file(), true).map_err(|e| {
        target
            .refusal(root, e)
            .unwrap_or_else(|source| ApplyError::Open {
                target: target.clone(),
                value,
                source,
            })
    })?;
    sys::write_value(&mut file, &crate::md::kernel_text(target.kind(), value)).map_err(
        |source| ApplyError::Write {
            target: target.clone(),
            value,
            source,
        },
    )?;
    drop(file);
    let text = root
        .read_kernel(target.file())
        .map_err(|source| ApplyError::ReadBack {
            target: target.clone(),
            source,
        })?;
    // A value the kernel did not keep (stripe_cache_size after ENOMEM reads back lower) failed.
    if crate::md::parse_value(target.kind(), &text) != Some(value) {
        return Err(ApplyError::NotKept {
            target: target.clone(),
            wrote: value,
            kept: match text.trim() {
                "" => "nothing (empty read)".to_string(),
                kept => kept.to_string(),
            },
        });
    }
    Ok(())
}

/// Applies `writes` in order. `save_original` runs before each write (the persistence layer saves
/// the value for `state: reverted` there); if it fails, nothing more is written.
pub fn apply(
    root: &Root,
    writes: Vec<Write>,
    save_original: &mut dyn FnMut(&Write) -> Result<(), ApplyError>,
) -> Outcome {
    let mut outcome = Outcome::default();
    for w in writes {
        if let Err(error) = save_original(&w).and_then(|()| write_checked(root, &w.target, w.after))
        {
            // A write that reached the kernel and failed may still have changed the value (a
            // partial store, a value not kept): restore it too. One that never got that far
            // (refused path, unopenable file, original not saved) changed nothing.
            let mut undo = outcome.done.clone();
            if matches!(
                error,
                ApplyError::Write { .. } | ApplyError::NotKept { .. } | ApplyError::ReadBack { .. }
            ) {
                undo.push(w);
            }
            outcome.failure = Some(rollback(root, undo, error));
            return outcome;
        }
        outcome.done.push(w);
    }
    outcome
}

/// Puts each array's `stripe_cache_size` and `preread_bypass_threshold` writes in `ws` in an
/// order whose every step the kernel accepts ([`cache_order`]), where the first of the two stood.
/// `forward`: each write takes its target from `before` to `after` (a plan); otherwise from
/// `after` back to `before` (a rollback, which writes `before`).
fn in_kernel_order(mut ws: Vec<Write>, forward: bool) -> Vec<Write> {
    let of = |w: &Write, want: Attr| match &w.target {
        Target::Md { array, attr } if *attr == want => Some(array.clone()),
        _ => None,
    };
    let mut arrays: Vec<String> = ws
        .iter()
        .filter_map(|w| of(w, kernel::PREREAD_CAPPED_BY))
        .collect();
    arrays.dedup();
    for array in arrays {
        let find =
            |ws: &[Write], attr| ws.iter().position(|w| of(w, attr).as_ref() == Some(&array));
        let (Some(c), Some(t)) = (
            find(&ws, kernel::PREREAD_CAPPED_BY),
            find(&ws, Attr::PrereadBypassThreshold),
        ) else {
            continue;
        };
        let (cache, threshold) = (ws[c].clone(), ws[t].clone());
        let (now, to, wanted) = if forward {
            (cache.before, cache.after, threshold.after)
        } else {
            (cache.after, cache.before, threshold.before)
        };
        let (Value::Int(now), Value::Int(to), Value::Int(wanted)) = (now, to, wanted) else {
            continue;
        };
        let steps = match cache_order(now, to, wanted) {
            CacheOrder::CacheFirst => vec![cache, threshold],
            CacheOrder::ThresholdFirst => vec![threshold, cache],
            CacheOrder::Through(v) => {
                let via = Value::Int(v);
                let (first, last) = if forward {
                    let first = Write {
                        after: via,
                        ..cache.clone()
                    };
                    (
                        first,
                        Write {
                            before: via,
                            ..cache
                        },
                    )
                } else {
                    let first = Write {
                        before: via,
                        ..cache.clone()
                    };
                    (
                        first,
                        Write {
                            after: via,
                            ..cache
                        },
                    )
                };
                vec![first, threshold, last]
            }
        };
        let at = c.min(t);
        ws.remove(c.max(t));
        ws.remove(at);
        for (i, w) in steps.into_iter().enumerate() {
            ws.insert(at + i, w);
        }
    }
    ws
}

/// The order a rollback restores `done` in: one restore per target, from its last value back to
/// its first `before`, newest first, each array's stripe cache and threshold in an order the
/// kernel accepts ([`in_kernel_order`]).
pub(crate) fn rollback_order(done: Vec<Write>) -> Vec<Write> {
    let mut order: Vec<Write> = Vec::new();
    for w in done.into_iter().rev() {
        match order.iter_mut().find(|o| o.target == w.target) {
            // An earlier write of the same target: its `before` is the original.
            Some(o) => o.before = w.before,
            None => order.push(w),
        }
    }
    in_kernel_order(order, false)
}

/// Restores `done` in [`rollback_order`].
fn rollback(root: &Root, done: Vec<Write>, error: ApplyError) -> Failure {
    let mut failure = Failure {
        error,
        rolled_back: Vec::new(),
        not_restored: Vec::new(),
    };
    for w in rollback_order(done) {
        // The write that failed may have left the value untouched; then there is nothing to undo.
        let live = root
            .read_kernel(w.target.file())
            .ok()
            .and_then(|t| crate::md::parse_value(w.target.kind(), &t));
        if live == Some(w.before) {
            continue;
        }
        match write_checked(root, &w.target, w.before) {
            Ok(()) => failure.rolled_back.push(w),
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
                failure.not_restored.push(NotRestored {
                    write: w,
                    error,
                    now,
                });
            }
        }
    }
    failure
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(array: &str, attr: Attr) -> Write {
        Write {
            target: Target::Md {
                array: array.into(),
                attr,
            },
            before: Value::Int(1),
            after: Value::Int(2),
        }
    }

    fn names(ws: &[Write]) -> Vec<String> {
        ws.iter().map(|w| w.target.to_string()).collect()
    }

    #[test]
    fn rollback_restores_the_stripe_cache_before_the_threshold_otherwise_newest_first() {
        let done = vec![
            md("md0", Attr::GroupThreadCnt),
            md("md0", Attr::StripeCacheSize),
            md("md1", Attr::StripeCacheSize),
            md("md0", Attr::PrereadBypassThreshold),
            md("md0", Attr::SkipCopy),
        ];
        assert_eq!(
            names(&rollback_order(done)),
            [
                "md0: skip_copy",
                "md0: stripe_cache_size",
                "md0: preread_bypass_threshold",
                "md1: stripe_cache_size",
                "md0: group_thread_cnt",
            ]
        );
        let only_threshold = vec![md("md0", Attr::PrereadBypassThreshold)];
        assert_eq!(
            names(&rollback_order(only_threshold)),
            ["md0: preread_bypass_threshold"]
        );
    }

    fn int(array: &str, attr: Attr, before: u64, after: u64) -> Write {
        Write {
            before: Value::Int(before),
            after: Value::Int(after),
            ..md(array, attr)
        }
    }

    /// `(attr, value written)` of each step.
    fn steps(ws: &[Write], written: fn(&Write) -> Value) -> Vec<(String, Value)> {
        ws.iter()
            .map(|w| (w.target.to_string(), written(w)))
            .collect()
    }

    #[test]
    fn restores_keep_the_threshold_under_the_cache_in_force_at_every_step() {
        use Attr::{PrereadBypassThreshold as T, StripeCacheSize as C};
        let (cache, threshold) = ("md0: stripe_cache_size", "md0: preread_bypass_threshold");
        // A run took cache 256 / threshold 1000 (the kernel allows it) to 4096 / 3000, then
        // failed: the threshold goes back first.
        let done = vec![int("md0", C, 256, 4096), int("md0", T, 1000, 3000)];
        assert_eq!(
            steps(&rollback_order(done), |w| w.before),
            [
                (threshold.into(), Value::Int(1000)),
                (cache.into(), Value::Int(256))
            ]
        );
        // A revert from 200 / 100 back to 256 / 1000: through a cache of 1000.
        let revert = vec![int("md0", C, 200, 256), int("md0", T, 100, 1000)];
        let ws = in_kernel_order(revert, true);
        assert_eq!(
            steps(&ws, |w| w.after),
            [
                (cache.into(), Value::Int(1000)),
                (threshold.into(), Value::Int(1000)),
                (cache.into(), Value::Int(256))
            ]
        );
        // ... and its rollback: one restore per target, back to 200 / 100.
        assert_eq!(
            steps(&rollback_order(ws), |w| w.before),
            [
                (cache.into(), Value::Int(200)),
                (threshold.into(), Value::Int(100))
            ]
        );
    }
}
