//! What `--show` and `--metrics` say of the arrays' health: beside each redundant array in
//! `--show`'s JSON, `health` (the files `crate::host` read) and `checks` (from the record: when
//! the tick first watched the array, how many checks are recorded, and the last check or repair
//! of each `action` and `whole`); at the top, `tick` (when `mdtune --tick` last ran, from its
//! state under `run/mdtune/`). Reads the two files; writes nothing.

use super::history::{self, Check, History};
use crate::host::Inventory;
use crate::sys::Root;
use serde_json::{json, Value as Json};

/// Adds `health`, `checks` and `tick` to `view` (`--show`'s JSON, whose `arrays` are `inv`'s).
pub(crate) fn annotate(view: &mut Json, root: &Root, inv: &Inventory) {
    let history = history::load(root);
    for a in view["arrays"].as_array_mut().into_iter().flatten() {
        let Some(array) = inv.arrays.iter().find(|x| a["name"] == x.name.as_str()) else {
            continue;
        };
        let Some(health) = &array.health else {
            continue;
        };
        a["health"] = json!(health);
        a["checks"] = checks(&history, &array.name, array.uuid.as_deref());
    }
    view["tick"] = json!({"last_unix": super::watch::load(root).tick_unix});
}

/// An array's part of the record: since when it is watched, how many checks are kept, and the
/// last of each action and wholeness.
fn checks(history: &History, name: &str, uuid: Option<&str>) -> Json {
    let mut last: Vec<&Check> = Vec::new();
    for c in history.of(name, uuid) {
        last.retain(|l| (l.action.as_str(), l.whole) != (c.action.as_str(), c.whole));
        last.push(c);
    }
    json!({
        "watched_since": history.watched_since.get(&history::key(name, uuid)),
        "recorded": history.of(name, uuid).count(),
        "last": last,
    })
}
