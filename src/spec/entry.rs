//! One element of `arrays`: which arrays it selects (kernel name, glob, mdadm name, uuid) and
//! what it wants for each attribute. Selectors are validated here so that nothing that could walk
//! out of `sys/block` ever reaches the inventory; whether a name matches is the plan's business.

use super::boost::{parse_boost, Boost};
use super::keys::ENTRY_KEYS;
use super::limits::min_at_most_max;
use super::reason::parse_reason;
use super::values::{check_keys, invalid, parse_bool, parse_int, parse_threads, SpecError, Want};
use crate::md::uuid_hex;
use crate::md::{Attr, Kind, Tunable, Value};
use glob::Pattern;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// How an entry names arrays.
#[derive(Clone, Debug)]
pub enum NameSelector {
    /// A kernel name (`md0`) or, failing that, an mdadm name published under `dev/md/`.
    Exact(String),
    /// `/dev/md/NAME`: only the mdadm name.
    DevMd(String),
    /// A glob over kernel names.
    Glob(Pattern),
}

/// One element of `arrays`.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Position in `arrays`, for messages and `source`.
    pub(crate) index: usize,
    pub name: Option<NameSelector>,
    /// 32 lowercase hex digits, from either the mdadm or the kernel form.
    pub uuid: Option<String>,
    /// The uuid as given (either form), so that a message answers in the same form.
    pub(crate) uuid_given: Option<String>,
    pub settings: BTreeMap<Attr, Want>,
    /// `sync_boost`: values in force only while the array runs one of its syncs.
    pub boost: Option<Boost>,
    /// Why these values (`reason`, docs/reference.md §2): covers the settings this entry sets.
    pub reason: Option<String>,
}

impl Entry {
    /// True if and only if the entry names its arrays exactly (no glob), so that a setting the
    /// array lacks is an error rather than a skip.
    pub(crate) fn is_exact(&self) -> bool {
        !matches!(self.name, Some(NameSelector::Glob(_)))
    }
}

/// One attribute's value as its row takes it: a boolean, `"auto"`/`"off"` or a thread count,
/// `"system"`, or a number in the row's range (refused with the row's words).
fn parse_setting(key: &str, v: &Json, row: &Tunable) -> Result<Want, SpecError> {
    match row.kind {
        Kind::Bool => Ok(Want::Value(Value::Bool(parse_bool(key, v)?))),
        _ if row.words.contains(&"auto") => parse_threads(key, v),
        _ if row.takes_system() && v.as_str().map(str::trim) == Some("system") => {
            Ok(Want::Value(Value::System))
        }
        // A sync limit above its range overflows the kernel's int; the preread threshold's
        // upper bound is the array's stripe_cache_size, checked in the plan.
        _ => parse_int(key, v, row.min, row.max)
            .map(|n| Want::Value(Value::Int(n)))
            .map_err(|_| invalid(key, v, &row.expected())),
    }
}

/// Parses `arrays[index]`.
pub(crate) fn parse_entry(index: usize, v: &Json) -> Result<Entry, SpecError> {
    let at = format!("arrays[{index}]");
    let Json::Object(map) = v else {
        return Err(invalid(
            &at,
            v,
            "an object with name and/or uuid and settings",
        ));
    };
    check_keys(&format!("{at}."), map, ENTRY_KEYS, false)?;
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let key = |k: &str| format!("{at}.{k}");

    let name = get("name")
        .map(|v| parse_selector(&key("name"), v))
        .transpose()?;
    let uuid = get("uuid")
        .map(|v| parse_uuid(&key("uuid"), v))
        .transpose()?;
    if name.is_none() && uuid.is_none() {
        return Err(invalid(&at, v, "an entry with a name, a uuid or both"));
    }
    let mut settings = BTreeMap::new();
    for attr in Attr::ALL {
        let Some(v) = get(attr.name()) else { continue };
        let want = parse_setting(&key(attr.name()), v, attr.row())?;
        settings.insert(attr, want);
    }
    let value = |a| match settings.get(&a) {
        Some(Want::Value(v)) => Some(*v),
        _ => None,
    };
    min_at_most_max(&at, value(Attr::SyncSpeedMin), value(Attr::SyncSpeedMax))?;
    let boost = get("sync_boost")
        .map(|v| parse_boost(&key("sync_boost"), v))
        .transpose()?;
    Ok(Entry {
        index,
        name,
        uuid,
        uuid_given: get("uuid")
            .and_then(Json::as_str)
            .map(|s| s.trim().to_string()),
        settings,
        boost,
        reason: get("reason")
            .map(|v| parse_reason(&key("reason"), v))
            .transpose()?
            .flatten(),
    })
}

/// Kernel names, globs over them, mdadm names and `/dev/md/NAME`. Anything that could walk out of
/// `sys/block` (`/`, `..`, NUL, control characters) is refused here.
fn parse_selector(key: &str, v: &Json) -> Result<NameSelector, SpecError> {
    const ALLOWED: &str = "an md kernel name (md0), a glob (md*), an mdadm name (hana_data) or /dev/md/NAME; no other '/', no '..', no control characters";
    let Some(s) = v.as_str() else {
        return Err(invalid(key, v, ALLOWED));
    };
    let (dev_md, name) = match s.strip_prefix("/dev/md/") {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let bad = name.is_empty()
        || name.len() > 255
        || name == "."
        || name.contains("..")
        || name.contains('/')
        || name.chars().any(char::is_control);
    if bad {
        return Err(invalid(key, v, ALLOWED));
    }
    if dev_md {
        Ok(NameSelector::DevMd(name.to_string()))
    } else if name.contains(['*', '?', '[']) {
        Pattern::new(name)
            .map(NameSelector::Glob)
            .map_err(|e| invalid(key, v, &format!("a valid glob ({e})")))
    } else {
        Ok(NameSelector::Exact(name.to_string()))
    }
}

/// mdadm's `aaaaaaaa:bbbbbbbb:cccccccc:dddddddd` or the kernel's dashed form, as 32 hex digits.
fn parse_uuid(key: &str, v: &Json) -> Result<String, SpecError> {
    uuid_hex(v.as_str().unwrap_or_default()).ok_or_else(|| {
        invalid(
            key,
            v,
            "mdadm's form (xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx) or the kernel's (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
        )
    })
}
