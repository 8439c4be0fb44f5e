//! `mdtune --udev NAME`: the persisted udev rule's entry point. It replays the persisted desired
//! state for one array and writes the trail (`crate::trail`: the system log, since udev
//! discards stdout, and the record of the last run in the lock file).
//!
//! The order matters (docs/reference.md §6): the name is checked and the root opened first (exit 2,
//! nothing written), then the lock is taken, and only then is the persisted state read, so a
//! replay that waited for a revert or a newer `persist` applies what is persisted now. An
//! inactive array (a `change` event during incremental assembly, or `udevadm trigger`) is left
//! alone, quietly and successfully: its tunables do not exist yet.

use super::error::RunError;
use super::exit::{failure, Exit};
use super::lock::{lock, lock_wait, UDEV_LOCK_WAIT_MS};
use super::module::{open_root, tune, Against, Refusal};
use super::scope::scope;
use crate::apply::{self, Resumed};
use crate::host;
use crate::persist;
use crate::report::Report;
use crate::spec::{Spec, State};
use crate::sys::Root;
use crate::trail::{self, Caller};
use std::path::Path;

/// The longest md kernel name: the kernel keeps disk names in `char disk_name[DISK_NAME_LEN]`
/// (32 bytes with the terminating NUL), and md's `add_named_array` refuses longer ones.
pub(crate) const MAX_NAME_LEN: usize = 31;

/// What a replay did.
enum Replay {
    /// Nothing to do, and why (nothing persisted, the array is inactive, ...), besides the syncs
    /// a killed run had left frozen, resumed first.
    Nothing(String, Vec<Resumed>),
    Ran(Box<Report>),
}

/// True if and only if `name` is a kernel name md gives an array (`add_named_array` in md.c):
/// `md` and a number (`md0`, `md127`), or `md_` and a name (`md_d0`, `md_hana-data` from mdadm's
/// `names=yes`) of letters, digits, `_`, `.` and `-`; at most [`MAX_NAME_LEN`] bytes.
pub(crate) fn is_md_name(name: &str) -> bool {
    let named = |rest: &str| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    };
    let numbered = |rest: &str| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit());
    name.len() <= MAX_NAME_LEN
        && match name.strip_prefix("md") {
            Some(rest) => match rest.strip_prefix('_') {
                Some(rest) => named(rest),
                None => numbered(rest),
            },
            None => false,
        }
}

/// Applies the persisted desired state to array NAME only. Returns the JSON text to print (udev
/// discards it) and the exit status: 0 when there is nothing to do or it succeeded. A change or
/// a failure also goes to the system log (the trail), where an operator sees it.
pub fn udev(name: &str, root: &Path) -> (String, Exit) {
    let caller = Caller::udev(name);
    match replay(name, root, &caller) {
        Err(e) => {
            trail::failure(root, &caller, &e.to_string());
            (failure(&e.to_string()).to_string(), e.exit())
        }
        Ok(Replay::Nothing(msg, resumed)) => {
            let changed = resumed.iter().any(|r| r.outcome == "resumed");
            let mut json = serde_json::json!({"changed": changed, "failed": false, "msg": msg, "warnings": []});
            if !resumed.is_empty() {
                json["resumed"] = serde_json::to_value(&resumed).unwrap_or_default();
            }
            (json.to_string(), Exit::Ok)
        }
        Ok(Replay::Ran(r)) => {
            let code = if r.failed { Exit::Failed } else { Exit::Ok };
            trail::report(root, &caller, &r, false);
            (r.to_text(), code)
        }
    }
}

fn replay(name: &str, root_path: &Path, caller: &Caller) -> Result<Replay, RunError> {
    if !is_md_name(name) {
        return Err(RunError::NotMdName {
            name: name.to_string(),
            max: MAX_NAME_LEN,
        });
    }
    let root = open_root(root_path)?;
    let lock = lock(&root, lock_wait(UDEV_LOCK_WAIT_MS))?;
    // A sync a killed run left frozen runs again first (any array: the lock is held).
    let resumed = apply::resume_stale(&root);
    // A sync boost whose sync has ended ends too (any array), as in every run.
    let (ended, end_errors) = crate::boost::end_finished(&root);
    let done = match replay_locked(name, root_path, &root) {
        Ok(Replay::Ran(mut r)) => {
            r.note_resumed(resumed);
            r.note_boosts_ended(ended, end_errors);
            Ok(Replay::Ran(r))
        }
        Ok(Replay::Nothing(msg, _)) => Ok(Replay::Nothing(msg, resumed)),
        Err(e) => Err(e),
    };
    // A replay that changed something or failed is recorded; one that had nothing to do, or
    // found everything in place, writes nothing.
    match &done {
        Ok(Replay::Ran(r)) if r.changed || r.failed => {
            lock.record(&trail::record(caller.describe(), "udev", Some(r)));
        }
        Err(_) => lock.record(&trail::record(caller.describe(), "udev", None)),
        Ok(_) => {}
    }
    done
}

/// The replay under the lock: the persisted state is read only now.
fn replay_locked(name: &str, root_path: &Path, root: &Root) -> Result<Replay, RunError> {
    let Some(text) = persist::load_state(root)? else {
        return Ok(Replay::Nothing(
            format!("{name}: nothing persisted to apply"),
            Vec::new(),
        ));
    };
    let mut spec = Spec::from_json(&text).map_err(|source| RunError::Persisted {
        path: format!("/etc/mdtune/{}", persist::STATE_FILE),
        source,
    })?;
    if spec.state != State::Present {
        return Ok(Replay::Nothing(
            format!("{name}: nothing persisted to apply"),
            Vec::new(),
        ));
    }
    spec.root = root_path.to_path_buf();
    spec.only = Some(name.to_string());
    spec.persist = None;
    spec.check_mode = false;
    spec.diff = false;
    let inv = host::read(root, &scope(&spec))?;
    match inv.arrays.first() {
        None => Ok(Replay::Nothing(
            format!("{name}: not an md array on this host"),
            Vec::new(),
        )),
        Some(a) if a.is_inactive() || a.is_container() => Ok(Replay::Nothing(
            format!("{name} is inactive: nothing to apply until it runs"),
            Vec::new(),
        )),
        Some(_) => tune(&spec, root, &inv, Refusal::Replay, &Against::Nothing)
            .map(|r| Replay::Ran(Box::new(r))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_name_md_gives_is_accepted() {
        for ok in [
            "md0",
            "md127",
            "md_d0",
            "md_hana-data",
            "md_home.2",
            "md_a234567890123456789012345678",
        ] {
            assert!(is_md_name(ok), "{ok}");
        }
        for bad in [
            "",
            "md",
            "..",
            ".",
            "md0/../x",
            "sda",
            "md 0",
            "md\n0",
            "md_a2345678901234567890123456789",
            "md..",
            "md.",
            "md_",
            "mdx",
            "md0a",
            "md-0",
        ] {
            assert!(!is_md_name(bad), "{bad:?}");
        }
    }
}
