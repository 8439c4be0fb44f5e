//! The sync limits of an array entry and of its `sync_boost` (`sync_speed_min`,
//! `sync_speed_max`, `sync_io_depth`): one parser for both, so that a boost's value is validated
//! exactly as the plain key's.

use super::values::{invalid, parse_int, SpecError};
use crate::md::{Attr, Value};
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

/// A sync limit (`sync_speed_min`, `sync_speed_max`, `sync_io_depth`) as its row takes it: an
/// integer in the row's range, or `"system"` (refused with the row's words), exactly as the
/// plain key is.
pub(super) fn parse_sync_value(attr: Attr, k: &str, v: &Json) -> Result<Value, SpecError> {
    let row = attr.row();
    if row.takes_system() && v.as_str().map(str::trim) == Some("system") {
        return Ok(Value::System);
    }
    parse_int(k, v, row.min, row.max)
        .map(Value::Int)
        .map_err(|_| invalid(k, v, &row.expected()))
}
