//! The record of the last run that changed or failed to change something (docs/reference.md
//! §6): when, by which version, who, its state and how it ended. It is kept in the lock file
//! itself, `run/mdtune.lock`, written through the descriptor that holds the lock, so it needs
//! no file of its own and is as old as the boot (a `run/` on tmpfs starts empty; the udev
//! replay that tunes an array at boot is the first record). `mdtune --show` and `--metrics`
//! read it. A converged run, a refusal, `query` and check mode leave it alone: a run that
//! changes nothing writes nothing.

use crate::persist;
use crate::report::Report;
use serde_json::{Map, Value as Json};

/// The record of a run by `by` (the trail's caller) of `state` (`present`, `reverted`,
/// `udev`) that ends now as `report`, or that failed before it had one: one line of JSON with
/// `time` (RFC 3339, UTC), `unix`, `version`, `by`, `state`, `changed` and `failed`.
pub(crate) fn record(by: String, state: &str, report: Option<&Report>) -> Vec<u8> {
    let unix = persist::now();
    let mut m = Map::new();
    m.insert("time".into(), persist::rfc3339(unix).into());
    m.insert("unix".into(), unix.into());
    m.insert("version".into(), persist::VERSION.into());
    m.insert("by".into(), by.into());
    m.insert("state".into(), state.into());
    m.insert("changed".into(), report.is_some_and(|r| r.changed).into());
    m.insert("failed".into(), report.is_none_or(|r| r.failed).into());
    format!("{}\n", Json::Object(m)).into_bytes()
}

/// A record as JSON; null for an empty lock file (no run since boot, or one of an mdtune that
/// kept none) or one being rewritten at this moment.
pub(crate) fn read(bytes: &[u8]) -> Json {
    match serde_json::from_slice::<Json>(bytes) {
        Ok(v) if v["unix"].is_u64() && v["time"].is_string() => v,
        _ => Json::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_an_empty_lock_file_has_none() {
        let r = read(&record("command line, uid 0".into(), "present", None));
        assert_eq!(
            (&r["by"], &r["state"], &r["failed"], &r["changed"]),
            (
                &Json::from("command line, uid 0"),
                &Json::from("present"),
                &Json::from(true),
                &Json::from(false)
            )
        );
        assert_eq!(r["version"], persist::VERSION);
        assert_eq!(read(b""), Json::Null);
        assert_eq!(read(b"{\"time\": "), Json::Null);
    }
}
