//! The arrays' health over time (docs/reference.md §1 `--tick` (c), §3 "Metrics"): what
//! `mdtune --tick` saw of each array at its last run (`watch`, under `run/mdtune/`), the checks
//! and repairs it saw end (`history`, `var/lib/mdtune/checks.json`, kept across reboots), and
//! what `--show` and `--metrics` say of them (`view`). It reads the host through
//! `crate::host` and writes only its own two files, through `crate::sys`.

mod history;
mod view;
mod watch;

pub(crate) use history::{
    key as history_key, load as load_history, path as history_path, save as save_history,
};
pub use history::{Check, History, PER_ARRAY};
pub(crate) use view::annotate;
pub(crate) use watch::{evaluate, load as load_tick_state, save as save_tick_state};
pub use watch::{Seen, TickState};
