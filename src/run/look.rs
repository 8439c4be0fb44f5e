//! The host as the person on call and the fleet's monitoring look at it (`mdtune --show`,
//! `--verify`, `--metrics`; docs/reference.md §1): read once, with every tunable and every
//! system limit the kernel has, then queried twice: with the default input (what `auto` would
//! set) and with the rolled-out state (the persisted state, or the default input when nothing
//! usable is persisted: `super::rolled_out`, the same comparison as `{"state": "query"}`).
//! Beside them, whether the state is persisted and in force after a reboot, and the last run.
//! Read only: no lock, no file written.

use super::error::RunError;
use super::module::{against, open_root, tune, Against, Refusal};
use super::rolled_out::persisted_query;
use crate::host::{self, Inventory, Scope};
use crate::md::SpeedLimit;
use crate::persist;
use crate::report::Report;
use crate::spec::Spec;
use crate::sys::Root;
use serde_json::{json, Value as Json};
use std::path::Path;

/// What `--show`, `--verify` and `--metrics` are made of.
pub(crate) struct Look {
    pub(crate) root: Root,
    /// Every tunable of every array, every system limit the kernel has.
    pub(crate) inv: Inventory,
    /// The query of the default input: what `auto` would set.
    pub(crate) auto: Report,
    /// The query of the rolled-out state, or why the persisted state cannot be queried on this
    /// host (an exact name it has no array of, ...).
    pub(crate) wanted: Result<Report, RunError>,
    /// Whether the desired state is persisted and in force (`crate::persist::status`).
    pub(crate) status: Json,
    /// The last run that changed or failed to change something, since boot (`null`: none).
    pub(crate) last: Json,
}

/// Reads the host under `root` and queries it. An unusable root is exit 2, a host that cannot
/// be read exit 1 ([`RunError::exit`]).
pub(crate) fn look(root_path: &Path) -> Result<Look, RunError> {
    let input = json!({"root": root_path.display().to_string(), "state": "query"});
    let query = || Spec::from_json(&input.to_string());
    let spec = query()?;
    let root = open_root(&spec.root)?;
    // Every limit: the inventory leaves out those the kernel lacks (/proc/sys/dev/raid exists
    // once md is loaded, sync_io_depth from 6.16).
    let scope = Scope {
        speed_limits: SpeedLimit::ALL.to_vec(),
        ..Scope::default()
    };
    let inv = host::read(&root, &scope)?;
    // The default input, then the rolled-out state: the persisted state, or, with nothing usable
    // persisted, the defaults again (with a warning when the persisted state is unusable).
    let rolled_out = match persisted_query(&spec, &root) {
        Some((ps, with)) => (ps, Refusal::Replay, Against::Itself(with)),
        None => (query()?, Refusal::Input, against(&spec, &root)),
    };
    let [auto, wanted] = [(spec, Refusal::Input, Against::Nothing), rolled_out]
        .map(|(s, refusal, with)| tune(&s, &root, &inv, refusal, &with));
    let auto = auto?;
    let last = persist::read_opt(&root, &root.lock_file())
        .ok()
        .flatten()
        .map_or(Json::Null, |b| crate::trail::read_last_run(&b));
    Ok(Look {
        status: persist::status(&root),
        root,
        inv,
        auto,
        wanted,
        last,
    })
}
