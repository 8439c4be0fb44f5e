//! The whole plan step over generated hosts: an inventory of arbitrary arrays, members, queue
//! counts and kernel values, and a fuzzed input. `plan::plan` never panics, and every plan it
//! returns keeps the contract: only attributes the array has, in write order, once each;
//! `group_thread_cnt` never above 8192; the stripe cache and preread ranges; the writes derived
//! from the plan are exactly its due changes; the report built from it agrees with it.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use mdtune::apply::{self, Outcome, Target};
use mdtune::host::Inventory;
use mdtune::md::{Attr, Kind, Value};
use mdtune::plan::{self, Plan, Source};
use mdtune::persist::Persist;
use mdtune::report;
use mdtune::spec::{Spec, State, MAX_THREADS};

fn position(attr: Attr) -> usize {
    Attr::ALL
        .iter()
        .position(|a| *a == attr)
        .expect("attr in ALL")
}

fn check(spec: &Spec, inv: &Inventory, plan: &Plan) {
    let mut last = None;
    for ap in &plan.arrays {
        assert!(last < Some(ap.array), "arrays out of order or twice");
        last = Some(ap.array);
        let array = &inv.arrays[ap.array];
        assert_eq!(ap.name, array.name);
        let mut prev = None;
        for c in &ap.changes {
            assert!(
                prev < Some(position(c.attr)),
                "{}: changes out of order",
                ap.name
            );
            prev = Some(position(c.attr));
            assert_eq!(
                array.values.get(&c.attr),
                Some(&c.before),
                "{}: {} planned on a missing or different live value",
                ap.name,
                c.attr
            );
            assert!(
                !ap.skipped.iter().any(|s| s.setting == c.attr),
                "{}: {} both planned and skipped",
                ap.name,
                c.attr
            );
            let kind_ok = matches!(
                (c.attr.kind(), c.after),
                (Kind::Int, Value::Int(_))
                    | (Kind::Bool, Value::Bool(_))
                    | (Kind::SyncSpeed, Value::Int(_) | Value::System)
            );
            assert!(kind_ok, "{}: {} after {:?}", ap.name, c.attr, c.after);
            match (c.attr, c.after) {
                (Attr::GroupThreadCnt, Value::Int(n)) => assert!(n <= MAX_THREADS, "{n}"),
                (Attr::StripeCacheSize, Value::Int(n)) if matches!(c.source, Source::Entry(_)) => {
                    assert!((17..=32768).contains(&n), "{n}")
                }
                _ => {}
            }
            if c.source == Source::Auto {
                assert_eq!(c.attr, Attr::GroupThreadCnt);
                let q = ap.hw_queues.expect("auto without a queue count");
                if q <= 1 {
                    assert_eq!(c.after, Value::Int(0));
                }
                // Never more workers than the stripe cache in force after the run lets run.
                if let (Value::Int(n), Some(Value::Int(cache))) =
                    (c.after, ap.stripe_cache_after(array))
                {
                    assert!(
                        n <= (cache / 8).max(1),
                        "{n} workers over a cache of {cache}"
                    );
                }
            }
            // Sparse node ids: nothing above 0 is ever planned (auto gives 0, the rest is refused).
            if let (Attr::GroupThreadCnt, Value::Int(n), Some(count), Some(highest)) = (
                c.attr,
                c.after,
                inv.cpus.possible_nodes,
                inv.cpus.highest_node,
            ) {
                assert!(
                    highest < count || n == 0,
                    "{n} planned on sparse node ids ({count} nodes, highest {highest})"
                );
            }
        }
        // The kernel refuses preread_bypass_threshold above the stripe cache: never planned.
        let cache = ap.stripe_cache_after(array);
        if let (Some(c), Some(Value::Int(cache))) = (
            ap.changes
                .iter()
                .find(|c| c.attr == Attr::PrereadBypassThreshold && c.is_write()),
            cache,
        ) {
            if let (Value::Int(v), Source::Entry(_)) = (c.after, c.source) {
                assert!(v <= cache, "preread {v} above stripe cache {cache}");
            }
        }
    }
    assert_eq!(plan.limits.len(), spec.speed_limits.len());
    for l in &plan.limits {
        assert_eq!(
            Some(l.after),
            spec.speed_limits.get(&l.limit).copied().map(Value::Int)
        );
        assert_eq!(Some(&l.before), inv.speed_limits.get(&l.limit));
    }

    let writes = apply::writes(plan);
    let due = plan
        .arrays
        .iter()
        .flat_map(|a| &a.changes)
        .filter(|c| c.is_write())
        .count()
        + plan.limits.iter().filter(|l| l.before != l.after).count();
    // Held-back changes (a reshape, no mdmon) are due but never written.
    assert_eq!(writes.len(), due);
    assert!(writes.iter().all(|w| w.before != w.after));
    if plan.is_compliant() {
        assert!(writes.is_empty());
    }
    for w in &writes {
        if let Target::Md { array, .. } = &w.target {
            assert!(plan.arrays.iter().any(|a| a.name == *array));
        }
    }

    let r = report::build(spec, inv, plan, &Outcome::default(), Persist::default());
    assert!(!r.failed);
    // Never vacuous (docs/reference.md §3): compliant only when something was checked (a revert
    // with nothing saved is at its saved values) and every selected array could be read.
    let checked =
        !plan.arrays.is_empty() || !plan.limits.is_empty() || spec.state == State::Reverted;
    let unreadable = plan
        .arrays
        .iter()
        .any(|ap| inv.arrays[ap.array].unreadable.is_some());
    assert_eq!(r.compliant, checked && plan.is_compliant() && !unreadable);
    let real_run = spec.state != State::Query && !spec.check_mode;
    let would_change = !real_run && spec.state != State::Query && due > 0;
    assert_eq!(
        r.changed, would_change,
        "changed in a run that wrote nothing"
    );
    let json: serde_json::Value = serde_json::from_str(&r.to_text()).expect("the report is JSON");
    assert!(json.is_object() && json.get("msg").is_some());
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mut inv) = mdtune_fuzz::inventory(&mut u) else {
        return;
    };
    let Ok(input) = mdtune_fuzz::input(&mut u) else {
        return;
    };
    let Ok(mut spec) = Spec::from_map(input) else {
        return;
    };
    // Sometimes the udev path: one array read, entries naming others are no error.
    if u.ratio(1, 8).unwrap_or(false) {
        if let Some(name) = inv.arrays.first().map(|a| a.name.clone()) {
            inv.arrays.retain(|a| a.name == name);
            spec.only = Some(name);
        }
    }
    match plan::plan(&spec, &inv) {
        Ok(p) => check(&spec, &inv, &p),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
