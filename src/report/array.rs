//! One array's part of the report (docs/reference.md §3): its entry in `arrays` (what was read of
//! it, each managed setting with what holds it back, what was skipped, whether it complies), its
//! line of the `msg` and its entry in the diff. Pure. How a setting's `after` and `changed`
//! follow from what applying did is `super::setting`; the words of the line are `super::msg`.

use super::model::{ArrayReport, HeldBack, Setting, SyncBoost, SyncPause};
use super::msg;
use super::setting::{Ends, Summary};
use crate::apply::Target;
use crate::host::Array;
use crate::md::{kernel, Attr, SpeedLimit, Value};
use crate::plan::{ArrayPlan, Change, Diff, Source};
use crate::spec::State;
use std::collections::BTreeMap;

/// The system limits as the host has them (those that were read).
pub(super) type System = BTreeMap<SpeedLimit, Value>;

/// What one array adds to the report.
pub(super) struct Part {
    pub(super) report: ArrayReport,
    pub(super) line: msg::Line,
    /// Present when something is (or would be) different.
    pub(super) diff: Option<Diff>,
}

/// The part of the array `a`, planned as `ap`, in a run of `state` that ended as `ends` says, on
/// a host whose system limits are `system`.
pub(super) fn array(a: &Array, ap: &ArrayPlan, state: State, ends: &Ends, system: &System) -> Part {
    let mut settings = BTreeMap::new();
    let mut summary = Summary::default();
    let compliant = ap.is_compliant() || state == State::Reverted;
    let mut line = msg::Line::new(&a.name, compliant, ends.rolled_out);
    for c in &ap.changes {
        let s = setting(a, ap, c, ends, system);
        // The diff shows what is (or would be) different: nothing after a full rollback.
        summary.add(c.attr.name(), c.before, s.after);
        settings.insert(c.attr.name(), s);
        line.add(c.attr.name(), c.before, c.after, c.hold);
    }
    // A frozen sync starts no rebuild onto a spare: never compliant (docs/reference.md §3).
    let frozen = a.sync.as_ref().and_then(|s| s.frozen_by.as_ref());
    if let Some(by) = frozen {
        line.state(&by.describe(&a.name));
    }
    let sync_pause = sync_pause(a, ap, ends);
    let sync_boost = sync_boost(a, ap);
    if let Some(p) = &sync_pause {
        line.note(msg::pause_note(p, state));
    } else if let Some(b) = ap.boost.as_ref().filter(|b| b.active) {
        let action = a.sync.as_ref().map_or("", |s| s.action.as_str());
        let due = ap
            .changes
            .iter()
            .any(|c| b.values.get(&c.attr) == Some(&c.after) && c.is_due());
        if due {
            line.note(format!("sync_boost while the {action} runs"));
        }
    }
    // Skipped with a warning: an array that cannot be read, queues that cannot be found.
    if let Some(why) = &a.unreadable {
        line.skipped("", why);
    } else {
        for s in ap.skipped.iter().filter(|s| s.source == Source::Auto) {
            line.skipped(s.setting.name(), &s.reason);
        }
    }
    let report = ArrayReport {
        name: a.name.clone(),
        devname: a.devnames.first().cloned(),
        uuid: a.mdadm_uuid(),
        level: a.level.clone(),
        array_state: a.array_state.clone(),
        members: a.members.clone(),
        hw_queues: ap.hw_queues,
        sync: a.sync.clone(),
        sync_pause,
        sync_boost,
        settings,
        skipped: ap.skipped.clone(),
        // Never vacuous: values that could not be read are not known to match.
        compliant: ap.is_compliant() && a.unreadable.is_none() && frozen.is_none(),
        effect: None,
    };
    Part {
        report,
        line,
        diff: summary.finish(&a.name),
    }
}

/// The array's sync boost: as its entry gives it (with the record's values before it and since
/// when, once in force), else the one recorded in force (an entry no longer gives it, or a view
/// of the host that reads no entry).
fn sync_boost(a: &Array, ap: &ArrayPlan) -> Option<SyncBoost> {
    if let Some(b) = &ap.boost {
        return Some(SyncBoost {
            active: b.active,
            during: b.during.clone(),
            limits: b.values.clone(),
            saved: b.saved.clone(),
            since: b.since,
        });
    }
    let rec = a.sync.as_ref()?.boost.as_ref()?;
    Some(SyncBoost {
        active: true,
        during: rec.during.clone(),
        limits: rec.boost_values(),
        saved: Some(rec.saved_values()),
        since: Some(rec.since),
    })
}

/// The sync paused around the array's writes: in a real run, the one this run paused (none when
/// it found no sync running when it wrote); in check mode and `query`, the one a run would
/// pause, with the settings it would write from the first that needs the pause on.
fn sync_pause(a: &Array, ap: &ArrayPlan, ends: &Ends) -> Option<SyncPause> {
    if ends.real_run() {
        return ends.paused(&a.name).cloned().map(SyncPause::Done);
    }
    let run = ap.pause?;
    let settings = ap
        .changes
        .iter()
        .filter(|c| c.is_write())
        .skip_while(|c| !kernel::PAUSED_FOR.contains(&c.attr))
        .map(|c| c.attr)
        .collect();
    Some(SyncPause::Planned {
        action: run,
        settings,
    })
}

/// The entry of one managed setting of the array: with `why` when `auto` decided it, the unit a
/// sync limit counts in, and what holds it back when something does.
fn setting(a: &Array, ap: &ArrayPlan, c: &Change, ends: &Ends, system: &System) -> Setting {
    let t = Target::Md {
        array: a.name.clone(),
        attr: c.attr,
    };
    let mut s = ends.setting(&t, c.before, c.after, Some(c.source));
    if c.source == Source::Auto {
        s.why.clone_from(&ap.why);
    }
    // Held back: not written, so `after` is the value that stays in place.
    if let Some(hold) = c.hold {
        (s.after, s.changed) = (c.before, false);
        s.held_back = Some(HeldBack {
            reason: hold.reason(a),
            wanted: c.after,
        });
    }
    s.unit = kernel::sync_unit(&a.level, c.attr.name());
    s.per_member_kib_s = per_member(a, c.attr, s.after, system);
    s
}

/// What each member of a raid10 runs at in a resync, check or repair when its `attr`
/// (`sync_speed_min` or `_max`) is `value`: the array's own, or the system limit it follows.
fn per_member(a: &Array, attr: Attr, value: Value, system: &System) -> Option<u64> {
    let r10 = a.raid10?;
    let follows = match attr {
        Attr::SyncSpeedMin => SpeedLimit::Min,
        Attr::SyncSpeedMax => SpeedLimit::Max,
        _ => return None,
    };
    let limit = match value {
        Value::System => system.get(&follows).copied()?,
        v => v,
    };
    let Value::Int(limit) = limit else {
        return None;
    };
    kernel::raid10_per_member(limit, r10.copies, r10.raid_disks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::Outcome;
    use crate::host::fixtures::{host, raid};
    use crate::host::Inventory;
    use crate::md::{Attr, Value};
    use crate::spec::Spec;
    use serde_json::json;

    /// The part of the first array of `inv` for `input`, in a run that wrote nothing.
    fn part(input: serde_json::Value, inv: &Inventory) -> Part {
        let spec = Spec::from_json(&input.to_string()).unwrap();
        let plan = crate::plan::plan(&spec, inv).unwrap();
        let outcome = Outcome::default();
        let ends = Ends::new(&spec, &outcome);
        array(
            &inv.arrays[0],
            &plan.arrays[0],
            spec.state,
            &ends,
            &inv.speed_limits,
        )
    }

    fn text(line: &msg::Line) -> String {
        let (parts, rest) = msg::arrays(std::slice::from_ref(line), "compliant");
        parts.into_iter().chain(rest).collect()
    }

    #[test]
    fn a_converged_array_is_compliant_counted_and_has_no_diff() {
        let inv = host(vec![raid("md0", "raid5", &[Some(1), Some(1)])]);
        let p = part(json!({"state": "query"}), &inv);
        assert!(p.report.compliant && p.diff.is_none());
        assert_eq!(
            p.report.uuid.as_deref(),
            Some("00000000:e5f60718:293a4b5c:6d7e8f90")
        );
        assert_eq!(text(&p.line), "1 array compliant");
    }

    #[test]
    fn a_due_setting_is_named_in_the_line_and_the_diff_with_why_auto_chose_it() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8), Some(8)])]);
        let p = part(json!({"check_mode": true}), &inv);
        let s = &p.report.settings["group_thread_cnt"];
        assert_eq!((s.after, s.changed), (Value::Int(8), true));
        assert!(s.why.as_deref().is_some_and(|w| !w.is_empty()), "{s:?}");
        assert!(!p.report.compliant);
        assert_eq!(text(&p.line), "md0: group_thread_cnt 0 -> 8");
        let d = p.diff.expect("a diff entry");
        assert!(d.after.contains("group_thread_cnt: 8\n"), "{}", d.after);
    }

    #[test]
    fn a_held_back_setting_keeps_its_value_and_says_what_it_waits_for() {
        let mut a = raid("md0", "raid5", &[Some(8), Some(8)]);
        a.reshape = Some("reshape".into());
        let inv = host(vec![a]);
        let p = part(json!({"check_mode": true}), &inv);
        let s = &p.report.settings[Attr::GroupThreadCnt.name()];
        assert_eq!((s.after, s.changed), (Value::Int(0), false));
        let held = s.held_back.as_ref().expect("held back");
        assert_eq!(held.wanted, Value::Int(8));
        assert!(held.reason.contains("reshaping"), "{}", held.reason);
        assert_eq!(
            text(&p.line),
            "md0: group_thread_cnt 0 -> 8 held back (reshape)"
        );
        // Nothing will be different after this run.
        assert!(p.diff.is_none());
    }

    #[test]
    fn an_unreadable_array_is_skipped_and_never_compliant() {
        let mut a = raid("md0", "raid5", &[Some(1), Some(1)]);
        a.unreadable = Some("md0: md/array_state: permission denied".into());
        let inv = host(vec![a]);
        let p = part(json!({"state": "query"}), &inv);
        assert!(!p.report.compliant);
        assert_eq!(
            text(&p.line),
            "md0: skipped: md/array_state: permission denied"
        );
    }
}
