//! Applying a plan: the only code that writes kernel values. Under the host lock its caller holds
//! (`crate::run`), it writes each due value in plan order, reads it back, and on the first
//! failure restores everything this run changed before reporting the failure, newest first
//! (`all_or_nothing`). An array's `stripe_cache_size` and `preread_bypass_threshold`, written or
//! restored, go in the order the values call for (`order`): the kernel refuses a threshold above
//! the cache in force, and a threshold above the cache is a state it allows (docs/reference.md
//! §4). A write that suspends the array goes into a running sync only with the sync paused
//! around it (`pause`), forward and in a rollback alike. What one write is, and how it is
//! written and read back, is `one_write`.
//!
//! Invariants: a value already in place is never written (on Linux 6.7+ every write to
//! `group_thread_cnt` or `skip_copy` suspends the array, and a `stripe_cache_size` write dirties
//! the superblock); only attributes from [`Attr::ALL`](crate::md::Attr::ALL) are written, besides
//! the sync controls a pause writes (`sync_action`, `sync_min`); each write and its read-back is
//! opened beneath `sys/` (the speed limits: beneath the root), and one whose path leads out of it
//! is refused (docs/reference.md §4).

mod all_or_nothing;
mod one_write;
mod order;
mod pause;
mod record;

pub use all_or_nothing::{apply, restore, writes, Failure, NotRestored, Outcome, Restored};
pub use one_write::{ApplyError, Target, Write};
pub use pause::Paused;
pub use record::{resume_stale, Resumed};
