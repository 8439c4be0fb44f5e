//! The counters of one reading and the figures of one interval, pure. A reading is what one
//! look at an array found: `stat`'s fields (Documentation/block/stat.rst: field 1 read I/Os, 3
//! sectors read, 4 read ticks in ms, 5 write I/Os, 7 sectors written, 8 write ticks) and, while a
//! sync thread runs (`sync_completed` reads `N / M`), the kernel's `sync_speed`. An interval is
//! the difference of two consecutive readings, per second.

/// The fields of `/sys/block/mdX/stat` a measurement uses (counters since the array started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub read_ios: u64,
    pub read_sectors: u64,
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_sectors: u64,
    pub write_ticks: u64,
}

impl Stat {
    /// Parses the text of `stat`: at least the first 8 of its whitespace-separated counters.
    pub fn parse(text: &str) -> Option<Stat> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        (f.len() >= 8).then(|| Stat {
            read_ios: f[0],
            read_sectors: f[2],
            read_ticks: f[3],
            write_ios: f[4],
            write_sectors: f[6],
            write_ticks: f[7],
        })
    }
}

/// A running sync as one reading saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncReading {
    /// `sync_action`: `resync`, `recover`, `check`, `repair`, `reshape`.
    pub action: String,
    /// `sync_speed` (KiB/s): the kernel's average since its last marks (up to 30 s back).
    pub speed_kib_s: u64,
    /// `sync_completed`: sectors done and in all.
    pub done: u64,
    pub total: u64,
}

impl SyncReading {
    /// The sync of the texts of `sync_action`, `sync_completed` and `sync_speed`: `None`
    /// unless `sync_completed` reads `N / M` (a sync thread runs; `none` and `delayed` are not
    /// running).
    pub fn parse(action: &str, completed: &str, speed: &str) -> Option<SyncReading> {
        let (done, total) = completed.trim().split_once('/')?;
        Some(SyncReading {
            action: action.trim().to_string(),
            speed_kib_s: speed.trim().parse().unwrap_or(0),
            done: done.trim().parse().ok()?,
            total: total.trim().parse().ok()?,
        })
    }
}

/// One look at an array: when (seconds since its window began) and what it read; `stat` is
/// `None` when it could not be read or parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub secs: f64,
    pub stat: Option<Stat>,
    pub sync: Option<SyncReading>,
}

/// The figures of the interval between two consecutive readings, per second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    pub secs: f64,
    pub read_bytes: f64,
    pub write_bytes: f64,
    pub ios: f64,
    /// Milliseconds the interval's I/Os took, all together (`stat`'s ticks).
    pub ticks_ms: f64,
    /// The kernel's `sync_speed` at the end of the interval, when a sync ran at both ends.
    pub sync_kib_s: Option<f64>,
}

impl Interval {
    /// The interval from `a` to `b`; `None` when either lacks `stat`, no time passed, or a
    /// counter went back (the array was stopped and started again).
    pub fn between(a: &Reading, b: &Reading) -> Option<Interval> {
        let (x, y) = (a.stat?, b.stat?);
        let secs = b.secs - a.secs;
        let d = |p: u64, q: u64| q.checked_sub(p).map(|v| v as f64);
        if secs <= 0.0 {
            return None;
        }
        let read_sectors = d(x.read_sectors, y.read_sectors)?;
        let write_sectors = d(x.write_sectors, y.write_sectors)?;
        let ios = d(x.read_ios, y.read_ios)? + d(x.write_ios, y.write_ios)?;
        let ticks = d(x.read_ticks, y.read_ticks)? + d(x.write_ticks, y.write_ticks)?;
        let sync = match (&a.sync, &b.sync) {
            (Some(_), Some(s)) => Some(s.speed_kib_s as f64),
            _ => None,
        };
        Some(Interval {
            secs,
            read_bytes: read_sectors * 512.0 / secs,
            write_bytes: write_sectors * 512.0 / secs,
            ios: ios / secs,
            ticks_ms: ticks,
            sync_kib_s: sync,
        })
    }

    /// Read and written bytes per second: the throughput that decides without a sync.
    pub fn bytes(&self) -> f64 {
        self.read_bytes + self.write_bytes
    }
}

/// The intervals of a window's readings, in order.
pub fn intervals(readings: &[Reading]) -> Vec<Interval> {
    readings
        .windows(2)
        .filter_map(|w| Interval::between(&w[0], &w[1]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_the_documented_ones() {
        let s = Stat::parse("  100 0 8000 50 20 0 4000 70 0 90 120 0 0 0 0 0 0\n").unwrap();
        assert_eq!((s.read_ios, s.read_sectors, s.read_ticks), (100, 8000, 50));
        assert_eq!(
            (s.write_ios, s.write_sectors, s.write_ticks),
            (20, 4000, 70)
        );
        assert_eq!(Stat::parse("1 2 3"), None);
        assert_eq!(Stat::parse("1 2 x 4 5 6 7 8"), None);
    }

    #[test]
    fn a_sync_runs_only_while_sync_completed_reads_a_fraction() {
        let s = SyncReading::parse("check\n", "4096 / 65536\n", "51200\n").unwrap();
        assert_eq!((s.done, s.total, s.speed_kib_s), (4096, 65536, 51200));
        assert_eq!(SyncReading::parse("idle", "none", "none"), None);
        assert_eq!(SyncReading::parse("check", "delayed", "none"), None);
    }

    #[test]
    fn an_interval_is_per_second_and_a_counter_going_back_is_no_interval() {
        let r = |secs, rs, ws| Reading {
            secs,
            stat: Some(Stat {
                read_ios: rs / 8,
                read_sectors: rs,
                read_ticks: rs / 100,
                write_ios: ws / 8,
                write_sectors: ws,
                write_ticks: 0,
            }),
            sync: None,
        };
        let i = Interval::between(&r(0.0, 0, 0), &r(0.5, 2048, 1024)).unwrap();
        assert_eq!(
            (i.read_bytes, i.write_bytes),
            (2048.0 * 1024.0, 1024.0 * 1024.0)
        );
        assert_eq!(i.ios, (256.0 + 128.0) / 0.5);
        assert_eq!(Interval::between(&r(1.0, 10, 0), &r(2.0, 5, 0)), None);
        assert_eq!(
            intervals(&[r(0.0, 0, 0), r(1.0, 8, 8), r(2.0, 16, 16)]).len(),
            2
        );
    }
}
