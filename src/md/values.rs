//! The values the kernel prints and accepts for the attributes of [`super::attr`]: parsing what
//! `md/` and `/proc/sys/dev/raid` print (`"200000 (system)"`, negative C ints, `N / M` progress)
//! and formatting what is written back; CPU lists and masks are [`super::cpus`]'s. Pure: no I/O
//! here; `crate::sys` reads and writes.

use serde::{Serialize, Serializer};
use std::fmt;

/// How an attribute's value is printed and parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An unsigned number (`%d` of a value the kernel keeps non-negative).
    Int,
    /// A C int that can read negative: `/proc/sys/dev/raid/speed_limit_*`.
    CInt,
    Bool,
    /// `sync_speed_*` and `sync_io_depth`: a number with a `(system)` or `(local)` suffix.
    SyncSpeed,
}

/// A typed attribute value, as read from or written to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Int(u64),
    /// A C int the kernel printed negative (`sync_speed_*`, `speed_limit_*`; see
    /// `kernel::sync_speed_store`). Always below zero: zero and up are [`Value::Int`].
    Negative(i64),
    Bool(bool),
    /// `sync_speed_*` following the system-wide limit (the kernel prints `N (system)`).
    System,
}

impl Value {
    /// A signed number as a value: [`Value::Negative`] below zero, [`Value::Int`] otherwise.
    pub(crate) fn signed(n: i64) -> Value {
        u64::try_from(n).map_or(Value::Negative(n), Value::Int)
    }

    /// As JSON, typed as the report types it (`"system"` for [`Value::System`]).
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Value::Int(n) => n.into(),
            Value::Negative(n) => n.into(),
            Value::Bool(b) => b.into(),
            Value::System => "system".into(),
        }
    }

    /// The text written to the kernel.
    pub fn to_kernel(self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Negative(n) => n.to_string(),
            Value::Bool(b) => u8::from(b).to_string(),
            Value::System => "system".to_string(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Negative(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::System => f.write_str("system"),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(n) => s.serialize_u64(*n),
            Value::Negative(n) => s.serialize_i64(*n),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::System => s.serialize_str("system"),
        }
    }
}

/// Parses what the kernel prints for an attribute of `kind`. Returns `None` for text the kernel
/// would not print (garbage, an empty file, a number beyond 64 bits).
pub fn parse_value(kind: Kind, text: &str) -> Option<Value> {
    let text = text.trim();
    match kind {
        Kind::Int => text.parse().ok().map(Value::Int),
        Kind::CInt => c_int(text),
        // skip_copy and sync_force_parallel print 0 or 1; any other unsigned means "on".
        Kind::Bool => text.parse::<u64>().ok().map(|n| Value::Bool(n != 0)),
        // sync_speed_* prints "200000 (system)" or "50000 (local)". A bare number (as a test
        // root holds it) is the array's own value; a bare "system" (what a test root holds
        // after mdtune wrote it) follows the system value.
        Kind::SyncSpeed if text == "system" => Some(Value::System),
        Kind::SyncSpeed => {
            let (number, suffix) = match text.split_once(' ') {
                Some((n, s)) => (n, s.trim()),
                None => (text, "(local)"),
            };
            let n = c_int(number)?;
            match suffix {
                "(system)" => Some(Value::System),
                "(local)" => Some(n),
                _ => None,
            }
        }
    }
}

/// A number the kernel printed with `%d` from an int: negative values are kept, and an
/// unsigned number in 2^31..2^32 (what a test root holds after mdtune wrote a negative
/// `sync_speed_*` back, see `super::kernel::sync_speed_store`) reads as the kernel shows it.
fn c_int(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<u64>() {
        if (1 << 31..1 << 32).contains(&n) {
            return Some(Value::signed(i64::from(n as u32 as i32)));
        }
        return Some(Value::Int(n));
    }
    text.parse::<i64>().ok().map(Value::signed)
}

/// Parses the kernel's `N / M` progress in `sync_completed`; `none` and `delayed` give `None`.
pub fn parse_progress(text: &str) -> Option<[u64; 2]> {
    let (done, total) = text.trim().split_once('/')?;
    Some([done.trim().parse().ok()?, total.trim().parse().ok()?])
}

#[cfg(test)]
mod tests {
    use super::super::kernel::kernel_text;
    use super::*;

    #[test]
    fn sync_speed_suffixes_say_whose_value_it_is() {
        let p = |t| parse_value(Kind::SyncSpeed, t);
        assert_eq!(p("200000 (system)\n"), Some(Value::System));
        assert_eq!(p("50000 (local)\n"), Some(Value::Int(50000)));
        assert_eq!(p("50000\n"), Some(Value::Int(50000)));
        assert_eq!(p("system\n"), Some(Value::System));
        assert_eq!(p("50000 (other)"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("abc (local)"), None);
    }

    #[test]
    fn c_ints_read_negative_as_the_kernel_prints_them() {
        let p = |k, t| parse_value(k, t);
        assert_eq!(
            p(Kind::SyncSpeed, "-1 (local)\n"),
            Some(Value::Negative(-1))
        );
        assert_eq!(p(Kind::SyncSpeed, "-1 (system)\n"), Some(Value::System));
        assert_eq!(p(Kind::SyncSpeed, "4294967295"), Some(Value::Negative(-1)));
        assert_eq!(p(Kind::CInt, "-1\n"), Some(Value::Negative(-1)));
        assert_eq!(p(Kind::CInt, "200000\n"), Some(Value::Int(200000)));
        assert_eq!(p(Kind::CInt, ""), None);
        assert_eq!(
            kernel_text(Kind::SyncSpeed, Value::Negative(-1)),
            "4294967295"
        );
        assert_eq!(kernel_text(Kind::CInt, Value::Negative(-1)), "-1");
        let back = parse_value(
            Kind::SyncSpeed,
            &kernel_text(Kind::SyncSpeed, Value::Negative(-7)),
        );
        assert_eq!(back, Some(Value::Negative(-7)));
    }

    #[test]
    fn garbage_and_huge_numbers_do_not_parse() {
        assert_eq!(parse_value(Kind::Int, "99999999999999999999999"), None);
        assert_eq!(parse_value(Kind::Int, "-1"), None);
        assert_eq!(parse_value(Kind::Int, " 256\n"), Some(Value::Int(256)));
        assert_eq!(parse_value(Kind::Bool, "1"), Some(Value::Bool(true)));
        assert_eq!(parse_value(Kind::Bool, "x"), None);
    }

    #[test]
    fn sync_progress_reads_as_the_kernel_prints_it() {
        assert_eq!(
            parse_progress("1048576 / 4194304\n"),
            Some([1048576, 4194304])
        );
        assert_eq!(parse_progress("delayed"), None);
    }
}
