//! Measuring the effect of a change (docs/reference.md §1 `--measure`, §2 `measure`, §3
//! `effect`): an array's own counters (`/sys/block/mdX/stat`: I/Os, sectors and ticks read and
//! written; `md/sync_speed` and `md/sync_completed` while a sync runs) read at a fixed interval
//! for N seconds before a run's writes and N seconds after them. Sampling is the only part that
//! reads anything (`sample`, through the root's floor like every other read); the rest is pure:
//! the counters' text parsed and turned into per-interval figures and a window's means
//! (`figures`), the verdict from two windows (`verdict`: which figure decides, the spread, the
//! floor of I/O, a load that shifted), and the `effect` object the report carries (`effect`).
//! Nothing here runs unless `measure` or `--measure` asks for it.

mod effect;
mod figures;
mod sample;
mod verdict;

pub use effect::{Effect, Side};
pub use figures::{intervals, Interval, Reading, Stat, SyncReading};
pub use sample::{interval_for, sample, wait_running, Sampler};
pub use verdict::{decide, Kind, Verdict};
