//! The one table of tunables: a row per md attribute and per system limit mdtune manages, with
//! every fact the rest of the crate asks of it (its file name, which arrays have it, how its value
//! reads, the range the input takes, the kernel's default, the first kernel with it, whether a
//! write suspends the array, its unit, and the kernel functions the facts come from). `Attr` and
//! `SpeedLimit` read their rows here, and `mdtune --schema`, the forms' tests and the reference
//! table are checked against it, so a new plain tunable is a variant, a row and its docs.
//!
//! Only facts: deciding what to write is `plan`'s job, and the facts that are not about one
//! tunable (workers per node, queues, sparse nodes) stay in `super::kernel`.

use super::values::{Kind, Value};

/// Which arrays have an attribute: the kernel creates the files only for these levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// raid4/5/6 only (the raid456 personality).
    Raid456,
    /// Every redundant level: raid1/4/5/6/10.
    Redundant,
}

impl Family {
    /// The family's name in `--schema`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Raid456 => "raid456",
            Family::Redundant => "redundant",
        }
    }

    /// The levels of the family, as messages and `--schema` write them.
    pub fn levels(self) -> &'static str {
        match self {
            Family::Raid456 => "raid4/5/6",
            Family::Redundant => "raid1/4/5/6/10",
        }
    }
}

/// Where a tunable's file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `sys/block/mdX/md/NAME`, on the arrays of this family.
    Array(Family),
    /// `proc/sys/dev/raid/NAME`, one for the host.
    System,
}

/// In which unit a sync limit counts, by the array's level (docs/reference.md §3): what the
/// reports' `unit` says. `raid10` and `raid456` replace `other` on those levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Units {
    pub other: &'static str,
    pub raid10: Option<&'static str>,
    pub raid456: Option<&'static str>,
}

/// One tunable: an md attribute or a system limit. Every field is a fact of the kernel or of
/// mdtune's input, never a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunable {
    /// The file name under `md/` or `/proc/sys/dev/raid`, which is also the input and output key.
    pub name: &'static str,
    pub place: Place,
    /// How the kernel prints the value, and how it is parsed and written.
    pub kind: Kind,
    /// The words the input takes besides a number (`auto`, `off`, `system`).
    pub words: &'static [&'static str],
    /// The numbers the input takes, inclusive (booleans: 0..1).
    pub min: u64,
    pub max: u64,
    /// What the kernel sets when it creates the file or boots (`--show`'s "kernel default").
    pub default: Value,
    /// The Linux release that brought the file, for the few that not every supported kernel has.
    pub since: Option<&'static str>,
    /// True if and only if a write suspends the whole array (`super::kernel::SUSPENDS_ARRAY`,
    /// and so the pause set, `super::kernel::PAUSED_FOR`).
    pub suspends: bool,
    /// What a number counts, in a word or two (`--schema`).
    pub unit: Option<&'static str>,
    /// True if and only if a refusal of the input names [`Tunable::unit`] after the range
    /// (`an integer 1..16777215 (sync I/Os)`); the speed limits' and the raid456 numbers'
    /// refusals have always given the range alone.
    pub says_unit: bool,
    /// What a sync limit counts on each level, for the reports; `None` for the other tunables.
    pub units: Option<Units>,
    /// The kernel functions and constants the facts of this row come from (md.c, raid5.c).
    pub kernel: &'static [&'static str],
    /// One line for `--schema` and the forms.
    pub doc: &'static str,
}

impl Tunable {
    /// True if and only if the input takes `"system"`: the array follows the system's limit.
    pub(crate) fn takes_system(&self) -> bool {
        self.words.contains(&"system")
    }

    /// What a refusal of a number says is allowed: `an integer 1..2147483647 (KiB/s) or
    /// "system"`.
    pub(crate) fn expected(&self) -> String {
        let mut s = format!("an integer {}..{}", self.min, self.max);
        if let (true, Some(unit)) = (self.says_unit, self.unit) {
            s.push_str(&format!(" ({unit})"));
        }
        if self.takes_system() {
            s.push_str(" or \"system\"");
        }
        s
    }

    /// What a sync limit counts on an array of `level` (`""`: the system's), if it is one.
    pub(crate) fn unit_on(&self, level: &str) -> Option<&'static str> {
        let u = self.units?;
        let raid456 = matches!(level, "raid4" | "raid5" | "raid6");
        Some(match (level, u.raid10, u.raid456) {
            ("raid10", Some(t), _) => t,
            (_, _, Some(t)) if raid456 => t,
            _ => u.other,
        })
    }
}

/// The largest number a C int holds: the sync speed limits are ints in the kernel.
const C_INT_MAX: u64 = i32::MAX as u64;

/// The largest sync I/O depth mdtune writes, per array or system-wide. The kernel takes any
/// unsigned number per array (`sync_io_depth_store`: `kstrtouint`, EINVAL for 0, `system` for
/// the system's) and any int system-wide (`proc_dointvec`, no range), but it counts the sync I/O
/// in flight against `128 * depth` (8 for raid4/5/6) in an int (`sync_io_within_limit`), which
/// overflows above this; and a system value of 0 or below stops a sync under load. Linux 6.16
/// and later (md.c: `sync_io_depth_show` prints `N (system|local)` like the speed limits; the
/// sysctl's default is 32).
pub(crate) const SYNC_IO_DEPTH_MAX: u64 = C_INT_MAX / 128;

/// What a speed limit counts: the speed limits bound how fast `md_do_sync` moves through its
/// sectors, and those are the array's for a raid10 resync, check or repair (`raid10_run` sets
/// `resync_max_sectors` to the array's size), each member's otherwise (a recovery runs over
/// `dev_sectors`; raid1/4/5/6 set `resync_max_sectors` to `dev_sectors`). Every kernel from
/// 5.10 to 7.x.
const SPEED_UNITS: Units = Units {
    other: "KiB/s per device",
    raid10: Some(
        "KiB/s of array sectors in resync, check and repair (each member at the limit x copies / \
         raid disks); KiB/s per device in recovery",
    ),
    raid456: None,
};

/// The sync I/O depth counts sync I/Os against `recovery_active` in sectors
/// (`sync_io_within_limit`: 8 per unit on raid4/5/6, one 4 KiB stripe; 128 otherwise, raid1/10's
/// 64 KiB `RESYNC_PAGES`). From 6.16.
const DEPTH_UNITS: Units = Units {
    other: "sync I/Os in flight while the array is busy, 64 KiB each",
    raid10: None,
    raid456: Some("sync I/Os in flight while the array is busy, one 4 KiB stripe each"),
};

/// The md attributes, in [`super::Attr::ALL`]'s order (the order writes happen:
/// `stripe_cache_size` before `preread_bypass_threshold`, which the kernel caps at the stripe
/// cache size). mdadm raises the stripe cache itself at assembly for chunks over 252 KiB
/// (4 × chunk / 4 KiB + 1), so such an array reads another value than the default after boot.
pub(crate) const ATTR_ROWS: [Tunable; 8] = [
    // Workers per node; 0 is the single mdX_raid5 thread (`raid5_alloc_percpu`). EINVAL above
    // 8192 (`raid5_store_group_thread_cnt`). The write suspends the array, even for an unchanged
    // value, on Linux 6.7 and later (`mddev_suspend_and_lock`), and for a changed value before
    // (`mddev_suspend`, which then also quiesces: `pers->quiesce`, that is `raid5_quiesce`).
    Tunable {
        name: "group_thread_cnt",
        place: Place::Array(Family::Raid456),
        kind: Kind::Int,
        words: &["auto", "off"],
        min: 0,
        max: 8192,
        default: Value::Int(0),
        since: None,
        suspends: true,
        unit: Some("workers per NUMA node"),
        says_unit: false,
        units: None,
        kernel: &[
            "raid5_store_group_thread_cnt",
            "alloc_thread_groups",
            "raid5_alloc_percpu",
            "mddev_suspend_and_lock",
        ],
        doc: "raid4/5/6 worker threads per NUMA node; auto counts the members' hardware queues",
    },
    // EINVAL at 16 or less and above 32768 (`raid5_store_stripe_cache_size`, `raid5_set_cache_size`);
    // 256 at start (`NR_STRIPES`). Takes the array's lock only.
    Tunable {
        name: "stripe_cache_size",
        place: Place::Array(Family::Raid456),
        kind: Kind::Int,
        words: &[],
        min: 17,
        max: 32768,
        default: Value::Int(256),
        since: None,
        suspends: false,
        unit: Some("stripes (a page per member each)"),
        says_unit: false,
        units: None,
        kernel: &[
            "raid5_store_stripe_cache_size",
            "raid5_set_cache_size",
            "NR_STRIPES",
        ],
        doc: "raid4/5/6 stripe cache entries; memory is page size x members x value",
    },
    // EINVAL above the stripe cache in force (`raid5_store_preread_threshold`: `min_nr_stripes`),
    // checked in the plan; the input takes any unsigned int. 1 at start (`IO_THRESHOLD`).
    Tunable {
        name: "preread_bypass_threshold",
        place: Place::Array(Family::Raid456),
        kind: Kind::Int,
        words: &[],
        min: 0,
        max: u32::MAX as u64,
        default: Value::Int(1),
        since: None,
        suspends: false,
        unit: Some("stripes"),
        says_unit: false,
        units: None,
        kernel: &["raid5_store_preread_threshold", "IO_THRESHOLD"],
        doc: "raid4/5/6 preread bypass threshold, at most the array's stripe_cache_size",
    },
    // Off at start; Linux 3.17 and later. Suspends the array like group_thread_cnt
    // (`raid5_store_skip_copy`: `mddev_suspend_and_lock` from 6.7, `mddev_suspend` before).
    Tunable {
        name: "skip_copy",
        place: Place::Array(Family::Raid456),
        kind: Kind::Bool,
        words: &[],
        min: 0,
        max: 1,
        default: Value::Bool(false),
        since: Some("3.17"),
        suspends: true,
        unit: None,
        says_unit: false,
        units: None,
        kernel: &["raid5_store_skip_copy", "mddev_suspend_and_lock"],
        doc: "raid4/5/6: write from the page cache instead of copying into the stripe cache",
    },
    // C ints printed with `%d` (`sync_min_show`), so they can read negative; stored unsigned
    // (`sync_min_store`: `kstrtouint`, ERANGE beyond an int). At start the array follows the
    // system (`mddev->sync_speed_min` 0).
    Tunable {
        name: "sync_speed_min",
        place: Place::Array(Family::Redundant),
        kind: Kind::SyncSpeed,
        words: &["system"],
        min: 1,
        max: C_INT_MAX,
        default: Value::System,
        since: None,
        suspends: false,
        unit: Some("KiB/s"),
        says_unit: true,
        units: Some(SPEED_UNITS),
        kernel: &["sync_min_show", "sync_min_store", "md_do_sync"],
        doc: "the array's minimum sync speed, or system to follow speed_limit_min",
    },
    Tunable {
        name: "sync_speed_max",
        place: Place::Array(Family::Redundant),
        kind: Kind::SyncSpeed,
        words: &["system"],
        min: 1,
        max: C_INT_MAX,
        default: Value::System,
        since: None,
        suspends: false,
        unit: Some("KiB/s"),
        says_unit: true,
        units: Some(SPEED_UNITS),
        kernel: &["sync_max_show", "sync_max_store", "md_do_sync"],
        doc: "the array's maximum sync speed, or system to follow speed_limit_max",
    },
    // Linux 6.16 and later; see SYNC_IO_DEPTH_MAX. At start the array follows the system.
    Tunable {
        name: "sync_io_depth",
        place: Place::Array(Family::Redundant),
        kind: Kind::SyncSpeed,
        words: &["system"],
        min: 1,
        max: SYNC_IO_DEPTH_MAX,
        default: Value::System,
        since: Some("6.16"),
        suspends: false,
        unit: Some("sync I/Os"),
        says_unit: true,
        units: Some(DEPTH_UNITS),
        kernel: &[
            "sync_io_depth_show",
            "sync_io_depth_store",
            "sync_io_within_limit",
        ],
        doc: "sync I/Os in flight while the array is busy, or system to follow the host's",
    },
    // Off at start.
    Tunable {
        name: "sync_force_parallel",
        place: Place::Array(Family::Redundant),
        kind: Kind::Bool,
        words: &[],
        min: 0,
        max: 1,
        default: Value::Bool(false),
        since: None,
        suspends: false,
        unit: None,
        says_unit: false,
        units: None,
        kernel: &["sync_force_parallel_store", "md_do_sync"],
        doc: "resync even while another array on the same disks resyncs",
    },
];

/// The system limits, in [`super::SpeedLimit::ALL`]'s order. At boot: `sysctl_speed_limit_min`
/// 1000 and `sysctl_speed_limit_max` 200000 (md.c, KiB/s per device), `sysctl_sync_io_depth` 32
/// sync I/Os (from 6.16). C ints (`proc_dointvec`) that can read negative and take a negative
/// number back as it is.
pub(crate) const LIMIT_ROWS: [Tunable; 3] = [
    Tunable {
        name: "speed_limit_min",
        place: Place::System,
        kind: Kind::CInt,
        words: &[],
        min: 1,
        max: C_INT_MAX,
        default: Value::Int(1000),
        since: None,
        suspends: false,
        unit: Some("KiB/s"),
        says_unit: false,
        units: Some(Units {
            other:
                "KiB/s per device; on raid10, KiB/s of array sectors in resync, check and repair",
            raid10: None,
            raid456: None,
        }),
        kernel: &["sysctl_speed_limit_min", "proc_dointvec"],
        doc: "the host's minimum sync speed, at most speed_limit_max",
    },
    Tunable {
        name: "speed_limit_max",
        place: Place::System,
        kind: Kind::CInt,
        words: &[],
        min: 1,
        max: C_INT_MAX,
        default: Value::Int(200_000),
        since: None,
        suspends: false,
        unit: Some("KiB/s"),
        says_unit: false,
        units: Some(Units {
            other:
                "KiB/s per device; on raid10, KiB/s of array sectors in resync, check and repair",
            raid10: None,
            raid456: None,
        }),
        kernel: &["sysctl_speed_limit_max", "proc_dointvec"],
        doc: "the host's maximum sync speed",
    },
    // Older kernels lack the file: refused for the host there (docs/reference.md §2).
    Tunable {
        name: "sync_io_depth",
        place: Place::System,
        kind: Kind::CInt,
        words: &[],
        min: 1,
        max: SYNC_IO_DEPTH_MAX,
        default: Value::Int(32),
        since: Some("6.16"),
        suspends: false,
        unit: Some("sync I/Os"),
        says_unit: true,
        units: Some(Units {
            other:
                "sync I/Os in flight while an array is busy: 64 KiB each on raid1/10, one 4 KiB \
                    stripe on raid4/5/6",
            raid10: None,
            raid456: None,
        }),
        kernel: &[
            "sysctl_sync_io_depth",
            "proc_dointvec",
            "sync_io_within_limit",
        ],
        doc: "the host's sync I/Os in flight while an array is busy",
    },
];

/// The rows at run time, by reference: `Attr::row` and `SpeedLimit::row` index these.
pub(crate) static ATTRS: [Tunable; 8] = ATTR_ROWS;
pub(crate) static LIMITS: [Tunable; 3] = LIMIT_ROWS;

/// Every row, md attributes first (`sync_io_depth` names both; the array's comes first).
pub fn tunables() -> impl Iterator<Item = &'static Tunable> {
    ATTRS.iter().chain(LIMITS.iter())
}

/// The row of the md attribute named `name`, else of the system limit.
pub(crate) fn row(name: &str) -> Option<&'static Tunable> {
    tunables().find(|t| t.name == name)
}
