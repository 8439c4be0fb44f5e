//! What an array's `md/` says of its health (docs/reference.md §3, "Metrics"): the members it
//! misses (`degraded`), the mismatches its last check or repair counted (`mismatch_cnt`, sectors),
//! the last sync it ran (`last_sync_action`), and the range a requested sync covers (`sync_min`,
//! `sync_max`: an mdcheck window's bounds). Read only for a redundant array (one with
//! `sync_action`), and only when the scope asks (`--show`, `--verify`, `--metrics`, `--tick`):
//! a `query` or `present` run does not read them. A file that is absent or unreadable is `None`.

use crate::md::sync::{SYNC_MAX, SYNC_MIN};
use crate::sys::{trimmed, Dir};
use serde::Serialize;

/// An array's health, as read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Members missing (`md/degraded`).
    pub degraded: Option<u64>,
    /// Sectors found different by the last check or repair, or so far by a running one
    /// (`md/mismatch_cnt`).
    pub mismatch_cnt: Option<u64>,
    /// The last sync that ran (`md/last_sync_action`; `none` after assembly).
    pub last_sync_action: Option<String>,
    /// Where a requested sync starts (`md/sync_min`).
    pub sync_min: Option<u64>,
    /// Where it stops: `max` or a sector (`md/sync_max`).
    pub sync_max: Option<String>,
}

/// Reads the health files of the array whose `md/` is `md`.
pub(super) fn read(md: &Dir) -> Health {
    let text = |f: &str| md.read(f).ok().flatten().map(trimmed);
    let number = |f: &str| text(f).and_then(|t| t.parse().ok());
    Health {
        degraded: number("degraded"),
        mismatch_cnt: number("mismatch_cnt"),
        last_sync_action: text("last_sync_action"),
        sync_min: number(SYNC_MIN),
        sync_max: text(SYNC_MAX),
    }
}
