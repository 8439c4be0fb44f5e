//! The trail line's `reason` (docs/reference.md §6): why the values a run changed were wanted,
//! from the input's `reason`s that cover them (an entry's own for the settings it sets, the top
//! level's for the rest; each setting of the report carries its own). One reason for everything
//! the run changed is `; reason: TEXT`; several name what each covers,
//! `; reason for md0 stripe_cache_size: TEXT`. Pure; `super::line` escapes the whole line.

use crate::report::{Report, Setting};

/// The reason part of a run's line, for the settings `counts` picks (those it changed, or for a
/// failed run those it meant to change); empty when none of them has a reason.
pub(super) fn of_report(report: &Report, counts: impl Fn(&Setting) -> bool) -> String {
    let mut covered: Vec<(String, &str)> = Vec::new();
    let mut without = false;
    let arrays = report.arrays.iter().flat_map(|a| {
        a.settings
            .iter()
            .map(move |(k, s)| (format!("{} {k}", a.name), s))
    });
    let system = report
        .system
        .iter()
        .map(|(k, s)| (format!("system {k}"), s));
    for (what, s) in arrays.chain(system).filter(|(_, s)| counts(s)) {
        match s.reason.as_deref() {
            Some(r) => covered.push((what, r)),
            None => without = true,
        }
    }
    let Some((_, first)) = covered.first() else {
        return String::new();
    };
    if !without && covered.iter().all(|(_, r)| r == first) {
        return format!("; reason: {first}");
    }
    let mut reasons: Vec<&str> = covered.iter().map(|(_, r)| *r).collect();
    reasons.dedup();
    reasons.sort_unstable();
    reasons.dedup();
    reasons
        .iter()
        .map(|r| {
            let what: Vec<&str> = covered
                .iter()
                .filter(|(_, c)| c == r)
                .map(|(w, _)| w.as_str())
                .collect();
            format!("; reason for {}: {r}", what.join(", "))
        })
        .collect()
}
