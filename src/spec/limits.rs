//! The sync limits of an array entry and of its `sync_boost` (`sync_speed_min`,
//! `sync_speed_max`, `sync_io_depth`): one parser for both, so that a boost's value is validated
//! exactly as the plain key's.

use super::values::{invalid, parse_int, SpecError};
use crate::md::{kernel, Attr, Value};
use serde_json::Value as Json;

/// A `sync_speed_min` above the `sync_speed_max` beside it is refused (`at` is the object).
pub(super) fn min_at_most_max(
    at: &str,
    min: Option<Value>,
    max: Option<Value>,
) -> Result<(), SpecError> {
    if let (Some(Value::Int(min)), Some(Value::Int(max))) = (min, max) {
        if min > max {
            return Err(invalid(
                &format!("{at}.sync_speed_min"),
                &Json::from(min),
                &format!("at most sync_speed_max ({max})"),
            ));
        }
    }
    Ok(())
}

/// A sync limit (`sync_speed_min`, `sync_speed_max`, `sync_io_depth`): an integer in the range
/// the kernel keeps, or `"system"`.
pub(super) fn parse_sync_value(attr: Attr, k: &str, v: &Json) -> Result<Value, SpecError> {
    if v.as_str().map(str::trim) == Some("system") {
        return Ok(Value::System);
    }
    // Above this the kernel's count of sync I/O in flight overflows.
    if attr == Attr::SyncIoDepth {
        let most = kernel::SYNC_IO_DEPTH_MAX;
        return parse_int(k, v, 1, most).map(Value::Int).map_err(|_| {
            invalid(
                k,
                v,
                &format!("an integer 1..{most} (sync I/Os) or \"system\""),
            )
        });
    }
    // The kernel stores sync_speed_* in an int (ERANGE beyond it).
    parse_int(k, v, 1, u64::from(i32::MAX as u32))
        .map(Value::Int)
        .map_err(|_| invalid(k, v, "an integer 1..2147483647 (KiB/s) or \"system\""))
}
