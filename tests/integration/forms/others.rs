//! The forms besides Ansible's: the SUSE Manager form and pillar example, the Salt modules, the
//! man page and the reference's tables, each read as the text it is.

use super::outline::{children, outline};
use super::{is_tunable, keys, name, range, read, Problems};
use serde_json::Value;

/// The keys of `input` the SUSE Manager form offers: the desired state and `persist` (`state`,
/// `root`, `check_mode` and `diff` are the formula's business, and `arrays` is an edit-group).
fn suma_top(s: &Value) -> Vec<String> {
    keys(s, "input")
        .iter()
        .filter(|k| k["role"] == "desired state" || ["persist", "reason"].contains(&name(k)))
        .map(|k| name(k).to_string())
        .collect()
}

/// `form.yml`: every key (a `measure` group holds `seconds` and `revert_if_slower`), a number field's `$min`/`$max` or a text field's help giving the
/// range, a select for a boolean.
pub(super) fn suma_form(s: &Value) -> Problems {
    let mut p = Problems::new("module_utils/suma/metadata/mdtune/form.yml");
    let o = outline(&read(p.file));
    let own = ["thread_auto", "install", "metrics", "deploy"];
    let top: Vec<&str> = children(&o, "mdtune")
        .into_iter()
        .filter(|k| !k.starts_with('$') && !own.contains(k))
        .collect();
    // The form runs its state with `measure` too (a group: seconds, revert_if_slower).
    let mut want = suma_top(s);
    want.push("measure".into());
    p.same_keys(
        "mdtune",
        &top,
        &want.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let proto = "mdtune/arrays/$prototype";
    let fields: Vec<&str> = children(&o, proto)
        .into_iter()
        .filter(|k| !k.starts_with('$'))
        .collect();
    let entry = keys(s, "array_entry");
    let want: Vec<&str> = entry.iter().map(name).filter(|k| *k != "name").collect();
    p.same_keys(proto, &fields, &want);
    let fields = entry.iter().map(|k| (format!("{proto}/{}", name(k)), k));
    let top = keys(s, "input");
    let top = top.iter().map(|k| (format!("mdtune/{}", name(k)), k));
    for (at, k) in fields.chain(top).filter(|(_, k)| is_tunable(k)) {
        let get = |f: &str| o.get(&format!("{at}/{f}")).cloned().unwrap_or_default();
        match get("$type").as_str() {
            "number" => {
                let have = format!("{}..{}", get("$min"), get("$max"));
                if Some(&have) != range(k).as_ref() {
                    p.say(
                        name(k),
                        format_args!("$min..$max is {have}, not {}", range(k).unwrap_or_default()),
                    );
                }
            }
            "select" if k["type"] == "boolean" => {}
            "text" => p.states_range(k, &get("$help")),
            // Missing: said above.
            "" => {}
            other => p.say(
                name(k),
                format_args!("$type {other:?} does not fit {}", k["type"]),
            ),
        }
    }
    p
}

/// `pillar.example`: every array has every field the form writes, the top every key.
pub(super) fn pillar_example(s: &Value) -> Problems {
    let mut p = Problems::new("module_utils/suma/metadata/mdtune/pillar.example");
    let o = outline(&read(p.file));
    let entry = keys(s, "array_entry");
    let want: Vec<&str> = entry.iter().map(name).filter(|k| *k != "name").collect();
    for array in children(&o, "mdtune/arrays") {
        let at = format!("mdtune/arrays/{array}");
        p.same_keys(&at, &children(&o, &at), &want);
    }
    let top = suma_top(s);
    let have = children(&o, "mdtune");
    for k in top.iter().filter(|k| !have.contains(&k.as_str())) {
        p.say(k, "missing under mdtune");
    }
    p
}

/// The parameters of `def NAME(` in Python source, up to its `):`.
fn parameters<'a>(source: &'a str, function: &str) -> Vec<&'a str> {
    let Some(start) = source.find(&format!("\ndef {function}(")) else {
        return Vec::new();
    };
    let rest = &source[start..];
    let end = rest.find("):").unwrap_or(rest.len());
    rest[..end]
        .split(['(', ',', '\n'])
        .filter_map(|p| p.trim().split('=').next())
        .map(str::trim)
        .filter(|p| !p.is_empty() && !p.starts_with("def ") && !p.starts_with('*'))
        .collect()
}

/// The Salt modules: the execution module's `DESIRED_KEYS` (the one list of the tuning
/// arguments) is the schema's desired state and `persist`; every function that takes them
/// names each, and the docstrings name every attribute.
pub(super) fn salt(s: &Value) -> Problems {
    let mut p = Problems::new("module_utils/salt/_modules/mdtune.py");
    let module = read(p.file);
    let list = module
        .split_once("\nDESIRED_KEYS = (")
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(l, _)| l)
        .unwrap_or_default();
    let listed: Vec<&str> = list
        .split(',')
        .map(|k| k.trim().trim_matches('"'))
        .filter(|k| !k.is_empty())
        .collect();
    let want = suma_top(s);
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    p.same_keys("DESIRED_KEYS", &listed, &want);
    let attrs: Vec<Value> = keys(s, "array_entry")
        .into_iter()
        .filter(is_tunable)
        .collect();
    for (file, function) in [
        ("module_utils/salt/_modules/mdtune.py", "apply"),
        ("module_utils/salt/_modules/mdtune.py", "query"),
        ("module_utils/salt/_wrapper/mdtune.py", "apply"),
        ("module_utils/salt/_wrapper/mdtune.py", "query"),
        ("module_utils/salt/_states/mdtune.py", "managed"),
    ] {
        let source = read(file);
        let params = parameters(&source, function);
        for k in want.iter().filter(|k| !params.contains(k)) {
            p.list
                .push(format!("{file}: {k}: not a parameter of {function}()"));
        }
        if function != "query" && !file.contains("_wrapper") {
            for a in attrs.iter().map(name) {
                if !source.contains(&format!("``{a}``")) {
                    p.list.push(format!(
                        "{file}: {a}: missing from {function}()'s docstring"
                    ));
                }
            }
        }
    }
    p
}

/// The text of the man page's section `# TITLE`, up to the next section.
fn section<'a>(text: &'a str, title: &str) -> &'a str {
    let Some(start) = text.find(&format!("\n# {title}\n")) else {
        return "";
    };
    let rest = &text[start + 1..];
    let end = rest.find("\n# ").unwrap_or(rest.len());
    &rest[..end]
}

/// The definition of `**KEY**` in a man page section (its `:` paragraph).
fn definition<'a>(section: &'a str, key: &str) -> Option<&'a str> {
    let start = section.find(&format!("\n**{key}**\n"))?;
    let rest = &section[start + key.len() + 6..];
    Some(&rest[..rest.find("\n\n").unwrap_or(rest.len())])
}

/// The man page: `# INPUT KEYS` and `# ARRAY ENTRY KEYS` define every key, with its range.
pub(super) fn man_page(s: &Value) -> Problems {
    let mut p = Problems::new("packaging/mdtune.8.md");
    let text = read(p.file);
    for (title, part) in [("INPUT KEYS", "input"), ("ARRAY ENTRY KEYS", "array_entry")] {
        let sec = section(&text, title);
        for k in keys(s, part) {
            match definition(sec, name(&k)) {
                Some(d) => p.states_range(&k, &d.replace('\n', " ")),
                None => p.say(name(&k), format_args!("not defined under # {title}")),
            }
        }
    }
    p
}

/// The rows of the markdown table that follows `heading` in `text`: each row's keys (the
/// backquoted words of its first cell) and the rest of the row.
fn table_rows<'a>(text: &'a str, heading: &str) -> Vec<(Vec<&'a str>, &'a str)> {
    let start = text.find(heading).unwrap_or(text.len());
    let rows = text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2);
    rows.filter_map(|row| {
        let (first, rest) = row[1..].split_once('|')?;
        let keys = first.split('`').skip(1).step_by(2).collect();
        Some((keys, rest))
    })
    .collect()
}

/// docs/reference.md §2: the input table and the array entry table have a row for every key,
/// with its range, and booleans say so.
pub(super) fn reference(s: &Value) -> Problems {
    let mut p = Problems::new("docs/reference.md");
    let text = read(p.file);
    for (heading, part) in [("## §2 Input", "input"), ("### Array entry", "array_entry")] {
        let rows = table_rows(&text, heading);
        for k in keys(s, part) {
            let Some((_, row)) = rows.iter().find(|(keys, _)| keys.contains(&name(&k))) else {
                p.say(
                    name(&k),
                    format_args!("no row in the table under {heading}"),
                );
                continue;
            };
            p.states_range(&k, row);
            if k["type"] == "boolean" && !row.contains("boolean") {
                p.say(
                    name(&k),
                    format_args!("a boolean, but its row says {row:?}"),
                );
            }
        }
        let listed: Vec<&str> = rows.iter().flat_map(|(k, _)| k.iter().copied()).collect();
        let want: Vec<Value> = keys(s, part);
        for k in listed
            .iter()
            .filter(|l| !want.iter().any(|w| name(w) == **l))
        {
            p.say(
                k,
                format_args!("a row under {heading}, but mdtune --schema has no such key"),
            );
        }
    }
    p
}
