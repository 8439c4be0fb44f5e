//! The input text before it is parsed into a `Spec` (docs/reference.md §2): at most
//! [`MAX_INPUT`] bytes, and no object that repeats a key. serde_json keeps the last of two equal
//! keys silently, so `{"root": "/a", "root": "/"}` would run on `/`; [`repeated_key`] finds the
//! first repeat, at any depth, in one pass over text that is already known to be valid JSON.

use std::collections::HashSet;

/// The most input mdtune reads (1 MiB): real inputs are a few hundred bytes, and serde_json's
/// `Value` costs about 60 times its text in memory.
pub const MAX_INPUT: usize = 1024 * 1024;

/// One open object or array while scanning, with its place for messages.
enum Frame {
    Object {
        at: String,
        keys: HashSet<String>,
        /// The key whose value comes next, or `None` while a key is expected.
        key: Option<String>,
    },
    Array {
        at: String,
        index: usize,
    },
}

impl Frame {
    /// Where a value directly inside this frame is: `arrays[0]`, `thread_policy.max`.
    fn child(&self) -> String {
        match self {
            Frame::Object { at, key, .. } => {
                let key = key.as_deref().unwrap_or("");
                if at.is_empty() {
                    key.to_string()
                } else {
                    format!("{at}.{key}")
                }
            }
            Frame::Array { at, index } => format!("{at}[{index}]"),
        }
    }
}

/// The place of the first key that an object of `text` repeats (`arrays[0].stripe_cache_size`),
/// or `None`. `text` must be valid JSON (serde_json accepted it): the scan only tracks strings,
/// brackets, colons and commas. Keys are compared as JSON strings, escapes decoded.
pub fn repeated_key(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => {
                let at = stack.last().map(Frame::child).unwrap_or_default();
                stack.push(if bytes[i] == b'{' {
                    Frame::Object {
                        at,
                        keys: HashSet::new(),
                        key: None,
                    }
                } else {
                    Frame::Array { at, index: 0 }
                });
            }
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { key, .. }) => *key = None,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object { keys, key, .. }) = stack.last_mut() {
                    if key.is_none() {
                        let raw = &text[start..=i];
                        let name = if raw.contains('\\') {
                            serde_json::from_str::<String>(raw).unwrap_or_default()
                        } else {
                            raw[1..raw.len() - 1].to_string()
                        };
                        if !keys.insert(name.clone()) {
                            *key = Some(name);
                            return stack.last().map(Frame::child);
                        }
                        *key = Some(name);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_found_at_any_depth_and_named_by_its_place() {
        assert_eq!(
            repeated_key(r#"{"root": "/a", "root": "/"}"#).as_deref(),
            Some("root")
        );
        assert_eq!(
            repeated_key(r#"{"arrays": [{"name": "md0"}, {"name": "md1", "name": "md2"}]}"#)
                .as_deref(),
            Some("arrays[1].name")
        );
        assert_eq!(
            repeated_key(r#"{"thread_policy": {"max": 2, "max": 16}}"#).as_deref(),
            Some("thread_policy.max")
        );
        // Escapes are decoded: \u006f is "o".
        assert_eq!(
            repeated_key(r#"{"root": 1, "r\u006fot": 2}"#).as_deref(),
            Some("root")
        );
        assert_eq!(
            repeated_key(r#"{"a": [[{"b": 1}], {"b": 2}], "c": {"b": 3}}"#),
            None,
            "equal keys in different objects are not repeats"
        );
        assert_eq!(
            repeated_key(r#"{"a": "x\"y", "b": "}", "c": ["{", ","]}"#),
            None
        );
        assert_eq!(repeated_key(r#"[1, "a", {"a": {"a": 1}}]"#), None);
    }
}
