//! Text from the host or the input made safe for a terminal. A name in `sys/block`, a `dev/md`
//! link, a value the kernel prints or a key of the input can hold any byte but NUL and `/`; printed
//! as it is, an escape sequence clears the screen or sets the window title, a carriage return
//! overwrites what came before, and a bidirectional override reverses what follows. Both views
//! are rendered from JSON, so every string of that JSON (and every key) is escaped once, before
//! rendering: no field can be forgotten, today's or a later one. JSON output needs none of this:
//! serde_json escapes control characters itself.

use serde_json::{Map, Value as Json};
use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is: C0 controls (newline and tab included: a
/// field is one line), DEL, C1 controls, the bidirectional embeddings, overrides and isolates
/// (U+202A..U+202E, U+2066..U+2069), the invisible direction marks (U+200E, U+200F, U+061C) and
/// the line and paragraph separators (U+2028, U+2029).
fn hazardous(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{200e}' | '\u{200f}' | '\u{61c}' | '\u{2028}' | '\u{2029}')
}

/// `text` with every hazardous character written visibly: `\x1b` for one of U+0000..U+00FF,
/// `\u{202e}` for the others; a backslash is doubled, so that what is shown is unambiguous.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| hazardous(c) || c == '\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if hazardous(c) && u32::from(c) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if hazardous(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `v` with every string and every key [`escaped`].
pub(super) fn safe(v: &Json) -> Json {
    match v {
        Json::String(s) => Json::String(escaped(s).into_owned()),
        Json::Array(items) => Json::Array(items.iter().map(safe).collect()),
        Json::Object(map) => Json::Object(
            map.iter()
                .map(|(k, v)| (escaped(k).into_owned(), safe(v)))
                .collect::<Map<String, Json>>(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_class_is_written_visibly_and_plain_text_is_kept() {
        for (raw, shown) in [
            ("md0", "md0"),
            ("a\u{1b}[2Jb", "a\\x1b[2Jb"),
            ("\r\n\t", "\\x0d\\x0a\\x09"),
            ("\u{7f}", "\\x7f"),
            ("\u{9b}31m", "\\x9b31m"),
            ("\u{202e}cod.exe", "\\u{202e}cod.exe"),
            ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
            ("a\\x1b", "a\\\\x1b"),
            ("hana_data ünicode", "hana_data ünicode"),
        ] {
            assert_eq!(escaped(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn every_string_and_key_of_a_value_is_escaped() {
        let v = json!({"a\u{1b}": ["x\u{7}", {"k": "\u{202d}"}], "n": 5, "b": true});
        assert_eq!(
            safe(&v),
            json!({"a\\x1b": ["x\\x07", {"k": "\\u{202d}"}], "n": 5, "b": true})
        );
    }
}
