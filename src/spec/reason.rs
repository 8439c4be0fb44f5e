//! `reason` (docs/reference.md §2), on an array entry and at the top level: why this value, in a
//! person's words (a ticket, a vendor note). It is persisted with the state, shown by `--show`
//! and `--verify` beside the values it covers and carried in the trail's line, so it must print
//! as it is: text of at most [`MAX_REASON`] characters with no control character, direction
//! override or line separator (what `crate::view::escape::escaped` would have to write visibly). A
//! refusal names the key, the value (escaped) and what is allowed.

use super::values::SpecError;
use serde_json::Value as Json;

/// The most characters a reason may have.
pub const MAX_REASON: usize = 200;

/// What a reason may be, for the refusal.
const ALLOWED: &str = "text of at most 200 characters, printable: no control characters \
                       (newline and tab included), no direction overrides or marks";

/// Parses the reason at `key`: `None` for an empty one (after trimming), the trimmed text
/// otherwise.
pub(crate) fn parse_reason(key: &str, v: &Json) -> Result<Option<String>, SpecError> {
    let refuse = || SpecError::Invalid {
        key: key.to_string(),
        value: crate::view::escape::escaped(&v.to_string()).into_owned(),
        allowed: ALLOWED.to_string(),
    };
    let Some(text) = v.as_str() else {
        return Err(refuse());
    };
    let text = text.trim_matches(' ');
    // Printable is what the views print as it is: nothing they must escape. A backslash is
    // printable (they double it).
    let plain = text.replace('\\', "");
    let printable = crate::view::escape::escaped(&plain) == plain.as_str();
    if !printable || text.chars().count() > MAX_REASON {
        return Err(refuse());
    }
    Ok((!text.is_empty()).then(|| text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reason_is_printable_text_of_at_most_200_characters() {
        let ok = parse_reason(
            "reason",
            &json!(" CHG0042: SAP note 2382421 ünicode \\ ok "),
        )
        .unwrap();
        assert_eq!(
            ok.as_deref(),
            Some("CHG0042: SAP note 2382421 ünicode \\ ok")
        );
        assert_eq!(parse_reason("reason", &json!("")).unwrap(), None);
        let long = "x".repeat(MAX_REASON);
        assert_eq!(
            parse_reason("reason", &json!(long)).unwrap(),
            Some(long.clone())
        );
        let e = parse_reason("arrays[1].reason", &json!(long + "y")).unwrap_err();
        assert!(e.to_string().starts_with("arrays[1].reason: \"xxx"), "{e}");
        assert!(e.to_string().contains("at most 200 characters"), "{e}");
    }

    #[test]
    fn a_control_character_or_a_direction_override_is_refused_and_shown_escaped() {
        for bad in [
            "a\nb",
            "a\tb",
            "x\u{1b}[2J",
            "\u{9b}31m",
            "a\u{202e}b",
            "a\u{2028}b",
            "\u{7f}",
        ] {
            let e = parse_reason("reason", &json!(bad)).unwrap_err().to_string();
            assert!(e.starts_with("reason: \""), "{bad:?}: {e}");
            assert!(e.contains("no control characters"), "{e}");
            let value = e.split("is not allowed").next().unwrap();
            assert!(
                !value
                    .chars()
                    .any(|c| c.is_control() || c == '\u{202e}' || c == '\u{2028}'),
                "{e:?}"
            );
        }
        for bad in [json!(5), json!(["a"]), json!(true)] {
            assert!(parse_reason("reason", &bad).is_err(), "{bad}");
        }
    }
}
