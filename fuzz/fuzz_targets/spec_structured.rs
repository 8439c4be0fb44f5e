//! Input parsing and validation on structured JSON: objects with the module's keys and values at
//! every boundary (strings for numbers, Ansible booleans, hostile selectors, deep nesting), so
//! the fuzzer spends its time past the JSON syntax, in the validation rules.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use mdtune::spec::Spec;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(input) = mdtune_fuzz::input(&mut u) else {
        return;
    };
    let text = serde_json::Value::Object(input.clone()).to_string();
    let from_map = Spec::from_map(input);
    let from_text = Spec::from_json(&text);
    assert_eq!(from_map.is_ok(), from_text.is_ok(), "{text}");
    match from_map {
        Ok(spec) => mdtune_fuzz::check_spec(&spec),
        Err(e) => {
            let msg = e.to_string();
            // The message names a key the input has (top level or nested), or the whole input.
            assert!(!msg.is_empty());
        }
    }
});
