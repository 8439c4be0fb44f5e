//! A measured run (docs/reference.md §2 `measure`, `revert_if_slower`; §3 `effect`): the glue
//! around `tune`'s writes. Before them, each array the writes change is sampled for `measure`
//! seconds (`crate::measure`); after them (once a sync paused for them runs again) as long
//! again; each array's report gets its `effect` and the `msg` its verdict. With
//! `revert_if_slower`, a `slower` verdict puts every write of the run back through the
//! rollback's path (`crate::apply::restore`), and the report then says what is left changed.
//! In check mode only the before window is taken. A run without `measure` reads nothing here.

use super::lock::sync_stop_wait;
use crate::apply::{self, Outcome, Restored, Target, Write};
use crate::measure::{
    interval_for, intervals, sample, wait_running, Effect, Interval, Kind, Sampler,
};
use crate::plan::Plan;
use crate::report::Report;
use crate::spec::Spec;
use crate::sys::Root;
use std::time::Duration;

/// The before window of a measured run.
pub(super) struct Before {
    names: Vec<String>,
    sampler: Sampler,
    seconds: u64,
    windows: Vec<Vec<Interval>>,
}

/// How long a sync paused for the writes may take to run again before the after window starts
/// anyway (its verdict then says the sync ran in part of the windows only).
const RUNNING_AGAIN: Duration = Duration::from_secs(10);

/// The arrays `writes` change: each with a write of its own; every planned array when a system
/// limit is written (it is in force on all of them).
fn changed_arrays(plan: &Plan, writes: &[Write]) -> Vec<String> {
    let limit = writes.iter().any(|w| matches!(w.target, Target::Limit(_)));
    plan.arrays
        .iter()
        .filter(|a| {
            limit
                || writes
                    .iter()
                    .any(|w| matches!(&w.target, Target::Md { array, .. } if *array == a.name))
        })
        .map(|a| a.name.clone())
        .collect()
}

/// Samples the arrays the plan's writes change, when `measure` asks and something is due.
pub(super) fn before(spec: &Spec, root: &Root, plan: &Plan) -> Option<Before> {
    let seconds = spec.measure?;
    let names = changed_arrays(plan, &apply::writes(plan));
    if names.is_empty() {
        return None;
    }
    let sampler = Sampler::open(root, &names);
    let windows = sample(&sampler, seconds)
        .iter()
        .map(|r| intervals(r))
        .collect();
    Some(Before {
        names,
        sampler,
        seconds,
        windows,
    })
}

/// Takes the after window, sets each measured array's `effect`, adds the verdicts to `msg`,
/// and, with `revert_if_slower` and a `slower` verdict, puts the run's writes back.
pub(super) fn after(
    spec: &Spec,
    root: &Root,
    before: Option<Before>,
    outcome: &Outcome,
    report: &mut Report,
) {
    let Some(b) = before else { return };
    let ms = interval_for(b.seconds).as_millis() as u64;
    let no_after = if spec.check_mode {
        Some("check mode: only the before window is measured")
    } else if outcome.failure.is_some() {
        Some("the writes failed and were rolled back: there is nothing to measure after them")
    } else {
        None
    };
    let effects: Vec<Effect> = match no_after {
        Some(why) => b
            .windows
            .iter()
            .map(|w| Effect::before_only(b.seconds, ms, w, why))
            .collect(),
        None => {
            let paused: Vec<usize> = (0..b.names.len())
                .filter(|i| outcome.paused.iter().any(|p| p.array == b.names[*i]))
                .collect();
            wait_running(&b.sampler, &paused, RUNNING_AGAIN);
            let after = sample(&b.sampler, b.seconds);
            b.windows
                .iter()
                .zip(&after)
                .map(|(w, a)| Effect::measured(b.seconds, ms, w, &intervals(a)))
                .collect()
        }
    };
    let slower: Vec<String> = b
        .names
        .iter()
        .zip(&effects)
        .filter(|(_, e)| e.verdict == Some(Kind::Slower))
        .map(|(n, _)| n.clone())
        .collect();
    let said: Vec<String> = b
        .names
        .iter()
        .zip(&effects)
        .map(|(n, e)| verdict_words(n, e))
        .collect();
    for (name, effect) in b.names.iter().zip(effects) {
        if let Some(a) = report.arrays.iter_mut().find(|a| a.name == *name) {
            a.effect = Some(effect);
        }
    }
    report
        .msg
        .push_str(&format!("; measured: {}", said.join("; ")));
    if spec.revert_if_slower && !slower.is_empty() && !outcome.done.is_empty() {
        let restored = apply::restore(root, outcome.done.clone(), sync_stop_wait());
        reverted(report, &restored, &slower);
    }
}

/// `md0 faster (bytes_per_second 215.0 MiB/s -> 525.0 MiB/s (x2.44); ...)`.
fn verdict_words(name: &str, e: &Effect) -> String {
    match e.verdict {
        Some(k) => format!("{name} {} ({})", k.name(), e.why),
        None => format!("{name}: {}", e.why),
    }
}

/// The report of a run whose writes `restored` put back because `slower` were slower: each
/// setting put back reads its old value again and is not changed; one that could not be is
/// said, with the value the kernel holds, and fails the run.
fn reverted(report: &mut Report, restored: &Restored, slower: &[String]) {
    for w in &restored.rolled_back {
        if let Some(s) = setting(report, &w.target) {
            (s.after, s.changed) = (w.before, false);
        }
    }
    let mut left = Vec::new();
    for n in &restored.not_restored {
        if let Some(s) = setting(report, &n.write.target) {
            s.after = n.now.unwrap_or(n.write.after);
        }
        left.push(n.error.to_string());
    }
    left.extend(restored.not_resumed.iter().cloned());
    for a in report.arrays.iter_mut() {
        if let Some(e) = a.effect.as_mut() {
            e.reverted = true;
        }
    }
    let settings_changed = report
        .arrays
        .iter()
        .flat_map(|a| a.settings.values())
        .chain(report.system.values())
        .any(|s| s.changed);
    report.changed = settings_changed || report.persist.changed || !left.is_empty();
    if let Some(diff) = report.diff.as_mut() {
        if left.is_empty() {
            diff.clear();
        }
    }
    let put_back: Vec<String> = restored
        .rolled_back
        .iter()
        .map(|w| format!("{} {} -> {}", w.target, w.after, w.before))
        .collect();
    let end = if left.is_empty() {
        "nothing is left changed".to_string()
    } else {
        report.failed = true;
        format!("not put back: {}", left.join("; "))
    };
    report.msg = format!(
        "{} slower: revert_if_slower put back {}; {end}. {}",
        slower.join(", "),
        if put_back.is_empty() {
            "nothing (the values were back already)".to_string()
        } else {
            put_back.join(", ")
        },
        report.msg
    );
}

/// The report's entry of the setting `t`.
fn setting<'a>(report: &'a mut Report, t: &Target) -> Option<&'a mut crate::report::Setting> {
    match t {
        Target::Md { array, attr } => report
            .arrays
            .iter_mut()
            .find(|a| a.name == *array)?
            .settings
            .get_mut(attr.name()),
        Target::Limit(l) => report.system.get_mut(l.name()),
    }
}
