//! `state: reverted` (docs/reference.md §6): write the saved originals back, then remove the
//! saved state and the persisted files the manifest records, and say what was restored and
//! removed even when a later step fails. `remove` is shared with `persist: false`.

use super::module::{note_failed_reload, RunError};
use crate::apply::{self, Outcome};
use crate::host::{self, Scope};
use crate::persist::{self, FilePlan, Originals};
use crate::report::{self, Persist, Report};
use crate::spec::Spec;
use crate::sys::Root;

/// Removes `removals` (a real run) or says what would be removed. Returns the `persist` part of
/// the report and the removals done (or due), for the diff.
pub(crate) fn remove(
    root: &Root,
    mut removals: Vec<FilePlan>,
    real: bool,
) -> (Persist, Vec<FilePlan>) {
    let rule = root.udev_rule(persist::RULE_FILE);
    let mut p = Persist::default();
    if real {
        let done = persist::remove_files(root, &removals);
        p.files = done
            .removed
            .iter()
            .map(|f| persist::display(root, f))
            .collect();
        p.left = done
            .left
            .iter()
            .map(|(f, e)| format!("{}: {e}", persist::display(root, f)))
            .collect();
        // A rule still in place needs no reload.
        p.udev_reload = done
            .removed
            .contains(&rule)
            .then(|| persist::reload_udev(root, true));
        removals.retain(|f| done.removed.contains(&f.path));
    } else {
        p.files = removals
            .iter()
            .map(|f| persist::display(root, &f.path))
            .collect();
        p.udev_reload = removals
            .iter()
            .any(|f| f.path == rule)
            .then(|| persist::reload_udev(root, false));
    }
    p.changed = !p.files.is_empty();
    (p, removals)
}

pub(crate) fn revert(spec: &Spec, root: &Root) -> Result<Report, RunError> {
    let originals = Originals::load(root)?;
    let scope = Scope {
        speed_limits: originals.limits(),
        ..Scope::default()
    };
    let inv = host::read(root, &scope)?;
    let (mut plan, kept) = originals.revert_plan(&inv);
    let ignored: Vec<&str> = [
        "arrays",
        "thread_policy",
        "speed_limit_min",
        "speed_limit_max",
    ]
    .into_iter()
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
        apply::apply(root, apply::writes(&plan), &mut |_| Ok(()))
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
            Ok(r) => (persisted, removals) = remove(root, r, real),
            Err(e) => persisted.left.push(e.to_string()),
        }
    }
    let mut report = report::build(spec, &inv, &plan, &outcome, persisted);
    note_failed_reload(&mut report);
    if let Some(diff) = report.diff.as_mut() {
        diff.extend(removals.iter().map(|f| f.diff(root)));
    }
    Ok(report)
}
