//! The plan as a value: for every selected array and every managed setting, the value in force,
//! the value wanted, where the wish came from, and what holds it back. Built by [`super::build`],
//! held back by [`super::hold`], and read by `apply` and `report`; nothing here decides.

use crate::host::Array;
use crate::md::{kernel, Attr, SpeedLimit, SyncRun, Value};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("{key}: {value} matches no md array on this host (arrays: {known})")]
    NoMatch {
        key: String,
        value: String,
        known: String,
    },
    /// An exact name that matches, with a uuid that does not: the uuid it has, in the form given.
    #[error("{key}: {array} has uuid {has}, not {given}")]
    UuidDiffers {
        key: String,
        array: String,
        given: String,
        has: String,
    },
    #[error("{key}: {attr} is not available: {reason}")]
    NotAvailable {
        key: String,
        attr: Attr,
        reason: String,
    },
    #[error("{key}: {value} exceeds {array}'s stripe_cache_size; allowed 0..{cache}")]
    AboveStripeCache {
        key: String,
        value: u64,
        array: String,
        cache: u64,
    },
    /// A `group_thread_cnt` above 0 asked of a host whose possible NUMA node ids are sparse.
    #[error(
        "{key}: {value} is not allowed on this host; allowed: 0 (\"off\"). Its possible NUMA \
         node ids are sparse ({nodes} nodes, the highest id {highest}): {why}"
    )]
    SparseNodes {
        key: String,
        value: u64,
        nodes: u64,
        highest: u64,
        why: &'static str,
    },
    /// A system limit this host does not have: `sync_io_depth` before 6.16, any of them without
    /// md loaded.
    #[error(
        "{limit}: this kernel has no /proc/sys/dev/raid/{limit} ({why}); leave it out on this host"
    )]
    NoSuchLimit {
        limit: &'static str,
        why: &'static str,
    },
}

/// Where a desired value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `group_thread_cnt` computed from the members' hardware queues.
    Auto,
    /// A fixed or off `thread_policy`.
    ThreadPolicy,
    /// An element of `arrays`.
    Entry(usize),
    /// An original saved before the first change (`state: reverted`).
    Saved,
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Source::Auto => s.serialize_str("auto"),
            Source::ThreadPolicy => s.serialize_str("thread_policy"),
            // Written straight into the answer, not formatted into a String first.
            Source::Entry(i) => s.collect_str(&format_args!("arrays[{i}]")),
            Source::Saved => s.serialize_str("saved"),
        }
    }
}

/// One managed setting of one array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub attr: Attr,
    pub before: Value,
    pub after: Value,
    pub source: Source,
    /// Why this due change is not written in this run (a later run applies it).
    pub(crate) hold: Option<Hold>,
}

impl Change {
    pub fn new(attr: Attr, before: Value, after: Value, source: Source) -> Change {
        Change {
            attr,
            before,
            after,
            source,
            hold: None,
        }
    }

    /// True if and only if the live value differs from the wanted one.
    pub(crate) fn is_due(&self) -> bool {
        self.before != self.after
    }

    /// True if and only if this run writes it: due and not held back.
    pub fn is_write(&self) -> bool {
        self.is_due() && self.hold.is_none()
    }
}

/// A setting that was asked for (by a glob or the policy) but that this array cannot take.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skip {
    pub setting: Attr,
    pub(crate) reason: String,
    pub(crate) source: Source,
}

impl Serialize for Attr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayPlan {
    /// Index into `Inventory::arrays`.
    pub array: usize,
    pub name: String,
    /// The members' queues combined as the policy says, when every member's are known.
    pub hw_queues: Option<u64>,
    /// Why `auto` decided the `group_thread_cnt` it did, when it decided one (the report's
    /// per-setting `why`, docs/reference.md §3).
    pub why: Option<String>,
    /// In write order.
    pub changes: Vec<Change>,
    pub skipped: Vec<Skip>,
    /// The sync that was running when the array was read and that this run pauses around its
    /// writes (docs/reference.md §4); `crate::apply` looks again before it writes.
    pub(crate) pause: Option<SyncRun>,
    /// The array's `sync_boost`, when an entry gives one (`super::boost`).
    pub boost: Option<BoostPlan>,
}

/// An array's `sync_boost` as planned (docs/reference.md §2): while the array runs one of its
/// syncs (`active`), its values are the wanted ones (the array's `changes` carry them); otherwise
/// the plain values are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoostPlan {
    /// The entry that gave it.
    pub source: Source,
    /// The syncs it is in force during.
    pub during: Vec<String>,
    /// Its values that the array and the kernel have.
    pub values: BTreeMap<Attr, Value>,
    /// True while the array runs a sync of `during`.
    pub active: bool,
    /// The steady state of each boosted setting: what the entry's plain key wants, else the
    /// value in force (what comes back when the sync ends).
    pub steady: BTreeMap<Attr, Value>,
    /// The boosted settings the entry also gives a plain value for, with it.
    pub plain: BTreeMap<Attr, Value>,
    /// The values in force before the boost and since when it is, from its record under
    /// `run/mdtune/` (filled in by the run: `crate::boost`).
    pub saved: Option<BTreeMap<Attr, Value>>,
    pub since: Option<u64>,
}

impl ArrayPlan {
    pub fn is_compliant(&self) -> bool {
        !self.changes.iter().any(Change::is_due)
    }

    /// The stripe cache size once this plan is applied: the planned value (unless held back),
    /// else the live one.
    pub fn stripe_cache_after(&self, array: &Array) -> Option<Value> {
        self.changes
            .iter()
            .find(|c| c.attr == Attr::StripeCacheSize && c.hold.is_none())
            .map(|c| c.after)
            .or_else(|| array.values.get(&Attr::StripeCacheSize).copied())
    }
}

/// A system-wide speed limit (a C int: the live value may be negative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitChange {
    pub limit: SpeedLimit,
    pub before: Value,
    pub after: Value,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub arrays: Vec<ArrayPlan>,
    pub limits: Vec<LimitChange>,
    pub(crate) warnings: Vec<String>,
}

impl Plan {
    /// True if and only if some due change waits (a reshape, no mdmon): a revert must then keep
    /// the saved originals for the next revert.
    pub(crate) fn holds_back(&self) -> bool {
        self.arrays
            .iter()
            .flat_map(|a| &a.changes)
            .any(|c| c.hold.is_some())
    }

    pub fn is_compliant(&self) -> bool {
        self.arrays.iter().all(ArrayPlan::is_compliant)
            && self.limits.iter().all(|l| l.before == l.after)
    }
}

/// Why a due change is not written in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// The array reshapes.
    Reshape,
    /// External metadata, and no mdmon runs for the container.
    NoMdmon,
    /// The stripe cache it must not exceed is held back.
    AfterStripeCache,
    /// A sync runs on an external-metadata array, where mdmon drives it: not paused.
    Sync(SyncRun),
    /// A repair runs on a kernel where a paused repair resumes as a resync: not paused.
    Repair,
}

impl Hold {
    /// The reason in words, for the report and the warnings.
    pub(crate) fn reason(self, array: &Array) -> String {
        match self {
            Hold::Reshape => format!(
                "{} is reshaping ({}): held back until the reshape ends (writes that suspend the \
                 array wait, and a reshape needs {} stripes per chunk in the cache)",
                array.name,
                array.reshape.as_deref().unwrap_or("reshape"),
                kernel::RESHAPE_STRIPES_PER_CHUNK
            ),
            Hold::NoMdmon => {
                let (container, why) = match &array.external {
                    Some(e) => (e.container.as_str(), e.mdmon.as_ref().err()),
                    None => ("?", None),
                };
                format!(
                    "{} has external metadata and no mdmon runs for its container {container} \
                     ({}): writing stripe_cache_size would wait for mdmon forever",
                    array.name,
                    why.map_or("not found", String::as_str)
                )
            }
            Hold::AfterStripeCache => format!(
                "{}: stripe_cache_size is held back and the kernel refuses a \
                 preread_bypass_threshold above the live stripe cache",
                array.name
            ),
            Hold::Repair => format!(
                "{} runs a repair, and on this kernel ({}) a paused repair would resume as a \
                 resync (Linux {}.{} and later, md_finish_sync; with a bitmap from 0): held \
                 back until the repair ends",
                array.name,
                array
                    .sync
                    .as_ref()
                    .and_then(|s| s.release.as_deref())
                    .unwrap_or("its release cannot be read"),
                kernel::REPAIR_RESUMES_AS_RESYNC_FROM.0,
                kernel::REPAIR_RESUMES_AS_RESYNC_FROM.1
            ),
            Hold::Sync(run) => format!(
                "{} runs a {run} and has external metadata, whose sync mdmon drives, so mdtune \
                 does not pause it: held back until the {run} ends (a write that suspends the \
                 array can hang raid5 during a sync on kernels with b39f35ebe86d, 6.7, and \
                 without fa1944bbe622, 6.13 and 6.12 stable)",
                array.name
            ),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub(crate) before_header: String,
    pub(crate) after_header: String,
    pub(crate) before: String,
    pub(crate) after: String,
}
