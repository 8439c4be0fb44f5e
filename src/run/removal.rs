//! The persisted files' part of a report that removes them (`state: reverted`, `persist: false`;
//! docs/reference.md §6), and the warning a failed udev reload gives.

use crate::persist::{self, FilePlan, Persist};
use crate::report::Report;
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

/// A reload that failed is a warning: the rule is in place, and udevd picks it up by itself
/// within a few seconds.
pub(crate) fn note_failed_reload(report: &mut Report) {
    if let Some(r) = report.persist.udev_reload.as_ref() {
        if r.ran && r.result != "reloaded" {
            let w = format!(
                "{}: {}; udevd reads the new rules at its next event after 3 s",
                r.command, r.result
            );
            report.warnings.push(w);
        }
    }
}
