//! Typed values as playbooks and pillars send them: `8` and `"8"` are the integer 8, `yes` and
//! `true` are booleans, and every refusal is a [`SpecError`] naming the key, the value and what is
//! allowed. The building blocks that [`desired`](super::desired), [`entry`](super::entry) and
//! [`policy`](super::policy) validate their keys with; this module knows no key of its own. The
//! values the kernel prints are `crate::md`'s.

use crate::md::Value;
use serde_json::{Map, Value as Json};

/// The kernel's limit for `group_thread_cnt` (raid5.c rejects anything above it).
pub const MAX_THREADS: u64 = crate::md::kernel::GROUP_THREAD_CNT_MAX;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("{key}: {value} is not allowed; expected {allowed}")]
    Invalid {
        key: String,
        value: String,
        allowed: String,
    },
    #[error("unknown key {key}; allowed keys: {allowed}")]
    Unknown { key: String, allowed: String },
    #[error("the input is not a JSON object: {0}")]
    NotJson(String),
    #[error("the input is larger than 1 MiB (1048576 bytes), the most mdtune reads")]
    TooLarge,
    #[error("duplicate key {key}: a key may appear only once in an object")]
    Duplicate { key: String },
}

pub(crate) fn invalid(key: &str, value: &Json, allowed: &str) -> SpecError {
    SpecError::Invalid {
        key: key.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

/// A desired value for one attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    Value(Value),
    /// `group_thread_cnt` from the members' hardware queues.
    Auto,
}

/// Refuses a key outside `allowed` (and, where `ansible`, not starting with `_ansible_`).
pub(crate) fn check_keys(
    prefix: &str,
    map: &Map<String, Json>,
    allowed: &[&str],
    ansible: bool,
) -> Result<(), SpecError> {
    for key in map.keys() {
        if !(allowed.contains(&key.as_str()) || ansible && key.starts_with("_ansible_")) {
            return Err(SpecError::Unknown {
                key: format!("{prefix}{key}"),
                allowed: allowed.join(", "),
            });
        }
    }
    Ok(())
}

/// An integer in `lo..=hi`, given as a JSON number or a string of digits.
pub(crate) fn parse_int(key: &str, v: &Json, lo: u64, hi: u64) -> Result<u64, SpecError> {
    let n = match v {
        Json::Number(n) => n.as_u64(),
        Json::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    n.filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| invalid(key, v, &format!("an integer {lo}..{hi}")))
}

/// A boolean as Ansible reads one: true/false, yes/no, on/off, y/n, 1/0.
pub(crate) fn parse_bool(key: &str, v: &Json) -> Result<bool, SpecError> {
    let b = match v {
        Json::Bool(b) => Some(*b),
        Json::Number(n) => match n.as_u64() {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => None,
        },
        Json::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "y" | "1" => Some(true),
            "false" | "no" | "off" | "n" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    };
    b.ok_or_else(|| invalid(key, v, "a boolean (true/false, yes/no)"))
}

/// `"auto"`, `"off"` or an integer 0..8192.
pub(crate) fn parse_threads(key: &str, v: &Json) -> Result<Want, SpecError> {
    // YAML 1.1 reads a bare `off` as the boolean false: it means "off" here (docs/reference.md §2).
    if *v == Json::Bool(false) {
        return Ok(Want::Value(Value::Int(0)));
    }
    match v.as_str().map(str::trim) {
        Some("auto") => Ok(Want::Auto),
        Some("off") => Ok(Want::Value(Value::Int(0))),
        _ => parse_int(key, v, 0, MAX_THREADS)
            .map(|n| Want::Value(Value::Int(n)))
            .map_err(|_| invalid(key, v, "\"auto\", \"off\" (or false) or an integer 0..8192")),
    }
}
