//! The revert plan (docs/reference.md §6): the originals saved before the first change, turned
//! into a plan that writes them back over the live values, held back like any plan while an
//! array reshapes or its mdmon is missing. A saved `group_thread_cnt` above 0 is not written back
//! on a host whose possible NUMA node ids are sparse (`kernel::sparse_nodes`): 0 takes its place,
//! with a warning. Pure; the originals are stored by `crate::persist`.

use super::hold::{hold_back, pause_for};
use super::model::{ArrayPlan, Change, LimitChange, Plan, Source};
use crate::host::Inventory;
use crate::md::{kernel, Attr, SpeedLimit, Value};
use std::collections::BTreeMap;

/// One saved file: the array it belongs to and its original values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Saved {
    pub(crate) array: Option<String>,
    pub(crate) uuid: Option<String>,
    pub(crate) values: BTreeMap<String, Value>,
}

/// The plan that writes the saved originals (by key: array uuid, `md-<name>`, `system`) back
/// over the live values in `inv`, and the keys whose originals must be kept: an array whose
/// values cannot be read is not restored, and keeps them for a later revert (docs/reference.md
/// §6). Saved arrays that are gone, and those kept, are named in the plan's warnings.
pub(crate) fn revert(files: &BTreeMap<String, Saved>, inv: &Inventory) -> (Plan, Vec<String>) {
    let mut plan = Plan::default();
    let mut kept = Vec::new();
    for (key, saved) in files {
        if key == "system" {
            for l in SpeedLimit::ALL {
                if let (Some(&orig), Some(&live)) =
                    (saved.values.get(l.name()), inv.speed_limits.get(&l))
                {
                    plan.limits.push(LimitChange {
                        limit: l,
                        before: live,
                        after: orig,
                    });
                }
            }
            continue;
        }
        // By uuid first: a re-assembled array may have another kernel name.
        let found = inv
            .arrays
            .iter()
            .position(|a| match (&saved.uuid, &a.uuid) {
                (Some(s), Some(u)) => s == u,
                _ => saved.array.as_deref() == Some(a.name.as_str()),
            });
        let Some(i) = found else {
            plan.warnings.push(format!(
                "saved originals of {} (uuid {}) not restored: the array is not running",
                saved.array.as_deref().unwrap_or("?"),
                saved.uuid.as_deref().unwrap_or("?")
            ));
            continue;
        };
        let a = &inv.arrays[i];
        if let Some(why) = &a.unreadable {
            plan.warnings.push(format!(
                "{}: not restored, its saved originals kept: it cannot be read ({why}); run \
                 state: reverted again once it can",
                a.name
            ));
            kept.push(key.clone());
            continue;
        }
        let mut ap = ArrayPlan {
            array: i,
            name: a.name.clone(),
            hw_queues: None,
            why: None,
            changes: Vec::new(),
            skipped: Vec::new(),
            pause: None,
            boost: None,
        };
        for attr in Attr::ALL {
            if let (Some(&orig), Some(&live)) = (saved.values.get(attr.name()), a.values.get(&attr))
            {
                let mut orig = orig;
                if let (Attr::GroupThreadCnt, Value::Int(1..), Some((nodes, highest))) =
                    (attr, orig, inv.cpus.sparse_nodes())
                {
                    plan.warnings.push(format!(
                        "{}: the saved {attr} {orig} is not restored, 0 takes its place: the \
                         possible NUMA node ids are sparse ({nodes} nodes, the highest id \
                         {highest}), and {}",
                        a.name,
                        kernel::SPARSE_NODES_WHY
                    ));
                    orig = Value::Int(0);
                }
                ap.changes
                    .push(Change::new(attr, live, orig, Source::Saved));
            }
        }
        // A revert waits for a reshape or a missing mdmon, and pauses a sync, like any run.
        hold_back(a, &mut ap, &mut plan.warnings);
        ap.pause = pause_for(a, &ap);
        plan.arrays.push(ap);
    }
    plan.arrays.sort_by_key(|a| a.array);
    (plan, kept)
}
