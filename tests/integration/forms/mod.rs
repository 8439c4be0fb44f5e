//! Every form of the interface is checked against `mdtune --schema` (docs/reference.md §1): the
//! Ansible documentation (options and RETURN of `mdtune.yml`, the description of
//! `mdtune_info.yml`), the SUSE Manager form and its pillar example, the Salt modules' key list
//! and signatures, the man page's input keys and the reference's tables. A key missing from a
//! form, one the schema lacks, or a different range fails with the file and the key; every
//! problem of a run is listed at once.

mod outline;

use crate::common::run_args;
use outline::{children, outline, Outline};
use serde_json::Value;
use std::fs;

/// The repository's file at `path`.
fn read(path: &str) -> String {
    let full = concat!(env!("CARGO_MANIFEST_DIR"), "/").to_string() + path;
    fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// `mdtune --schema`, parsed.
fn schema() -> Value {
    let out = run_args(&["--schema"], "", &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    serde_json::from_str(&out.stdout).expect("--schema prints JSON")
}

/// The keys of one part of the schema (`input`, `array_entry`, `thread_policy`).
fn keys(schema: &Value, part: &str) -> Vec<Value> {
    schema[part].as_array().expect(part).clone()
}

fn name(k: &Value) -> &str {
    k["key"].as_str().unwrap_or_default()
}

/// A tunable's range as the forms write it (`17..32768`), `None` for a boolean or a key that
/// is not a tunable.
fn range(k: &Value) -> Option<String> {
    Some(format!("{}..{}", k["min"].as_u64()?, k["max"].as_u64()?))
}

fn is_tunable(k: &Value) -> bool {
    k.get("kernel").is_some()
}

/// The problems of one file, each naming the file and the key.
struct Problems {
    file: &'static str,
    list: Vec<String>,
}

impl Problems {
    fn new(file: &'static str) -> Problems {
        Problems {
            file,
            list: Vec::new(),
        }
    }

    fn say(&mut self, key: &str, what: impl std::fmt::Display) {
        self.list.push(format!("{}: {key}: {what}", self.file));
    }

    /// `have` has exactly the keys `want` (in any order).
    fn same_keys(&mut self, at: &str, have: &[&str], want: &[&str]) {
        for k in want.iter().filter(|k| !have.contains(k)) {
            self.say(k, format_args!("missing under {at}"));
        }
        for k in have.iter().filter(|k| !want.contains(k)) {
            self.say(
                k,
                format_args!("under {at}, but mdtune --schema has no such key"),
            );
        }
    }

    /// `text` (what the form says of `key`) gives the key's range.
    fn states_range(&mut self, key: &Value, text: &str) {
        if let Some(r) = range(key) {
            if !text.contains(&r) {
                self.say(
                    name(key),
                    format_args!("does not give the range {r}: {text:?}"),
                );
            }
        }
    }
}

/// Fails with every problem of every file.
fn verdict(all: Vec<Problems>) {
    let lines: Vec<String> = all.into_iter().flat_map(|p| p.list).collect();
    assert!(
        lines.is_empty(),
        "the forms differ from mdtune --schema:\n{}",
        lines.join("\n")
    );
}

/// The Ansible type an option of this key must have.
fn ansible_type(k: &Value) -> Option<&'static str> {
    if !is_tunable(k) {
        return None;
    }
    let words = k["words"].as_array().is_some_and(|w| !w.is_empty());
    Some(match (k["type"].as_str(), words) {
        (Some("boolean"), _) => "bool",
        (_, true) => "raw",
        _ => "int",
    })
}

/// The options (and suboptions) of `mdtune.yml` and the RETURN values that list the tunables.
fn ansible(s: &Value) -> Problems {
    let mut p = Problems::new("module_utils/ansible/mdtune.yml");
    let o = outline(&read(p.file));
    let parts = [
        ("DOCUMENTATION/options", "input"),
        ("DOCUMENTATION/options/arrays/suboptions", "array_entry"),
        (
            "DOCUMENTATION/options/thread_policy/suboptions",
            "thread_policy",
        ),
    ];
    for (at, part) in parts {
        let want = keys(s, part);
        let names: Vec<&str> = want.iter().map(name).collect();
        p.same_keys(at, &children(&o, at), &names);
        for k in &want {
            let opt = format!("{at}/{}", name(k));
            let text = o.get(&format!("{opt}/description")).cloned();
            p.states_range(k, &text.unwrap_or_default());
            let ty = o.get(&format!("{opt}/type")).map(String::as_str);
            if let (Some(want), Some(have)) = (ansible_type(k), ty) {
                if want != have {
                    p.say(
                        name(k),
                        format_args!("type: {have}, the schema's is {want}"),
                    );
                }
            }
            for c in k["choices"].as_array().into_iter().flatten() {
                let choices = o.get(&format!("{opt}/choices")).cloned();
                if !choices
                    .unwrap_or_default()
                    .contains(c.as_str().unwrap_or("?"))
                {
                    p.say(name(k), format_args!("choices lack {c}"));
                }
            }
        }
    }
    returns(s, &o, &mut p);
    p
}

/// RETURN's `arrays[].settings` names every attribute, `system` every system limit.
fn returns(s: &Value, o: &Outline, p: &mut Problems) {
    let settings = o
        .get("RETURN/arrays/contains/settings/description")
        .cloned()
        .unwrap_or_default();
    for k in keys(s, "array_entry").iter().filter(|k| is_tunable(k)) {
        if !settings.contains(&format!("C({})", name(k))) {
            p.say(name(k), "missing from RETURN arrays[].settings");
        }
    }
    let system = o.get("RETURN/system/description").cloned();
    for k in keys(s, "input").iter().filter(|k| is_tunable(k)) {
        if !system
            .as_deref()
            .unwrap_or("")
            .contains(&format!("O({})", name(k)))
        {
            p.say(name(k), "missing from RETURN system");
        }
    }
}

/// `mdtune_info.yml`'s description lists every tunable it reads.
fn ansible_info(s: &Value) -> Problems {
    let mut p = Problems::new("module_utils/ansible/mdtune_info.yml");
    let o = outline(&read(p.file));
    let text = o.get("description").cloned().unwrap_or_default();
    for part in ["array_entry", "input"] {
        for k in keys(s, part).iter().filter(|k| is_tunable(k)) {
            if !text.contains(&format!("C({})", name(k))) {
                p.say(name(k), "missing from the description");
            }
        }
    }
    p
}

mod others;

#[test]
fn every_form_has_every_key_of_the_schema_with_its_range() {
    let s = schema();
    verdict(vec![
        ansible(&s),
        ansible_info(&s),
        others::suma_form(&s),
        others::pillar_example(&s),
        others::salt(&s),
        others::man_page(&s),
        others::reference(&s),
    ]);
}

mod tunables;
