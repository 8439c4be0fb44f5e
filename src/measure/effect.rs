//! The `effect` of a measured run (docs/reference.md §3), pure: each window's figures (`Side`),
//! after / before per figure (`ratio`), the verdict, the figure that decided it and why, and
//! whether the run's writes were reverted. The same `Side` is what `mdtune --measure` prints.

use super::figures::Interval;
use super::verdict::{decide, Kind};
use serde::Serialize;

/// One window's figures: means over the window (bytes and I/Os per second over its whole
/// time, the latency per I/O, the sync's speed over the intervals it ran in).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    pub read_bytes_per_second: u64,
    pub write_bytes_per_second: u64,
    /// Read and written together: the figure that decides without a sync.
    pub bytes_per_second: u64,
    pub ios_per_second: f64,
    /// The mean time an I/O took (`stat`'s ticks over its I/Os); `null` without I/O, or when
    /// the kernel accounts no time for the array's I/O.
    pub latency_ms: Option<f64>,
    /// `null` when no sync ran in the window.
    pub sync_speed_kib_s: Option<u64>,
    /// The intervals measured.
    pub samples: usize,
}

fn round(v: f64, places: i32) -> f64 {
    let p = 10f64.powi(places);
    (v * p).round() / p
}

impl Side {
    pub fn of(w: &[Interval]) -> Side {
        let secs: f64 = w.iter().map(|i| i.secs).sum::<f64>().max(f64::MIN_POSITIVE);
        let total = |f: fn(&Interval) -> f64| w.iter().map(|i| f(i) * i.secs).sum::<f64>();
        let (read, write) = (
            total(|i| i.read_bytes) + 0.0,
            total(|i| i.write_bytes) + 0.0,
        );
        let ios = total(|i| i.ios) + 0.0;
        let ticks: f64 = w.iter().map(|i| i.ticks_ms).sum();
        let synced: Vec<f64> = w.iter().filter_map(|i| i.sync_kib_s).collect();
        Side {
            read_bytes_per_second: (read / secs).round() as u64,
            write_bytes_per_second: (write / secs).round() as u64,
            bytes_per_second: ((read + write) / secs).round() as u64,
            ios_per_second: round(ios / secs, 1),
            latency_ms: (ios >= 0.5 && ticks > 0.0).then(|| round(ticks / ios, 3)),
            sync_speed_kib_s: (!synced.is_empty())
                .then(|| (synced.iter().sum::<f64>() / synced.len() as f64).round() as u64),
            samples: w.len(),
        }
    }
}

/// After / before per figure; `null` where before is 0 or `null`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ratio {
    pub read_bytes_per_second: Option<f64>,
    pub write_bytes_per_second: Option<f64>,
    pub bytes_per_second: Option<f64>,
    pub ios_per_second: Option<f64>,
    pub latency_ms: Option<f64>,
    pub sync_speed_kib_s: Option<f64>,
}

fn ratio(b: Option<f64>, a: Option<f64>) -> Option<f64> {
    match (b, a) {
        (Some(b), Some(a)) if b > 0.0 => Some(round(a / b, 3)),
        _ => None,
    }
}

impl Ratio {
    fn of(b: &Side, a: &Side) -> Ratio {
        let n = |v: u64| Some(v as f64);
        let s = |v: Option<u64>| v.map(|v| v as f64);
        Ratio {
            read_bytes_per_second: ratio(n(b.read_bytes_per_second), n(a.read_bytes_per_second)),
            write_bytes_per_second: ratio(n(b.write_bytes_per_second), n(a.write_bytes_per_second)),
            bytes_per_second: ratio(n(b.bytes_per_second), n(a.bytes_per_second)),
            ios_per_second: ratio(Some(b.ios_per_second), Some(a.ios_per_second)),
            latency_ms: ratio(b.latency_ms, a.latency_ms),
            sync_speed_kib_s: ratio(s(b.sync_speed_kib_s), s(a.sync_speed_kib_s)),
        }
    }
}

/// `arrays[].effect`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Effect {
    /// `measure`: the seconds of each window.
    pub seconds: u64,
    /// The time between two readings.
    pub interval_ms: u64,
    pub before: Side,
    /// `null` in check mode (only the before window is taken) and when the writes failed.
    pub after: Option<Side>,
    pub ratio: Option<Ratio>,
    /// `null` where there is no after window.
    pub verdict: Option<Kind>,
    /// The figure the verdict was decided on (`bytes_per_second` or `sync_speed_kib_s`).
    pub decided_by: Option<&'static str>,
    /// The verdict in words, with the numbers; or why there is none.
    pub why: String,
    /// The run's writes were put back because the verdict was `slower` (`revert_if_slower`).
    pub reverted: bool,
}

impl Effect {
    /// The effect of two windows (their intervals), with the verdict.
    pub fn measured(
        seconds: u64,
        interval_ms: u64,
        before: &[Interval],
        after: &[Interval],
    ) -> Self {
        let v = decide(before, after);
        let (b, a) = (Side::of(before), Side::of(after));
        Effect {
            seconds,
            interval_ms,
            ratio: Some(Ratio::of(&b, &a)),
            before: b,
            after: Some(a),
            verdict: Some(v.kind),
            decided_by: v.decided_by,
            why: v.why,
            reverted: false,
        }
    }

    /// The effect of a window before only (check mode, failed writes): `why` there is no after.
    pub fn before_only(seconds: u64, interval_ms: u64, before: &[Interval], why: &str) -> Self {
        Effect {
            seconds,
            interval_ms,
            before: Side::of(before),
            after: None,
            ratio: None,
            verdict: None,
            decided_by: None,
            why: why.to_string(),
            reverted: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_is_the_window_mean_and_the_ratio_after_over_before() {
        let i = |mib: f64, ios: f64, sync| Interval {
            secs: 1.0,
            read_bytes: mib * 1048576.0,
            write_bytes: 0.0,
            ios,
            ticks_ms: ios * 2.0,
            sync_kib_s: sync,
        };
        let b = [i(100.0, 100.0, None), i(300.0, 300.0, None)];
        let s = Side::of(&b);
        assert_eq!(s.read_bytes_per_second, 200 * 1048576);
        assert_eq!(
            (s.ios_per_second, s.latency_ms, s.samples),
            (200.0, Some(2.0), 2)
        );
        assert_eq!(s.sync_speed_kib_s, None);
        let e = Effect::measured(2, 1000, &b, &[i(400.0, 200.0, None), i(400.0, 200.0, None)]);
        let r = e.ratio.unwrap();
        assert_eq!(
            (r.read_bytes_per_second, r.write_bytes_per_second),
            (Some(2.0), None)
        );
        assert_eq!(Side::of(&[i(0.0, 0.0, Some(10.0))]).latency_ms, None);
    }
}
