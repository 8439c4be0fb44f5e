//! The order the kernel takes an array's `stripe_cache_size` and `preread_bypass_threshold` in,
//! forward and in a rollback (`crate::plan::cache_order` decides from the values: the kernel
//! refuses a threshold above the cache in force, and a threshold above the cache is a state it
//! allows), and the order a rollback restores a run's writes in: newest first, each target once.

use super::one_write::{Target, Write};
use crate::md::{kernel, Attr, Value};
use crate::plan::{cache_order, CacheOrder};

/// Puts each array's `stripe_cache_size` and `preread_bypass_threshold` writes in `ws` in an
/// order whose every step the kernel accepts ([`cache_order`]), where the first of the two stood.
/// `forward`: each write takes its target from `before` to `after` (a plan); otherwise from
/// `after` back to `before` (a rollback, which writes `before`).
pub(super) fn in_kernel_order(mut ws: Vec<Write>, forward: bool) -> Vec<Write> {
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
pub(super) fn rollback_order(done: Vec<Write>) -> Vec<Write> {
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
