//! The md attributes mdtune may touch (a fixed list: nothing else is ever opened for writing),
//! the system-wide resync limits, which levels have which attribute, and how each value is
//! printed. Pure vocabulary: no I/O and no decisions.

use std::fmt;
/// The system-wide resync limits in `/proc/sys/dev/raid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpeedLimit {
    Min,
    Max,
}

impl SpeedLimit {
    pub const ALL: [SpeedLimit; 2] = [SpeedLimit::Min, SpeedLimit::Max];

    pub fn name(self) -> &'static str {
        match self {
            SpeedLimit::Min => "speed_limit_min",
            SpeedLimit::Max => "speed_limit_max",
        }
    }
}

/// Which arrays have an attribute: the kernel creates the files only for these levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// raid4/5/6 only (the raid456 personality).
    Raid456,
    /// Every redundant level: raid1/4/5/6/10.
    Redundant,
}

/// How an attribute's value is printed and parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An unsigned number (`%d` of a value the kernel keeps non-negative).
    Int,
    /// A C int that can read negative: `/proc/sys/dev/raid/speed_limit_*`.
    CInt,
    Bool,
    /// `sync_speed_*`: a number with a `(system)` or `(local)` suffix.
    SyncSpeed,
}

/// The md attributes mdtune may write. Nothing outside this list is ever opened for writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attr {
    GroupThreadCnt,
    StripeCacheSize,
    PrereadBypassThreshold,
    SkipCopy,
    SyncSpeedMin,
    SyncSpeedMax,
    SyncForceParallel,
}

impl Attr {
    /// Every attribute, in the order writes happen: `stripe_cache_size` before
    /// `preread_bypass_threshold`, which the kernel caps at the stripe cache size.
    pub const ALL: [Attr; 7] = [
        Attr::GroupThreadCnt,
        Attr::StripeCacheSize,
        Attr::PrereadBypassThreshold,
        Attr::SkipCopy,
        Attr::SyncSpeedMin,
        Attr::SyncSpeedMax,
        Attr::SyncForceParallel,
    ];

    /// The file name under `md/`, which is also the input and output key.
    pub fn name(self) -> &'static str {
        match self {
            Attr::GroupThreadCnt => "group_thread_cnt",
            Attr::StripeCacheSize => "stripe_cache_size",
            Attr::PrereadBypassThreshold => "preread_bypass_threshold",
            Attr::SkipCopy => "skip_copy",
            Attr::SyncSpeedMin => "sync_speed_min",
            Attr::SyncSpeedMax => "sync_speed_max",
            Attr::SyncForceParallel => "sync_force_parallel",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Attr> {
        Attr::ALL.into_iter().find(|a| a.name() == name)
    }

    pub(crate) fn family(self) -> Family {
        match self {
            Attr::GroupThreadCnt
            | Attr::StripeCacheSize
            | Attr::PrereadBypassThreshold
            | Attr::SkipCopy => Family::Raid456,
            Attr::SyncSpeedMin | Attr::SyncSpeedMax | Attr::SyncForceParallel => Family::Redundant,
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Attr::SkipCopy | Attr::SyncForceParallel => Kind::Bool,
            Attr::SyncSpeedMin | Attr::SyncSpeedMax => Kind::SyncSpeed,
            _ => Kind::Int,
        }
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
