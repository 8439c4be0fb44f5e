//! An array entry's `sync_boost` (docs/reference.md §2): sync limits in force only while the
//! array runs one of the syncs of `during`. Each value is validated exactly as the plain key of
//! the same name ([`super::limits::parse_sync_value`]); whether the array and the kernel have it
//! is the plan's business, as for the plain keys. What a boost does is `crate::boost`'s.

use super::limits::{min_at_most_max, parse_sync_value};
use super::values::{check_keys, invalid, SpecError};
use crate::md::{Attr, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// The keys of a `sync_boost` object.
pub const BOOST_KEYS: &[&str] = &[
    "sync_speed_min",
    "sync_speed_max",
    "sync_io_depth",
    "during",
];

/// The syncs a boost is in force during when `during` is not given: those that restore or
/// establish redundancy.
pub const DURING_DEFAULT: [&str; 3] = ["resync", "recover", "reshape"];

/// What `during` may name: the `md/sync_action` words of a running sync.
pub const DURING_ALLOWED: [&str; 5] = ["resync", "recover", "reshape", "check", "repair"];

/// The attributes a boost may set, in the order they are written.
pub(crate) const BOOSTED: [Attr; 3] = [Attr::SyncSpeedMin, Attr::SyncSpeedMax, Attr::SyncIoDepth];

/// A validated `sync_boost`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boost {
    /// At least one of [`BOOSTED`].
    pub values: BTreeMap<Attr, Value>,
    /// `md/sync_action` words, each once, in the order given.
    pub during: Vec<String>,
}

impl Boost {
    /// True if and only if `action` (what `md/sync_action` reads) is a sync of `during`.
    pub fn runs_during(&self, action: &str) -> bool {
        self.during.iter().any(|d| d == action.trim())
    }
}

/// Parses `arrays[N].sync_boost` (`key`).
pub(crate) fn parse_boost(key: &str, v: &Json) -> Result<Boost, SpecError> {
    const WHAT: &str = "an object with sync_speed_min, sync_speed_max and/or sync_io_depth, and \
                        optionally during";
    let Json::Object(map) = v else {
        return Err(invalid(key, v, WHAT));
    };
    check_keys(&format!("{key}."), map, BOOST_KEYS, false)?;
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let mut values = BTreeMap::new();
    for attr in BOOSTED {
        if let Some(v) = get(attr.name()) {
            let k = format!("{key}.{attr}");
            values.insert(attr, parse_sync_value(attr, &k, v)?);
        }
    }
    if values.is_empty() {
        return Err(invalid(key, v, WHAT));
    }
    let (min, max) = (Attr::SyncSpeedMin, Attr::SyncSpeedMax);
    min_at_most_max(key, values.get(&min).copied(), values.get(&max).copied())?;
    let during = match get("during") {
        None => DURING_DEFAULT.iter().map(|d| (*d).to_string()).collect(),
        Some(d) => parse_during(&format!("{key}.during"), d)?,
    };
    Ok(Boost { values, during })
}

/// A non-empty list of syncs from [`DURING_ALLOWED`] (a single word is a list of one, as a
/// SUSE Manager form may send it).
fn parse_during(key: &str, v: &Json) -> Result<Vec<String>, SpecError> {
    let allowed = format!(
        "a non-empty list of {} (resync, recover and reshape when not given)",
        DURING_ALLOWED.join(", ")
    );
    let items = match v {
        Json::Array(items) if !items.is_empty() => items.clone(),
        Json::String(_) => vec![v.clone()],
        _ => return Err(invalid(key, v, &allowed)),
    };
    let mut during = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let word = item.as_str().map(str::trim).unwrap_or_default();
        if !DURING_ALLOWED.contains(&word) {
            return Err(invalid(&format!("{key}[{i}]"), item, &allowed));
        }
        if !during.iter().any(|d| d == word) {
            during.push(word.to_string());
        }
    }
    Ok(during)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn boost(v: Json) -> Result<Boost, String> {
        parse_boost("arrays[0].sync_boost", &v).map_err(|e| e.to_string())
    }

    #[test]
    fn a_boost_takes_the_plain_keys_values_and_defaults_during() {
        let b = boost(json!({"sync_speed_min": "500000", "sync_io_depth": "system"})).unwrap();
        assert_eq!(b.values[&Attr::SyncSpeedMin], Value::Int(500_000));
        assert_eq!(b.values[&Attr::SyncIoDepth], Value::System);
        assert_eq!(b.during, ["resync", "recover", "reshape"]);
        assert!(b.runs_during("resync\n") && !b.runs_during("check"));
        let c = boost(json!({"sync_speed_max": 9, "during": ["check", "repair", "check"]}));
        assert_eq!(c.unwrap().during, ["check", "repair"]);
    }

    #[test]
    fn a_bad_boost_names_key_value_and_what_is_allowed() {
        for (v, says) in [
            (json!({"during": ["scrub"]}), "arrays[0].sync_boost: "),
            (
                json!({"sync_speed_min": 1, "during": ["scrub"]}),
                "arrays[0].sync_boost.during[0]: \"scrub\" is not allowed; expected a non-empty \
                 list of resync, recover, reshape, check, repair",
            ),
            (
                json!({"sync_speed_min": 1, "during": []}),
                "arrays[0].sync_boost.during: [] is not allowed",
            ),
            (
                json!({"sync_speed_min": 0}),
                "arrays[0].sync_boost.sync_speed_min: 0 is not allowed; expected an integer \
                 1..2147483647 (KiB/s) or \"system\"",
            ),
            (
                json!({"sync_io_depth": 16_777_216}),
                "arrays[0].sync_boost.sync_io_depth: 16777216 is not allowed",
            ),
            (
                json!({"sync_speed_min": 9, "sync_speed_max": 8}),
                "arrays[0].sync_boost.sync_speed_min: 9 is not allowed; expected at most",
            ),
            (
                json!({"stripe_cache_size": 9}),
                "unknown key arrays[0].sync_boost.stripe_cache_size",
            ),
            (json!(5), "arrays[0].sync_boost: 5 is not allowed"),
        ] {
            let e = boost(v.clone()).unwrap_err();
            assert!(e.starts_with(says), "{v}: {e}");
        }
    }
}
