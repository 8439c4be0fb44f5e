//! The plan: for every selected array and every managed setting, the value in force, the value
//! wanted and where the wish came from. Pure: it reads a [`Spec`] and an [`Inventory`] and touches
//! nothing, so every rule of the contract about selection, precedence, skipping and the `auto`
//! thread policy is tested here without a filesystem.
//!
//! Rules applied here (docs/reference.md §2): entries select arrays by kernel name, glob, mdadm
//! name or uuid; a later entry overrides an earlier one per setting; `thread_policy` fills in
//! `group_thread_cnt` where no entry set it; a setting the array's level lacks is skipped when it
//! came from a glob or the policy, and is an error when an exact entry asked for it. An array that
//! could not be read is skipped whole, with a warning. What must wait (a reshape, a missing mdmon)
//! is planned but held back: see [`super::hold`]. The `group_thread_cnt` that `auto` decides is
//! bounded by the stripe cache in force after the run (the one this run sets, unless it is held
//! back); on a host whose possible NUMA node ids are sparse, any value above 0 that the input asks
//! for is refused (docs/auto.md §3).

use super::auto::{auto_threads, Cache};
use super::boost::plan_boost;
use super::hold;
use super::model::{ArrayPlan, Change, LimitChange, Plan, PlanError, Skip, Source};
use crate::host::{Array, Inventory};
use crate::md::{kernel, Attr, Value};
use crate::spec::{AutoParams, Boost, Entry, NameSelector, Spec, Want};
use std::collections::BTreeMap;

/// What an array should get for one setting, and whether the entry that asked named it exactly.
#[derive(Clone, Copy)]
struct Wish {
    want: Want,
    source: Source,
    exact: bool,
}

/// Computes the plan. Errors are the input's fault on this host: nothing has been written.
pub fn plan(spec: &Spec, inv: &Inventory) -> Result<Plan, PlanError> {
    let mut plan = Plan::default();
    // Selected arrays (by inventory index) and what each entry wished for them, later entries last.
    let mut wishes: BTreeMap<usize, BTreeMap<Attr, Wish>> = BTreeMap::new();
    // Each array's sync_boost: the later entry's, whole.
    let mut boosts: BTreeMap<usize, (&Boost, usize, bool)> = BTreeMap::new();
    for entry in &spec.arrays {
        let matched = match select(entry, inv, &mut plan.warnings) {
            // Under udev only one array is read: entries naming others are not errors.
            Err(PlanError::NoMatch { .. }) if spec.only.is_some() => Vec::new(),
            other => other?,
        };
        for i in matched {
            if let Some(b) = &entry.boost {
                boosts.insert(i, (b, entry.index, entry.is_exact()));
            }
            let w = wishes.entry(i).or_default();
            for (&attr, &want) in &entry.settings {
                w.insert(
                    attr,
                    Wish {
                        want,
                        source: Source::Entry(entry.index),
                        exact: entry.is_exact(),
                    },
                );
            }
        }
    }
    for (i, mut wish) in wishes {
        let array = &inv.arrays[i];
        wish.entry(Attr::GroupThreadCnt).or_insert(Wish {
            want: spec.thread_policy.want,
            source: Source::ThreadPolicy,
            exact: false,
        });
        // An entry's "auto" takes min/max/combine from the thread policy object too.
        let auto = &spec.thread_policy.auto;
        let mut ap = plan_array(i, array, &wish, auto, inv, &mut plan.warnings)?;
        if let Some(&(b, index, exact)) = boosts.get(&i) {
            plan_boost(array, &mut ap, b, index, exact)?;
        }
        plan.arrays.push(ap);
    }
    for (&limit, &after) in &spec.speed_limits {
        let before = *inv.speed_limits.get(&limit).ok_or(PlanError::NoSuchLimit {
            limit: limit.name(),
            why: if limit.always_there() {
                "the md module is not loaded"
            } else {
                "md has it from Linux 6.16"
            },
        })?;
        plan.limits.push(LimitChange {
            limit,
            before,
            after: Value::Int(after),
        });
    }
    Ok(plan)
}

/// The arrays an entry selects, as inventory indices.
fn select(
    entry: &Entry,
    inv: &Inventory,
    warnings: &mut Vec<String>,
) -> Result<Vec<usize>, PlanError> {
    let by_name = |a: &Array| match &entry.name {
        None => true,
        Some(NameSelector::Glob(p)) => p.matches(&a.name),
        Some(NameSelector::Exact(n)) => {
            a.name == *n || (!inv.arrays.iter().any(|b| b.name == *n) && a.devnames.contains(n))
        }
        Some(NameSelector::DevMd(n)) => a.devnames.contains(n),
    };
    let by_uuid = |a: &Array| entry.uuid.is_none() || a.uuid == entry.uuid;
    let matched: Vec<usize> = (0..inv.arrays.len())
        .filter(|&i| by_name(&inv.arrays[i]) && by_uuid(&inv.arrays[i]))
        .collect();
    if matched.is_empty() {
        let key = format!("arrays[{}]", entry.index);
        let (what, value) = match (&entry.name, &entry.uuid) {
            (Some(NameSelector::Glob(p)), None) => {
                warnings.push(format!("{key}.name: glob \"{p}\" matches no md array"));
                return Ok(matched);
            }
            // A uuid is exact even beside a glob.
            (Some(NameSelector::Glob(p)), Some(u)) => {
                ("uuid", format!("\"{u}\" with name glob \"{p}\""))
            }
            (Some(NameSelector::Exact(n) | NameSelector::DevMd(n)), None) => {
                ("name", format!("\"{n}\""))
            }
            (None, Some(u)) => ("uuid", format!("\"{u}\"")),
            (Some(NameSelector::Exact(n) | NameSelector::DevMd(n)), Some(u)) => {
                ("name", format!("\"{n}\" with uuid \"{u}\""))
            }
            (None, None) => ("name", "nothing".to_string()),
        };
        // The name matches, the uuid does not: say which uuid that array has.
        if let (Some(NameSelector::Exact(_) | NameSelector::DevMd(_)), Some(_)) =
            (&entry.name, &entry.uuid)
        {
            let named = inv.arrays.iter().find(|a| by_name(a));
            if let Some((a, hex)) = named.and_then(|a| Some((a, a.uuid.as_deref()?))) {
                let given = entry.uuid_given.clone().unwrap_or_default();
                return Err(PlanError::UuidDiffers {
                    key: format!("{key}.uuid"),
                    array: a.name.clone(),
                    has: crate::md::uuid_like(hex, &given),
                    given,
                });
            }
        }
        // With their mdadm names: a person looks for `hana_data`, not `md0`.
        let known: Vec<String> = inv
            .arrays
            .iter()
            .map(|a| match a.devnames.as_slice() {
                [] => a.name.clone(),
                names => format!("{} ({})", a.name, names.join(", ")),
            })
            .collect();
        return Err(PlanError::NoMatch {
            key: format!("{key}.{what}"),
            value,
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    }
    Ok(matched)
}

fn plan_array(
    index: usize,
    array: &Array,
    wish: &BTreeMap<Attr, Wish>,
    auto: &AutoParams,
    host: &Inventory,
    warnings: &mut Vec<String>,
) -> Result<ArrayPlan, PlanError> {
    let threads = auto_threads(&array.members, auto, &host.cpus, None);
    let mut ap = ArrayPlan {
        array: index,
        name: array.name.clone(),
        hw_queues: threads.as_ref().ok().map(|t| t.queues),
        why: None,
        changes: Vec::new(),
        skipped: Vec::new(),
        pause: None,
        boost: None,
    };
    if let Some(why) = &array.unreadable {
        // Skipped whole, whoever asked: the array is being stopped or reads what the kernel
        // would not print.
        warnings.push(format!("{}: skipped: {why}", array.name));
        ap.hw_queues = None;
        for (&attr, w) in wish {
            ap.skipped.push(Skip {
                setting: attr,
                reason: array.lacks(attr.family()),
                source: w.source,
            });
        }
        return Ok(ap);
    }
    for (&attr, w) in wish {
        let key = match w.source {
            Source::Entry(i) => format!("arrays[{i}].{attr}"),
            Source::Auto | Source::ThreadPolicy | Source::Saved => "thread_policy".to_string(),
        };
        let Some(&before) = array.values.get(&attr) else {
            let mut reason = array.lacks(attr.family());
            if let (true, Some(v)) = (reason.ends_with("does not offer it"), attr.since()) {
                reason.push_str(&format!(" (md has {attr} from Linux {v})"));
            }
            if w.exact && matches!(w.source, Source::Entry(_)) {
                return Err(PlanError::NotAvailable { key, attr, reason });
            }
            ap.skipped.push(Skip {
                setting: attr,
                reason,
                source: w.source,
            });
            continue;
        };
        let (after, source) = match w.want {
            Want::Value(v) => (v, w.source),
            Want::Auto => match &threads {
                Ok(t) => {
                    ap.why = Some(t.why.clone());
                    (Value::Int(t.threads), Source::Auto)
                }
                Err(why) => {
                    warnings.push(format!("{}: {attr} left unchanged: {why}", array.name));
                    ap.skipped.push(Skip {
                        setting: attr,
                        reason: why.clone(),
                        source: Source::Auto,
                    });
                    continue;
                }
            },
        };
        refuse_on_sparse_nodes(attr, after, &key, host)?;
        ap.changes.push(Change::new(attr, before, after, source));
    }
    // The kernel refuses a preread_bypass_threshold above the stripe cache size (EINVAL).
    let cache = ap.stripe_cache_after(array);
    if let (Some(c), Some(Value::Int(cache))) = (
        ap.changes
            .iter()
            .find(|c| c.attr == Attr::PrereadBypassThreshold),
        cache,
    ) {
        if let (Value::Int(v), Source::Entry(i)) = (c.after, c.source) {
            if v > cache && c.is_due() {
                return Err(PlanError::AboveStripeCache {
                    key: format!("arrays[{i}].preread_bypass_threshold"),
                    value: v,
                    array: array.name.clone(),
                    cache,
                });
            }
        }
    }
    bound_by_the_cache(array, &mut ap, auto, host);
    if threads.as_ref().is_ok_and(|t| t.sparse) {
        let (nodes, highest) = host.cpus.sparse_nodes().unwrap_or_default();
        let w = format!(
            "group_thread_cnt stays 0 on every raid4/5/6 array: the possible NUMA node ids are \
             sparse ({nodes} nodes, the highest id {highest}), and {}",
            kernel::SPARSE_NODES_WHY
        );
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    // Checked against the wanted cache above; now mark what has to wait, and the sync that the
    // writes left go in around.
    hold::hold_back(array, &mut ap, warnings);
    ap.pause = hold::pause_for(array, &ap);
    Ok(ap)
}

/// Refuses a `group_thread_cnt` above 0 (`key` asked for it) on a host whose possible NUMA node
/// ids are sparse ([`kernel::sparse_nodes`]): nothing is written.
fn refuse_on_sparse_nodes(
    attr: Attr,
    after: Value,
    key: &str,
    host: &Inventory,
) -> Result<(), PlanError> {
    match (attr, after, host.cpus.sparse_nodes()) {
        (Attr::GroupThreadCnt, Value::Int(value), Some((nodes, highest))) if value > 0 => {
            Err(PlanError::SparseNodes {
                key: key.to_string(),
                value,
                nodes,
                highest,
                why: kernel::SPARSE_NODES_WHY,
            })
        }
        _ => Ok(()),
    }
}

/// Bounds the `group_thread_cnt` that `auto` decided by the workers the stripe cache in force
/// after this run lets run (docs/auto.md §3): the cache this run sets, unless it is held back,
/// else the live one.
fn bound_by_the_cache(array: &Array, ap: &mut ArrayPlan, auto: &AutoParams, host: &Inventory) {
    let Some(i) = ap
        .changes
        .iter()
        .position(|c| c.attr == Attr::GroupThreadCnt && c.source == Source::Auto)
    else {
        return;
    };
    let Some(&Value::Int(live)) = array.values.get(&Attr::StripeCacheSize) else {
        return;
    };
    // What hold would leave of this plan's cache: computed on a copy, its warnings dropped.
    let mut probe = ap.clone();
    hold::hold_back(array, &mut probe, &mut Vec::new());
    let size = match probe.stripe_cache_after(array) {
        Some(Value::Int(size)) => size,
        _ => live,
    };
    let cache = Cache {
        size,
        live,
        disks: array.raid_disks,
        page: host.page_size,
    };
    if let Ok(t) = auto_threads(&array.members, auto, &host.cpus, Some(&cache)) {
        ap.changes[i].after = Value::Int(t.threads);
        ap.why = Some(t.why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fixtures::{host, member, raid};
    use crate::host::Role;
    use crate::md::SpeedLimit;
    use crate::plan::Hold;
    use crate::spec::Combine;
    use serde_json::json;

    fn run(input: serde_json::Value, inv: &Inventory) -> Result<Plan, PlanError> {
        plan(&Spec::from_json(&input.to_string()).unwrap(), inv)
    }

    /// md0's planned `group_thread_cnt` for `input` on `inv`, and why.
    fn md0_threads(input: serde_json::Value, inv: &Inventory) -> (Option<Value>, String) {
        let p = run(input, inv).unwrap();
        (
            threads(&p, "md0"),
            p.arrays[0].why.clone().unwrap_or_default(),
        )
    }

    /// The message of the refusal `input` gets on `inv`.
    fn refused(input: serde_json::Value, inv: &Inventory) -> String {
        run(input, inv).unwrap_err().to_string()
    }

    fn change(p: &Plan, array: &str, attr: Attr) -> Option<Change> {
        p.arrays
            .iter()
            .find(|a| a.name == array)?
            .changes
            .iter()
            .find(|c| c.attr == attr)
            .copied()
    }

    #[test]
    fn auto_gives_the_member_queue_count() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8); 4])]);
        let p = run(json!({}), &inv).unwrap();
        let c = change(&p, "md0", Attr::GroupThreadCnt).unwrap();
        assert_eq!(
            (c.before, c.after, c.source),
            (Value::Int(0), Value::Int(8), Source::Auto)
        );
        assert_eq!(p.arrays[0].hw_queues, Some(8));
        assert!(!p.is_compliant());
    }

    #[test]
    fn auto_gives_zero_for_single_queue_members() {
        let inv = host(vec![raid("md0", "raid5", &[Some(1); 3])]);
        let c = change(&run(json!({}), &inv).unwrap(), "md0", Attr::GroupThreadCnt).unwrap();
        assert_eq!(c.after, Value::Int(0));
        assert!(!c.is_due());
    }

    #[test]
    fn auto_combines_members_by_min_unless_told_max() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8), Some(4), Some(16)])]);
        let c = change(&run(json!({}), &inv).unwrap(), "md0", Attr::GroupThreadCnt).unwrap();
        assert_eq!(c.after, Value::Int(4));
        let p = run(json!({"thread_policy": {"combine": "max"}}), &inv).unwrap();
        assert_eq!(
            change(&p, "md0", Attr::GroupThreadCnt).unwrap().after,
            Value::Int(16)
        );
    }

    #[test]
    fn auto_is_clamped_to_min_max_and_online_cpus() {
        let inv = host(vec![raid("md0", "raid5", &[Some(64); 2])]);
        let t = |input| {
            change(&run(input, &inv).unwrap(), "md0", Attr::GroupThreadCnt)
                .unwrap()
                .after
        };
        assert_eq!(t(json!({})), Value::Int(32), "max defaults to online CPUs");
        assert_eq!(t(json!({"thread_policy": {"max": 12}})), Value::Int(12));
        // Above the CPUs, the stripe cache (256 / 8 stripes per worker) bounds it; a cache
        // raised in the same run lifts the bound.
        assert_eq!(t(json!({"thread_policy": {"max": 100}})), Value::Int(32));
        let raised = json!({"thread_policy": {"max": 100},
            "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
        assert_eq!(t(raised), Value::Int(64));
        let few = host(vec![raid("md0", "raid5", &[Some(2); 2])]);
        let p = run(json!({"thread_policy": {"min": 6}}), &few).unwrap();
        assert_eq!(
            change(&p, "md0", Attr::GroupThreadCnt).unwrap().after,
            Value::Int(6)
        );
        let params = AutoParams {
            min: None,
            max: Some(9000),
            combine: Combine::Min,
        };
        let cpus = crate::host::Cpus::default();
        let t = auto_threads(&[member("a", Some(10000))], &params, &cpus, None).unwrap();
        assert_eq!((t.queues, t.threads), (10000, 8192));
        assert!(t.why.ends_with("capped at the kernel's 8192"), "{}", t.why);
        // Beyond what even the largest stripe cache lets run, why says so (and does not overflow).
        let params = AutoParams {
            max: Some(u64::MAX),
            ..params
        };
        let cache = Cache {
            size: 256,
            live: 256,
            disks: Some(u64::MAX),
            page: 4096,
        };
        let t = auto_threads(&[member("a", Some(u64::MAX))], &params, &cpus, Some(&cache)).unwrap();
        assert_eq!(t.threads, 32);
        assert!(
            t.why
                .contains("the largest stripe_cache_size 32768 (4 KiB x ")
                && t.why.ends_with("would let 4096 run"),
            "{}",
            t.why
        );
    }

    #[test]
    fn unknown_member_queues_leave_threads_unchanged_with_a_warning() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8), None])]);
        let p = run(json!({}), &inv).unwrap();
        assert!(change(&p, "md0", Attr::GroupThreadCnt).is_none());
        assert_eq!(p.arrays[0].skipped[0].setting, Attr::GroupThreadCnt);
        assert!(p.warnings[0].contains("md0-m1"), "{:?}", p.warnings);
        assert_eq!(p.arrays[0].hw_queues, None);
    }

    #[test]
    fn fixed_and_off_policies_ignore_queues() {
        let inv = host(vec![raid("md0", "raid5", &[None])]);
        let p = run(json!({"thread_policy": 6}), &inv).unwrap();
        let c = change(&p, "md0", Attr::GroupThreadCnt).unwrap();
        assert_eq!((c.after, c.source), (Value::Int(6), Source::ThreadPolicy));
        let p = run(json!({"thread_policy": "off"}), &inv).unwrap();
        assert_eq!(
            change(&p, "md0", Attr::GroupThreadCnt).unwrap().after,
            Value::Int(0)
        );
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn later_entry_wins_per_setting() {
        let inv = host(vec![
            raid("md0", "raid5", &[Some(8)]),
            raid("md1", "raid5", &[Some(8)]),
        ]);
        let p = run(
            json!({"arrays": [
                {"name": "md*", "stripe_cache_size": 1024, "skip_copy": true},
                {"name": "md1", "stripe_cache_size": 4096, "group_thread_cnt": 2}]}),
            &inv,
        )
        .unwrap();
        assert_eq!(
            change(&p, "md0", Attr::StripeCacheSize).unwrap().after,
            Value::Int(1024)
        );
        let c = change(&p, "md1", Attr::StripeCacheSize).unwrap();
        assert_eq!((c.after, c.source), (Value::Int(4096), Source::Entry(1)));
        assert_eq!(
            change(&p, "md1", Attr::SkipCopy).unwrap().after,
            Value::Bool(true)
        );
        assert_eq!(
            change(&p, "md1", Attr::GroupThreadCnt).unwrap().after,
            Value::Int(2)
        );
        assert_eq!(
            change(&p, "md0", Attr::GroupThreadCnt).unwrap().source,
            Source::Auto
        );
    }

    #[test]
    fn raid456_settings_by_glob_are_skipped_on_raid10() {
        let inv = host(vec![raid("md1", "raid10", &[Some(4)])]);
        let p = run(
            json!({"arrays": [{"name": "md*", "stripe_cache_size": 512, "sync_speed_max": 50000}]}),
            &inv,
        )
        .unwrap();
        let a = &p.arrays[0];
        let skipped: Vec<Attr> = a.skipped.iter().map(|s| s.setting).collect();
        assert_eq!(skipped, [Attr::GroupThreadCnt, Attr::StripeCacheSize]);
        assert!(
            a.skipped[1].reason.contains("raid10"),
            "{}",
            a.skipped[1].reason
        );
        assert_eq!(
            change(&p, "md1", Attr::SyncSpeedMax).unwrap().after,
            Value::Int(50000)
        );
    }

    #[test]
    fn raid456_setting_by_exact_name_on_raid10_fails() {
        let inv = host(vec![raid("md1", "raid10", &[Some(4)])]);
        let cache = json!({"arrays": [{"name": "md1", "stripe_cache_size": 512}]});
        assert_eq!(
            refused(cache, &inv),
            "arrays[0].stripe_cache_size: stripe_cache_size is not available: md1 is raid10; only raid4/5/6 arrays have it"
        );
    }

    #[test]
    fn exact_name_or_uuid_matching_nothing_fails_and_glob_warns() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8)])]);
        let e = refused(json!({"arrays": [{"name": "md9"}]}), &inv);
        assert!(
            e.to_string()
                .starts_with("arrays[0].name: \"md9\" matches no md array"),
            "{e}"
        );
        let e = refused(
            json!({"arrays": [{"uuid": "ffffffff:e5f60718:293a4b5c:6d7e8f90"}]}),
            &inv,
        );
        assert!(e.to_string().starts_with("arrays[0].uuid:"), "{e}");
        let p = run(json!({"arrays": [{"name": "md9*"}]}), &inv).unwrap();
        assert!(p.arrays.is_empty());
        assert!(p.warnings[0].contains("md9*"));
    }

    #[test]
    fn selectors_resolve_mdadm_names_and_both_uuid_forms() {
        let inv = host(vec![
            raid("md0", "raid5", &[Some(8)]),
            raid("md1", "raid5", &[Some(8)]),
        ]);
        let names = |input| -> Vec<String> {
            run(input, &inv)
                .unwrap()
                .arrays
                .into_iter()
                .map(|a| a.name)
                .collect()
        };
        assert_eq!(names(json!({"arrays": [{"name": "data1"}]})), ["md1"]);
        assert_eq!(
            names(json!({"arrays": [{"name": "/dev/md/data0"}]})),
            ["md0"]
        );
        assert_eq!(
            names(json!({"arrays": [{"uuid": "00000001:e5f60718:293a4b5c:6d7e8f90"}]})),
            ["md1"]
        );
        assert_eq!(
            names(json!({"arrays": [{"uuid": "00000000-e5f6-0718-293a-4b5c6d7e8f90"}]})),
            ["md0"]
        );
        assert_eq!(
            names(
                json!({"arrays": [{"name": "md1", "uuid": "00000001:e5f60718:293a4b5c:6d7e8f90"}]})
            ),
            ["md1"]
        );
        assert!(run(
            json!({"arrays": [{"name": "md0", "uuid": "00000001:e5f60718:293a4b5c:6d7e8f90"}]}),
            &inv
        )
        .is_err());
    }

    #[test]
    fn preread_above_the_stripe_cache_fails_unless_the_cache_grows_first() {
        let inv = host(vec![raid("md0", "raid5", &[Some(8)])]);
        let preread = json!({"arrays": [{"name": "md0", "preread_bypass_threshold": 300}]});
        let e = refused(preread, &inv);
        assert!(e.contains("allowed 0..256"), "{e}");
        let p = run(
            json!({"arrays": [{"name": "md0", "preread_bypass_threshold": 300, "stripe_cache_size": 512}]}),
            &inv,
        )
        .unwrap();
        let order: Vec<Attr> = p.arrays[0].changes.iter().map(|c| c.attr).collect();
        assert_eq!(
            order,
            [
                Attr::GroupThreadCnt,
                Attr::StripeCacheSize,
                Attr::PrereadBypassThreshold
            ]
        );
    }

    #[test]
    fn sync_speed_compares_both_number_and_suffix() {
        let mut a = raid("md1", "raid10", &[Some(4)]);
        a.values.insert(Attr::SyncSpeedMax, Value::Int(50000));
        let inv = host(vec![a]);
        let due = |v: serde_json::Value| {
            change(
                &run(
                    json!({"arrays": [{"name": "md1", "sync_speed_max": v}]}),
                    &inv,
                )
                .unwrap(),
                "md1",
                Attr::SyncSpeedMax,
            )
            .unwrap()
            .is_due()
        };
        assert!(!due(json!(50000)));
        assert!(due(json!(60000)));
        assert!(due(json!("system")));
    }

    #[test]
    fn inactive_arrays_and_containers_are_skipped_with_a_reason() {
        let mut c = raid("md126", "", &[Some(1)]);
        c.values.clear();
        c.array_state = "inactive".into();
        c.metadata_version = "external:imsm".into();
        let p = run(json!({}), &host(vec![c])).unwrap();
        assert!(p.arrays[0].skipped[0]
            .reason
            .contains("external:imsm container"));
        assert!(p.arrays[0].is_compliant());
    }

    #[test]
    fn system_limits_are_planned_from_the_live_values() {
        let p = run(
            json!({"speed_limit_max": 500000, "speed_limit_min": 1000}),
            &host(vec![]),
        )
        .unwrap();
        assert_eq!(p.limits.len(), 2);
        assert!(!p.is_compliant());
        assert!(p
            .limits
            .iter()
            .any(|l| l.limit == SpeedLimit::Min && l.before == l.after));
    }

    fn threads(p: &Plan, array: &str) -> Option<Value> {
        change(p, array, Attr::GroupThreadCnt).map(|c| c.after)
    }

    #[test]
    fn only_active_members_count_toward_auto() {
        let mut a = raid("md0", "raid5", &[Some(8), Some(8), Some(8), Some(1), None]);
        // A SATA spare and a journal whose queues are unknown: reported, not counted.
        a.members[3].role = Role::Spare;
        a.members[3].counted = false;
        a.members[4].role = Role::Journal;
        a.members[4].counted = false;
        a.members[2].role = Role::Rebuilding;
        let p = run(json!({}), &host(vec![a])).unwrap();
        assert_eq!(threads(&p, "md0"), Some(Value::Int(8)));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let mut none = raid("md1", "raid5", &[Some(8)]);
        none.members[0].counted = false;
        let p = run(json!({}), &host(vec![none])).unwrap();
        assert_eq!(threads(&p, "md1"), None);
        assert!(
            p.warnings[0].contains("no active members"),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn auto_max_defaults_to_the_unbound_cpus_per_numa_node_with_cpus() {
        let mut inv = host(vec![raid("md0", "raid5", &[Some(64); 3])]);
        inv.cpus.possible_nodes = Some(2);
        assert_eq!(
            threads(&run(json!({}), &inv).unwrap(), "md0"),
            Some(Value::Int(16))
        );
        inv.cpus.possible_nodes = Some(64);
        assert_eq!(
            threads(&run(json!({}), &inv).unwrap(), "md0"),
            Some(Value::Int(1)),
            "32 CPUs over 64 nodes: still one worker per node"
        );
        let p = run(json!({"thread_policy": {"max": 24}}), &inv).unwrap();
        assert_eq!(
            threads(&p, "md0"),
            Some(Value::Int(24)),
            "an explicit max wins"
        );
        // Nodes with CPUs win over possible ones; CPUs closed to unbound work do not count.
        inv.cpus.nodes_with_cpus = Some(2);
        inv.cpus.unbound = Some(24);
        let (n, why) = md0_threads(json!({}), &inv);
        assert_eq!(n, Some(Value::Int(12)));
        let said = "64 hardware queues (min over 3 members), capped at 12 = 24 CPUs (32 online, \
                    8 isolated) / 2 nodes with CPUs";
        assert_eq!(why, said);
    }

    fn reshaping() -> Array {
        let mut a = raid("md0", "raid5", &[Some(8); 4]);
        a.reshape = Some("sync_action is reshape".into());
        a.values.insert(Attr::StripeCacheSize, Value::Int(1024));
        a
    }

    #[test]
    fn a_reshape_holds_back_thread_count_skip_copy_and_a_lower_stripe_cache() {
        let inv = host(vec![reshaping()]);
        let p = run(
            json!({"arrays": [{"name": "md0", "skip_copy": true, "stripe_cache_size": 512,
                "sync_speed_max": 90000}]}),
            &inv,
        )
        .unwrap();
        for attr in [Attr::GroupThreadCnt, Attr::SkipCopy, Attr::StripeCacheSize] {
            let c = change(&p, "md0", attr).unwrap();
            assert_eq!(c.hold, Some(Hold::Reshape), "{attr}");
            assert!(c.is_due() && !c.is_write());
        }
        assert!(change(&p, "md0", Attr::SyncSpeedMax).unwrap().is_write());
        assert!(!p.is_compliant());
        assert!(p.warnings[0].contains("reshaping"), "{:?}", p.warnings);
        // Raising the cache helps a reshape: it goes through.
        let p = run(
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
            &inv,
        )
        .unwrap();
        assert!(change(&p, "md0", Attr::StripeCacheSize).unwrap().is_write());
    }

    #[test]
    fn an_external_array_without_mdmon_holds_back_its_stripe_cache() {
        let mut a = raid("md126", "raid5", &[Some(8); 3]);
        a.metadata_version = "external:/md127/0".into();
        a.external = Some(crate::host::External {
            container: "md127".into(),
            mdmon: Err("no mdmon pid file /run/mdadm/md127.pid".into()),
        });
        let input = json!({"arrays": [{"name": "md126", "stripe_cache_size": 512,
            "preread_bypass_threshold": 300}]});
        let p = run(input.clone(), &host(vec![a.clone()])).unwrap();
        let c = change(&p, "md126", Attr::StripeCacheSize).unwrap();
        assert_eq!(c.hold, Some(Hold::NoMdmon));
        let t = change(&p, "md126", Attr::PrereadBypassThreshold).unwrap();
        assert_eq!(t.hold, Some(Hold::AfterStripeCache));
        assert!(change(&p, "md126", Attr::GroupThreadCnt)
            .unwrap()
            .is_write());
        assert!(
            p.warnings.iter().any(|w| w.contains("md127")),
            "{:?}",
            p.warnings
        );
        a.external.as_mut().unwrap().mdmon = Ok(4242);
        let p = run(input, &host(vec![a])).unwrap();
        assert!(change(&p, "md126", Attr::StripeCacheSize)
            .unwrap()
            .is_write());
    }

    #[test]
    fn an_unreadable_array_is_skipped_with_a_warning_even_by_exact_name() {
        let mut a = raid("md0", "raid5", &[Some(8)]);
        a.unreadable = Some("cannot read md/level: Device or resource busy (os error 16)".into());
        let inv = host(vec![a, raid("md1", "raid5", &[Some(8)])]);
        let p = run(
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 512}, {"name": "md1"}]}),
            &inv,
        )
        .unwrap();
        assert!(p.arrays[0].changes.is_empty());
        assert_eq!(p.arrays[0].skipped.len(), 2);
        assert!(
            p.warnings[0].starts_with("md0: skipped"),
            "{:?}",
            p.warnings
        );
        assert_eq!(threads(&p, "md1"), Some(Value::Int(8)));
    }

    #[test]
    fn auto_never_sets_more_workers_than_the_stripe_cache_in_force_lets_run() {
        let mut inv = host(vec![raid("md0", "raid5", &[Some(64); 4])]);
        inv.cpus.online = Some(128);
        inv.cpus.nodes_with_cpus = Some(2);
        let (n, why) = md0_threads(json!({}), &inv);
        assert_eq!(n, Some(Value::Int(32)));
        let said = "64 hardware queues (min over 4 members), within the cap 64 = 128 CPUs / 2 \
                    nodes with CPUs, capped at 32 = stripe_cache_size 256 / 8 stripes per worker \
                    (raid5_wakeup_stripe_thread wakes a worker per 8 queued stripes); \
                    stripe_cache_size 512 (4 KiB x 4 disks x 512 = 8 MiB) would let 64 run";
        assert_eq!(why, said);
        let p = run(
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
            &inv,
        )
        .unwrap();
        assert_eq!(threads(&p, "md0"), Some(Value::Int(64)));
        let why = p.arrays[0].why.clone().unwrap_or_default();
        assert!(
            why.ends_with(
                "within the 512 workers stripe_cache_size 4096 (planned in this run) lets run"
            ),
            "{why}"
        );
        // A cache this run cannot write (no mdmon) does not lift the bound.
        let mut a = raid("md0", "raid5", &[Some(64); 4]);
        a.metadata_version = "external:/md127/0".into();
        a.external = Some(crate::host::External {
            container: "md127".into(),
            mdmon: Err("no mdmon pid file /run/mdadm/md127.pid".into()),
        });
        inv.arrays = vec![a];
        let p = run(
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
            &inv,
        )
        .unwrap();
        assert_eq!(threads(&p, "md0"), Some(Value::Int(32)));
    }

    fn sparse() -> Inventory {
        let mut inv = host(vec![raid("md0", "raid5", &[Some(8); 3])]);
        inv.cpus.possible_nodes = Some(2);
        inv.cpus.highest_node = Some(8);
        inv
    }

    #[test]
    fn sparse_node_ids_keep_auto_at_zero_and_warn_once() {
        let mut inv = sparse();
        inv.arrays.push(raid("md1", "raid6", &[Some(8); 4]));
        inv.arrays[1]
            .values
            .insert(Attr::GroupThreadCnt, Value::Int(4));
        let p = run(json!({}), &inv).unwrap();
        assert_eq!(threads(&p, "md0"), Some(Value::Int(0)));
        let c = change(&p, "md1", Attr::GroupThreadCnt).unwrap();
        assert_eq!((c.before, c.after), (Value::Int(4), Value::Int(0)));
        let why = p.arrays[0].why.clone().unwrap_or_default();
        assert!(
            why.contains("sparse (2 possible nodes, the highest id 8)"),
            "{why}"
        );
        let sparse: Vec<&String> = p.warnings.iter().filter(|w| w.contains("sparse")).collect();
        assert_eq!(sparse.len(), 1, "{:?}", p.warnings);
        for f in [
            "alloc_thread_groups",
            "cpu_to_node",
            "raid5_wakeup_stripe_thread",
        ] {
            assert!(sparse[0].contains(f), "{}", sparse[0]);
        }
    }

    #[test]
    fn sparse_node_ids_refuse_every_explicit_value_above_zero() {
        let inv = sparse();
        for (input, key) in [
            (
                json!({"arrays": [{"name": "md0", "group_thread_cnt": 4}]}),
                "arrays[0].group_thread_cnt",
            ),
            (json!({"thread_policy": 8}), "thread_policy"),
            (
                json!({"thread_policy": {"mode": "fixed", "value": 2}}),
                "thread_policy",
            ),
        ] {
            let e = run(input, &inv).unwrap_err();
            assert!(matches!(e, PlanError::SparseNodes { .. }), "{e}");
            assert!(e.to_string().starts_with(&format!("{key}: ")), "{e}");
            assert!(e.to_string().contains("allowed: 0"), "{e}");
        }
        for ok in [json!({"thread_policy": "off"}), json!({"thread_policy": 0})] {
            assert_eq!(threads(&run(ok, &inv).unwrap(), "md0"), Some(Value::Int(0)));
        }
        // Dense ids (0-1) refuse nothing.
        let mut dense = sparse();
        dense.cpus.highest_node = Some(1);
        assert!(run(json!({"thread_policy": 8}), &dense).is_ok());
    }
}
