//! The md attributes mdtune may touch (a fixed list: nothing else is ever opened for writing),
//! the system-wide resync limits, which levels have which attribute, and how each value is
//! printed. Pure vocabulary: no I/O and no decisions.

use std::fmt;
/// The system-wide sync limits in `/proc/sys/dev/raid`: the resync speed limits, and the sync
/// I/O depth (Linux 6.16 and later; older kernels lack its file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpeedLimit {
    Min,
    Max,
    /// `sync_io_depth`: how many sync I/Os may be in flight while the array is busy.
    IoDepth,
}

impl SpeedLimit {
    pub const ALL: [SpeedLimit; 3] = [SpeedLimit::Min, SpeedLimit::Max, SpeedLimit::IoDepth];

    /// The file name under `/proc/sys/dev/raid`, which is also the input and output key.
    pub fn name(self) -> &'static str {
        match self {
            SpeedLimit::Min => "speed_limit_min",
            SpeedLimit::Max => "speed_limit_max",
            SpeedLimit::IoDepth => "sync_io_depth",
        }
    }

    /// True if and only if every kernel with md has the file (the speed limits); the sync I/O
    /// depth came in 6.16.
    pub(crate) fn always_there(self) -> bool {
        self != SpeedLimit::IoDepth
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
    /// `sync_speed_*` and `sync_io_depth`: a number with a `(system)` or `(local)` suffix.
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
    /// `sync_io_depth` (Linux 6.16 and later): sync I/Os in flight while the array is busy.
    SyncIoDepth,
    SyncForceParallel,
}

impl Attr {
    /// Every attribute, in the order writes happen: `stripe_cache_size` before
    /// `preread_bypass_threshold`, which the kernel caps at the stripe cache size.
    pub const ALL: [Attr; 8] = [
        Attr::GroupThreadCnt,
        Attr::StripeCacheSize,
        Attr::PrereadBypassThreshold,
        Attr::SkipCopy,
        Attr::SyncSpeedMin,
        Attr::SyncSpeedMax,
        Attr::SyncIoDepth,
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
            Attr::SyncIoDepth => "sync_io_depth",
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
            Attr::SyncSpeedMin
            | Attr::SyncSpeedMax
            | Attr::SyncIoDepth
            | Attr::SyncForceParallel => Family::Redundant,
        }
    }

    /// The Linux release that brought the file, for the few that not every supported kernel has.
    pub(crate) fn since(self) -> Option<&'static str> {
        match self {
            Attr::SkipCopy => Some("3.17"),
            Attr::SyncIoDepth => Some("6.16"),
            _ => None,
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Attr::SkipCopy | Attr::SyncForceParallel => Kind::Bool,
            Attr::SyncSpeedMin | Attr::SyncSpeedMax | Attr::SyncIoDepth => Kind::SyncSpeed,
            _ => Kind::Int,
        }
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
