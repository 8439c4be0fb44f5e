//! `mdtune --tick` step (b) (docs/reference.md §1): `ended`, every sync boost whose sync has
//! ended, the values before it put back (`crate::boost::end_finished`); and `boosted`, every
//! boost of the persisted state whose sync has started since (an array assembled dirty starts a
//! resync; a spare starts a recovery): the persisted state is read as `--udev` reads it, and
//! only the boost's values are written, with their record first. Both under the host lock, taken
//! only when there is something to do.

use super::lock::{lock, lock_wait, sync_stop_wait, UDEV_LOCK_WAIT_MS};
use super::scope::scope;
use crate::host::{self, boost_records, Inventory, Scope};
use crate::persist::{self, Originals};
use crate::plan::{self, Plan};
use crate::spec::{Spec, State};
use crate::sys::Root;
use serde_json::{json, Value as Json};

type Done = (Vec<Json>, Option<String>);

/// Step (b), `ended`: with no boost recorded the lock is not even taken.
pub(super) fn ended(root: &Root) -> Done {
    if boost_records(root).is_empty() {
        return (Vec::new(), None);
    }
    let _lock = match lock(root, lock_wait(UDEV_LOCK_WAIT_MS)) {
        Ok(l) => l,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let (ended, errors) = crate::boost::end_finished(root);
    let items = ended
        .iter()
        .map(|e| serde_json::to_value(e).unwrap_or_default())
        .collect();
    (items, (!errors.is_empty()).then(|| errors.join("; ")))
}

/// The persisted state as the udev replay reads it, when it gives a sync boost: every array,
/// an entry naming one that does not run being no error.
fn persisted(root: &Root) -> Option<Spec> {
    let text = persist::load_state(root).ok()??;
    let mut spec = Spec::from_json(&text).ok()?;
    if spec.state != State::Present || spec.arrays.iter().all(|e| e.boost.is_none()) {
        return None;
    }
    spec.root = root.base().to_path_buf();
    spec.only = Some("*".into());
    (spec.persist, spec.check_mode, spec.diff) = (None, false, false);
    Some(spec)
}

/// The plan of `spec` on the host, cut down to the boosts that start: an array whose boost's
/// sync runs and that has no record yet keeps only its boost's writes.
fn starting(spec: &Spec, root: &Root) -> Option<(Inventory, Plan)> {
    // Every array is read; `only` keeps the plan from refusing an entry naming one that is gone.
    let sc = Scope {
        only: None,
        ..scope(spec)
    };
    let inv = host::read(root, &sc).ok()?;
    let mut plan = plan::plan(spec, &inv).ok()?;
    plan.limits.clear();
    plan.arrays.retain(|ap| {
        let recorded = inv.arrays[ap.array]
            .sync
            .as_ref()
            .is_some_and(|s| s.boost.is_some());
        ap.boost.as_ref().is_some_and(|b| b.active) && !recorded
    });
    for ap in &mut plan.arrays {
        let values = ap
            .boost
            .as_ref()
            .map(|b| b.values.clone())
            .unwrap_or_default();
        ap.changes.retain(|c| values.contains_key(&c.attr));
    }
    (!plan.arrays.is_empty()).then_some((inv, plan))
}

/// Step (b), `boosted`: the boosts of the persisted state whose sync has started.
pub(super) fn boosted(root: &Root) -> Done {
    let Some(spec) = persisted(root) else {
        return (Vec::new(), None);
    };
    if starting(&spec, root).is_none() {
        return (Vec::new(), None);
    }
    let _lock = match lock(root, lock_wait(UDEV_LOCK_WAIT_MS)) {
        Ok(l) => l,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    // Again under the lock: a run or a replay may have started it meanwhile.
    let Some((inv, mut plan)) = starting(&spec, root) else {
        return (Vec::new(), None);
    };
    let mut originals = match Originals::load(root) {
        Ok(o) => o,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let began = match crate::boost::begin(root, &mut plan, true) {
        Ok(b) => b,
        Err(e) => return (Vec::new(), Some(format!("a boost's record: {e}"))),
    };
    let writes = crate::apply::writes(&plan);
    let outcome = crate::apply::apply(root, writes, sync_stop_wait(), &mut |w| {
        originals.remember(w, &inv)
    });
    if let Some(f) = outcome.failure {
        crate::boost::undo(root, &began);
        return (Vec::new(), Some(format!("no boost started: {}", f.error)));
    }
    let items = plan
        .arrays
        .iter()
        .filter_map(|ap| {
            let b = ap.boost.as_ref()?;
            let action = inv.arrays[ap.array].sync.as_ref()?.action.clone();
            Some(json!({"array": ap.name, "sync": action, "limits": b.values,
                        "saved": b.saved, "since": b.since}))
        })
        .collect();
    (items, None)
}
