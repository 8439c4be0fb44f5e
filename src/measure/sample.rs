//! Sampling, the I/O of a measurement: each array's `sys/block/<array>` opened once beneath
//! `sys/` (through the root's floor), then `stat` (and, where the level has a sync, the sync's
//! `sync_completed`, `sync_action` and `sync_speed`) read at a fixed interval for the window,
//! every array at each tick. Nothing is written. Sleeping is the only other thing it does.

use super::figures::{Reading, Stat, SyncReading};
use crate::sys::{Dir, Root};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The time between two readings of a window of `seconds`: 1 s, or a quarter of the window
/// when it is shorter than 4 s, so that every window has at least 4 intervals (a spread, and
/// two halves to compare).
pub fn interval_for(seconds: u64) -> Duration {
    Duration::from_millis((seconds * 1000 / 4).clamp(1, 1000))
}

/// The arrays of one measurement, each directory opened once (`None`: it could not be).
pub struct Sampler {
    arrays: Vec<Option<Dir>>,
}

impl Sampler {
    pub fn open(root: &Root, names: &[String]) -> Sampler {
        let sys = root.sys_dir().ok();
        let open = |n: &String| sys.and_then(|s| s.dir_under(&["block", n]).ok().flatten());
        Sampler {
            arrays: names.iter().map(open).collect(),
        }
    }

    /// One reading of array `i`, `secs` into its window.
    fn read(&self, i: usize, secs: f64) -> Reading {
        let Some(dir) = &self.arrays[i] else {
            return Reading {
                secs,
                stat: None,
                sync: None,
            };
        };
        let text = |p: &[&str]| dir.read_under(p).ok().flatten().unwrap_or_default();
        let stat = Stat::parse(&text(&["stat"]));
        let completed = text(&["md", "sync_completed"]);
        // Only a running sync's action and speed are read.
        let sync = if completed.contains('/') {
            let action = text(&["md", "sync_action"]);
            SyncReading::parse(&action, &completed, &text(&["md", "sync_speed"]))
        } else {
            None
        };
        Reading { secs, stat, sync }
    }

    /// Whether a sync thread runs on array `i` (`sync_completed` reads `N / M`).
    fn running(&self, i: usize) -> bool {
        self.read(i, 0.0).sync.is_some()
    }
}

/// The readings of every array of `sampler` over a window of `seconds`: one at its start and
/// one at every interval after, each array's readings in order.
pub fn sample(sampler: &Sampler, seconds: u64) -> Vec<Vec<Reading>> {
    let every = interval_for(seconds);
    let ticks = (Duration::from_secs(seconds).as_millis() / every.as_millis().max(1)) as u32;
    let n = sampler.arrays.len();
    let mut readings: Vec<Vec<Reading>> = vec![Vec::new(); n];
    let start = Instant::now();
    for tick in 0..=ticks {
        // Each tick at its time from the start, so that a slow read does not shift the rest.
        if let Some(wait) = (every * tick).checked_sub(start.elapsed()) {
            sleep(wait);
        }
        let secs = start.elapsed().as_secs_f64();
        for (i, r) in readings.iter_mut().enumerate() {
            r.push(sampler.read(i, secs));
        }
    }
    readings
}

/// Waits, at most `limit`, until a sync runs again on each array of `which` (indexes into the
/// sampler): a sync paused for the writes is measured once it runs again. Returns the indexes
/// of those still not running.
pub fn wait_running(sampler: &Sampler, which: &[usize], limit: Duration) -> Vec<usize> {
    let start = Instant::now();
    loop {
        let left: Vec<usize> = which
            .iter()
            .copied()
            .filter(|i| !sampler.running(*i))
            .collect();
        if left.is_empty() || start.elapsed() >= limit {
            return left;
        }
        sleep(Duration::from_millis(50));
    }
}
