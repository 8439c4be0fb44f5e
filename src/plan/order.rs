//! The order of an array's `stripe_cache_size` and `preread_bypass_threshold` writes, from the
//! values (docs/reference.md §4), so that the kernel accepts every step: it refuses a threshold
//! above the stripe cache in force at that moment (`raid5_store_preread_threshold`), while a
//! cache write never looks at the threshold (`raid5_set_cache_size`), so a live threshold above
//! the cache is a state the kernel allows, and restoring one (rollback, revert) needs care.
//! Pure: `apply` puts its writes in this order.

/// How to take the cache from `now` to `to` and the threshold to `threshold`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOrder {
    /// The cache, then the threshold (it fits under the new cache): every forward run.
    CacheFirst,
    /// The threshold (it fits under the cache now), then the cache.
    ThresholdFirst,
    /// The cache to this value (the threshold) first, then the threshold, then the cache to its
    /// value: the threshold fits under neither cache.
    Through(u64),
}

/// See [`CacheOrder`].
pub fn cache_order(now: u64, to: u64, threshold: u64) -> CacheOrder {
    if threshold <= to {
        CacheOrder::CacheFirst
    } else if threshold <= now {
        CacheOrder::ThresholdFirst
    } else {
        CacheOrder::Through(threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_keeps_the_threshold_under_the_cache_in_force() {
        // Raising both, or lowering both to a threshold under the new cache.
        assert_eq!(cache_order(256, 4096, 3000), CacheOrder::CacheFirst);
        assert_eq!(cache_order(4096, 256, 100), CacheOrder::CacheFirst);
        // Restoring cache 256 and threshold 1000 (set under a larger cache) from 4096.
        assert_eq!(cache_order(4096, 256, 1000), CacheOrder::ThresholdFirst);
        // ... from 200: neither cache holds 1000, so the cache goes through 1000.
        assert_eq!(cache_order(200, 256, 1000), CacheOrder::Through(1000));
    }
}
