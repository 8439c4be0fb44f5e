//! One run, start to end: validate the input and the root, read the host and plan, take the lock,
//! read and plan again, apply (unless checking or querying), persist or revert, and build the
//! report. This is glue: each decision lives in the module named after its step; the `--udev`
//! entry point is in [`super::udev()`].

use super::exit::{failure, Exit};
use super::lock::{lock, lock_wait, LockError, LOCK_WAIT_MS};
use crate::apply::{self, Outcome};
use crate::host::{self, Inventory, InventoryError, Scope};
use crate::md::Attr;
use crate::persist::{self, Originals, PersistError};
use crate::plan::{self, PlanError};
use crate::report::{self, Persist, Report};
use crate::spec::{Spec, SpecError, State};
use crate::sys::Root;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Why a run stopped before it could report. The exit status is decided from the kind
/// ([`RunError::exit`]), at the edge; the message is the `msg` of the failure object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error(transparent)]
    Input(#[from] SpecError),
    #[error("root: {path} {problem}")]
    Root { path: String, problem: String },
    #[error("--udev {name:?}: not an md kernel name (md followed by letters, digits, _ . -; at most {max} characters)")]
    NotMdName { name: String, max: usize },
    /// The host refuses the input (an exact name that matches nothing, ...): nothing written.
    #[error(transparent)]
    Refused(PlanError),
    #[error("the host changed while this run waited for the lock: {0}")]
    ChangedWhileWaiting(PlanError),
    #[error("the persisted state: {0}")]
    Replay(PlanError),
    #[error("the persisted state {path} is unusable: {source}")]
    Persisted { path: String, source: SpecError },
    #[error(transparent)]
    Host(#[from] InventoryError),
    #[error(transparent)]
    Persist(#[from] PersistError),
    #[error(transparent)]
    Lock(#[from] LockError),
}

impl RunError {
    /// The exit status (docs/reference.md §1): 2 for unusable input, which writes nothing, 1 for
    /// a run that failed.
    pub(crate) fn exit(&self) -> Exit {
        match self {
            RunError::Input(_)
            | RunError::Root { .. }
            | RunError::NotMdName { .. }
            | RunError::Refused(_) => Exit::Input,
            _ => Exit::Failed,
        }
    }
}

/// Runs the module on its JSON input; returns the JSON text to print and the exit status.
pub fn module(text: &str) -> (String, Exit) {
    let result = Spec::from_json(text)
        .map_err(RunError::from)
        .and_then(|spec| execute(&spec, lock_wait(LOCK_WAIT_MS)));
    finish(result)
}

/// The JSON text and exit status of a finished run.
pub(crate) fn finish(result: Result<Report, RunError>) -> (String, Exit) {
    match result {
        Ok(report) => {
            let code = if report.failed {
                Exit::Failed
            } else {
                Exit::Ok
            };
            (report.to_text(), code)
        }
        Err(e) => (failure(&e.to_string()).to_string(), e.exit()),
    }
}

/// Opens the root, or refuses it as unusable input (exit 2) naming the path and what is wrong:
/// it does not exist, or it is not a directory.
pub(crate) fn open_root(path: &Path) -> Result<Root, RunError> {
    let refuse = |problem: String| RunError::Root {
        path: path.display().to_string(),
        problem,
    };
    let problem = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(m) if m.is_file() => Some("is a regular file, not a directory".to_string()),
        Ok(_) => Some("is not a directory".to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist".to_string()),
        Err(e) => Some(format!("cannot be used: {e}")),
    };
    if let Some(problem) = problem {
        return Err(refuse(problem));
    }
    Root::new(path).map_err(|e| refuse(format!("cannot be used: {e}")))
}

/// Runs a validated spec. A report can still say `failed` (a write failed and was rolled back).
///
/// Exit 2 writes nothing, not even the lock: a run that writes and must create the lock file
/// plans once before it takes the lock (so input the host refuses is refused first), then reads
/// the host again under the lock and plans again, since another run may have changed it
/// meanwhile. When the lock file exists, taking it writes nothing and the host is read once.
pub(crate) fn execute(spec: &Spec, wait: Duration) -> Result<Report, RunError> {
    let root = open_root(&spec.root)?;
    let writes = spec.state != State::Query && !spec.check_mode;
    if !writes {
        return match spec.state {
            State::Reverted => revert(spec, &root),
            State::Present | State::Query => present(spec, &root, Refusal::Input),
        };
    }
    // Locking a lock file that is already there writes nothing, so then the host is read once,
    // under the lock, and a refusal is still exit 2. Only a run that must create run/mdtune.lock
    // (the first on a host) plans before it, then reads the host again under the lock.
    let lock_exists = root.lock_file().is_file();
    let mut refusal = Refusal::Input;
    if spec.state == State::Present && !lock_exists {
        let inv = host::read(&root, &scope(spec))?;
        plan::plan(spec, &inv).map_err(RunError::Refused)?;
        refusal = Refusal::AfterWait;
    }
    let _lock = lock(&root, wait)?;
    match spec.state {
        State::Reverted => revert(spec, &root),
        State::Present | State::Query => present(spec, &root, refusal),
    }
}

/// What a plan the host refuses (an exact name matching nothing, ...) means, by when it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Nothing written yet: unusable input, exit 2.
    Input,
    /// Planned again under the lock: the host changed while the run waited, exit 1.
    AfterWait,
    /// A udev replay of the persisted state: the state no longer fits the array, exit 1.
    Replay,
}

impl Refusal {
    fn stop(self, e: PlanError) -> RunError {
        match self {
            Refusal::Input => RunError::Refused(e),
            Refusal::AfterWait => RunError::ChangedWhileWaiting(e),
            Refusal::Replay => RunError::Replay(e),
        }
    }
}

/// What a `present` or `query` run reads: the attributes its entries name, `group_thread_cnt`
/// (the thread policy may set it on any array) and `stripe_cache_size` (holds and the kernel's
/// cap on `preread_bypass_threshold` look at the live one).
pub(crate) fn scope(spec: &Spec) -> Scope {
    let named: BTreeSet<Attr> = spec
        .arrays
        .iter()
        .flat_map(|e| e.settings.keys().copied())
        .collect();
    Scope {
        only: spec.only.clone(),
        speed_limits: spec.speed_limits.keys().copied().collect(),
        attrs: Attr::ALL
            .into_iter()
            .filter(|a| {
                named.contains(a) || matches!(a, Attr::GroupThreadCnt | Attr::StripeCacheSize)
            })
            .collect(),
    }
}

/// Reads the host and tunes it.
fn present(spec: &Spec, root: &Root, refusal: Refusal) -> Result<Report, RunError> {
    let inv = host::read(root, &scope(spec))?;
    tune(spec, root, &inv, refusal)
}

pub(crate) fn tune(
    spec: &Spec,
    root: &Root,
    inv: &Inventory,
    refusal: Refusal,
) -> Result<Report, RunError> {
    let plan = plan::plan(spec, inv).map_err(|e| refusal.stop(e))?;
    let real = spec.state == State::Present && !spec.check_mode;

    let files = if spec.persist {
        persist::plan_files(root, &spec.persisted)?
    } else {
        Vec::new()
    };
    let due: Vec<&persist::FilePlan> = files.iter().filter(|f| f.is_due()).collect();
    let rule_due = due
        .iter()
        .any(|f| f.path == root.udev_rule(persist::RULE_FILE));
    let mut persisted = Persist {
        changed: spec.state == State::Present && !due.is_empty(),
        files: due
            .iter()
            .map(|f| persist::display(root, &f.path))
            .collect(),
        left: Vec::new(),
        udev_reload: (rule_due && spec.state == State::Present)
            .then(|| persist::reload_udev(root, false)),
    };
    let outcome = if real {
        // Files first: if one cannot be written, no kernel value has been touched yet.
        persist::write_files(root, &files)?;
        let mut originals =
            Originals::load(root).inspect_err(|_| persist::undo_files(root, &files))?;
        apply::apply(root, apply::writes(&plan), &mut |w| {
            originals.remember(w, inv)
        })
    } else {
        Outcome::default()
    };
    if outcome.failure.is_some() {
        // All or nothing: the persisted files go back with the kernel values.
        persist::undo_files(root, &files);
        persisted = Persist::default();
    } else if real && rule_due {
        persisted.udev_reload = Some(persist::reload_udev(root, true));
    }
    let mut report = report::build(spec, inv, &plan, &outcome, persisted);
    note_failed_reload(&mut report);
    if let Some(diff) = report.diff.as_mut() {
        diff.extend(due.iter().map(|f| f.diff(root)));
    }
    Ok(report)
}

/// A reload that failed is a warning: the rule is in place, and udevd picks it up by itself
/// within a few seconds.
fn note_failed_reload(report: &mut Report) {
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

fn revert(spec: &Spec, root: &Root) -> Result<Report, RunError> {
    let originals = Originals::load(root)?;
    let scope = Scope {
        speed_limits: originals.limits(),
        ..Scope::default()
    };
    let inv = host::read(root, &scope)?;
    let mut plan = originals.revert_plan(&inv);
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
        let saved = if held { Vec::new() } else { originals.paths() };
        removals = persist::removal_plan(root, &saved)?;
        let rule = root.udev_rule(persist::RULE_FILE);
        let rule_due = removals.iter().any(|f| f.path == rule);
        let shown = |paths: &mut dyn Iterator<Item = &std::path::PathBuf>| -> Vec<String> {
            paths.map(|p| persist::display(root, p)).collect()
        };
        if real {
            let done = persist::remove_files(root, &removals);
            persisted.files = shown(&mut done.removed.iter());
            persisted.left = done
                .left
                .iter()
                .map(|(p, e)| format!("{}: {e}", persist::display(root, p)))
                .collect();
            // A rule still in place needs no reload.
            let rule_gone = done.removed.contains(&rule);
            persisted.udev_reload = rule_gone.then(|| persist::reload_udev(root, true));
            removals.retain(|f| done.removed.contains(&f.path));
        } else {
            persisted.files = shown(&mut removals.iter().map(|f| &f.path));
            persisted.udev_reload = rule_due.then(|| persist::reload_udev(root, false));
        }
        persisted.changed = !persisted.files.is_empty();
    }
    let mut report = report::build(spec, &inv, &plan, &outcome, persisted);
    note_failed_reload(&mut report);
    if let Some(diff) = report.diff.as_mut() {
        diff.extend(removals.iter().map(|f| f.diff(root)));
    }
    Ok(report)
}
