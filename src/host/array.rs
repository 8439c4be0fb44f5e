//! One md array as the inventory holds it: its names, level, state and members, the tunable
//! values in force, its sync progress and reshape, and for an external-metadata array its
//! container and mdmon; and what can be said of it without reading more (whether it is a
//! container or inactive, its mdadm uuid, why it lacks an attribute). `super::inventory` fills
//! these in; nothing here reads a file.

use super::boosts::Record as BoostRecord;
use super::health::Health;
use super::member::Member;
use super::pauses::FrozenBy;
use crate::md::{Attr, Family, Value};
use serde::Serialize;
use std::collections::BTreeMap;

/// A running resync, recovery, check or reshape, or `idle`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sync {
    pub action: String,
    /// `[done, total]` sectors, or `None` when idle or delayed.
    pub completed: Option<[u64; 2]>,
    pub speed_kib_s: Option<u64>,
    /// The kernel's release (`proc/sys/kernel/osrelease`), read only while a repair runs: it
    /// tells whether a paused repair would resume as a resync (`crate::md::kernel`).
    #[serde(skip)]
    pub release: Option<String>,
    /// Who froze the sync, when `sync_action` reads `frozen` (docs/reference.md §3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frozen_by: Option<FrozenBy>,
    /// The sync boost in force, as recorded under `run/mdtune/` (the report says it as the
    /// array's `sync_boost`, docs/reference.md §3).
    #[serde(skip)]
    pub boost: Option<BoostRecord>,
}

/// An external-metadata (IMSM/DDF) member array's container and its mdmon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// The container's kernel name (`md127` from `external:/md127/0`).
    pub container: String,
    /// The pid of the mdmon managing the container, or why none runs.
    pub mdmon: Result<u32, String>,
}

/// A raid10's shape, for the unit its sync limits count in (docs/reference.md §3): a resync,
/// check or repair counts the array's sectors, each kept on `copies` of `raid_disks` members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raid10 {
    pub copies: u64,
    pub raid_disks: u64,
}

/// One md device as the kernel shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Array {
    /// Kernel name: `md0`, `md_d0`, `md_home`.
    pub name: String,
    /// mdadm names published under `dev/md/`, sorted.
    pub devnames: Vec<String>,
    /// 32 lowercase hex digits, from `md/uuid` or udev's `md-uuid-*` link; an all-zero
    /// `md/uuid` (external metadata) is unknown and the link's is taken.
    pub uuid: Option<String>,
    /// `raid5`, `raid10`, ...; empty for inactive arrays and containers.
    pub level: String,
    pub array_state: String,
    pub metadata_version: String,
    /// `md/raid_disks` of a raid4/5/6 array: the disks of a stripe (each stripe of the cache
    /// holds a page of each).
    pub raid_disks: Option<u64>,
    pub members: Vec<Member>,
    /// Redundant levels only.
    pub sync: Option<Sync>,
    /// The tunable attributes whose files exist, with their values.
    pub values: BTreeMap<Attr, Value>,
    /// What shows a reshape in progress (`sync_action` or `reshape_position`), if one is.
    pub reshape: Option<String>,
    /// For a member array of an IMSM/DDF container.
    pub external: Option<External>,
    /// Why the array could not be read (it is skipped), if it could not.
    pub unreadable: Option<String>,
    /// A raid10's copies and raid disks, from `md/layout` and `md/raid_disks`.
    pub raid10: Option<Raid10>,
    /// A redundant array's health files, when the scope asks for them (`super::health`).
    pub health: Option<Health>,
}

impl Array {
    pub(crate) fn is_container(&self) -> bool {
        self.metadata_version.starts_with("external:") && self.level.is_empty()
    }

    pub(crate) fn is_inactive(&self) -> bool {
        matches!(self.array_state.as_str(), "inactive" | "clear" | "")
    }

    /// The mdadm form of the uuid (`aaaaaaaa:bbbbbbbb:cccccccc:dddddddd`).
    pub(crate) fn mdadm_uuid(&self) -> Option<String> {
        let u = self.uuid.as_ref().filter(|u| u.len() == 32)?;
        Some(format!(
            "{}:{}:{}:{}",
            &u[0..8],
            &u[8..16],
            &u[16..24],
            &u[24..32]
        ))
    }

    /// Why an attribute of `family` is absent from this array, in words a person can act on.
    pub(crate) fn lacks(&self, family: Family) -> String {
        let (wants, levels): (&str, &[&str]) = match family {
            Family::Raid456 => ("raid4/5/6", &["raid4", "raid5", "raid6"]),
            Family::Redundant => (
                "raid1/4/5/6/10",
                &["raid1", "raid4", "raid5", "raid6", "raid10"],
            ),
        };
        if let Some(why) = &self.unreadable {
            format!("{} cannot be read: {why}", self.name)
        } else if self.is_container() {
            format!(
                "{} is a {} container, not an array",
                self.name, self.metadata_version
            )
        } else if self.is_inactive() {
            format!(
                "{} is inactive (only running {wants} arrays have it)",
                self.name
            )
        } else if levels.contains(&self.level.as_str()) {
            // Older kernels lack some raid456 files (skip_copy came in 3.17).
            format!(
                "{} is {}, but this kernel does not offer it",
                self.name, self.level
            )
        } else {
            let level = if self.level.is_empty() {
                "no level"
            } else {
                &self.level
            };
            format!("{} is {level}; only {wants} arrays have it", self.name)
        }
    }
}
