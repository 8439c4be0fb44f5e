//! `mdtune --tick` step (c), `recorded` (docs/reference.md §1): reads every redundant array's
//! sync and health files (nothing else), compares them with what the last tick saw
//! (`crate::health`'s state under `run/mdtune/`), adds every check or repair seen to end to the
//! record (`var/lib/mdtune/checks.json`), and keeps what it saw and when for the next tick (and
//! for `mdtune_last_tick_timestamp_seconds`). The record is written under the host lock, taken
//! only when there is something to write: the state is read again under it and the comparison
//! made again, so that two ticks at once (the timer and mdadm's monitor) record an end once.

use super::lock::{lock, lock_wait, UDEV_LOCK_WAIT_MS};
use crate::health::{self, Check, History};
use crate::host::{self, Inventory, Scope};
use crate::sys::Root;
use serde_json::Value as Json;

/// Step (c): the checks recorded, each as JSON, and why something could not be done.
pub(super) fn record(root: &Root) -> (Vec<Json>, Option<String>) {
    let scope = Scope {
        attrs: Vec::new(),
        stripe_disks: false,
        ..Scope::default()
    };
    let inv = match host::read(root, &scope) {
        Ok(inv) => inv,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let now = crate::persist::now();
    let (state, checks) = health::evaluate(&health::load_tick_state(root), &inv.arrays, now);
    if checks.is_empty() && !watches_new(&health::load_history(root), &inv) {
        let error = health::save_tick_state(root, &state).err();
        return (Vec::new(), error.map(|e| state_error(root, &e)));
    }
    let _lock = match lock(root, lock_wait(UDEV_LOCK_WAIT_MS)) {
        Ok(l) => l,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    // Again under the lock: another tick may have recorded these ends meanwhile.
    let (state, checks) = health::evaluate(&health::load_tick_state(root), &inv.arrays, now);
    let mut history = health::load_history(root);
    for a in inv.arrays.iter().filter(|a| a.health.is_some()) {
        let key = health::history_key(&a.name, a.uuid.as_deref());
        history.watched_since.entry(key).or_insert(now);
    }
    for c in &checks {
        history.add(c.clone());
    }
    if let Err(e) = health::save_history(root, &history) {
        let path = health::history_path(root);
        let why = format!("{} was not written ({e}): nothing recorded", path.display());
        return (Vec::new(), Some(why));
    }
    let error = health::save_tick_state(root, &state).err();
    (items(&checks), error.map(|e| state_error(root, &e)))
}

/// Whether an array with health files is not yet in the record's `watched_since`.
fn watches_new(history: &History, inv: &Inventory) -> bool {
    inv.arrays.iter().filter(|a| a.health.is_some()).any(|a| {
        let key = health::history_key(&a.name, a.uuid.as_deref());
        !history.watched_since.contains_key(&key)
    })
}

fn state_error(root: &Root, e: &std::io::Error) -> String {
    let path = root.saved_state().join("tick-state");
    format!("{} was not written: {e}", path.display())
}

fn items(checks: &[Check]) -> Vec<Json> {
    checks
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or_default())
        .collect()
}
