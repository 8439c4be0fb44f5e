//! Input parsing and validation on arbitrary text: `Spec::from_json` never panics, and whatever
//! it accepts satisfies the contract's ranges and can be persisted and parsed again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mdtune::spec::Spec;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Spec::from_json(&text) {
        Ok(spec) => mdtune_fuzz::check_spec(&spec),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
