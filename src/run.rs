//! One run, start to end: validate the input and the root, read the host and plan, take the lock,
//! read and plan again, apply (unless checking or querying), persist or revert, and build the
//! report. This is glue: each decision lives in the module named after its step; the `--udev`
//! entry point is in [`crate::udev`].

use crate::apply::{self, Outcome};
use crate::inventory::{self, Inventory, Scope};
use crate::originals::Originals;
use crate::persist;
use crate::plan;
use crate::report::{self, Persist, Report};
use crate::rule;
use crate::spec::{Spec, State};
use crate::sysfs::Root;
use crate::values::Attr;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// The exit status: what Salt's `cmd.run` and scripts read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// The run failed (`failed: true`): an I/O error, a refused write, a lock timeout.
    Failed = 1,
    /// The input cannot be used (`failed: true`); nothing was written.
    Input = 2,
}

/// How long a module run waits for another run's lock, in milliseconds.
const LOCK_WAIT_MS: u64 = 30_000;
/// How long a udev-triggered run waits: udev must not be held up for long.
pub(crate) const UDEV_LOCK_WAIT_MS: u64 = 10_000;

/// `MDTUNE_LOCK_WAIT` (seconds, such as `5` or `0.3`) overrides the default wait, for tests and
/// slow hosts; at most an hour.
pub(crate) fn lock_wait(default_ms: u64) -> Duration {
    let ms = std::env::var("MDTUNE_LOCK_WAIT")
        .ok()
        .and_then(|s| parse_millis(s.trim()))
        .unwrap_or(default_ms);
    Duration::from_millis(ms.min(3_600_000))
}

/// Decimal seconds (`5`, `0.3`, `2.25`) as milliseconds, without floating point (which would
/// cost the binary about 30 KiB of parsing and formatting code).
fn parse_millis(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(frac.is_empty() || digits(frac)) {
        return None;
    }
    let mut ms = whole.parse::<u64>().ok()?.checked_mul(1000)?;
    for (i, d) in frac.bytes().take(3).enumerate() {
        ms += u64::from(d - b'0') * [100, 10, 1][i];
    }
    Some(ms)
}

/// A run that stopped before it had a report: the message and the exit status.
#[derive(Debug)]
pub struct Stopped {
    pub msg: String,
    pub code: Exit,
}

pub(crate) fn fail<T>(msg: impl ToString, code: Exit) -> Result<T, Stopped> {
    Err(stop(code)(msg))
}

/// Turns an error into a [`Stopped`] with `code`, for `map_err(stop(...))?`.
pub(crate) fn stop<E: ToString>(code: Exit) -> impl FnOnce(E) -> Stopped {
    move |e| Stopped {
        msg: e.to_string(),
        code,
    }
}

/// Runs the module on its JSON input; returns the JSON text to print and the exit status.
pub fn module(text: &str) -> (String, Exit) {
    let result = Spec::from_json(text)
        .map_err(stop(Exit::Input))
        .and_then(|spec| execute(&spec, lock_wait(LOCK_WAIT_MS)));
    finish(result)
}

/// The JSON text and exit status of a finished run.
fn finish(result: Result<Report, Stopped>) -> (String, Exit) {
    match result {
        Ok(report) => {
            let code = if report.failed {
                Exit::Failed
            } else {
                Exit::Ok
            };
            (report.to_text(), code)
        }
        Err(s) => (report::failure(&s.msg).to_string(), s.code),
    }
}

/// Opens the root, or refuses it as unusable input (exit 2) naming the path and what is wrong:
/// it does not exist, or it is not a directory.
pub(crate) fn open_root(path: &Path) -> Result<Root, Stopped> {
    let shown = path.display();
    let problem = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(m) if m.is_file() => Some("is a regular file, not a directory".to_string()),
        Ok(_) => Some("is not a directory".to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist".to_string()),
        Err(e) => Some(format!("cannot be used: {e}")),
    };
    if let Some(problem) = problem {
        return fail(format!("root: {shown} {problem}"), Exit::Input);
    }
    Root::new(path)
        .map_err(|e| format!("root: {shown} cannot be used: {e}"))
        .map_err(stop(Exit::Input))
}

/// Runs a validated spec. A report can still say `failed` (a write failed and was rolled back).
///
/// Exit 2 writes nothing, not even the lock: a run that writes and must create the lock file
/// plans once before it takes the lock (so input the host refuses is refused first), then reads
/// the host again under the lock and plans again, since another run may have changed it
/// meanwhile. When the lock file exists, taking it writes nothing and the host is read once.
pub fn execute(spec: &Spec, wait: Duration) -> Result<Report, Stopped> {
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
    let lock_exists = root.run().join("mdtune.lock").is_file();
    let mut refusal = Refusal::Input;
    if spec.state == State::Present && !lock_exists {
        let inv = inventory::read(&root, &scope(spec)).map_err(stop(Exit::Failed))?;
        plan::plan(spec, &inv).map_err(stop(Exit::Input))?;
        refusal = Refusal::AfterWait;
    }
    let _lock = apply::lock(&root, wait).map_err(stop(Exit::Failed))?;
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
    fn stop(self, e: plan::PlanError) -> Stopped {
        match self {
            Refusal::Input => stop(Exit::Input)(e),
            Refusal::AfterWait => stop(Exit::Failed)(format!(
                "the host changed while this run waited for the lock: {e}"
            )),
            Refusal::Replay => stop(Exit::Failed)(format!("the persisted state: {e}")),
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
fn present(spec: &Spec, root: &Root, refusal: Refusal) -> Result<Report, Stopped> {
    let inv = inventory::read(root, &scope(spec)).map_err(stop(Exit::Failed))?;
    tune(spec, root, &inv, refusal)
}

pub(crate) fn tune(
    spec: &Spec,
    root: &Root,
    inv: &Inventory,
    refusal: Refusal,
) -> Result<Report, Stopped> {
    let plan = plan::plan(spec, inv).map_err(|e| refusal.stop(e))?;
    let real = spec.state == State::Present && !spec.check_mode;

    let files = if spec.persist {
        persist::plan_files(root, &spec.persisted).map_err(stop(Exit::Failed))?
    } else {
        Vec::new()
    };
    let due: Vec<&persist::FilePlan> = files.iter().filter(|f| f.is_due()).collect();
    let rule_due = due
        .iter()
        .any(|f| f.path == root.udev_rule(rule::RULE_FILE));
    let mut persisted = Persist {
        changed: spec.state == State::Present && !due.is_empty(),
        files: due
            .iter()
            .map(|f| persist::display(root, &f.path))
            .collect(),
        left: Vec::new(),
        udev_reload: (rule_due && spec.state == State::Present)
            .then(|| rule::reload_udev(root, false)),
    };
    let outcome = if real {
        // Files first: if one cannot be written, no kernel value has been touched yet.
        persist::write_files(root, &files).map_err(stop(Exit::Failed))?;
        let mut originals = Originals::load(root).map_err(|e| {
            persist::undo_files(root, &files);
            stop(Exit::Failed)(e)
        })?;
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
        persisted.udev_reload = Some(rule::reload_udev(root, true));
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

fn revert(spec: &Spec, root: &Root) -> Result<Report, Stopped> {
    let originals = Originals::load(root).map_err(stop(Exit::Failed))?;
    let scope = Scope {
        speed_limits: originals.limits(),
        ..Scope::default()
    };
    let inv = inventory::read(root, &scope).map_err(stop(Exit::Failed))?;
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
        removals = persist::removal_plan(root, &saved).map_err(stop(Exit::Failed))?;
        let rule = root.udev_rule(rule::RULE_FILE);
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
            persisted.udev_reload = rule_gone.then(|| rule::reload_udev(root, true));
            removals.retain(|f| done.removed.contains(&f.path));
        } else {
            persisted.files = shown(&mut removals.iter().map(|f| &f.path));
            persisted.udev_reload = rule_due.then(|| rule::reload_udev(root, false));
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

#[cfg(test)]
mod tests {
    use super::parse_millis;

    #[test]
    fn lock_wait_seconds_parse_without_floating_point() {
        assert_eq!(parse_millis("5"), Some(5000));
        assert_eq!(parse_millis("0.3"), Some(300));
        assert_eq!(parse_millis("2.25"), Some(2250));
        assert_eq!(parse_millis("1.23456"), Some(1234));
        assert_eq!(parse_millis("5."), Some(5000));
        for bad in ["", ".5", "-1", "1e3", "abc", "1.2.3"] {
            assert_eq!(parse_millis(bad), None, "{bad:?}");
        }
    }
}
