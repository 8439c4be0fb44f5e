//! What the kernel sets when it creates an array's files or boots: the source `mdtune --show`,
//! `--verify` and `--metrics` call "kernel default" for a live value that matches it. Pure
//! vocabulary, read from each row of `super::table` (where each default's kernel source is
//! named); a setting without a row (one added later) has no known default and is never called
//! one.

use super::table;
use super::values::Value;

/// The kernel's default for the setting named `setting` (an md attribute, or else a system
/// limit: `sync_io_depth` names both, and is the array's here), if one is known.
pub fn default_of(setting: &str) -> Option<Value> {
    table::row(setting).map(|t| t.default)
}

#[cfg(test)]
mod tests {
    use super::super::attr::Attr;
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
