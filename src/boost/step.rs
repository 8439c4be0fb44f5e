//! What a run and the tick do with sync boosts, under the host lock their caller holds: [`begin`]
//! records the values before each boost the plan puts in force (before the run writes the
//! boost's values), and [`end_finished`] ends every recorded boost whose sync is over, putting
//! the values before it back through the same write, read-back and rollback as any run.

use super::decide::{ending, is_over, saved_for, End};
use super::record;
use crate::apply::{self, Target, Write};
use crate::host::{boost_records, untyped, BoostRecord};
use crate::md::sync::SYNC_ACTION;
use crate::md::{kernel, parse_value, Attr, Value};
use crate::plan::Plan;
use crate::sys::{self, KernelFile, Root};
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

/// One boost ended (docs/reference.md §1, `--tick` (b)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ended {
    pub array: String,
    /// The sync that was boosted, and since when.
    pub sync: String,
    pub since: u64,
    /// Each setting put back: `{"from": boost, "to": value before the boost}`.
    pub restored: Map<String, Json>,
    /// Each setting someone changed during the boost, left alone: `{"value": what it reads,
    /// "boost": the boost's value}`.
    pub left_alone: Map<String, Json>,
}

impl Ended {
    /// One phrase for a `msg`: `md0: the resync's boost ended: sync_speed_min 500000 -> 50000;
    /// sync_speed_max left alone at 700000 (changed by hand during the boost)`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .restored
            .iter()
            .map(|(k, v)| format!("{k} {} -> {}", bare(&v["from"]), bare(&v["to"])))
            .collect();
        parts.extend(self.left_alone.iter().map(|(k, v)| {
            format!(
                "{k} left alone at {} (changed by hand during the boost)",
                bare(&v["value"])
            )
        }));
        let what = if parts.is_empty() {
            String::new()
        } else {
            format!(": {}", parts.join(", "))
        };
        format!("{}: the {}'s boost ended{what}", self.array, self.sync)
    }
}

/// A value as a message says it: `system`, not `"system"`.
fn bare(v: &Json) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Reads `md/<file>` of `array`, trimmed.
fn read(root: &Root, array: &str, file: &str) -> io::Result<String> {
    root.read_kernel(KernelFile::Md { array, attr: file })
        .map(sys::trimmed)
}

/// Ends every recorded boost whose sync is over (`md/sync_action` reads none of its syncs, or
/// the array is gone): the values before it come back where they still read the boost's, the
/// others are left alone and named, and the record is removed. A restore that fails keeps the
/// record (the next tick tries again) and is said. The caller holds the host lock.
pub fn end_finished(root: &Root) -> (Vec<Ended>, Vec<String>) {
    let (mut ended, mut errors) = (Vec::new(), Vec::new());
    for rec in boost_records(root).into_iter().flatten() {
        let action = match read(root, &rec.array, SYNC_ACTION) {
            Ok(a) => Some(a),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                errors.push(format!(
                    "{}: md/{SYNC_ACTION} cannot be read: {e}",
                    rec.array
                ));
                continue;
            }
        };
        if !is_over(&rec, action.as_deref()) {
            continue;
        }
        match end(root, &rec, action.is_some()) {
            Ok(e) => ended.push(e),
            Err(e) => errors.push(e),
        }
    }
    (ended, errors)
}

/// Ends the boost of `rec`, whose sync is over; on an array that is gone (`present` false) only
/// the record goes.
fn end(root: &Root, rec: &BoostRecord, present: bool) -> Result<Ended, String> {
    let live: BTreeMap<Attr, Value> = rec
        .boost_values()
        .into_keys()
        .filter(|_| present)
        .filter_map(|a| {
            Some((
                a,
                parse_value(a.kind(), &read(root, &rec.array, a.name()).ok()?)?,
            ))
        })
        .collect();
    let mut done = Ended {
        array: rec.array.clone(),
        sync: rec.action.clone(),
        since: rec.since,
        restored: Map::new(),
        left_alone: Map::new(),
    };
    let mut writes = Vec::new();
    for (attr, e) in ending(rec, &live) {
        match e {
            End::Restore { boost, saved } => {
                let pair = serde_json::json!({"from": boost, "to": saved});
                done.restored.insert(attr.name().into(), pair);
                if boost != saved {
                    writes.push(Write {
                        target: Target::Md {
                            array: rec.array.clone(),
                            attr,
                        },
                        before: boost,
                        after: saved,
                    });
                }
            }
            End::LeftAlone { live, boost } => {
                let pair = serde_json::json!({"value": live, "boost": boost});
                done.left_alone.insert(attr.name().into(), pair);
            }
        }
    }
    // The sync limits take no pause: the wait never starts.
    let wait = Duration::from_millis(kernel::SYNC_STOP_WAIT_MS);
    let outcome = apply::apply(root, writes, wait, &mut |_| Ok(()));
    if let Some(f) = outcome.failure {
        return Err(format!(
            "{}: the {}'s boost did not end (the values before it were not put back: {}); the \
             next mdtune --tick tries again",
            rec.array, rec.action, f.error
        ));
    }
    record::remove(root, &rec.array).map_err(|e| {
        format!(
            "{}: the values before the boost are back, but its record was not removed: {e}",
            rec.array
        )
    })?;
    Ok(done)
}

/// Records the values before each boost of `plan` that is in force (its sync runs), and notes
/// them and since when in the plan (for the report). With `write` (a real run), a boost that
/// starts, or whose values or steady state changed, has its record written now, before the run
/// writes the boost's values; the arrays whose record this wrote first are returned, so that a
/// failed run can remove them ([`undo`]). Without `write`, records are only read.
pub fn begin(root: &Root, plan: &mut Plan, write: bool) -> io::Result<Vec<String>> {
    let records: Vec<BoostRecord> = boost_records(root).into_iter().flatten().collect();
    let mut began = Vec::new();
    for ap in &mut plan.arrays {
        let Some(bp) = ap.boost.as_mut() else {
            continue;
        };
        let old = records.iter().find(|r| r.array == ap.name);
        if !bp.active {
            bp.saved = old.map(BoostRecord::saved_values);
            bp.since = old.map(|r| r.since);
            continue;
        }
        let saved = saved_for(old, bp);
        let rec = BoostRecord {
            array: ap.name.clone(),
            action: old.map_or_else(|| action_of(root, &ap.name), |r| r.action.clone()),
            during: bp.during.clone(),
            values: untyped(&bp.values),
            saved: untyped(&saved),
            since: old.map_or_else(crate::persist::now, |r| r.since),
        };
        if write && old != Some(&rec) {
            record::write(root, &rec)?;
            if old.is_none() {
                began.push(ap.name.clone());
            }
        }
        bp.saved = Some(saved);
        bp.since = Some(rec.since);
    }
    Ok(began)
}

/// The sync `array` runs, as `md/sync_action` reads it.
fn action_of(root: &Root, array: &str) -> String {
    read(root, array, SYNC_ACTION).unwrap_or_default()
}

/// Removes the records [`begin`] wrote first for `arrays` (the run failed and rolled back).
pub fn undo(root: &Root, arrays: &[String]) {
    for a in arrays {
        let _ = record::remove(root, a);
    }
}
