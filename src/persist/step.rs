//! The persist step of a run (docs/reference.md §6), whole: which persisted files `persist: true`
//! writes or `persist: false` removes ([`Step::plan`]), writing them before any kernel value
//! ([`Step::write`]), putting them back when the kernel values cannot follow ([`Step::undo`],
//! and in [`Step::outcome`] after a failed write), telling udevd that the rule changed, and the
//! `persist` part of the report ([`Persist`]) with the files' diff. `state: reverted` removes the
//! same files through [`remove`]. Which files and what they hold is `super::state`'s; this
//! module orders them around the kernel writes, which `crate::run` makes.

use super::diverge::Diverged;
use super::error::{display, PersistError};
use super::outcome::{ComparedWith, Persist};
use super::replay::replay;
use super::rule::{reload_udev, RULE_FILE};
use super::state::{plan_files, removal_plan, remove_files, undo_files, write_files, FilePlan};
use crate::plan::Diff;
use crate::spec::{Spec, State};
use crate::sys::Root;

/// What a run learned by comparing its plan with the persisted state (`crate::run` compares):
/// the report's `persist.diverged`, whether it could not compare, and which state a `query` of
/// the persisted state itself compared with.
#[derive(Debug, Default)]
pub(crate) struct Compared {
    pub(crate) diverged: Vec<Diverged>,
    /// The persisted state cannot be read or planned: not compliant.
    pub(crate) unknown: bool,
    pub(crate) compared_with: Option<ComparedWith>,
}

/// The persist step of one `present` or `query` run: planned once, then written, undone and
/// reported as the kernel writes went.
#[derive(Debug)]
pub(crate) struct Step<'r> {
    root: &'r Root,
    /// `state: present`: files due are a change (a `query` says what it would write).
    present: bool,
    /// A real run (`present`, not check mode): files are written and removed, udevd is told.
    real: bool,
    /// `persist: true`: the persisted files, the manifest first; only the due ones are written.
    files: Vec<FilePlan>,
    /// `persist: false`: the files to remove; after [`Step::outcome`], those removed (or due to
    /// be), none when a kernel write failed.
    removals: Vec<FilePlan>,
    /// Whether `persist` is `false`.
    removing: bool,
    /// Whether the udev rule is among the files due.
    rule_due: bool,
    /// What the report says, as planned; [`Step::outcome`] completes it.
    outcome: Persist,
}

impl<'r> Step<'r> {
    /// Plans the step of `spec`: with `persist: true` the files and their wanted contents (read
    /// now), with `persist: false` what to remove, and the report's `persist` as it stands before
    /// anything is written. Returns the step and a note for the plan's warnings (a removal that
    /// keeps a file it cannot tell is mdtune's).
    pub(crate) fn plan(
        root: &'r Root,
        spec: &Spec,
        real: bool,
        compared: Compared,
    ) -> Result<(Step<'r>, Option<String>), PersistError> {
        let files = if spec.persist == Some(true) {
            plan_files(root, &spec.persisted, spec.by.as_deref())?
        } else {
            Vec::new()
        };
        // persist: false removes what persist installed, after the kernel values are in place.
        let (removals, note) = if spec.persist == Some(false) {
            removal_plan(root, &[])?
        } else {
            (Vec::new(), None)
        };
        let present = spec.state == State::Present;
        let rule = root.udev_rule(RULE_FILE);
        let due = || files.iter().filter(|f| f.is_due());
        let rule_due = due().any(|f| f.path == rule);
        // Whether the next boot replays the persisted state: asked by every run that compares
        // with it, and by a persist that does not write (query, check mode).
        let asks_replay = compared.compared_with.is_some() || spec.persist == Some(true) && !real;
        let outcome = Persist {
            changed: present && due().next().is_some(),
            files: due().map(|f| display(root, &f.path)).collect(),
            left: Vec::new(),
            diverged: compared.diverged,
            unknown: compared.unknown,
            udev_reload: (rule_due && present).then(|| reload_udev(root, false)),
            compared_with: compared.compared_with,
            not_in_force: if asks_replay {
                replay(root).problems
            } else {
                Vec::new()
            },
        };
        let step = Step {
            root,
            present,
            real,
            files,
            removals,
            removing: spec.persist == Some(false),
            rule_due,
            outcome,
        };
        Ok((step, note))
    }

    /// Writes the due files, in order (a real run, before any kernel value). On failure the files
    /// already written get their old contents back; the error names those that could not.
    pub(crate) fn write(&self) -> Result<(), PersistError> {
        write_files(self.root, &self.files)
    }

    /// Puts the written files back (the run stops before its kernel writes), as far as it can.
    pub(crate) fn undo(&self) {
        undo_files(self.root, &self.files);
    }

    /// The report's `persist`, once the kernel writes are done. After a failed one (`failed`:
    /// the kernel values were rolled back) the persisted files go back too, all or nothing;
    /// those that cannot (the file system went read-only) are said to hold the new state, never
    /// hidden. Otherwise `persist: false` removes its files now, and udevd is told of a rule
    /// written.
    pub(crate) fn outcome(&mut self, failed: bool) -> Persist {
        if failed {
            self.removals.clear();
            let left = undo_files(self.root, &self.files);
            self.files
                .retain(|f| f.is_due() && left.iter().any(|(p, _)| *p == f.path));
            return Persist {
                changed: !self.files.is_empty(),
                files: self.due().map(|f| display(self.root, &f.path)).collect(),
                left: left.into_iter().map(|(_, why)| why).collect(),
                ..Persist::default()
            };
        }
        if self.removing {
            let (p, done) = remove(self.root, std::mem::take(&mut self.removals), self.real);
            self.removals = done;
            return Persist {
                changed: self.present && p.changed,
                ..p
            };
        }
        let mut outcome = std::mem::take(&mut self.outcome);
        if self.real && self.rule_due {
            outcome.udev_reload = Some(reload_udev(self.root, true));
        }
        outcome
    }

    /// The diff of the files due (written, or due to be) and of those removed.
    pub(crate) fn diffs(&self) -> impl Iterator<Item = Diff> + '_ {
        let removed = self.removals.iter();
        self.due().chain(removed).map(|f| f.diff(self.root))
    }

    fn due(&self) -> impl Iterator<Item = &FilePlan> {
        self.files.iter().filter(|f| f.is_due())
    }
}

/// Removes `removals` (a real run) or says what would be removed (`persist: false`, `state:
/// reverted`). Returns the `persist` part of the report and the removals done (or due), for the
/// diff.
pub(crate) fn remove(
    root: &Root,
    mut removals: Vec<FilePlan>,
    real: bool,
) -> (Persist, Vec<FilePlan>) {
    let rule = root.udev_rule(RULE_FILE);
    let mut p = Persist::default();
    if real {
        let done = remove_files(root, &removals);
        p.files = done.removed.iter().map(|f| display(root, f)).collect();
        p.left = done
            .left
            .iter()
            .map(|(f, e)| format!("{}: {e}", display(root, f)))
            .collect();
        // A rule still in place needs no reload.
        p.udev_reload = done
            .removed
            .contains(&rule)
            .then(|| reload_udev(root, true));
        removals.retain(|f| done.removed.contains(&f.path));
    } else {
        p.files = removals.iter().map(|f| display(root, &f.path)).collect();
        p.udev_reload = removals
            .iter()
            .any(|f| f.path == rule)
            .then(|| reload_udev(root, false));
    }
    p.changed = !p.files.is_empty();
    (p, removals)
}
