//! One run, start to end: validate the input, take the lock, read the host, plan, apply (unless
//! checking or querying), persist or revert, and build the report. Also the `--udev` entry point,
//! which replays the persisted desired state for one array and logs to syslog, since udev
//! discards stdout. This is glue: each decision lives in the module named after its step.

use crate::apply::{self, Outcome};
use crate::inventory::{self, Scope};
use crate::persist::{self, Originals};
use crate::plan;
use crate::report::{self, Persist, Report};
use crate::spec::{Spec, State};
use crate::sysfs::Root;
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
const UDEV_LOCK_WAIT_MS: u64 = 10_000;

/// `MDTUNE_LOCK_WAIT` (seconds, such as `5` or `0.3`) overrides the default wait, for tests and
/// slow hosts; at most an hour.
fn lock_wait(default_ms: u64) -> Duration {
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

fn fail<T>(msg: impl ToString, code: Exit) -> Result<T, Stopped> {
    Err(stop(code)(msg))
}

/// Turns an error into a [`Stopped`] with `code`, for `map_err(stop(...))?`.
fn stop<E: ToString>(code: Exit) -> impl FnOnce(E) -> Stopped {
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

/// Runs a validated spec. A report can still say `failed` (a write failed and was rolled back).
pub fn execute(spec: &Spec, wait: Duration) -> Result<Report, Stopped> {
    let root = Root::new(&spec.root)
        .map_err(|e| format!("root: {} cannot be used: {e}", spec.root.display()))
        .map_err(stop(Exit::Input))?;
    let writes = spec.state != State::Query && !spec.check_mode;
    let _lock = writes
        .then(|| apply::lock(&root, wait))
        .transpose()
        .map_err(stop(Exit::Failed))?;
    match spec.state {
        State::Reverted => revert(spec, &root),
        State::Present | State::Query => present(spec, &root),
    }
}

fn present(spec: &Spec, root: &Root) -> Result<Report, Stopped> {
    let scope = Scope {
        only: spec.only.clone(),
        speed_limits: spec.speed_limits.keys().copied().collect(),
    };
    let inv = inventory::read(root, &scope).map_err(stop(Exit::Failed))?;
    let plan = plan::plan(spec, &inv).map_err(stop(Exit::Input))?;
    let real = spec.state == State::Present && !spec.check_mode;

    let files = if spec.persist {
        persist::plan_files(root, &spec.persisted).map_err(stop(Exit::Failed))?
    } else {
        Vec::new()
    };
    let due: Vec<&persist::FilePlan> = files.iter().filter(|f| f.is_due()).collect();
    let mut persisted = Persist {
        changed: spec.state == State::Present && !due.is_empty(),
        files: due
            .iter()
            .map(|f| persist::display(root, &f.path))
            .collect(),
    };
    // Files first: if one cannot be written, no kernel value has been touched yet.
    let outcome = if real {
        // Files first: if one cannot be written, no kernel value has been touched yet.
        persist::write_files(root, &files).map_err(stop(Exit::Failed))?;
        let mut originals = Originals::load(root).map_err(|e| {
            persist::undo_files(root, &files);
            stop(Exit::Failed)(e)
        })?;
        apply::apply(root, apply::writes(&plan), &mut |w| {
            originals.remember(w, &inv)
        })
    } else {
        Outcome::default()
    };
    if outcome.failure.is_some() {
        // All or nothing: the persisted files go back with the kernel values.
        persist::undo_files(root, &files);
        persisted = Persist::default();
    }
    let mut report = report::build(spec, &inv, &plan, &outcome, persisted);
    if spec.state == State::Query && !due.is_empty() {
        report.compliant = false;
    }
    if let Some(diff) = report.diff.as_mut() {
        diff.extend(due.iter().map(|f| f.diff(root)));
    }
    Ok(report)
}

fn revert(spec: &Spec, root: &Root) -> Result<Report, Stopped> {
    let originals = Originals::load(root).map_err(stop(Exit::Failed))?;
    let scope = Scope {
        only: None,
        speed_limits: originals.limits(),
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
    if outcome.failure.is_none() {
        let mut paths = if held { Vec::new() } else { originals.paths() };
        paths.extend(persist::persisted_paths(root).map_err(stop(Exit::Failed))?);
        paths.retain(|p| p.symlink_metadata().is_ok());
        if real {
            persist::remove(root, &paths).map_err(stop(Exit::Failed))?;
        }
        persisted.changed = !paths.is_empty();
        persisted.files = paths.iter().map(|p| persist::display(root, p)).collect();
    }
    Ok(report::build(spec, &inv, &plan, &outcome, persisted))
}

/// `mdtune --udev NAME`: applies the persisted desired state to array NAME only. Returns the
/// JSON text to print (udev discards it) and the exit status: 0 when there is nothing to do or
/// it succeeded. A change or a failure also goes to the system log, where an operator sees it.
pub fn udev(name: &str, root: &Path) -> (String, Exit) {
    match udev_run(name, root) {
        Err(s) => {
            syslog::log(
                root,
                syslog::ERR,
                &format!("--udev {name} failed: {}", s.msg),
            );
            (report::failure(&s.msg).to_string(), s.code)
        }
        Ok(None) => {
            let msg = format!("{name}: nothing persisted to apply");
            let json =
                serde_json::json!({"changed": false, "failed": false, "msg": msg, "warnings": []});
            (json.to_string(), Exit::Ok)
        }
        Ok(Some(r)) => {
            let code = if r.failed { Exit::Failed } else { Exit::Ok };
            if r.failed {
                syslog::log(
                    root,
                    syslog::ERR,
                    &format!("--udev {name} failed: {}", r.msg),
                );
            } else if r.changed {
                syslog::log(root, syslog::INFO, &format!("--udev {name}: {}", r.msg));
            }
            (r.to_text(), code)
        }
    }
}

/// The udev run itself; `None` when nothing is persisted (or the persisted state is not
/// `present`).
fn udev_run(name: &str, root: &Path) -> Result<Option<Report>, Stopped> {
    let valid = !name.is_empty()
        && name.len() <= 32
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return fail(
            format!("--udev {name:?}: not an md kernel name"),
            Exit::Input,
        );
    }
    let state_root = Root::new(root).map_err(stop(Exit::Failed))?;
    let Some(text) = persist::load_state(&state_root).map_err(stop(Exit::Failed))? else {
        return Ok(None);
    };
    let mut spec = Spec::from_json(&text)
        .map_err(|e| format!("the persisted state is unusable: {e}"))
        .map_err(stop(Exit::Input))?;
    if spec.state != State::Present {
        return Ok(None);
    }
    spec.root = root.to_path_buf();
    spec.only = Some(name.to_string());
    spec.persist = false;
    spec.check_mode = false;
    spec.diff = false;
    execute(&spec, lock_wait(UDEV_LOCK_WAIT_MS)).map(Some)
}

/// The system log, as udev-run programs reach it: the `dev/log` datagram socket, else
/// `dev/kmsg`. Best effort: a log that cannot be written must not fail the run.
pub mod syslog {
    use std::fs::OpenOptions;
    use std::io::Write;
    use std::os::unix::net::UnixDatagram;
    use std::path::Path;

    /// Facility daemon (3), severity error (3).
    pub const ERR: u8 = 3 * 8 + 3;
    /// Facility daemon (3), severity info (6).
    pub const INFO: u8 = 3 * 8 + 6;

    pub fn log(root: &Path, priority: u8, msg: &str) {
        let line = format!("<{priority}>mdtune[{}]: {msg}", std::process::id());
        if let Ok(sock) = UnixDatagram::unbound() {
            if sock.send_to(line.as_bytes(), root.join("dev/log")).is_ok() {
                return;
            }
        }
        // kmsg must exist: never create a file in its place.
        if let Ok(mut kmsg) = OpenOptions::new().write(true).open(root.join("dev/kmsg")) {
            let _ = kmsg.write_all(format!("<{priority}>mdtune: {msg}\n").as_bytes());
        }
    }
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
