//! Inventories of arbitrary arrays: names, levels, states and metadata md prints and some it
//! does not, members with every role and queue count, and kernel values at and past the edges of
//! their ranges, for the plan target to plan over without a filesystem.

use arbitrary::{Result, Unstructured};
use mdtune::host::{Array, Inventory, Member, Sync};
use mdtune::md::{Attr, Kind, SpeedLimit, Value};
use std::collections::BTreeMap;

const NAMES: &[&str] = &["md0", "md1", "md2", "md3", "md127", "md_d0", "md126", "mdX"];
const DEVNAMES: &[&str] = &["hana_data", "hana_log", "archive", "md1", "scratch"];
const LEVELS: &[&str] = &[
    "raid0",
    "raid1",
    "raid4",
    "raid5",
    "raid6",
    "raid10",
    "linear",
    "multipath",
    "",
];
const STATES: &[&str] = &[
    "clean",
    "active",
    "active-idle",
    "readonly",
    "read-auto",
    "inactive",
    "clear",
    "",
];
const METADATA: &[&str] = &["1.2", "0.90", "external:imsm", "external:/md127/0", "none"];
const QUEUES: &[u64] = &[0, 1, 2, 4, 8, 16, 64, 128, 8192, 10_000, u64::MAX];
const KERNEL_INTS: &[u64] = &[0, 1, 16, 17, 256, 4096, 8192, 8193, 32768, u64::MAX];

fn kernel_value(u: &mut Unstructured, kind: Kind) -> Result<Value> {
    let int = |u: &mut Unstructured| -> Result<u64> {
        if u.ratio(3, 4)? {
            Ok(*u.choose(KERNEL_INTS)?)
        } else {
            u.arbitrary()
        }
    };
    Ok(match kind {
        Kind::Int => Value::Int(int(u)?),
        Kind::CInt if u.arbitrary()? => Value::Negative(-1),
        Kind::CInt => Value::Int(int(u)?),
        Kind::Bool => Value::Bool(u.arbitrary()?),
        Kind::SyncSpeed if u.arbitrary()? => Value::System,
        Kind::SyncSpeed => Value::Int(int(u)?),
    })
}

fn member(u: &mut Unstructured, i: usize) -> Result<Member> {
    let hw_queues = if u.ratio(7, 8)? {
        Some(*u.choose(QUEUES)?)
    } else {
        None
    };
    Ok(Member {
        name: format!("nvme{i}n1p1"),
        device: Some(format!("nvme{i}n1")),
        hw_queues,
        paths: Vec::new(),
        problem: hw_queues.is_none().then(|| "no mq/".to_string()),
        // Spares, faulty members and journals are reported but not counted.
        counted: u.ratio(7, 8)?,
        ..Member::default()
    })
}

/// An inventory of arbitrary arrays with unique kernel names, as [`mdtune::host::read`]
/// could return it: values of each attribute's kind, uuids as 32 hex digits.
pub fn inventory(u: &mut Unstructured) -> Result<Inventory> {
    let mut inv = Inventory::default();
    let mut names: Vec<&str> = NAMES.to_vec();
    let n = u.int_in_range(0..=5usize)?;
    for _ in 0..n {
        let i = u.choose_index(names.len())?;
        let name = names.swap_remove(i);
        let mut devnames: Vec<String> = Vec::new();
        for d in DEVNAMES {
            if u.ratio(1, 6)? {
                devnames.push((*d).to_string());
            }
        }
        let uuid = match u.int_in_range(0..=3u8)? {
            0 => None,
            // The uuid the generated inputs name, so uuid selectors match sometimes.
            1 => Some("a1b2c3d4e5f60718293a4b5c6d7e8f90".to_string()),
            _ => Some(format!("{:032x}", u.arbitrary::<u128>()?)),
        };
        let members = (0..u.int_in_range(0..=5usize)?)
            .map(|m| member(u, m))
            .collect::<Result<_>>()?;
        let mut values = BTreeMap::new();
        for attr in Attr::ALL {
            if u.ratio(3, 4)? {
                values.insert(attr, kernel_value(u, attr.kind())?);
            }
        }
        let sync = if u.arbitrary()? {
            Some(Sync {
                action: "idle".into(),
                completed: u.arbitrary()?,
                speed_kib_s: u.arbitrary()?,
                ..Sync::default()
            })
        } else {
            None
        };
        inv.arrays.push(Array {
            name: name.to_string(),
            devnames,
            uuid,
            level: (*u.choose(LEVELS)?).to_string(),
            array_state: (*u.choose(STATES)?).to_string(),
            metadata_version: (*u.choose(METADATA)?).to_string(),
            members,
            sync,
            values,
            reshape: u.ratio(1, 8)?.then(|| "sync_action is reshape".to_string()),
            raid_disks: u.ratio(3, 4)?.then_some(u.int_in_range(0..=64u64)?),
            ..Array::default()
        });
    }
    for limit in SpeedLimit::ALL {
        if u.ratio(3, 4)? {
            let v = if u.ratio(1, 8)? {
                Value::Negative(-1)
            } else {
                Value::Int(*u.choose(KERNEL_INTS)?)
            };
            inv.speed_limits.insert(limit, v);
        }
    }
    inv.cpus.online = if u.ratio(3, 4)? {
        Some(*u.choose(QUEUES)?)
    } else {
        None
    };
    // Possible NUMA nodes: dense (0-1), absent, or sparse as on POWER (0,8: 2 nodes, highest 8).
    (inv.cpus.possible_nodes, inv.cpus.highest_node) = *u.choose(&[
        (None, None),
        (Some(1), Some(0)),
        (Some(2), Some(1)),
        (Some(2), Some(8)),
        (Some(6), Some(255)),
    ])?;
    inv.page_size = *u.choose(&[0, 4096, 65536])?;
    Ok(inv)
}
