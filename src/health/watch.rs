//! How `mdtune --tick` sees a check or repair end (docs/reference.md §1, `--tick` (c)). md sends
//! no uevent when a sync ends, and the tick runs once a minute (and on mdadm's monitor events),
//! so each tick keeps what it saw of every array in `run/mdtune/tick-state` (cleared by a reboot,
//! like the syncs themselves): the sync running, where it started (`sync_min`, `sync_max`), how
//! far it was, and `last_sync_action` and `mismatch_cnt` while idle. The next tick compares:
//!
//! - a check or repair seen running, now neither running nor frozen (a pause is not an end): it
//!   ended. It was whole when it started at sector 0 with no end set (`sync_max` = `max`; else an
//!   mdcheck window) and ended complete: md resets `sync_min` to 0 after a requested sync that
//!   completed, and keeps an interrupted one's place there (`md_do_sync`).
//! - idle at both ticks, but `last_sync_action` now names a check or repair and it or
//!   `mismatch_cnt` changed: one ran between the two ticks. Recorded, not whole (its start was
//!   not seen); mdadm's monitor running the tick on `RebuildStarted` makes this rare.
//!
//! The file has no `.json` suffix: the saved originals beside it are every `*.json` there.
//! [`evaluate`] is pure; the files are read and written by `load` and `save`.

use super::history::Check;
use crate::host::Array;
use crate::sys::{read_file, write_atomic, Root};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

/// What a tick saw of one array.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub uuid: Option<String>,
    /// `sync_action` as read (`idle`, `check`, `frozen`, ...).
    pub action: String,
    /// For a check or repair: when a tick first saw it, and `sync_min` and `sync_max` then.
    pub since: Option<u64>,
    pub sync_min: Option<u64>,
    pub sync_max: Option<String>,
    /// `[done, total]` sectors at the last tick.
    pub completed: Option<[u64; 2]>,
    pub last_sync_action: Option<String>,
    pub mismatch_cnt: Option<u64>,
}

/// The state the ticks keep.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickState {
    /// When the last tick ran (seconds since the epoch).
    pub tick_unix: Option<u64>,
    /// Per array kernel name.
    #[serde(default)]
    pub arrays: BTreeMap<String, Seen>,
}

/// `run/mdtune/tick-state`.
fn path(root: &Root) -> PathBuf {
    root.saved_state().join("tick-state")
}

/// Reads the state: empty when there is none (after a reboot) or it is not one.
pub(crate) fn load(root: &Root) -> TickState {
    read_file(root, &path(root))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Writes the state, atomically, mode 0644.
pub(crate) fn save(root: &Root, state: &TickState) -> io::Result<()> {
    let text = serde_json::to_string(state).map_err(io::Error::other)?;
    write_atomic(root, &path(root), text.as_bytes(), 0o644)
}

/// A check or repair, by its `sync_action`.
fn scrub(action: &str) -> bool {
    matches!(action, "check" | "repair")
}

/// What is seen of `a` now (`None`: not a redundant array, or its health was not read).
fn seen_now(a: &Array, before: Option<&Seen>, now: u64) -> Option<Seen> {
    let (sync, health) = (a.sync.as_ref()?, a.health.as_ref()?);
    // A pause (mdtune's, or anyone's `frozen`) is not an end: the sync seen stays.
    if let Some(b) = before.filter(|b| sync.action == "frozen" && scrub(&b.action)) {
        return Some(b.clone());
    }
    let mut s = Seen {
        uuid: a.uuid.clone(),
        action: sync.action.clone(),
        completed: sync.completed,
        last_sync_action: health.last_sync_action.clone(),
        mismatch_cnt: health.mismatch_cnt,
        ..Seen::default()
    };
    if scrub(&s.action) {
        match before.filter(|b| b.action == s.action && b.since.is_some()) {
            // Still the one seen: its start stays as first seen (a pause moves sync_min).
            Some(b) => {
                (s.since, s.sync_min, s.sync_max) = (b.since, b.sync_min, b.sync_max.clone())
            }
            None => {
                (s.since, s.sync_min) = (Some(now), health.sync_min);
                s.sync_max.clone_from(&health.sync_max);
            }
        }
    }
    Some(s)
}

/// The check that ended between `before` and `now` of array `a`, if one did.
fn ended(a: &Array, before: &Seen, now: &Seen, sync_min: Option<u64>, t: u64) -> Option<Check> {
    let mut c = Check {
        array: a.name.clone(),
        uuid: a.uuid.clone(),
        end_unix: t,
        mismatch_cnt: now.mismatch_cnt,
        total: before.completed.map(|[_, total]| total),
        ..Check::default()
    };
    if scrub(&before.action) {
        if now.action == before.action || now.action == "frozen" {
            return None;
        }
        c.action.clone_from(&before.action);
        c.started_unix = before.since;
        let from = before.sync_min.unwrap_or(0);
        let window = from > 0 || before.sync_max.as_deref().is_some_and(|m| m != "max");
        let stopped = sync_min.filter(|&m| m > 0);
        let end = before.sync_max.as_deref().and_then(|m| m.parse().ok());
        c.range = [Some(from), stopped.or(end).or(c.total)];
        c.why_not_whole = if now.last_sync_action.as_deref() != Some(&before.action) {
            c.mismatch_cnt = None;
            Some(format!(
                "another sync ({}) ran before its end was seen",
                now.action
            ))
        } else if window {
            let to = before.sync_max.as_deref().unwrap_or("max");
            Some(format!("a window (mdcheck): from sector {from} to {to}"))
        } else {
            stopped.map(|m| format!("interrupted at sector {m}"))
        };
    } else {
        let last = now.last_sync_action.as_deref().filter(|l| scrub(l))?;
        let changed = before.last_sync_action != now.last_sync_action
            || before.mismatch_cnt != now.mismatch_cnt;
        if scrub(&now.action) || !changed {
            return None;
        }
        c.action = last.to_string();
        c.range = [None, None];
        c.why_not_whole = Some("it ran between two ticks: its start was not seen".into());
    }
    c.whole = c.why_not_whole.is_none();
    Some(c)
}

/// Compares what the last tick saw (`before`) with the host (`arrays`) at time `t`: the state
/// to keep, and every check or repair seen to end.
pub(crate) fn evaluate(before: &TickState, arrays: &[Array], t: u64) -> (TickState, Vec<Check>) {
    let mut state = TickState {
        tick_unix: Some(t),
        arrays: BTreeMap::new(),
    };
    let mut checks = Vec::new();
    for a in arrays {
        let prev = before.arrays.get(&a.name).filter(|p| p.uuid == a.uuid);
        let Some(now) = seen_now(a, prev, t) else {
            continue;
        };
        let sync_min = a.health.as_ref().and_then(|h| h.sync_min);
        checks.extend(prev.and_then(|p| ended(a, p, &now, sync_min, t)));
        state.arrays.insert(a.name.clone(), now);
    }
    (state, checks)
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
