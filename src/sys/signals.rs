//! Signals that would end a run in the middle of its writes (docs/reference.md §4, "A pause that
//! always ends"): SIGINT, SIGTERM and SIGHUP. While a run writes kernel values ([`Deferred`]
//! held), such a signal does not end the process: it is noted, the run sees it at its next step
//! ([`caught`]), restores what it changed, resumes a sync it paused, and exits with its failure
//! JSON. Outside that window each signal does what it always does (the process ends). SIGKILL
//! cannot be caught; the pause record under `run/mdtune/` covers it.
//!
//! Handlers come from signal-hook (`flag`): storing into an atomic is all they do, and the
//! crate's registry keeps the one process-wide handler per signal, so this file stays within
//! the crate-wide ban on unchecked code. Registration happens once per process, at the first
//! [`Deferred::start`].

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::flag;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// The signals a run defers.
const DEFERRED: [(i32, &str); 3] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")];

/// The last deferred signal that arrived (its number), 0 for none.
static CAUGHT: AtomicUsize = AtomicUsize::new(0);
/// True while no run defers: a signal then ends the process as its default action does.
static ENDS_PROCESS: AtomicBool = AtomicBool::new(true);
/// How many [`Deferred`] are held (a rollback inside a run holds a second one).
static HELD: AtomicUsize = AtomicUsize::new(0);
static REGISTER: Once = Once::new();

/// The window in which SIGINT, SIGTERM and SIGHUP are noted instead of ending the process.
/// Dropping the last one ends the window, unless a signal was caught in it: the run is then on
/// its way out with its failure JSON, and a second signal must not cut that answer short.
#[must_use]
pub(crate) struct Deferred(());

impl Deferred {
    /// Opens the window. If the handlers cannot be installed (never seen: only an unknown
    /// signal number fails), signals keep their default action.
    pub(crate) fn start() -> Deferred {
        REGISTER.call_once(|| {
            for (sig, _) in DEFERRED {
                let _ = flag::register_usize(sig, &CAUGHT, sig as usize);
                let _ = flag::register_conditional_default(sig, &ENDS_PROCESS);
            }
        });
        HELD.fetch_add(1, Ordering::SeqCst);
        ENDS_PROCESS.store(false, Ordering::SeqCst);
        Deferred(())
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if HELD.fetch_sub(1, Ordering::SeqCst) == 1 && caught().is_none() {
            ENDS_PROCESS.store(true, Ordering::SeqCst);
        }
    }
}

/// The name of the signal caught while a run deferred, if one was (`SIGTERM`).
pub(crate) fn caught() -> Option<&'static str> {
    let n = CAUGHT.load(Ordering::SeqCst);
    DEFERRED
        .iter()
        .find(|(sig, _)| *sig as usize == n)
        .map(|(_, name)| *name)
}
