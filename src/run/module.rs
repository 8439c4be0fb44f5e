//! One run, start to end: validate the input and the root, read the host and plan, take the lock,
//! read and plan again, apply (unless checking or querying), persist or revert, build the
//! report, and write the trail (`crate::trail`: the system log line and the lock file's record
//! of a run that changed or failed). A query without desired state of its own takes the
//! persisted state as its desired state (`super::rolled_out`). This is glue: each decision lives
//! in the module named after its step; the `--udev` entry point is in [`super::udev()`].

use super::error::RunError;
use super::exit::{failure, Exit};
use super::lock::{lock, lock_wait, sync_stop_wait, Lock, LOCK_WAIT_MS};
use super::rolled_out::{has_desired_state, persisted_query};
use super::scope::scope;
use crate::apply::{self, Outcome};
use crate::host::{self, Inventory};
use crate::md::Attr;
use crate::persist::{self, ComparedWith, Originals};
use crate::plan::{self, PlanError};
use crate::report::{self, Report};
use crate::spec::{Spec, State};
use crate::sys::Root;
use crate::trail::{self, Caller};
use std::path::Path;
use std::time::Duration;

/// Runs the module on its JSON input; returns the JSON text to print and the exit status.
pub fn module(text: &str) -> (String, Exit) {
    let caller = Caller::of_input(text);
    let result = Spec::from_json(text)
        .map_err(RunError::from)
        .and_then(|mut spec| {
            spec.by = Some(caller.describe());
            let result = execute(&spec, lock_wait(LOCK_WAIT_MS), &caller);
            write_trail(&spec, &caller, &result);
            result
        });
    finish(result)
}

/// The trail's line of a run that writes (neither `query` nor check mode) when it changed or
/// failed to change something (docs/reference.md §6). A refusal that wrote nothing (exit 2)
/// has none.
fn write_trail(spec: &Spec, caller: &Caller, result: &Result<Report, RunError>) {
    if !spec.writes() {
        return;
    }
    match result {
        Err(e) if e.exit() == Exit::Input => {}
        Err(e) => trail::failure(&spec.root, caller, &e.to_string()),
        Ok(r) => {
            let removing = spec.state == State::Reverted || spec.persist == Some(false);
            trail::report(&spec.root, caller, r, removing);
        }
    }
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
        Err(e) => {
            let mut json = failure(&format!("{e}{}", needs_root(e.permission_denied())));
            // A failed persist whose undo failed too: files still hold the new state.
            json["changed"] = e.left_changed().into();
            (json.to_string(), e.exit())
        }
    }
}

/// Opens the root, or refuses it as unusable input (exit 2) naming the path and what is wrong:
/// it does not exist, it is not a directory, a top-level directory leads out of it, or it has no
/// `sys/block`.
pub(crate) fn open_root(path: &Path) -> Result<Root, RunError> {
    let refuse = |problem: String| RunError::Root {
        path: path.display().to_string(),
        problem,
    };
    let root = Root::new(path).map_err(|e| refuse(e.to_string()))?;
    // Never vacuously compliant (docs/reference.md §1): a root without sys/block (an empty
    // directory, a root one level too deep, sysfs not mounted) has no array to check.
    if !root.has_block() {
        return Err(refuse(
            "has no sys/block: it is not the root of a host with sysfs mounted (give the \
             directory that holds sys/, proc/ and etc/)"
                .into(),
        ));
    }
    Ok(root)
}

/// What a failure the operating system refused for want of privileges adds to `msg`, when the
/// run is not root's (docs/reference.md §1): mdtune writes kernel values and `run/`, `etc/`.
pub(crate) fn needs_root(denied: bool) -> &'static str {
    if denied && crate::sys::effective_uid() != 0 {
        "; mdtune needs root: run it as root (Ansible: become: true; Salt runs as root)"
    } else {
        ""
    }
}

/// Runs a validated spec. A report can still say `failed` (a write failed and was rolled back).
///
/// Exit 2 writes nothing, not even the lock: a run that writes and must create the lock file
/// plans once before it takes the lock (so input the host refuses is refused first), then reads
/// the host again under the lock and plans again, since another run may have changed it
/// meanwhile. When the lock file exists, taking it writes nothing and the host is read once.
pub(crate) fn execute(spec: &Spec, wait: Duration, caller: &Caller) -> Result<Report, RunError> {
    let root = open_root(&spec.root)?;
    let mut report = run_on(spec, &root, wait, caller)?;
    report.warnings.splice(0..0, root_warning(&root));
    Ok(report)
}

/// What the answer says of a root given through a link (docs/reference.md §2): the directory the
/// run used, which is the one the path led to when it was opened, once.
pub(crate) fn root_warning(root: &Root) -> Option<String> {
    root.given_through_link().map(|given| {
        format!(
            "root: {} leads through a link to {}; this run used that directory",
            given.display(),
            root.base().display()
        )
    })
}

/// [`execute`] on the opened root.
fn run_on(spec: &Spec, root: &Root, wait: Duration, caller: &Caller) -> Result<Report, RunError> {
    if !spec.writes() {
        return match spec.state {
            State::Reverted => super::revert::revert(spec, root),
            State::Query => query(spec, root),
            State::Present => present(spec, root, Refusal::Input),
        };
    }
    // Locking a lock file that is already there writes nothing, so then the host is read once,
    // under the lock, and a refusal is still exit 2. Only a run that must create run/mdtune.lock
    // (the first on a host) plans before it, then reads the host again under the lock.
    let lock_exists = root.exists(&root.lock_file());
    let mut refusal = Refusal::Input;
    if spec.state == State::Present && !lock_exists {
        let inv = host::read(root, &scope(spec))?;
        plan::plan(spec, &inv).map_err(RunError::Refused)?;
        refusal = Refusal::AfterWait;
    }
    let lock = lock(root, wait)?;
    // A sync a killed run left frozen runs again before the host is read.
    let resumed = apply::resume_stale(root);
    // A sync boost whose sync has ended ends before the host is read.
    let (ended, end_errors) = crate::boost::end_finished(root);
    let mut result = match spec.state {
        State::Reverted => super::revert::revert(spec, root),
        State::Present | State::Query => present(spec, root, refusal),
    };
    if let Ok(report) = result.as_mut() {
        report.note_resumed(resumed);
        report.note_boosts_ended(ended, end_errors);
    }
    record(&lock, caller, spec, &result);
    result
}

/// Leaves the record of a run that held the lock and changed or failed to change something in
/// the lock file (`crate::trail::record`). A converged run writes nothing, the lock file
/// included, and neither does a refusal (exit 2).
fn record(lock: &Lock, caller: &Caller, spec: &Spec, result: &Result<Report, RunError>) {
    let recorded = match result {
        Ok(r) => r.changed || r.failed,
        Err(e) => e.exit() != Exit::Input,
    };
    if recorded {
        let ended = result.as_ref().ok();
        lock.record(&trail::record(caller.describe(), spec.state.name(), ended));
    }
}

/// A `query`: of its own desired state when it has one, else of the persisted state
/// (`super::rolled_out`; a refusal of it, such as an exact name the host no longer has, fails
/// the run: exit 1), else of the defaults.
fn query(spec: &Spec, root: &Root) -> Result<Report, RunError> {
    if has_desired_state(spec) {
        return present(spec, root, Refusal::Input);
    }
    match persisted_query(spec, root) {
        Some((ps, with)) => {
            let inv = host::read(root, &scope(&ps))?;
            tune(&ps, root, &inv, Refusal::Replay, &Against::Itself(with))
        }
        None => present(spec, root, Refusal::Input),
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

/// What a run compares its plan with (docs/reference.md §6).
pub(crate) enum Against {
    /// `persist` is given (or this is the udev replay of the persisted state itself).
    Nothing,
    /// The run is a `query` of the persisted state itself, which it took as its desired state
    /// because its input had none (docs/reference.md §2): the report says so.
    Itself(ComparedWith),
    /// `persist` unset, and a persisted state exists: its spec, planned on the same host.
    Persisted(Box<Spec>),
    /// `persist` unset, and the persisted state cannot be read: why.
    Unreadable(String),
}

/// The persisted state a run that leaves `persist` unset compares with.
pub(crate) fn against(spec: &Spec, root: &Root) -> Against {
    if spec.persist.is_some() || spec.only.is_some() {
        return Against::Nothing;
    }
    let shown = format!("/etc/mdtune/{}", persist::STATE_FILE);
    match persist::load_state(root) {
        Ok(None) => Against::Nothing,
        Ok(Some(text)) => match Spec::from_json(&text) {
            // Planned as the boot replays it: an entry naming an array not running is no error.
            Ok(mut ps) if ps.state == State::Present => {
                ps.only = Some("*".into());
                Against::Persisted(Box::new(ps))
            }
            Ok(_) => Against::Nothing,
            Err(e) => Against::Unreadable(format!("{shown} is unusable: {e}")),
        },
        Err(e) => Against::Unreadable(e.to_string()),
    }
}

/// Reads the host (what the persisted state names too) and tunes it.
fn present(spec: &Spec, root: &Root, refusal: Refusal) -> Result<Report, RunError> {
    let against = against(spec, root);
    let mut sc = scope(spec);
    if let Against::Persisted(ps) = &against {
        let theirs = scope(ps);
        let either = |mine: &[Attr], a: &Attr| mine.contains(a) || theirs.attrs.contains(a);
        sc.attrs = Attr::ALL
            .into_iter()
            .filter(|a| either(&sc.attrs, a))
            .collect();
        sc.stripe_disks |= theirs.stripe_disks;
        for l in theirs.speed_limits {
            if !sc.speed_limits.contains(&l) {
                sc.speed_limits.push(l);
            }
        }
    }
    let inv = host::read(root, &sc)?;
    tune(spec, root, &inv, refusal, &against)
}

/// What the plan is against the persisted state (`persist.diverged`, its warning, the state a
/// query of it compared with), or why it cannot be compared: a warning for the plan.
fn compare(
    plan: &plan::Plan,
    inv: &Inventory,
    against: &Against,
) -> (persist::Compared, Option<String>) {
    let unknown = |why: String| {
        let compared = persist::Compared {
            unknown: true,
            ..Default::default()
        };
        (compared, Some(why))
    };
    match against {
        Against::Nothing => Default::default(),
        Against::Itself(with) => (
            persist::Compared {
                compared_with: Some(with.clone()),
                ..Default::default()
            },
            None,
        ),
        Against::Unreadable(why) => unknown(format!(
            "the persisted state cannot be read ({why}): whether the next boot puts other \
             values back is not known, so this run is not compliant"
        )),
        Against::Persisted(ps) => match plan::plan(ps, inv) {
            Ok(theirs) => {
                let diverged = persist::diverged(plan, &theirs);
                let w = persist::diverged_warning(&diverged);
                let compared = persist::Compared {
                    diverged,
                    ..Default::default()
                };
                (compared, w)
            }
            Err(e) => unknown(format!(
                "the persisted state cannot be read against this host ({e}): whether the next \
                 boot puts other values back is not known, so this run is not compliant"
            )),
        },
    }
}

/// A real run's writes: the persisted files first (if one cannot be written, no kernel value has
/// been touched yet), then the record of each sync boost that starts (before its values), then
/// the kernel values, each original saved before its first change.
fn write_and_apply(
    root: &Root,
    plan: &mut plan::Plan,
    inv: &Inventory,
    step: &persist::Step<'_>,
) -> Result<Outcome, RunError> {
    step.write()?;
    let mut originals = Originals::load(root).inspect_err(|_| step.undo())?;
    let began = crate::boost::begin(root, plan, true).map_err(|source| {
        step.undo();
        let path = format!(
            "a sync boost's record under {}",
            root.saved_state().display()
        );
        persist::PersistError::Write { path, source }
    })?;
    let outcome = apply::apply(root, apply::writes(plan), sync_stop_wait(), &mut |w| {
        originals.remember(w, inv)
    });
    if outcome.failure.is_some() {
        crate::boost::undo(root, &began);
    }
    Ok(outcome)
}

/// Plans `spec` on the host as read, and unless checking or querying carries it out: the
/// persisted files first (`persist::Step`), then the kernel values (`crate::apply`), the files
/// put back when a value cannot be written; then the report. `refusal` says what a plan the host
/// refuses means, `against` what the plan is compared with.
pub(crate) fn tune(
    spec: &Spec,
    root: &Root,
    inv: &Inventory,
    refusal: Refusal,
    against: &Against,
) -> Result<Report, RunError> {
    let mut plan = plan::plan(spec, inv).map_err(|e| refusal.stop(e))?;
    let real = spec.state == State::Present && !spec.check_mode;
    let (compared, unknown) = compare(&plan, inv, against);
    plan.warnings.extend(unknown);
    let (mut step, note) = persist::Step::plan(root, spec, real, compared)?;
    plan.warnings.extend(note);
    let before = super::measured::before(spec, root, &plan);
    let outcome = if real {
        write_and_apply(root, &mut plan, inv, &step)?
    } else {
        // Read only: the report still says what is recorded of each boost.
        let _ = crate::boost::begin(root, &mut plan, false);
        Outcome::default()
    };
    let persisted = step.outcome(outcome.failure.is_some());
    let mut report = report::build(spec, inv, &plan, &outcome, persisted);
    report.warnings.extend(report.persist.reload_warning());
    super::measured::after(spec, root, before, &outcome, &mut report);
    if let Some(f) = &outcome.failure {
        report.msg.push_str(needs_root(f.error.permission_denied()));
    }
    if let Some(diff) = report.diff.as_mut() {
        diff.extend(step.diffs());
    }
    Ok(report)
}
