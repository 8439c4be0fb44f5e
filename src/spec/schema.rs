//! `mdtune --schema`: the input keys as JSON, for the forms' tests and for people who write a
//! form of their own. Generated from the lists of [`super::keys`] and the tunables' table
//! (`crate::md::tunables`), so it cannot drift from what validation takes; nothing here decides
//! what is valid.
//!
//! The shape (docs/reference.md §1): `{"schema": 1, "input": [KEY...], "array_entry": [KEY...],
//! "thread_policy": [KEY...]}`, each KEY an object with `key`, `type`, `default` (null: not
//! given, the setting is left alone or unset) and `description`; a tunable adds `min`, `max`,
//! `words` (what it takes besides a number), `unit`, `kernel_default`, `since` (the first Linux
//! with the file, null: every supported one), `pauses_sync` (a write that suspends the array,
//! for which a running sync is paused), `kernel` (the kernel functions its facts come from),
//! and for an array's `family` and `levels`.

use super::keys::{self, Key, Role, POLICY, SELECTORS};
use crate::md::{self, Kind, Place, Tunable};
use serde_json::{json, Value as Json};

/// The version of the schema's shape: raised when a field changes meaning or goes.
const SHAPE: u64 = 1;

/// The whole schema.
pub fn schema() -> Json {
    let limit = |name: &str| {
        md::tunables()
            .find(|t| t.name == name && t.place == Place::System)
            .map(tunable)
    };
    let mut top: Vec<Json> = Vec::new();
    for name in keys::TOP_KEYS {
        match keys::own_keys().find(|k| k.name == *name) {
            Some(k) => top.push(key(k)),
            None => top.extend(limit(name)),
        }
    }
    let mut entry: Vec<Json> = SELECTORS.iter().map(key).collect();
    entry.extend(
        md::tunables()
            .filter(|t| t.place != Place::System)
            .map(tunable),
    );
    entry.extend(keys::ENTRY_EXTRAS.iter().map(key));
    json!({
        "schema": SHAPE,
        "input": top,
        "array_entry": entry,
        "thread_policy": POLICY.iter().map(key).collect::<Vec<_>>(),
    })
}

/// A key of the spec's own.
fn key(k: &Key) -> Json {
    let default = k.default.map_or(Json::Null, |d| {
        serde_json::from_str(d).unwrap_or(Json::Null)
    });
    let mut o = json!({
        "key": k.name,
        "type": k.takes,
        "default": default,
        "role": role(k.role),
        "description": k.doc,
    });
    if !k.choices.is_empty() {
        o["choices"] = json!(k.choices);
    }
    o
}

/// A tunable's row.
fn tunable(t: &Tunable) -> Json {
    let kind = if t.kind == Kind::Bool {
        "boolean"
    } else {
        "integer"
    };
    let mut o = json!({
        "key": t.name,
        "type": kind,
        "default": null,
        "role": role(Role::Desired),
        "description": t.doc,
        "words": t.words,
        "unit": t.unit,
        "kernel_default": t.default,
        "since": t.since,
        "pauses_sync": t.suspends,
        "kernel": t.kernel,
    });
    if t.kind != Kind::Bool {
        o["min"] = t.min.into();
        o["max"] = t.max.into();
    }
    match t.place {
        Place::Array(f) => {
            o["family"] = f.name().into();
            o["levels"] = f.levels().into();
        }
        Place::System => o["file"] = format!("/proc/sys/dev/raid/{}", t.name).into(),
    }
    o
}

fn role(r: Role) -> &'static str {
    match r {
        Role::Desired => "desired state",
        Role::Run => "how to run (persisted)",
        Role::RunOnly => "how to run (this run only)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_lists_every_key_validation_takes_in_its_order() {
        let s = schema();
        let names = |part: &str| -> Vec<String> {
            s[part]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k["key"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names("input"), keys::TOP_KEYS);
        assert_eq!(names("array_entry"), keys::ENTRY_KEYS);
        assert_eq!(names("thread_policy"), keys::POLICY_KEYS);
        let scs = &s["array_entry"][3];
        assert_eq!(
            (
                &scs["key"],
                &scs["min"],
                &scs["max"],
                &scs["kernel_default"]
            ),
            (
                &json!("stripe_cache_size"),
                &json!(17),
                &json!(32768),
                &json!(256)
            )
        );
        assert_eq!(s["input"][4]["max"], 16_777_215);
        assert_eq!(s["input"][4]["since"], "6.16");
        assert_eq!(s["input"][0]["default"], json!([{"name": "*"}]));
    }
}
