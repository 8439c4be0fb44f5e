//! Input parsing and validation on arbitrary text, through `Spec::from_json`, the entry the
//! binary (and `--udev`, for the persisted state) parses text with: it never panics, and whatever
//! it accepts satisfies the contract's ranges and can be persisted and parsed again. An object
//! that repeats a key is refused naming it, exactly when an independent serde visitor finds one
//! (also with a key repeated on purpose), and text over 1 MiB (padded past it) is refused as too
//! large.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdtune::spec::{Spec, SpecError, MAX_INPUT};

fn check(text: &str) -> Result<Spec, SpecError> {
    let result = Spec::from_json(text);
    match &result {
        Ok(spec) => mdtune_fuzz::check_spec(spec),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if text.len() > MAX_INPUT {
        assert!(matches!(result, Err(SpecError::TooLarge)), "{result:?}");
    } else if let Some(repeats) = mdtune_fuzz::repeats_a_key(text) {
        let refused = matches!(result, Err(SpecError::Duplicate { .. }));
        assert_eq!(
            repeats, refused,
            "repeated key: {repeats}, refused: {result:?}"
        );
    }
    result
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = check(&text);
    // An object that repeats no key, with its first key repeated in front: refused, naming it.
    let no_repeat = mdtune_fuzz::repeats_a_key(&text) == Some(false);
    if let (true, Ok(serde_json::Value::Object(map))) = (no_repeat, serde_json::from_str(&text)) {
        if let Some(key) = map.keys().next() {
            let body = text.trim_start().strip_prefix('{').unwrap_or_default();
            let twice = format!("{{{}: null, {body}", serde_json::to_string(key).unwrap());
            match check(&twice) {
                Err(SpecError::Duplicate { key: named }) => assert_eq!(&named, key),
                Err(SpecError::TooLarge) if twice.len() > MAX_INPUT => {}
                other => panic!("{twice:?} repeats {key:?} but gave {other:?}"),
            }
        }
    }
    // Now and then (a megabyte per run is slow): padded past the limit, refused as too large
    // before anything is parsed (exactly at the limit is tests/integration/input_limits.rs's).
    if data.starts_with(b"  ") && text.len() <= MAX_INPUT {
        let padded = text.to_string() + &" ".repeat(MAX_INPUT + 1 - text.len());
        assert!(matches!(check(&padded), Err(SpecError::TooLarge)));
    }
});
