//! Sync boosts (docs/reference.md §2, `sync_boost`): sync limits in force only while an array
//! runs one of the boost's syncs, ended with the sync. The plan wants the boost's values while
//! the sync runs (`crate::plan`); a run, the `--udev` replay and `--tick` that see it running
//! record the values in force before the boost under `run/mdtune/boost-<array>.json` (durably,
//! mode 0600) before the boost's values are written, and the first `--tick` or run that sees
//! the sync over puts those values back, except one changed by hand meanwhile (it no longer reads
//! the boost's value): that one is left alone and named. `decide` is pure (when a boost is over,
//! what comes back, what the record keeps); `record` writes and removes the records (the host
//! reads them: `crate::host`); `step` is what a run and the tick do with them, under the host
//! lock the caller holds.

pub(crate) mod decide;
mod record;
mod step;

pub use step::{begin, end_finished, undo, Ended};
