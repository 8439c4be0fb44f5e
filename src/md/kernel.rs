//! The kernel facts mdtune's decisions rest on, in one table a newcomer can find: limits, what a
//! write costs, and how many workers a `group_thread_cnt` value really starts. Each fact names
//! the kernel function it comes from (drivers/md/md.c, drivers/md/raid5.c, block/); the same
//! behaviour holds in every kernel from 5.10 to 7.x unless the comment says otherwise.
//!
//! This module only states facts. Deciding what to write from them is `plan`'s job; reading
//! the values they apply to is `inventory`'s and `topology`'s.

use super::attr::Attr;
use super::table::{self, ATTR_ROWS};
use super::values::{Kind, Value};

/// The largest `group_thread_cnt` the kernel accepts (its row of [`table::ATTR_ROWS`]).
pub(crate) const GROUP_THREAD_CNT_MAX: u64 = ATTR_ROWS[Attr::GroupThreadCnt as usize].max;

/// How many workers of one `group_thread_cnt` value can run at once, per node: the kernel
/// allocates `cnt` workers for every *possible* node (`alloc_thread_groups`), but
/// `raid5_wakeup_stripe_thread` queues a stripe's work only on the group of the node of the CPU
/// that submitted it (`cpu_to_group` is `cpu_to_node`), so the groups of nodes without CPUs
/// never run; and the workers run on the `raid5wq` workqueue, which is unbound, so only on the
/// CPUs open to unbound work (`wq_unbound_cpumask`: never an `isolcpus=` CPU). The default
/// ceiling of `auto` is those CPUs divided by the nodes with CPUs, at least 1 (every kernel
/// since group_thread_cnt came in 3.12; the CPU-less nodes of CXL windows are possible nodes
/// since 5.17).
pub(crate) fn threads_per_node(cpus: u64, nodes_with_cpus: u64) -> u64 {
    (cpus / nodes_with_cpus.max(1)).max(1)
}

/// A SCSI disk counts as this many queues whatever its `mq/` shows, a hard disk or an SSD
/// alike: every LUN's request queue comes from its host's tag set (`scsi_alloc_sdev`:
/// `blk_mq_alloc_queue(&sdev->host->tag_set)`), whose `nr_hw_queues` is the host's
/// (`scsi_mq_setup_tags`: the adapter's reply queues on mpt3sas, megaraid_sas, smartpqi, FC HBAs,
/// storvsc, virtio_scsi), so `mq/` describes the adapter, shared by all its LUNs, not the disk.
/// The disk itself takes commands over one link (`device/queue_depth`), as it does behind AHCI,
/// which shows one `mq/`. Only SCSI disks (their `device` has `scsi_disk/`): virtio-blk reads
/// rotational 1 and has a queue per virtqueue (`virtblk_probe`: `nr_hw_queues = num_vqs`).
pub(crate) const SCSI_QUEUES: u64 = 1;

/// Poll queues carry none of md's I/O: md submits no polled bio (no `REQ_POLLED` in
/// drivers/md), and blk-mq sends a bio to a poll queue only when it is polled
/// (`blk_mq_get_hctx_type`: `HCTX_TYPE_POLL` for `REQ_POLLED`). They are the queues of the poll
/// map, which NVMe gets from `nvme.poll_queues` (PCIe: `nvme_setup_irqs`, poll queues have no
/// interrupt) or `nvme connect --nr-poll-queues` (TCP, RDMA: `nvmf_map_queues`), and virtio-blk
/// from `virtio_blk.poll_queues`; `crate::host` tells them apart (`Devices::poll_queues`). The
/// queues that carry md's I/O are a device's `mq/` entries without them (every kernel from 5.10
/// to 7.x; the VM suite boots each with `nvme.poll_queues`).
pub(crate) fn md_io_queues(mq_dirs: u64, poll_queues: u64) -> u64 {
    mq_dirs.saturating_sub(poll_queues)
}

/// Worker groups of raid5 are allocated for `num_possible_nodes()` groups, a count
/// (`alloc_thread_groups`), but indexed by `cpu_to_node()`, an id (`cpu_to_group`, used by
/// `raid5_wakeup_stripe_thread`): where the possible node ids are sparse (bare-metal POWER8/9,
/// PowerNV: `0,8`; GPU memory adds 252-255 on an AC922), a CPU of node 8 uses
/// `worker_groups[8]` of a two-entry array, past its end, as soon as `group_thread_cnt` is above
/// 0. True when the highest possible id + 1 exceeds how many there are. Every kernel since
/// group_thread_cnt came in 3.12 (read in 6.1 and 6.12); QEMU refuses sparse node ids, so no VM
/// shows it, and x86, arm64 with ACPI and PowerVM LPARs have dense ids.
pub(crate) fn sparse_nodes(possible_nodes: u64, highest_id: u64) -> bool {
    highest_id + 1 > possible_nodes
}

/// The words every refusal and warning about sparse node ids uses.
pub(crate) const SPARSE_NODES_WHY: &str = "raid5 allocates its worker groups for \
     num_possible_nodes() nodes (alloc_thread_groups) but indexes them by node id \
     (cpu_to_group() is cpu_to_node(), raid5_wakeup_stripe_thread), so a group_thread_cnt above 0 \
     makes a CPU of a high node id use memory past the end of the allocation";

/// How many stripes one raid5 worker takes at a time, and so how many queued stripes wake one
/// more worker of a group (`MAX_STRIPE_BATCH`, raid5.h): `raid5_wakeup_stripe_thread` wakes
/// worker 0 and then `stripes_cnt / 8 - 1` more, where `stripes_cnt` counts the stripes queued
/// for that group (node); `handle_active_stripes` takes at most 8 per run. The stripes a group
/// can queue are those of the stripe cache, `stripe_cache_size` of them (`min_nr_stripes`; the
/// cache grows above it only while a request finds no free stripe and memory allows,
/// `grow_one_stripe` from raid5d, and shrinks back under memory pressure, `raid5_cache_scan`),
/// so at most `stripe_cache_size / 8` workers of a group run. Every kernel from 5.10 to 7.x.
pub(crate) const STRIPES_PER_WORKER: u64 = 8;

/// The largest `stripe_cache_size` the kernel takes (its row of [`table::ATTR_ROWS`]).
pub(crate) const STRIPE_CACHE_MAX: u64 = ATTR_ROWS[Attr::StripeCacheSize as usize].max;

/// The most workers per group (node) that the stripe cache `cache` lets run
/// ([`STRIPES_PER_WORKER`]), at least the one `raid5_wakeup_stripe_thread` always wakes.
pub(crate) fn workers_the_cache_runs(cache: u64) -> u64 {
    (cache / STRIPES_PER_WORKER).max(1)
}

/// Device-mapper names every device `dm-<minor>` (`alloc_dev`). A request-based dm device
/// (multipath) has an `mq/` of its own, `dm_mod.dm_mq_nr_hw_queues` entries (default 1), which
/// is no hardware count: with nothing in its `slaves/` (a multipath map whose paths are all
/// gone, I/O queued by `queue_if_no_path`) its queues are unknown.
pub(crate) const DM_PREFIX: &str = "dm-";

/// A set of attributes read from the table: [`SUSPENDS_ARRAY`], [`PAUSED_FOR`].
#[derive(Clone, Copy)]
pub(crate) struct AttrSet(fn(Attr) -> bool);

impl AttrSet {
    /// True if and only if `attr` is in the set.
    pub(crate) fn contains(&self, attr: &Attr) -> bool {
        (self.0)(*attr)
    }
}

/// Writes that suspend the whole array: the rows marked `suspends` (`group_thread_cnt` and
/// `skip_copy`, whose rows say how: even for an unchanged value on Linux 6.7 and later,
/// `mddev_suspend_and_lock`; for a changed value before, `mddev_suspend`, which then also
/// quiesces: `pers->quiesce`, that is `raid5_quiesce`). A suspend waits for in-flight I/O,
/// reshape I/O included, so these are held back during a reshape. Of the raid456 files only
/// these two suspend or quiesce the array in 5.10 to 7.x besides those mdtune never writes
/// (`stripe_size`, `journal_mode`, `consistency_policy`); `stripe_cache_size`,
/// `preread_bypass_threshold` and `rmw_level` take the array's lock only.
pub(crate) const SUSPENDS_ARRAY: AttrSet = AttrSet(|a| a.row().suspends);

/// Writes that go into a running resync, recovery, check or repair only with the sync paused
/// (docs/reference.md §4): the array-suspending ones. Changing `group_thread_cnt` while a sync
/// runs can hang raid5 (the sync's stripes wait on `conf->handle_list` for workers that are gone)
/// on kernels with b39f35ebe86d ("md: don't quiesce in mddev_suspend()", 6.7) and without
/// fa1944bbe622 ("md/raid5: Wait sync io to finish before changing group cnt", 6.13 and 6.12
/// stable: `raid5_quiesce` around the change in `raid5_store_group_thread_cnt`); before 6.7,
/// `mddev_suspend` quiesced the array for both writes, draining the sync's stripes. A
/// distribution kernel may carry either commit, so the version does not tell: mdtune pauses the
/// sync on every kernel (`frozen` in `sync_action`, then the sync resumed from where it stopped).
pub(crate) const PAUSED_FOR: AttrSet = SUSPENDS_ARRAY;

/// From Linux 7.0 a repair that is interrupted marks the array for a resync: `md_finish_sync`
/// lost its `curr_resync >= resync_offset` guard, so writing `repair` back after a pause runs a
/// resync instead (from 0 with a bitmap). A check is unaffected. On such a kernel a write that
/// needs a pause waits for a running repair to end instead.
pub(crate) const REPAIR_RESUMES_AS_RESYNC_FROM: (u32, u32) = (7, 0);

/// True if and only if a repair paused on the kernel of `release` (`proc/sys/kernel/osrelease`,
/// `6.12.57+deb13-cloud-amd64`) would resume as a resync. A release that cannot be read or
/// parsed counts as one that would: holding a write back is the side that leaves nothing worse.
pub(crate) fn repair_resumes_as_resync(release: Option<&str>) -> bool {
    let version = release.and_then(|r| {
        let mut parts = r.split(|c: char| !c.is_ascii_digit());
        Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
    });
    version.is_none_or(|v: (u32, u32)| v >= REPAIR_RESUMES_AS_RESYNC_FROM)
}

/// How long a paused sync may take to stop (`sync_completed` reading `none`) before mdtune gives
/// up, writes nothing and resumes it: the `frozen` write returns only once the sync thread has
/// exited (`md_reap_sync_thread` up to 6.6, `stop_sync_thread` from 6.7), so this is a bound for
/// a kernel that does otherwise. `MDTUNE_SYNC_STOP_WAIT` (seconds) overrides it.
pub(crate) const SYNC_STOP_WAIT_MS: u64 = 10_000;

/// The write that waits, uninterruptibly, for `mdmon` on external-metadata (IMSM/DDF) arrays
/// (`raid5_set_cache_size` -> `md_allow_write`, which marks a clean array dirty and waits for
/// user space, i.e. mdmon, to record it). Without a running mdmon it never returns.
pub(crate) const WAITS_FOR_MDMON: Attr = Attr::StripeCacheSize;

/// A reshape needs stripes: `check_stripe_cache` (raid5.c) refuses to go on with fewer than this
/// many stripes per chunk (of the larger of the old and new chunk) in the cache, so mdtune never
/// lowers `stripe_cache_size` while an array reshapes.
pub(crate) const RESHAPE_STRIPES_PER_CHUNK: u64 = 4;

/// `preread_bypass_threshold` may not exceed the stripe cache in force when it is written
/// (`raid5_store_preread_threshold`: EINVAL above `min_nr_stripes`), while a cache write never
/// looks at the threshold (`raid5_set_cache_size`), so a threshold above the cache is a state
/// the kernel allows. Writes of both are ordered from the values (`crate::plan::cache_order`).
pub(crate) const PREREAD_CAPPED_BY: Attr = Attr::StripeCacheSize;

/// In which unit a sync limit counts on an array of `level` (docs/reference.md §3), by the
/// limit's key, from its row of the table (where the kernel's reasons are). `level` "" is the
/// system-wide limit, which every array follows: its row comes first for a key both have
/// (`sync_io_depth`). Every kernel from 5.10 to 7.x (the depth from 6.16).
pub(crate) fn sync_unit(level: &str, key: &str) -> Option<&'static str> {
    let attr = || table::ATTRS.iter().find(|t| t.name == key);
    let limit = || table::LIMITS.iter().find(|t| t.name == key);
    let row = if level.is_empty() {
        limit().or_else(attr)
    } else {
        attr().or_else(limit)
    };
    row?.unit_on(level)
}

/// The copies a raid10 layout keeps (`setup_geo` in raid10.c: near copies in bits 0-7, far
/// copies in bits 8-15, bit 16 the offset flag), when the layout is one the kernel takes.
pub(crate) fn raid10_copies(layout: u64) -> Option<u64> {
    let (near, far) = (layout & 0xff, (layout >> 8) & 0xff);
    (layout >> 19 == 0 && near > 0 && far > 0).then_some(near * far)
}

/// What each member of a raid10 of `raid_disks` that keeps `copies` runs at in a resync, check
/// or repair bounded by `limit` KiB/s of array sectors: each array sector is on `copies` of the
/// `raid_disks` members.
pub(crate) fn raid10_per_member(limit: u64, copies: u64, raid_disks: u64) -> Option<u64> {
    (raid_disks > 0).then(|| limit.saturating_mul(copies) / raid_disks)
}

/// `sync_speed_min`/`_max` and `/proc/sys/dev/raid/speed_limit_*` are C ints printed with `%d`
/// (`sync_min_show`, `sync_max_show`, `proc_dointvec`), so they can read negative. The speed
/// limits take a negative number back as it is; `sync_speed_*` store an unsigned int
/// (`sync_min_store`: `kstrtouint`, EINVAL for "-1"), so a negative reading is written back as
/// the unsigned number with the same 32 bits.
pub(crate) fn sync_speed_store(shown: i64) -> u64 {
    u64::from(shown as i32 as u32)
}

/// The text to write for `value` as an attribute of `kind`: what [`Value::to_kernel`] gives,
/// except that a negative `sync_speed_*` is written as the unsigned number the kernel stores.
pub(crate) fn kernel_text(kind: Kind, value: Value) -> String {
    match (kind, value) {
        (Kind::SyncSpeed, Value::Negative(n)) => sync_speed_store(n).to_string(),
        _ => value.to_kernel(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_per_node_divide_the_cpus_and_never_reach_zero() {
        assert_eq!(threads_per_node(32, 1), 32);
        assert_eq!(threads_per_node(32, 2), 16);
        assert_eq!(threads_per_node(2, 4), 1);
        assert_eq!(threads_per_node(8, 0), 8);
        assert_eq!(sync_speed_store(-1), 4_294_967_295);
        assert_eq!(table::SYNC_IO_DEPTH_MAX, 16_777_215);
    }

    #[test]
    fn a_raid10_member_runs_at_the_limit_times_copies_over_raid_disks() {
        // mdadm's near=2 (0x102), far=2 (0x201), offset=2 (0x10201), near=3 (0x103).
        let copies: Vec<Option<u64>> = [0x102, 0x201, 0x10201, 0x103, 0, 1 << 19]
            .into_iter()
            .map(raid10_copies)
            .collect();
        assert_eq!(copies, [Some(2), Some(2), Some(2), Some(3), None, None]);
        // Seen on 6.1: near-2 over 4 drives, each member read half of the progress.
        assert_eq!(raid10_per_member(200_000, 2, 4), Some(100_000));
        // The 24-disk near-2 raid10 at the default speed_limit_max: 16.7 MB/s a member.
        assert_eq!(raid10_per_member(200_000, 2, 24), Some(16_666));
        assert_eq!(
            sync_unit("raid5", "sync_speed_max"),
            Some("KiB/s per device")
        );
        assert!(sync_unit("raid10", "sync_speed_min")
            .unwrap()
            .contains("array sectors"));
        assert_eq!(sync_unit("raid5", "group_thread_cnt"), None);
    }

    #[test]
    fn node_ids_are_sparse_when_the_highest_is_beyond_the_count() {
        assert!(!sparse_nodes(1, 0));
        assert!(!sparse_nodes(4, 3));
        assert!(sparse_nodes(2, 8), "PowerNV: 0,8");
        assert!(sparse_nodes(6, 255), "AC922: 0,8,252-255");
        assert_eq!(workers_the_cache_runs(256), 32);
        assert_eq!(workers_the_cache_runs(4096), 512);
        assert_eq!(workers_the_cache_runs(17), 2);
        assert_eq!(workers_the_cache_runs(7), 1);
    }
}
