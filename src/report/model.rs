//! The report's shape: the one JSON object a run prints (docs/reference.md §3), field by field
//! in the documented key order, and its encoding as one line. Ansible reads it as a module
//! result; the Salt wrappers translate it into state changes; `crate::view` prints it for a
//! person. `super::build` fills it in.

use crate::apply::Paused;
use crate::apply::Resumed;
use crate::boost::Ended;
use crate::host::{Member, Sync};
use crate::md::{Attr, SyncRun, Value};
use crate::persist::Persist;
use crate::plan::{Diff, Skip, Source};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Setting {
    pub(crate) before: Value,
    pub(crate) after: Value,
    pub(crate) changed: bool,
    /// Whether the live value already matched the desired one when the run started.
    pub(crate) compliant: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) source: Option<Source>,
    /// For a value `auto` decided: why, with the numbers (docs/reference.md §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
    /// The input's `reason` that covers this value (docs/reference.md §2, §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// For a sync limit: in which unit it counts on this level (docs/reference.md §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unit: Option<&'static str>,
    /// For a raid10's `sync_speed_*`: what each member runs at, in KiB/s, in a resync, check
    /// or repair at the value in force after the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) per_member_kib_s: Option<u64>,
    /// A due setting this run did not write, why, and the value a later run will write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) held_back: Option<HeldBack>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct HeldBack {
    pub(crate) reason: String,
    pub(crate) wanted: Value,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ArrayReport {
    pub(crate) name: String,
    pub(crate) devname: Option<String>,
    pub(crate) uuid: Option<String>,
    pub(crate) level: String,
    pub(crate) array_state: String,
    pub(crate) members: Vec<Member>,
    pub(crate) hw_queues: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sync: Option<Sync>,
    /// The sync paused around the array's writes, or that a run would pause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sync_pause: Option<SyncPause>,
    /// The array's sync boost: the one its entry gives, else the one recorded in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sync_boost: Option<SyncBoost>,
    pub(crate) settings: BTreeMap<&'static str, Setting>,
    pub(crate) skipped: Vec<Skip>,
    pub(crate) compliant: bool,
    /// A measured run's effect on the array (`measure`, docs/reference.md §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) effect: Option<crate::measure::Effect>,
}

/// An array's sync boost (docs/reference.md §2, §3).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SyncBoost {
    /// True while its values are wanted (its sync runs) or, with no entry giving it, in force.
    pub(crate) active: bool,
    pub(crate) during: Vec<String>,
    /// The boost's sync limits, by setting (`limits`, not `values`: a Jinja `x.values` is the
    /// dict's method, and Ansible refuses the name for a return value).
    pub(crate) limits: BTreeMap<Attr, Value>,
    /// The values before the boost, which come back when the sync ends (null: not recorded).
    pub(crate) saved: Option<BTreeMap<Attr, Value>>,
    /// When the boost started, seconds since the epoch (null: not in force).
    pub(crate) since: Option<u64>,
}

/// A sync paused around an array's writes (docs/reference.md §3, §4): what a real run did, or, in
/// check mode and `query`, what a run would pause and for which settings.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum SyncPause {
    Done(Paused),
    Planned {
        action: SyncRun,
        settings: Vec<Attr>,
    },
}

/// A value put back by a rollback or a revert.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Restored {
    pub(crate) target: String,
    pub(crate) setting: String,
    pub(crate) value: Value,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub changed: bool,
    pub failed: bool,
    pub(crate) msg: String,
    pub(crate) state: &'static str,
    pub(crate) check_mode: bool,
    pub compliant: bool,
    pub(crate) arrays: Vec<ArrayReport>,
    pub(crate) system: BTreeMap<&'static str, Setting>,
    pub(crate) persist: Persist,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) diff: Option<Vec<Diff>>,
    pub(crate) warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rolled_back: Option<Vec<Restored>>,
    /// After a failed rollback: what is still changed, with the error that kept it so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) not_restored: Option<Vec<String>>,
    /// Syncs a killed mdtune run had left frozen, resumed by this run before it read the host
    /// (docs/reference.md §4, "A pause that always ends").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) resumed: Vec<Resumed>,
    /// Sync boosts whose sync had ended, ended by this run before it read the host.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) boosts_ended: Vec<Ended>,
}

impl Report {
    /// Adds what resuming stale pauses did: each in `resumed` and as a warning, and a resumed
    /// sync is a change.
    pub(crate) fn note_resumed(&mut self, resumed: Vec<Resumed>) {
        for r in &resumed {
            let from = r
                .from
                .map_or(String::new(), |f| format!(" from sector {f}"));
            self.warnings.push(format!(
                "{}: a {} an earlier mdtune run (pid {}) paused and did not resume: {}{from}",
                r.array, r.action, r.pid, r.outcome
            ));
        }
        self.changed |= resumed.iter().any(|r| r.outcome == "resumed");
        self.failed |= resumed
            .iter()
            .any(|r| r.outcome != "resumed" && r.outcome != "not frozen");
        self.resumed = resumed;
    }

    /// Adds the sync boosts this run ended before it read the host (`crate::boost`): each in
    /// `boosts_ended` and in the `msg`; one that could not end fails the run.
    pub(crate) fn note_boosts_ended(&mut self, ended: Vec<Ended>, errors: Vec<String>) {
        for e in ended
            .iter()
            .map(Ended::describe)
            .chain(errors.iter().cloned())
        {
            self.msg.push_str(&format!("; {e}"));
        }
        self.changed |= !ended.is_empty();
        self.failed |= !errors.is_empty();
        self.warnings.extend(errors);
        self.boosts_ended = ended;
    }
}

impl Report {
    /// The report as one line of JSON, keys in the order of docs/reference.md §3.
    pub fn to_text(&self) -> String {
        let mut out = super::out::Out::for_arrays(self.arrays.len());
        serde_json::to_writer(&mut out, self)
            .map_err(|e| e.to_string())
            .and_then(|()| String::from_utf8(out.into_bytes()).map_err(|e| e.to_string()))
            .unwrap_or_else(|e| {
                serde_json::json!({"changed": false, "failed": true, "warnings": [],
                    "msg": format!("cannot encode the report: {e}")})
                .to_string()
            })
    }
}
