//! One run, from input to report, and the edge that ends it (docs/reference.md §1): `module`
//! validates the input and the root, reads the host, plans, takes the lock, reads and plans
//! again, applies, persists or reverts, and builds the report; `udev` is the persisted rule's
//! entry point; `rolled_out` is what a query without desired state of its own compares with
//! (the persisted state); `look` reads the host once for `show` (what `mdtune --show` and
//! `--metrics` print) and `verify` (`mdtune --verify`), read only; `revert` is
//! `state: reverted` (removing the persisted files is `crate::persist::remove`); `scope` is what
//! a run reads of the host; `lock` is the host-wide lock; `error` why a run stopped, `exit` the
//! exit status, the failure object and the panic hook; `tick` is `mdtune --tick`, the periodic
//! housekeeping and the textfile, `checks` its step that records the checks seen to end,
//! `boosts` its step that ends and starts sync boosts. Glue: each decision lives in the step named after it.

mod boosts;
mod checks;
mod error;
mod exit;
mod lock;
mod look;
mod measured;
mod module;
mod revert;
mod rolled_out;
mod sampled;
mod scope;
mod show;
mod tick;
mod udev;
mod verify;

pub use exit::{failure, install_panic_hook, print_and_exit, Exit};
pub use module::module;
pub use sampled::measure;
pub use show::{metrics, show};
pub use tick::tick;
pub use udev::udev;
pub use verify::{verify, Verified};
