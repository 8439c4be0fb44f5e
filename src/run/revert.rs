//! `state: reverted` (docs/reference.md §6): write the saved originals back, then remove the
//! saved state and the persisted files the manifest records, and say what was restored and
//! removed even when a later step fails.

use super::error::RunError;
use super::lock::sync_stop_wait;
use crate::apply::{self, Outcome};
use crate::host::{self, Scope};
use crate::persist::{self, Originals, Persist};
use crate::report::{self, Report};
use crate::spec::{Spec, DESIRED_KEYS};
use crate::sys::Root;

pub(crate) fn revert(spec: &Spec, root: &Root) -> Result<Report, RunError> {
    let originals = Originals::load(root)?;
    let scope = Scope {
        speed_limits: originals.limits(),
        health: false,
        ..Scope::default()
    };
    let inv = host::read(root, &scope)?;
    let (mut plan, kept) = originals.revert_plan(&inv);
    let ignored: Vec<&str> = DESIRED_KEYS
        .iter()
        .copied()
        .filter(|k| spec.persisted.contains_key(*k))
        .collect();
    if !ignored.is_empty() {
        plan.warnings.push(format!(
            "state: reverted restores every saved original; {} ignored",
            ignored.join(", ")
        ));
    }
    let real = !spec.check_mode;
    let outcome = if real {
        apply::apply(
            root,
            apply::writes(&plan),
            sync_stop_wait(),
            &mut |_| Ok(()),
        )
    } else {
        Outcome::default()
    };
    let mut persisted = Persist::default();
    // A setting held back (a reshape, no mdmon) is not restored yet: keep every saved original
    // so that the next revert can restore it.
    let held = plan.holds_back();
    if held {
        plan.warnings.push(
            "saved originals kept: run state: reverted again once the held-back settings can be written"
                .into(),
        );
    }
    let mut removals = Vec::new();
    if outcome.failure.is_none() {
        let saved = if held {
            Vec::new()
        } else {
            originals.paths_except(&kept)
        };
        // A step after the restores that fails (etc/mdtune leads out of the root, the manifest
        // cannot be read) leaves the report of what was restored, and says what is left.
        match persist::removal_plan(root, &saved) {
            Ok((r, note)) => {
                plan.warnings.extend(note);
                (persisted, removals) = persist::remove(root, r, real);
            }
            Err(e) => persisted.left.push(e.to_string()),
        }
    }
    let mut report = report::build(spec, &inv, &plan, &outcome, persisted);
    report.warnings.extend(report.persist.reload_warning());
    if let Some(diff) = report.diff.as_mut() {
        diff.extend(removals.iter().map(|f| f.diff(root)));
    }
    Ok(report)
}
