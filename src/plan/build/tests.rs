//! The plan's promises, one test per promise: each builds an inventory by hand and asserts on
//! the plan, without a filesystem (`super::plan`).

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
        names(json!({"arrays": [{"name": "md1", "uuid": "00000001:e5f60718:293a4b5c:6d7e8f90"}]})),
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
