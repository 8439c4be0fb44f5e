//! A member as the run reports it: the role md gives it, the devices whose hardware queues were
//! counted under it, and whether it counts toward `auto`, and why not. `super::topology` fills
//! these in by following the member down the block stack; `plan`, the report and the view read
//! them as plain values, without touching a filesystem.

use serde::{Serialize, Serializer};
use std::path::Path;

/// What md uses a member for, from `md/dev-<m>/state` and `md/dev-<m>/slot` (`state_show`,
/// `slot_show` in md.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// In a slot and in sync: carries data.
    #[default]
    Active,
    /// In a slot, not yet in sync (recovery onto it): carries data as it is rebuilt.
    Rebuilding,
    /// In a slot as the replacement of another member (`want_replacement`): receives its data.
    Replacement,
    /// No slot (`slot` is `none`): carries nothing until a member fails.
    Spare,
    /// Marked faulty: md no longer reads or writes it (not a member in sync whose only `faulty`
    /// is unacknowledged bad blocks, see [`Role::from_md`]).
    Faulty,
    /// The raid456 write journal (`slot` is `journal`): holds no data stripes.
    Journal,
    /// No `md/dev-*` entry to tell (the member came from `slaves/`): counted, as before roles.
    Unknown,
}

impl Role {
    /// The role md shows for a member with this `state` (a comma list) and `slot`.
    ///
    /// `state_show` (md.c, every kernel from 5.10 to 7.x) prints `faulty` for the `Faulty` flag
    /// and also for bad blocks md has not acknowledged yet (`badblocks.unacked_exist`, native
    /// metadata, until the superblock records them), together with `blocked`; it prints
    /// `in_sync` for the `In_sync` flag and `spare` only without the `Faulty` flag. The error
    /// handlers (`raid1_error`, `raid10_error`, `raid5_error`) clear `In_sync` when they set
    /// `Faulty`. So `faulty` next to `in_sync` or `spare` is a member with unacknowledged bad
    /// blocks that md still uses: its role is what the other flags say.
    pub(crate) fn from_md(state: Option<&str>, slot: Option<&str>) -> Role {
        // The flags this looks at, found in one pass over the list.
        const FLAGS: [&str; 5] = ["faulty", "in_sync", "spare", "journal", "replacement"];
        let mut seen = [false; FLAGS.len()];
        for flag in state.unwrap_or("").trim().split(',') {
            if let Some(i) = FLAGS.iter().position(|f| *f == flag) {
                seen[i] = true;
            }
        }
        let has = |f: &str| FLAGS.iter().position(|g| *g == f).is_some_and(|i| seen[i]);
        let slot = slot.map(str::trim);
        if has("faulty") && !has("in_sync") && !has("spare") {
            return Role::Faulty;
        }
        if has("journal") || slot == Some("journal") {
            return Role::Journal;
        }
        let numbered = slot.is_some_and(|s| s.parse::<u32>().is_ok());
        match (numbered, slot) {
            (true, _) if has("in_sync") => Role::Active,
            (true, _) if has("replacement") => Role::Replacement,
            (true, _) => Role::Rebuilding,
            (false, Some(_)) => Role::Spare,
            // No slot file (very old kernels): the state alone says it.
            (false, None) if has("in_sync") => Role::Active,
            (false, None) if has("spare") => Role::Spare,
            (false, None) => Role::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Active => "active",
            Role::Rebuilding => "rebuilding",
            Role::Replacement => "replacement",
            Role::Spare => "spare",
            Role::Faulty => "faulty",
            Role::Journal => "journal",
            Role::Unknown => "unknown",
        }
    }

    /// Why a member in this role does not count, or `None` when it counts.
    pub(crate) fn not_counted(self) -> Option<&'static str> {
        match self {
            Role::Active | Role::Rebuilding | Role::Replacement | Role::Unknown => None,
            Role::Spare => Some("spare: carries no data until a member fails"),
            Role::Faulty => Some("faulty: md no longer uses it"),
            Role::Journal => Some("write journal: holds no data stripes"),
        }
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One device whose `mq/` was counted (a disk or an NVMe path) under a member.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Leaf {
    pub name: String,
    /// The queues that carry md's I/O.
    pub hw_queues: u64,
    /// A SCSI disk: counted as one queue, whatever `mq/` shows (its host's queues).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub scsi: bool,
    /// How many of its `mq/` entries are poll queues, which md never uses (not counted).
    #[serde(skip_serializing_if = "is_zero")]
    pub poll_queues: u64,
    /// The numbered `mq/*` directories seen (differs from `hw_queues` for a SCSI disk and a
    /// device with poll queues).
    #[serde(skip)]
    pub mq_dirs: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An md member, its role and what it resolved to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Member {
    /// The member as md names it (`nvme0n1p1`).
    pub name: String,
    /// The disk or stacked device behind it (`nvme0n1`, `dm-0`); the member itself when whole.
    pub device: Option<String>,
    /// The member's hardware queues (smallest path), or `None` when they cannot be found.
    pub hw_queues: Option<u64>,
    /// The devices whose `mq/` was counted, when they differ from `device` (multipath, dm, md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<Leaf>,
    /// Why `hw_queues` is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub role: Role,
    /// Whether its queues take part in `auto`.
    pub counted: bool,
    /// Why it is not counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How its queues were counted when that is not plain `mq/` (a SCSI disk, poll queues).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A member whose device cannot be found inside `sys/` (through `link`).
pub(super) fn unresolved(name: &str, role: Role, link: &Path) -> Member {
    Member {
        name: name.to_string(),
        role,
        counted: role.not_counted().is_none(),
        reason: role.not_counted().map(String::from),
        problem: Some(format!("{} does not resolve inside sys/", link.display())),
        ..Member::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_state_and_slot_as_md_prints_them() {
        let r = |state, slot| Role::from_md(Some(state), Some(slot));
        assert_eq!(r("in_sync", "0"), Role::Active);
        assert_eq!(r("in_sync,write_mostly", "2"), Role::Active);
        assert_eq!(r("spare", "3"), Role::Rebuilding, "recovery onto slot 3");
        assert_eq!(r("spare", "none"), Role::Spare);
        assert_eq!(r("faulty", "none"), Role::Faulty);
        assert_eq!(r("faulty,write_error", "1"), Role::Faulty);
        assert_eq!(r("faulty,blocked", "none"), Role::Faulty);
        // Unacknowledged bad blocks (state_show): md still uses the member.
        assert_eq!(r("faulty,in_sync,blocked", "2"), Role::Active);
        assert_eq!(r("faulty,blocked,spare", "3"), Role::Rebuilding);
        assert_eq!(r("faulty,blocked,spare", "none"), Role::Spare);
        assert_eq!(r("journal", "journal"), Role::Journal);
        assert_eq!(r("spare,replacement", "1"), Role::Replacement);
        assert_eq!(Role::from_md(None, None), Role::Unknown);
        assert!(Role::Rebuilding.not_counted().is_none());
        assert!(Role::Spare.not_counted().is_some());
    }
}
