//! The desired state: the module's JSON input, validated into a [`Spec`] before anything on the
//! host is read or written.
//!
//! Values arrive as a playbook or a Salt pillar produced them: `8` and `"8"` are the integer 8,
//! `yes`/`true`/`on` are booleans, and `null` means "not given". Keys starting with `_ansible_`
//! are accepted and ignored unless named here. Anything else that is unknown, mistyped or out of
//! range is a [`SpecError`] naming the key, the value and what is allowed. Checks that need the
//! live host (a name that matches nothing, a setting the array's level lacks) belong to the plan.

use crate::sysfs::{Attr, Kind, SpeedLimit, Value};
use glob::Pattern;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The kernel's limit for `group_thread_cnt` (raid5.c rejects anything above it).
pub const MAX_THREADS: u64 = crate::kernel::GROUP_THREAD_CNT_MAX;

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
}

fn invalid(key: &str, value: &Json, allowed: &str) -> SpecError {
    SpecError::Invalid {
        key: key.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

/// What the run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Write what differs.
    Present,
    /// Only report compliance.
    Query,
    /// Restore the values saved before the first change.
    Reverted,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Present => "present",
            State::Query => "query",
            State::Reverted => "reverted",
        }
    }
}

/// A desired value for one attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    Value(Value),
    /// `group_thread_cnt` from the members' hardware queues.
    Auto,
}

/// How `auto` combines the members' queue counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    Min,
    Max,
}

/// The parameters of the `auto` thread policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoParams {
    pub min: Option<u64>,
    /// Defaults to the online CPUs divided by the possible NUMA nodes; never above
    /// [`MAX_THREADS`].
    pub max: Option<u64>,
    pub combine: Combine,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            min: None,
            max: None,
            combine: Combine::Min,
        }
    }
}

/// `thread_policy`: `group_thread_cnt` for raid4/5/6 arrays whose entry sets none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadPolicy {
    pub want: Want,
    pub auto: AutoParams,
}

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
    pub index: usize,
    pub name: Option<NameSelector>,
    /// 32 lowercase hex digits, from either the mdadm or the kernel form.
    pub uuid: Option<String>,
    pub settings: BTreeMap<Attr, Want>,
}

impl Entry {
    /// True if and only if the entry names its arrays exactly (no glob), so that a setting the
    /// array lacks is an error rather than a skip.
    pub fn is_exact(&self) -> bool {
        !matches!(self.name, Some(NameSelector::Glob(_)))
    }
}

/// The validated input.
#[derive(Clone, Debug)]
pub struct Spec {
    pub arrays: Vec<Entry>,
    pub thread_policy: ThreadPolicy,
    pub speed_limits: BTreeMap<SpeedLimit, u64>,
    pub state: State,
    pub persist: bool,
    pub root: PathBuf,
    pub check_mode: bool,
    pub diff: bool,
    /// The input object without `check_mode`, `diff`, `root` and `_ansible_*`: what `persist`
    /// saves.
    pub persisted: Map<String, Json>,
    /// Set by `--udev NAME`, never by input: only this array is read and tuned.
    pub only: Option<String>,
}

/// The input keys (besides `_ansible_*`).
pub const TOP_KEYS: &[&str] = &[
    "arrays",
    "thread_policy",
    "speed_limit_min",
    "speed_limit_max",
    "state",
    "persist",
    "root",
    "check_mode",
    "diff",
];
/// The keys of an array entry.
pub const ENTRY_KEYS: &[&str] = &[
    "name",
    "uuid",
    "group_thread_cnt",
    "stripe_cache_size",
    "preread_bypass_threshold",
    "skip_copy",
    "sync_speed_min",
    "sync_speed_max",
    "sync_force_parallel",
];
/// The keys of the thread policy object.
pub const POLICY_KEYS: &[&str] = &["mode", "value", "min", "max", "combine"];
/// Keys a run uses but `persist` does not save.
const RUN_ONLY_KEYS: &[&str] = &["check_mode", "diff", "root"];
/// Keys the read-only `mdtune_info` module refuses: it always runs `state: query`.
const INFO_REFUSED_KEYS: &[&str] = &["state", "persist"];

/// True if and only if Ansible runs this binary as the `mdtune_info` module (`mdtune_info`,
/// `mdtune.mdraid.mdtune_info`, or a per-architecture `mdtune_info_<arch>`), which only reports.
fn is_info_module(map: &Map<String, Json>) -> bool {
    let name = map.get("_ansible_module_name").and_then(Json::as_str);
    let short = name.map_or("", |n| n.rsplit('.').next().unwrap_or(n));
    short == "mdtune_info" || short.starts_with("mdtune_info_")
}

impl Spec {
    /// Parses and validates the module's input text.
    pub fn from_json(text: &str) -> Result<Spec, SpecError> {
        let json: Json =
            serde_json::from_str(text).map_err(|e| SpecError::NotJson(e.to_string()))?;
        match json {
            Json::Object(map) => Spec::from_map(map),
            other => Err(SpecError::NotJson(format!(
                "got {}",
                other.to_string().chars().take(60).collect::<String>()
            ))),
        }
    }

    pub fn from_map(map: Map<String, Json>) -> Result<Spec, SpecError> {
        check_keys("", &map, TOP_KEYS, true)?;
        let get = |k: &str| map.get(k).filter(|v| !v.is_null());
        let info = is_info_module(&map);
        let refused = INFO_REFUSED_KEYS
            .iter()
            .find_map(|k| get(k).map(|v| (*k, v)));
        if let (true, Some((key, v))) = (info, refused) {
            return Err(invalid(
                key,
                v,
                "no state or persist: mdtune_info only reports (state: query); \
                 use mdtune to change values",
            ));
        }
        let flag =
            |k: &str| -> Result<bool, SpecError> { get(k).map_or(Ok(false), |v| parse_bool(k, v)) };

        let arrays = match get("arrays") {
            None => vec![Entry {
                index: 0,
                name: Some(NameSelector::Glob(Pattern::new("*").expect("valid glob"))),
                uuid: None,
                settings: BTreeMap::new(),
            }],
            Some(Json::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| parse_entry(i, v))
                .collect::<Result<_, _>>()?,
            Some(v) => return Err(invalid("arrays", v, "a list of array entries")),
        };
        let thread_policy = match get("thread_policy") {
            None => ThreadPolicy {
                want: Want::Auto,
                auto: AutoParams::default(),
            },
            Some(v) => parse_policy(v)?,
        };
        let mut speed_limits = BTreeMap::new();
        for limit in SpeedLimit::ALL {
            if let Some(v) = get(limit.name()) {
                speed_limits.insert(
                    limit,
                    parse_int(limit.name(), v, 1, u64::from(i32::MAX as u32))?,
                );
            }
        }
        if let (Some(min), Some(max)) = (
            speed_limits.get(&SpeedLimit::Min),
            speed_limits.get(&SpeedLimit::Max),
        ) {
            if min > max {
                return Err(invalid(
                    "speed_limit_min",
                    &Json::from(*min),
                    &format!("at most speed_limit_max ({max})"),
                ));
            }
        }
        let state = match get("state") {
            None if info => State::Query,
            None => State::Present,
            Some(v) => match v.as_str() {
                Some("present") => State::Present,
                Some("query") => State::Query,
                Some("reverted") => State::Reverted,
                _ => return Err(invalid("state", v, "one of present, query, reverted")),
            },
        };
        let root = match get("root") {
            None => PathBuf::from("/"),
            Some(Json::String(s)) if !s.is_empty() && !s.contains('\0') => PathBuf::from(s),
            Some(v) => return Err(invalid("root", v, "a directory path")),
        };
        let persisted = map
            .iter()
            .filter(|(k, _)| !k.starts_with("_ansible_") && !RUN_ONLY_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Spec {
            arrays,
            thread_policy,
            speed_limits,
            state,
            persist: flag("persist")?,
            root,
            check_mode: flag("check_mode")? || flag("_ansible_check_mode")?,
            diff: flag("diff")? || flag("_ansible_diff")?,
            persisted,
            only: None,
        })
    }
}

fn check_keys(
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
pub fn parse_int(key: &str, v: &Json, lo: u64, hi: u64) -> Result<u64, SpecError> {
    let n = match v {
        Json::Number(n) => n.as_u64(),
        Json::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    n.filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| invalid(key, v, &format!("an integer {lo}..{hi}")))
}

/// A boolean as Ansible reads one: true/false, yes/no, on/off, y/n, 1/0.
pub fn parse_bool(key: &str, v: &Json) -> Result<bool, SpecError> {
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
fn parse_threads(key: &str, v: &Json) -> Result<Want, SpecError> {
    match v.as_str().map(str::trim) {
        Some("auto") => Ok(Want::Auto),
        Some("off") => Ok(Want::Value(Value::Int(0))),
        _ => parse_int(key, v, 0, MAX_THREADS)
            .map(|n| Want::Value(Value::Int(n)))
            .map_err(|_| invalid(key, v, "\"auto\", \"off\" or an integer 0..8192")),
    }
}

fn parse_policy(v: &Json) -> Result<ThreadPolicy, SpecError> {
    let Json::Object(map) = v else {
        return Ok(ThreadPolicy {
            want: parse_threads("thread_policy", v).map_err(|_| {
                invalid(
                    "thread_policy",
                    v,
                    "\"auto\", \"off\", an integer 0..8192, or an object with mode/value/min/max/combine",
                )
            })?,
            auto: AutoParams::default(),
        });
    };
    check_keys("thread_policy.", map, POLICY_KEYS, false)?;
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let bound = |k: &str| -> Result<Option<u64>, SpecError> {
        get(k)
            .map(|v| parse_int(&format!("thread_policy.{k}"), v, 0, MAX_THREADS))
            .transpose()
    };
    let mode = get("mode").map_or(Some("auto"), Json::as_str);
    let want = match mode {
        Some("auto") => Want::Auto,
        Some("off") => Want::Value(Value::Int(0)),
        Some("fixed") => match get("value") {
            Some(v) => Want::Value(Value::Int(parse_int(
                "thread_policy.value",
                v,
                0,
                MAX_THREADS,
            )?)),
            None => {
                return Err(invalid(
                    "thread_policy.value",
                    &Json::Null,
                    "an integer 0..8192 when mode is fixed",
                ))
            }
        },
        _ => {
            return Err(invalid(
                "thread_policy.mode",
                get("mode").unwrap_or(&Json::Null),
                "one of auto, fixed, off",
            ))
        }
    };
    if want != Want::Auto {
        for k in ["min", "max", "combine"] {
            if let Some(v) = get(k) {
                return Err(invalid(
                    &format!("thread_policy.{k}"),
                    v,
                    "nothing unless mode is auto",
                ));
            }
        }
    }
    if mode != Some("fixed") {
        if let Some(v) = get("value") {
            return Err(invalid(
                "thread_policy.value",
                v,
                "nothing unless mode is fixed",
            ));
        }
    }
    let combine = match get("combine") {
        None => Combine::Min,
        Some(v) => match v.as_str() {
            Some("min") => Combine::Min,
            Some("max") => Combine::Max,
            _ => return Err(invalid("thread_policy.combine", v, "one of min, max")),
        },
    };
    let (min, max) = (bound("min")?, bound("max")?);
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(invalid(
                "thread_policy.min",
                &Json::from(lo),
                &format!("at most thread_policy.max ({hi})"),
            ));
        }
    }
    Ok(ThreadPolicy {
        want,
        auto: AutoParams { min, max, combine },
    })
}

fn parse_entry(index: usize, v: &Json) -> Result<Entry, SpecError> {
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
        let k = key(attr.name());
        let want = match attr {
            Attr::GroupThreadCnt => parse_threads(&k, v)?,
            Attr::StripeCacheSize => Want::Value(Value::Int(parse_int(&k, v, 17, 32768)?)),
            // The upper bound is the array's stripe_cache_size, checked in the plan.
            Attr::PrereadBypassThreshold => {
                Want::Value(Value::Int(parse_int(&k, v, 0, u64::from(u32::MAX))?))
            }
            _ => match attr.kind() {
                Kind::Bool => Want::Value(Value::Bool(parse_bool(&k, v)?)),
                Kind::SyncSpeed if v.as_str().map(str::trim) == Some("system") => {
                    Want::Value(Value::System)
                }
                // The kernel stores sync_speed_* in an int (ERANGE beyond it).
                Kind::SyncSpeed => Want::Value(Value::Int(
                    parse_int(&k, v, 1, u64::from(i32::MAX as u32)).map_err(|_| {
                        invalid(&k, v, "an integer 1..2147483647 (KiB/s) or \"system\"")
                    })?,
                )),
                Kind::Int | Kind::CInt => unreachable!("every integer attribute is matched above"),
            },
        };
        settings.insert(attr, want);
    }
    if let (Some(Want::Value(Value::Int(min))), Some(Want::Value(Value::Int(max)))) = (
        settings.get(&Attr::SyncSpeedMin),
        settings.get(&Attr::SyncSpeedMax),
    ) {
        if min > max {
            return Err(invalid(
                &key("sync_speed_min"),
                &Json::from(*min),
                &format!("at most sync_speed_max ({max})"),
            ));
        }
    }
    Ok(Entry {
        index,
        name,
        uuid,
        settings,
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
    let s = v.as_str().map(str::trim).unwrap_or_default();
    let groups: Vec<&str> = s.split([':', '-']).collect();
    let shape: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    let ok = (shape == [8, 8, 8, 8] && !s.contains('-')
        || shape == [8, 4, 4, 4, 12] && !s.contains(':'))
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()));
    if !ok {
        return Err(invalid(
            key,
            v,
            "mdadm's form (xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx) or the kernel's (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
        ));
    }
    Ok(groups.concat().to_ascii_lowercase())
}

/// The 32 hex digits of a uuid in either form, or `None` when it is neither.
pub fn uuid_hex(text: &str) -> Option<String> {
    parse_uuid("uuid", &Json::String(text.to_string())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Json) -> Result<Spec, SpecError> {
        Spec::from_json(&v.to_string())
    }

    fn err(v: Json) -> String {
        spec(v).expect_err("should be refused").to_string()
    }

    #[test]
    fn all_keys_are_optional() {
        let s = spec(json!({})).unwrap();
        assert_eq!(s.state, State::Present);
        assert_eq!(s.thread_policy.want, Want::Auto);
        assert_eq!(s.arrays.len(), 1);
        assert!(!s.arrays[0].is_exact());
        assert!(!s.check_mode && !s.diff && !s.persist);
    }

    #[test]
    fn numbers_given_as_strings_are_numbers() {
        let s = spec(
            json!({"arrays": [{"name": "md0", "stripe_cache_size": "4096",
            "group_thread_cnt": " 8"}], "speed_limit_max": "50000"}),
        )
        .unwrap();
        let e = &s.arrays[0].settings;
        assert_eq!(e[&Attr::StripeCacheSize], Want::Value(Value::Int(4096)));
        assert_eq!(e[&Attr::GroupThreadCnt], Want::Value(Value::Int(8)));
        assert_eq!(s.speed_limits[&SpeedLimit::Max], 50000);
    }

    #[test]
    fn ansible_booleans_are_booleans() {
        let s = spec(json!({"_ansible_check_mode": "yes", "diff": "on",
            "arrays": [{"name": "md0", "skip_copy": "no", "sync_force_parallel": 1}]}))
        .unwrap();
        assert!(s.check_mode && s.diff);
        assert_eq!(
            s.arrays[0].settings[&Attr::SkipCopy],
            Want::Value(Value::Bool(false))
        );
        assert!(err(json!({"persist": "maybe"})).contains("persist"));
    }

    #[test]
    fn unknown_ansible_keys_are_ignored_and_other_unknown_keys_refused() {
        assert!(spec(json!({"_ansible_tracebacks_for": [], "_ansible_future": 1})).is_ok());
        let e = err(json!({"thread_polcy": "auto"}));
        assert!(
            e.contains("thread_polcy") && e.contains("thread_policy"),
            "{e}"
        );
        let e = err(json!({"arrays": [{"name": "md0", "stripe_cache": 512}]}));
        assert!(e.contains("arrays[0].stripe_cache"), "{e}");
        assert!(err(json!({"arrays": [{"name": "md0", "_ansible_x": 1}]})).contains("_ansible_x"));
    }

    #[test]
    fn out_of_range_values_name_key_value_and_range() {
        let e = err(json!({"arrays": [{"name": "md0", "stripe_cache_size": 16}]}));
        assert_eq!(
            e,
            "arrays[0].stripe_cache_size: 16 is not allowed; expected an integer 17..32768"
        );
        let e = err(json!({"thread_policy": 8193}));
        assert!(
            e.contains("thread_policy: 8193") && e.contains("0..8192"),
            "{e}"
        );
        let e = err(json!({"arrays": [{"name": "md0", "sync_speed_max": 0}]}));
        assert!(
            e.contains("sync_speed_max: 0") && e.contains("system"),
            "{e}"
        );
        assert!(err(json!({"speed_limit_min": -5})).contains("speed_limit_min: -5"));
        assert!(err(json!({"arrays": [{"name": "md0", "group_thread_cnt": 2.5}]})).contains("2.5"));
        assert!(err(json!({"state": "absent"})).contains("present, query, reverted"));
    }

    #[test]
    fn selectors_that_could_leave_the_root_are_refused() {
        for bad in [
            "../md0",
            "md0/../../etc",
            "/dev/md0",
            "/etc/passwd",
            "md\n0",
            "md\u{0}0",
            "",
            "/dev/md/",
            "/dev/md/a/b",
            "..",
        ] {
            let e = err(json!({"arrays": [{"name": bad}]}));
            assert!(e.starts_with("arrays[0].name:"), "{bad:?}: {e}");
        }
        assert!(matches!(
            spec(json!({"arrays": [{"name": "/dev/md/hana_data"}]})).unwrap().arrays[0].name,
            Some(NameSelector::DevMd(ref n)) if n == "hana_data"
        ));
    }

    #[test]
    fn uuids_in_both_forms_normalise_to_the_same_digits() {
        let a = uuid_hex("A1B2C3D4:E5F60718:293A4B5C:6D7E8F90").unwrap();
        let b = uuid_hex("a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90").unwrap();
        assert_eq!(a, b);
        assert!(uuid_hex("a1b2c3d4-e5f60718:293a4b5c:6d7e8f90").is_none());
        assert!(err(json!({"arrays": [{"uuid": "xyz"}]})).contains("arrays[0].uuid"));
    }

    #[test]
    fn thread_policy_object_is_checked_whole() {
        let s = spec(
            json!({"thread_policy": {"mode": "auto", "min": 2, "max": "16", "combine": "max"}}),
        )
        .unwrap();
        assert_eq!(
            s.thread_policy.auto,
            AutoParams {
                min: Some(2),
                max: Some(16),
                combine: Combine::Max
            }
        );
        let s = spec(json!({"thread_policy": {"mode": "fixed", "value": 4}})).unwrap();
        assert_eq!(s.thread_policy.want, Want::Value(Value::Int(4)));
        assert!(err(json!({"thread_policy": {"mode": "fixed"}})).contains("thread_policy.value"));
        assert!(err(json!({"thread_policy": {"min": 9, "max": 4}})).contains("thread_policy.min"));
        assert!(err(json!({"thread_policy": {"mode": "off", "value": 3}}))
            .contains("thread_policy.value"));
        assert!(err(json!({"thread_policy": {"mode": "fast"}})).contains("auto, fixed, off"));
        assert!(err(json!({"thread_policy": {"cpus": 1}})).contains("thread_policy.cpus"));
    }

    #[test]
    fn persisted_input_drops_run_only_keys() {
        let s = spec(json!({"root": "/tmp/x", "check_mode": false, "diff": true,
            "_ansible_diff": true, "persist": true, "arrays": [{"name": "md0"}]}))
        .unwrap();
        let mut keys: Vec<_> = s.persisted.keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["arrays", "persist"]);
    }

    #[test]
    fn mdtune_info_only_queries_and_refuses_state_and_persist() {
        for name in [
            "mdtune_info",
            "mdtune.mdraid.mdtune_info",
            "mdtune.mdraid.mdtune_info_aarch64",
        ] {
            let s =
                spec(json!({"_ansible_module_name": name, "arrays": [{"name": "md0"}]})).unwrap();
            assert_eq!(s.state, State::Query, "{name}");
            let e = err(json!({"_ansible_module_name": name, "state": "present"}));
            assert!(
                e.starts_with("state: \"present\"") && e.contains("mdtune_info"),
                "{e}"
            );
            let e = err(json!({"_ansible_module_name": name, "persist": false}));
            assert!(
                e.starts_with("persist: false") && e.contains("mdtune_info"),
                "{e}"
            );
        }
        for name in [
            "mdtune",
            "mdtune.mdraid.mdtune",
            "mdtune.mdraid.mdtune_x86_64",
            "my_mdtune_information",
        ] {
            let s = spec(json!({"_ansible_module_name": name, "persist": true})).unwrap();
            assert_eq!(s.state, State::Present, "{name}");
        }
        let s = spec(json!({"_ansible_module_name": "mdtune", "state": "query"})).unwrap();
        assert_eq!(s.state, State::Query);
    }

    #[test]
    fn invalid_json_is_refused() {
        assert!(matches!(Spec::from_json("{"), Err(SpecError::NotJson(_))));
        assert!(matches!(Spec::from_json("[1]"), Err(SpecError::NotJson(_))));
    }
}
