//! A YAML outline, enough to check the forms' keys without a YAML crate: every mapping key by
//! its path (`DOCUMENTATION/options/arrays/suboptions/uuid`), with the text under it (its inline
//! value, list items and continuation lines, joined by spaces). Flow collections and anchors
//! stay text; the forms are written in plain block style, which is all this reads.

use std::collections::BTreeMap;

/// Paths, `/`-joined, to the text under them.
pub(super) type Outline = BTreeMap<String, String>;

/// The key of a mapping line (`key: value`, `"key": value`, `key:`) and its inline value.
fn key_line(body: &str) -> Option<(String, &str)> {
    let (key, rest) = if let Some(q) = body.strip_prefix('"') {
        let end = q.find('"')?;
        (q[..end].to_string(), q[end + 1..].strip_prefix(':')?)
    } else {
        let colon = body.find(':')?;
        let key = &body[..colon];
        let plain = |c: char| c.is_ascii_alphanumeric() || "_$*?.-/[]".contains(c);
        if key.is_empty() || !key.chars().all(plain) {
            return None;
        }
        (key.to_string(), &body[colon + 1..])
    };
    (rest.is_empty() || rest.starts_with(' ')).then(|| (key, rest.trim()))
}

pub(super) fn outline(text: &str) -> Outline {
    let mut out = Outline::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    // Lines indented more than this belong to the text of the current path.
    let mut text_above: Option<usize> = None;
    let path = |stack: &[(usize, String)]| {
        stack
            .iter()
            .map(|(_, k)| k.as_str())
            .collect::<Vec<_>>()
            .join("/")
    };
    let add = |out: &mut Outline, at: String, text: &str| {
        let t = out.entry(at).or_default();
        if !t.is_empty() && !text.is_empty() {
            t.push(' ');
        }
        t.push_str(text);
    };
    for line in text.lines() {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let indent = line.len() - body.len();
        if text_above.is_some_and(|t| indent > t) {
            add(&mut out, path(&stack), body);
            continue;
        }
        text_above = None;
        if body == "-" || body.starts_with("- ") {
            while stack.last().is_some_and(|(i, _)| *i > indent) {
                stack.pop();
            }
            add(&mut out, path(&stack), body[1..].trim());
            text_above = Some(indent);
        } else if let Some((key, value)) = key_line(body) {
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            stack.push((indent, key));
            add(&mut out, path(&stack), value);
            if !value.is_empty() {
                text_above = Some(indent);
            }
        } else {
            add(&mut out, path(&stack), body);
        }
    }
    out
}

/// The keys directly under `at`.
pub(super) fn children<'a>(o: &'a Outline, at: &str) -> Vec<&'a str> {
    let prefix = format!("{at}/");
    o.keys()
        .filter_map(|k| k.strip_prefix(&prefix))
        .filter(|k| !k.contains('/'))
        .collect()
}

#[test]
fn the_outline_reads_keys_lists_and_continuations() {
    let o = outline(
        "a:\n  b: one\n    two\n  c:\n    - x y\n      z\n    - w\n  \"d\": >-\n    text\n  e: 1\n",
    );
    assert_eq!(o["a/b"], "one two");
    assert_eq!(o["a/c"], "x y z w");
    assert_eq!(o["a/d"], ">- text");
    assert_eq!(children(&o, "a"), ["b", "c", "d", "e"]);
}
