//! The kernel facts mdtune's decisions rest on, in one table a newcomer can find: limits, what a
//! write costs, and how many workers a `group_thread_cnt` value really starts. Each fact names
//! the kernel function it comes from (drivers/md/md.c, drivers/md/raid5.c, block/); the same
//! behaviour holds in every kernel from 5.10 to 7.x unless the comment says otherwise.
//!
//! This module only states facts. Deciding what to write from them is `plan`'s job; reading
//! the values they apply to is `inventory`'s and `topology`'s.

use super::attr::Attr;

/// The largest `group_thread_cnt` the kernel accepts (`raid5_store_group_thread_cnt`: EINVAL
/// above 8192).
pub(crate) const GROUP_THREAD_CNT_MAX: u64 = 8192;

/// How many worker groups the kernel starts for one `group_thread_cnt` value: one group per
/// *possible* NUMA node (`alloc_thread_groups`: `num_possible_nodes()` groups of `cnt` workers).
/// So the sensible default ceiling for `auto` is the online CPUs divided by the possible nodes,
/// at least 1: more per node oversubscribes the CPUs.
pub(crate) fn threads_per_node(online_cpus: u64, possible_nodes: u64) -> u64 {
    (online_cpus / possible_nodes.max(1)).max(1)
}

/// A rotational disk counts as this many queues whatever its `mq/` shows: every LUN of a SCSI
/// host gets the host's hardware queue count (`scsi_mq_setup_tags`: `nr_hw_queues` of the
/// `Scsi_Host`, shared by all its LUNs on mpt3sas, megaraid_sas, smartpqi, virtio_scsi), which
/// says nothing about one spinning disk (`queue/rotational` is `blk_queue_rotational`).
pub(crate) const ROTATIONAL_QUEUES: u64 = 1;

/// Writes that suspend the whole array, even for an unchanged value, on Linux 6.7 and later
/// (`raid5_store_group_thread_cnt`, `raid5_store_skip_copy`: `mddev_suspend_and_lock`). A
/// suspend waits for in-flight I/O, reshape I/O included, so these are held back during a reshape.
pub(crate) const SUSPENDS_ARRAY: [Attr; 2] = [Attr::GroupThreadCnt, Attr::SkipCopy];

/// The write that waits, uninterruptibly, for `mdmon` on external-metadata (IMSM/DDF) arrays
/// (`raid5_set_cache_size` -> `md_allow_write`, which marks a clean array dirty and waits for
/// user space, i.e. mdmon, to record it). Without a running mdmon it never returns.
pub(crate) const WAITS_FOR_MDMON: Attr = Attr::StripeCacheSize;

/// A reshape needs stripes: `check_stripe_cache` (raid5.c) refuses to go on with fewer than this
/// many stripes per chunk (of the larger of the old and new chunk) in the cache, so mdtune never
/// lowers `stripe_cache_size` while an array reshapes.
pub(crate) const RESHAPE_STRIPES_PER_CHUNK: u64 = 4;

/// `preread_bypass_threshold` may not exceed the stripe cache (`raid5_store_preread_threshold`:
/// EINVAL above `min_nr_stripes`), so `stripe_cache_size` is written first, and restored first.
pub(crate) const PREREAD_CAPPED_BY: Attr = Attr::StripeCacheSize;

/// `sync_speed_min`/`_max` and `/proc/sys/dev/raid/speed_limit_*` are C ints printed with `%d`
/// (`sync_min_show`, `sync_max_show`, `proc_dointvec`), so they can read negative. The speed
/// limits take a negative number back as it is; `sync_speed_*` store an unsigned int
/// (`sync_min_store`: `kstrtouint`, EINVAL for "-1"), so a negative reading is written back as
/// the unsigned number with the same 32 bits.
pub(crate) fn sync_speed_store(shown: i64) -> u64 {
    u64::from(shown as i32 as u32)
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
    }
}
