//! The desired state: the module's JSON input, validated into a [`Spec`] before anything on the
//! host is read or written.
//!
//! Values arrive as a playbook or a Salt pillar produced them: `8` and `"8"` are the integer 8,
//! `yes`/`true`/`on` are booleans, and `null` means "not given". Keys starting with `_ansible_`
//! are accepted and ignored unless named here. Anything else that is unknown, mistyped or out of
//! range is a [`SpecError`] naming the key, the value and what is allowed. Checks that need the
//! live host (a name that matches nothing, a setting the array's level lacks) belong to the plan.

use crate::md::SpeedLimit;
use glob::Pattern;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::entry::parse_entry;
pub(crate) use super::entry::{Entry, NameSelector};
use super::keys::{run_only, TOP_KEYS};
use super::policy::parse_policy;
pub(crate) use super::policy::{AutoParams, ThreadPolicy};
use super::raw::{repeated_key, MAX_INPUT};
use super::reason::parse_reason;
use super::values::{check_keys, invalid};
pub(crate) use super::values::{parse_bool, parse_int, SpecError, Want};

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

/// The validated input.
#[derive(Clone, Debug)]
pub struct Spec {
    pub arrays: Vec<Entry>,
    pub thread_policy: ThreadPolicy,
    pub speed_limits: BTreeMap<SpeedLimit, u64>,
    pub state: State,
    /// docs/reference.md §2, §6: `Some(true)` persists, `Some(false)` removes what `persist`
    /// installed, `None` leaves persistence as it is (and reports what diverges from it).
    pub(crate) persist: Option<bool>,
    pub(crate) root: PathBuf,
    pub check_mode: bool,
    pub(crate) diff: bool,
    /// The input object without `check_mode`, `diff`, `root` and `_ansible_*`: what `persist`
    /// saves.
    pub persisted: Map<String, Json>,
    /// Set by `--udev NAME`, never by input: only this array is read and tuned.
    pub only: Option<String>,
    /// `measure: N` (docs/reference.md §2): seconds sampled before and after the writes of
    /// each array this run changes (`crate::measure`); `None` when not asked for.
    pub measure: Option<u64>,
    /// `revert_if_slower` (needs `measure`): the run's writes go back when the verdict is
    /// `slower`.
    pub revert_if_slower: bool,
    /// Why these values (`reason`, docs/reference.md §2): covers what no entry's own reason
    /// covers.
    pub reason: Option<String>,
    /// Set by the run, never by input: who runs it (`crate::trail::Caller::describe`), which
    /// the manifest records when `persist` writes the state.
    pub(crate) by: Option<String>,
}

/// Keys the read-only `mdtune_info` module refuses: it always runs `state: query` (its
/// `persist` only says which persisted files the query compares).
const INFO_REFUSED_KEYS: &[&str] = &["state"];

/// True if and only if Ansible runs this binary as the `mdtune_info` module (`mdtune_info`,
/// `mdtune.mdraid.mdtune_info`, or a per-architecture `mdtune_info_<arch>`), which only reports.
fn is_info_module(map: &Map<String, Json>) -> bool {
    let name = map.get("_ansible_module_name").and_then(Json::as_str);
    let short = name.map_or("", |n| n.rsplit('.').next().unwrap_or(n));
    short == "mdtune_info" || short.starts_with("mdtune_info_")
}

impl Spec {
    /// True if and only if a run of this spec writes: neither `query` nor check mode.
    pub(crate) fn writes(&self) -> bool {
        self.state != State::Query && !self.check_mode
    }

    /// Parses and validates the module's input text.
    ///
    /// Text over [`MAX_INPUT`] is refused before it is parsed, and an object that repeats a
    /// key, at any depth, once it is (docs/reference.md §2).
    pub fn from_json(text: &str) -> Result<Spec, SpecError> {
        if text.len() > MAX_INPUT {
            return Err(SpecError::TooLarge);
        }
        let json: Json =
            serde_json::from_str(text).map_err(|e| SpecError::NotJson(e.to_string()))?;
        if let Some(key) = repeated_key(text) {
            return Err(SpecError::Duplicate { key });
        }
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
                "no state: mdtune_info only reports (state: query); \
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
                uuid_given: None,
                settings: BTreeMap::new(),
                boost: None,
                reason: None,
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
        let speed_limits = parse_limits(&map)?;
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
        let (measure, revert_if_slower) = parse_measure(&map, state)?;
        let persisted = map
            .iter()
            .filter(|(k, _)| !k.starts_with("_ansible_") && !run_only(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Spec {
            arrays,
            thread_policy,
            speed_limits,
            state,
            persist: get("persist")
                .map(|v| parse_bool("persist", v))
                .transpose()?,
            root,
            check_mode: flag("check_mode")? || flag("_ansible_check_mode")?,
            diff: flag("diff")? || flag("_ansible_diff")?,
            persisted,
            only: None,
            measure,
            revert_if_slower,
            reason: get("reason")
                .map(|v| parse_reason("reason", v))
                .transpose()?
                .flatten(),
            by: None,
        })
    }
}

/// `measure` (an integer 1..600, seconds, on `state: present` only) and `revert_if_slower`
/// (needs `measure`; not with `persist: true`, whose files would keep the value a revert took
/// back).
fn parse_measure(map: &Map<String, Json>, state: State) -> Result<(Option<u64>, bool), SpecError> {
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let measure = match get("measure") {
        None => None,
        Some(v) => {
            let n = parse_int("measure", v, 1, MEASURE_MAX)
                .map_err(|_| invalid("measure", v, "an integer 1..600 (seconds)"))?;
            if state != State::Present {
                return Err(invalid(
                    "measure",
                    v,
                    &format!(
                        "no measure with state: {}: only a state: present run writes values \
                         whose effect can be measured",
                        state.name()
                    ),
                ));
            }
            Some(n)
        }
    };
    let revert = match get("revert_if_slower") {
        None => false,
        Some(v) => parse_bool("revert_if_slower", v)?,
    };
    if revert && measure.is_none() {
        let v = get("revert_if_slower").cloned().unwrap_or(Json::Bool(true));
        return Err(invalid(
            "revert_if_slower",
            &v,
            "revert_if_slower only with measure: N (the verdict it acts on)",
        ));
    }
    if revert && get("persist").is_some_and(|v| parse_bool("persist", v) == Ok(true)) {
        return Err(invalid(
            "revert_if_slower",
            &Json::Bool(true),
            "revert_if_slower without persist: true (the persisted files would keep the value \
             a revert takes back); persist in a later run, once the verdict is known",
        ));
    }
    Ok((measure, revert))
}

/// The longest `measure` window, in seconds (each side).
pub const MEASURE_MAX: u64 = 600;

/// The system-wide sync limits of the input (`speed_limit_min`, `speed_limit_max`,
/// `sync_io_depth`), each in its range, min at most max.
fn parse_limits(map: &Map<String, Json>) -> Result<BTreeMap<SpeedLimit, u64>, SpecError> {
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let mut speed_limits = BTreeMap::new();
    for limit in SpeedLimit::ALL {
        if let Some(v) = get(limit.name()) {
            let row = limit.row();
            let n = parse_int(row.name, v, row.min, row.max)
                .map_err(|_| invalid(row.name, v, &row.expected()))?;
            speed_limits.insert(limit, n);
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
    Ok(speed_limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::uuid_hex;
    use crate::md::{Attr, Value};
    use crate::spec::Combine;
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
        assert!(!s.check_mode && !s.diff && s.persist.is_none());
        let three: Vec<_> = [
            json!({"persist": true}),
            json!({"persist": "no"}),
            json!({"persist": null}),
        ]
        .into_iter()
        .map(|v| spec(v).unwrap().persist)
        .collect();
        assert_eq!(three, [Some(true), Some(false), None]);
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
    fn yaml_false_means_off_for_the_policy_its_mode_and_an_entry() {
        let off = Want::Value(Value::Int(0));
        let s = spec(json!({"thread_policy": false})).unwrap();
        assert_eq!(s.thread_policy.want, off);
        let s = spec(json!({"thread_policy": {"mode": false}})).unwrap();
        assert_eq!(s.thread_policy.want, off);
        let s = spec(json!({"arrays": [{"name": "md0", "group_thread_cnt": false}]})).unwrap();
        assert_eq!(s.arrays[0].settings[&Attr::GroupThreadCnt], off);
        assert!(err(json!({"thread_policy": true})).contains("(or false)"));
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
    fn mdtune_info_only_queries_refuses_state_and_compares_persist() {
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
            // A sweep checks that the tuning survives the next boot: still a query.
            for persist in [true, false] {
                let s = spec(json!({"_ansible_module_name": name, "persist": persist})).unwrap();
                assert_eq!(
                    (s.state, s.persist),
                    (State::Query, Some(persist)),
                    "{name}"
                );
            }
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
