//! Hosts built by hand for the unit tests of the pure steps (plan, report): arrays as the
//! inventory reads them, without a file system. Test code only.

use super::{Array, Inventory, Member, Sync};
use crate::md::{Attr, SpeedLimit, Value};
use std::collections::BTreeMap;

/// A counted member with `q` hardware queues (`None`: unknown).
pub(crate) fn member(name: &str, q: Option<u64>) -> Member {
    Member {
        name: name.into(),
        device: Some(name.into()),
        hw_queues: q,
        problem: q.is_none().then(|| "no mq/".to_string()),
        counted: true,
        ..Member::default()
    }
}

/// An array `name` of `level` with one member per entry of `queues`, at the kernel defaults.
pub(crate) fn raid(name: &str, level: &str, queues: &[Option<u64>]) -> Array {
    let mut values = BTreeMap::new();
    let redundant = level != "raid0";
    let raid456 = matches!(level, "raid4" | "raid5" | "raid6");
    if raid456 {
        values.insert(Attr::GroupThreadCnt, Value::Int(0));
        values.insert(Attr::StripeCacheSize, Value::Int(256));
        values.insert(Attr::PrereadBypassThreshold, Value::Int(1));
        values.insert(Attr::SkipCopy, Value::Bool(false));
    }
    if redundant {
        values.insert(Attr::SyncSpeedMin, Value::System);
        values.insert(Attr::SyncSpeedMax, Value::System);
        values.insert(Attr::SyncForceParallel, Value::Bool(false));
    }
    let n: u32 = name.trim_start_matches("md").parse().unwrap_or(99);
    Array {
        name: name.into(),
        devnames: vec![format!("data{n}")],
        uuid: Some(format!("{n:08x}e5f60718293a4b5c6d7e8f90")),
        level: level.into(),
        array_state: "clean".into(),
        metadata_version: "1.2".into(),
        members: queues
            .iter()
            .enumerate()
            .map(|(i, q)| member(&format!("{name}-m{i}"), *q))
            .collect(),
        sync: redundant.then(|| Sync {
            action: "idle".into(),
            completed: None,
            speed_kib_s: None,
            release: None,
            frozen_by: None,
            boost: None,
        }),
        values,
        raid_disks: raid456.then_some(queues.len() as u64),
        ..Array::default()
    }
}

/// A host with `arrays`, 32 online CPUs, 4 KiB pages and the default speed limits.
pub(crate) fn host(arrays: Vec<Array>) -> Inventory {
    let mut inv = Inventory {
        arrays,
        cpus: crate::host::Cpus {
            online: Some(32),
            ..Default::default()
        },
        page_size: 4096,
        ..Inventory::default()
    };
    inv.speed_limits.insert(SpeedLimit::Min, Value::Int(1000));
    inv.speed_limits.insert(SpeedLimit::Max, Value::Int(200000));
    inv
}
