//! What the kernel sets when it creates an array's files or boots: the source `mdtune --show`,
//! `--verify` and `--metrics` call "kernel default" for a live value that matches it. Pure
//! vocabulary, like `super::kernel`'s facts; a setting not listed here (one added later) has no
//! known default and is never called one.

use super::attr::{Attr, SpeedLimit};
use super::values::Value;

/// The md attributes at array start: `group_thread_cnt` 0 (one thread, `raid5_alloc_percpu`),
/// `stripe_cache_size` 256 (`NR_STRIPES`), `preread_bypass_threshold` 1 (`IO_THRESHOLD`),
/// `skip_copy` off, `sync_speed_*` following the system (`mddev->sync_speed_*` 0),
/// `sync_force_parallel` off, `sync_io_depth` following the system (6.16 and later). mdadm raises
/// the stripe cache itself at assembly for chunks over 252 KiB (4 × chunk / 4 KiB + 1), so such
/// an array reads another value after boot.
const DEFAULTS: [(Attr, Value); 8] = [
    (Attr::GroupThreadCnt, Value::Int(0)),
    (Attr::StripeCacheSize, Value::Int(256)),
    (Attr::PrereadBypassThreshold, Value::Int(1)),
    (Attr::SkipCopy, Value::Bool(false)),
    (Attr::SyncSpeedMin, Value::System),
    (Attr::SyncSpeedMax, Value::System),
    (Attr::SyncForceParallel, Value::Bool(false)),
    (Attr::SyncIoDepth, Value::System),
];

/// The system limits at boot (`sysctl_speed_limit_min`, `sysctl_speed_limit_max` in md.c, KiB/s
/// per device; `sysctl_sync_io_depth`, 32 sync I/Os, from 6.16).
const DEFAULT_LIMITS: [(SpeedLimit, Value); 3] = [
    (SpeedLimit::Min, Value::Int(1000)),
    (SpeedLimit::Max, Value::Int(200_000)),
    (SpeedLimit::IoDepth, Value::Int(32)),
];

/// The kernel's default for the setting named `setting` (an md attribute, or else a system
/// limit: `sync_io_depth` names both, and is the array's here), if one is known.
pub fn default_of(setting: &str) -> Option<Value> {
    let md = DEFAULTS.iter().find(|(a, _)| a.name() == setting);
    let limit = || DEFAULT_LIMITS.iter().find(|(l, _)| l.name() == setting);
    md.map(|(_, v)| *v).or_else(|| limit().map(|(_, v)| *v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_and_limit_has_its_boot_default() {
        for a in Attr::ALL {
            assert!(default_of(a.name()).is_some(), "{a}");
        }
        assert_eq!(default_of("speed_limit_max"), Some(Value::Int(200_000)));
        assert_eq!(default_of("speed_limit_min"), Some(Value::Int(1000)));
        // An array's sync_io_depth follows the system's (the name is both's; arrays first).
        assert_eq!(default_of("sync_io_depth"), Some(Value::System));
        assert_eq!(default_of("stripe_cache_size"), Some(Value::Int(256)));
        assert_eq!(default_of("sync_speed_max"), Some(Value::System));
        assert_eq!(default_of("no_such_setting"), None);
    }
}
