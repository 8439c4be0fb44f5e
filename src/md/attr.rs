//! The md attributes mdtune may touch (a fixed list: nothing else is ever opened for writing) and
//! the system-wide sync limits, as names for the rows of [`super::table`], which holds every fact
//! about them (which levels have an attribute, how its value is printed, its range). Pure
//! vocabulary: no I/O and no decisions.

use super::table::{Family, Place, Tunable, ATTRS, LIMITS};
use super::values::Kind;
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
    /// Every limit, in the order of their rows ([`super::table::LIMIT_ROWS`]).
    pub const ALL: [SpeedLimit; 3] = [SpeedLimit::Min, SpeedLimit::Max, SpeedLimit::IoDepth];

    /// The limit's row of the table.
    pub fn row(self) -> &'static Tunable {
        &LIMITS[self as usize]
    }

    /// The file name under `/proc/sys/dev/raid`, which is also the input and output key.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// True if and only if every kernel with md has the file (the speed limits); the sync I/O
    /// depth came in 6.16.
    pub(crate) fn always_there(self) -> bool {
        self.row().since.is_none()
    }
}

/// The md attributes mdtune may write. Nothing outside this list is ever opened for writing.
/// The variants are in the order of their rows ([`super::table::ATTR_ROWS`]), which is also the
/// order of [`Attr::ALL`] and of a `BTreeMap` of them.
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

    /// The attribute's row of the table.
    pub fn row(self) -> &'static Tunable {
        &ATTRS[self as usize]
    }

    /// The file name under `md/`, which is also the input and output key.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    pub(crate) fn from_name(name: &str) -> Option<Attr> {
        Attr::ALL.into_iter().find(|a| a.name() == name)
    }

    pub(crate) fn family(self) -> Family {
        match self.row().place {
            Place::Array(f) => f,
            Place::System => unreachable!("every attribute row is an array's"),
        }
    }

    /// The Linux release that brought the file, for the few that not every supported kernel has.
    pub(crate) fn since(self) -> Option<&'static str> {
        self.row().since
    }

    pub fn kind(self) -> Kind {
        self.row().kind
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::{ATTR_ROWS, LIMIT_ROWS};
    use super::*;

    #[test]
    fn every_variant_names_its_own_row() {
        assert_eq!(Attr::ALL.len(), ATTR_ROWS.len());
        assert_eq!(SpeedLimit::ALL.len(), LIMIT_ROWS.len());
        for (i, a) in Attr::ALL.into_iter().enumerate() {
            assert_eq!(a as usize, i, "{a}");
            assert!(matches!(a.row().place, Place::Array(_)), "{a}");
            assert_eq!(Attr::from_name(a.name()), Some(a));
        }
        for (i, l) in SpeedLimit::ALL.into_iter().enumerate() {
            assert_eq!(l as usize, i, "{}", l.name());
            assert_eq!(l.row().place, Place::System);
        }
        let names: Vec<&str> = Attr::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(
            names,
            [
                "group_thread_cnt",
                "stripe_cache_size",
                "preread_bypass_threshold",
                "skip_copy",
                "sync_speed_min",
                "sync_speed_max",
                "sync_io_depth",
                "sync_force_parallel"
            ]
        );
        assert_eq!(SpeedLimit::IoDepth.name(), "sync_io_depth");
        assert!(!SpeedLimit::IoDepth.always_there() && SpeedLimit::Max.always_there());
        assert_eq!(Attr::SkipCopy.since(), Some("3.17"));
        assert_eq!(Attr::SyncForceParallel.family(), Family::Redundant);
    }
}
