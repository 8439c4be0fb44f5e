//! Persistence and revert's files (docs/reference.md §6), and the persist step of a run whole
//! (`step`: plan the files, write them before the kernel values, undo them when those fail, the
//! udev reload, and the `persist` part of the report, `outcome`): the desired state saved under
//! `etc/mdtune/` with its manifest and the installed binary (`state`), the udev rule that
//! replays it and the reload that tells udevd (`rule`), and the originals saved under
//! `run/mdtune/` before the first change (`originals`), what the persisted state would put
//! back otherwise than a run that leaves it alone (`diverge`), and the manifest that records
//! which files `persist` created and when and by which version (`manifest`, with the clock of
//! `stamp`). `status` and `journal` read, for `--show` and `--metrics`, whether the state is
//! persisted and what this boot's replays did. Files are written atomically by the floor
//! (`crate::sys`); what to write is decided here, from the spec and the plan.

mod diverge;
mod error;
mod journal;
mod manifest;
mod originals;
mod outcome;
mod replay;
mod rule;
mod stamp;
mod state;
mod status;
mod step;
mod trust;
mod udev_rules;

pub use diverge::Diverged;
pub(crate) use diverge::{diverged, diverged_warning};
pub(crate) use error::PersistError;
pub(crate) use journal::this_boot;
pub use manifest::Written;
pub(crate) use originals::Originals;
pub use outcome::{ComparedWith, Persist};
pub(crate) use replay::FIX;
pub use rule::Reload;
pub(crate) use stamp::{now, rfc3339, VERSION};
pub(crate) use state::{load_state, read_opt, removal_plan, written, STATE_FILE};
pub(crate) use status::status;
pub(crate) use step::{remove, Compared, Step};
