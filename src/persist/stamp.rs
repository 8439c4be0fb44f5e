//! When something was written, as people and Prometheus read it: Unix seconds, and the same
//! instant in UTC as RFC 3339 (`2025-06-01T10:00:00Z`), without a calendar crate (the civil
//! date from a day count is eight lines of integer arithmetic). The persisted state's manifest
//! and the record of the last run carry both, with the version of mdtune that wrote them.

use std::time::{SystemTime, UNIX_EPOCH};

/// The version of this binary, as the persisted state and the last run record it.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Now, in whole seconds since 1970-01-01T00:00:00Z (0 for a clock set before then).
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `unix` as RFC 3339 in UTC, to the second.
pub(crate) fn rfc3339(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (never negative here).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_read_as_the_utc_calendar_says() {
        for (secs, utc) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_748_772_000, "2025-06-01T10:00:00Z"),
            (4_102_444_799, "2099-12-31T23:59:59Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
        ] {
            assert_eq!(rfc3339(secs), utc, "{secs}");
        }
        assert!(now() > 1_700_000_000);
    }
}
