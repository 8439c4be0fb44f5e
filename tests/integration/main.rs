//! The integration tests, one binary (as ripgrep does): each module is a promise of the
//! interface (docs/reference.md) tested through the real binary on fake roots, except `faults`
//! and `property`, which also drive the library face directly.

mod auto_hosts;
mod auto_queues;
mod common;
mod concurrency;
mod confinement;
mod contract;
mod durability;
mod escaping;
mod faults;
mod fleet_failures;
mod fleet_report;
mod hostile_input;
mod input_limits;
mod kernel_fifo;
mod layout_writes;
mod layouts;
mod listing_ends;
mod msg;
mod no_writes_when_converged;
mod oncall;
mod pause_ends;
mod pause_signals;
mod people;
mod people_text;
mod persist_files;
mod persist_truth;
mod persistence;
mod property;
mod races;
mod refusals;
mod resolve_routes;
mod restore_order;
mod revert;
mod root_races;
mod security;
mod selectors;
mod sparse_numa;
mod sync_limits;
mod sync_pause;
mod tick;
mod traced_runs;
mod trail;
mod udev_replay;
mod zz_skipped;
