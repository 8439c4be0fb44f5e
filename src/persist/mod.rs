//! Persistence and revert's files (docs/reference.md §6): the desired state saved under
//! `etc/mdtune/` with its manifest and the installed binary (`state`), the udev rule that
//! replays it and the reload that tells udevd (`rule`), and the originals saved under
//! `run/mdtune/` before the first change (`originals`), and what the persisted state would put
//! back otherwise than a run that leaves it alone (`diverge`). Files are written atomically by the
//! floor (`crate::sys`); what to write is decided here, from the spec and the plan.

mod diverge;
mod originals;
mod rule;
mod state;

pub use diverge::Diverged;
pub(crate) use diverge::{diverged, diverged_warning};
pub(crate) use originals::Originals;
pub use rule::Reload;
pub(crate) use rule::{reload_udev, RULE_FILE};
pub(crate) use state::{
    display, load_state, plan_files, removal_plan, remove_files, undo_files, write_files, FilePlan,
    PersistError, STATE_FILE,
};
