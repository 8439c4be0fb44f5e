//! The verdict of a measured change, pure: from the intervals of the window before the writes
//! and the window after them, `faster`, `slower`, `same` or `inconclusive`, the figure that
//! decided and why, in words with the numbers (docs/reference.md §3 `effect`).
//!
//! The rule, in order:
//! 1. Fewer than 2 intervals on a side: `inconclusive` (no spread can be had).
//! 2. The deciding figure: the sync speed (`sync_speed_kib_s`) when a sync ran through both
//!    windows; the throughput (`bytes_per_second`, read + written) when none ran in either. A
//!    sync in part of the windows only is a load that changed: `inconclusive`.
//! 3. Too little to measure: a throughput below [`FLOOR_BYTES`] with fewer than [`FLOOR_IOS`]
//!    I/Os per second on either side (or a sync at 0 KiB/s): `inconclusive`.
//! 4. A load that shifted: the means of the first and second half of a window differ by more
//!    than [`SHIFT`] of the larger: `inconclusive`, naming the window.
//! 5. The spread: `same` when |after − before| is at most the larger of twice either side's
//!    standard deviation and [`TOLERANCE`] of before; else `faster` or `slower` by the sign.

use super::figures::Interval;
use serde::Serialize;

/// Below this throughput (1 MiB/s) ...
pub const FLOOR_BYTES: f64 = 1024.0 * 1024.0;
/// ... and this many I/Os per second, a window has too little I/O to judge.
pub const FLOOR_IOS: f64 = 10.0;
/// The largest difference between a window's halves that is not a shift of the load (25%).
pub const SHIFT: f64 = 0.25;
/// The least difference that is not `same`, however steady the samples (2% of before).
pub const TOLERANCE: f64 = 0.02;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Faster,
    Slower,
    Same,
    Inconclusive,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Faster => "faster",
            Kind::Slower => "slower",
            Kind::Same => "same",
            Kind::Inconclusive => "inconclusive",
        }
    }
}

/// A verdict, the figure it was decided on (`None` when no figure could decide) and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub kind: Kind,
    pub decided_by: Option<&'static str>,
    pub why: String,
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// A figure in its unit, for a person: `172.0 MiB/s`, `51200 KiB/s`.
fn show(figure: &str, v: f64) -> String {
    if figure == "sync_speed_kib_s" {
        format!("{v:.0} KiB/s")
    } else {
        format!("{:.1} MiB/s", v / FLOOR_BYTES)
    }
}

fn inconclusive(decided_by: Option<&'static str>, why: String) -> Verdict {
    Verdict {
        kind: Kind::Inconclusive,
        decided_by,
        why,
    }
}

/// The verdict of `after` against `before` (each a window's intervals, in order).
pub fn decide(before: &[Interval], after: &[Interval]) -> Verdict {
    if before.len() < 2 || after.len() < 2 {
        return inconclusive(
            None,
            format!(
                "too few samples to know the spread (before {}, after {}; at least 2 each: \
                 the array's stat could not be read, or it restarted)",
                before.len(),
                after.len()
            ),
        );
    }
    let synced = |w: &[Interval]| w.iter().filter(|i| i.sync_kib_s.is_some()).count();
    let (sb, sa) = (synced(before), synced(after));
    let sync = sb == before.len() && sa == after.len();
    if !sync && sb + sa > 0 {
        return inconclusive(
            None,
            format!(
                "the load changed: a sync ran in {sb} of {} samples before and {sa} of {} after",
                before.len(),
                after.len()
            ),
        );
    }
    let (figure, pick): (&'static str, fn(&Interval) -> f64) = if sync {
        ("sync_speed_kib_s", |i| i.sync_kib_s.unwrap_or(0.0))
    } else {
        ("bytes_per_second", Interval::bytes)
    };
    let xb: Vec<f64> = before.iter().map(pick).collect();
    let xa: Vec<f64> = after.iter().map(pick).collect();
    if let Some(why) = too_little(before, after, &xb, &xa, sync) {
        return inconclusive(Some(figure), why);
    }
    for (side, xs) in [("before", &xb), ("after", &xa)] {
        let half = xs.len() / 2;
        let (h1, h2) = (mean(&xs[..half]), mean(&xs[xs.len() - half..]));
        if (h1 - h2).abs() > SHIFT * h1.max(h2) {
            return inconclusive(
                Some(figure),
                format!(
                    "the load shifted during the {side} window: {} in its first half, {} in \
                     its second (more than {:.0}% apart)",
                    show(figure, h1),
                    show(figure, h2),
                    SHIFT * 100.0
                ),
            );
        }
    }
    let (mb, ma) = (mean(&xb), mean(&xa));
    let spread = (2.0 * stddev(&xb))
        .max(2.0 * stddev(&xa))
        .max(TOLERANCE * mb);
    let kind = if (ma - mb).abs() <= spread {
        Kind::Same
    } else if ma > mb {
        Kind::Faster
    } else {
        Kind::Slower
    };
    let why = format!(
        "{figure} {} -> {} (x{:.2}); the spread is ±{}",
        show(figure, mb),
        show(figure, ma),
        ma / mb,
        show(figure, spread)
    );
    Verdict {
        kind,
        decided_by: Some(figure),
        why,
    }
}

/// Why the windows have too little I/O to judge, if they have.
fn too_little(
    before: &[Interval],
    after: &[Interval],
    xb: &[f64],
    xa: &[f64],
    sync: bool,
) -> Option<String> {
    if sync {
        return (mean(xb) <= 0.0 || mean(xa) <= 0.0)
            .then(|| "the sync made no progress in a window (0 KiB/s)".to_string());
    }
    let ios = |w: &[Interval]| mean(&w.iter().map(|i| i.ios).collect::<Vec<_>>());
    let (ib, ia) = (ios(before), ios(after));
    let low = |b: f64, i: f64| b < FLOOR_BYTES && i < FLOOR_IOS;
    (low(mean(xb), ib) || low(mean(xa), ia)).then(|| {
        format!(
            "too little I/O: {:.2} MiB/s and {ib:.1} I/O per second before, {:.2} MiB/s and \
             {ia:.1} after (the floor is 1 MiB/s or 10 I/O per second on each side)",
            mean(xb) / FLOOR_BYTES,
            mean(xa) / FLOOR_BYTES
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    fn load(mibs: &[f64]) -> Vec<Interval> {
        mibs.iter()
            .map(|m| Interval {
                secs: 1.0,
                read_bytes: m * MIB * 0.8,
                write_bytes: m * MIB * 0.2,
                ios: m * 8.0,
                ticks_ms: 1.0,
                sync_kib_s: None,
            })
            .collect()
    }

    fn sync(kib: &[f64]) -> Vec<Interval> {
        kib.iter()
            .map(|k| Interval {
                secs: 1.0,
                sync_kib_s: Some(*k),
                ..Interval::default()
            })
            .collect()
    }

    #[test]
    fn more_throughput_beyond_the_spread_is_faster_and_less_is_slower() {
        let (b, a) = (
            load(&[215.0, 214.0, 216.0, 215.0]),
            load(&[525.0, 524.0, 526.0, 525.0]),
        );
        let v = decide(&b, &a);
        assert_eq!(
            (v.kind, v.decided_by),
            (Kind::Faster, Some("bytes_per_second"))
        );
        assert!(v.why.contains("x2.44"), "{}", v.why);
        assert_eq!(decide(&a, &b).kind, Kind::Slower);
    }

    #[test]
    fn a_difference_within_the_spread_or_the_tolerance_is_same() {
        let noisy = load(&[100.0, 120.0, 90.0, 110.0]);
        let v = decide(&noisy, &load(&[110.0, 100.0, 115.0, 105.0]));
        assert_eq!(v.kind, Kind::Same, "{}", v.why);
        let steady = load(&[100.0; 4]);
        assert_eq!(decide(&steady, &load(&[101.0; 4])).kind, Kind::Same);
        assert_eq!(decide(&steady, &load(&[103.0; 4])).kind, Kind::Faster);
    }

    #[test]
    fn no_io_a_shift_mid_window_or_too_few_samples_is_never_faster_or_slower() {
        let idle = load(&[0.0; 4]);
        let v = decide(&idle, &load(&[50.0; 4]));
        assert_eq!(v.kind, Kind::Inconclusive);
        assert!(v.why.contains("too little I/O"), "{}", v.why);
        // Many small I/Os are enough I/O.
        let mut small = load(&[0.5; 4]);
        small.iter_mut().for_each(|i| i.ios = 200.0);
        assert_eq!(decide(&small, &small).kind, Kind::Same);
        let v = decide(&load(&[100.0; 4]), &load(&[300.0, 300.0, 100.0, 100.0]));
        assert_eq!(v.kind, Kind::Inconclusive);
        assert!(
            v.why.contains("shifted during the after window"),
            "{}",
            v.why
        );
        let v = decide(&load(&[100.0]), &load(&[300.0]));
        assert!(v.why.contains("too few samples"), "{}", v.why);
    }

    #[test]
    fn a_sync_through_both_windows_decides_and_a_sync_in_one_only_is_a_changed_load() {
        let v = decide(
            &sync(&[50000.0; 4]),
            &sync(&[80000.0, 81000.0, 79000.0, 80000.0]),
        );
        assert_eq!(
            (v.kind, v.decided_by),
            (Kind::Faster, Some("sync_speed_kib_s"))
        );
        assert!(v.why.contains("50000 KiB/s -> 80000 KiB/s"), "{}", v.why);
        let v = decide(&sync(&[50000.0; 4]), &load(&[100.0; 4]));
        assert_eq!(v.kind, Kind::Inconclusive);
        assert!(
            v.why.contains("a sync ran in 4 of 4 samples before and 0"),
            "{}",
            v.why
        );
        assert_eq!(
            decide(&sync(&[0.0; 4]), &sync(&[0.0; 4])).kind,
            Kind::Inconclusive
        );
    }
}
