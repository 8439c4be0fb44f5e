//! `thread_policy`: the `group_thread_cnt` of every selected raid4/5/6 array whose entry sets none,
//! as `"auto"`, `"off"`, a number, or the object with `mode`, `value`, `min`, `max` and `combine`
//! (docs/reference.md §2). How `auto` turns queues into a count is `crate::plan`'s (`auto`).

use super::keys::POLICY_KEYS;
use super::values::{check_keys, invalid, parse_int, parse_threads, SpecError, Want, MAX_THREADS};
use crate::md::Value;
use serde_json::Value as Json;

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
    pub(crate) combine: Combine,
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

/// Parses `thread_policy` in any of its forms.
pub(crate) fn parse_policy(v: &Json) -> Result<ThreadPolicy, SpecError> {
    let Json::Object(map) = v else {
        return Ok(ThreadPolicy {
            want: parse_threads("thread_policy", v).map_err(|_| {
                invalid(
                    "thread_policy",
                    v,
                    "\"auto\", \"off\" (or false), an integer 0..8192, or an object with mode/value/min/max/combine",
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
    // `mode: off` in YAML arrives as false.
    let mode = get("mode").map_or(Some("auto"), |m| match m {
        Json::Bool(false) => Some("off"),
        m => m.as_str(),
    });
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
