//! Generators shared by the fuzz targets: module inputs shaped like the real ones (known keys,
//! values at every boundary the contract names, hostile selectors; `input`) and inventories of
//! arbitrary arrays, members and kernel values (`host`), all driven by the fuzzer's bytes
//! through `arbitrary`; and the checks every accepted input must pass (`checks`).
//!
//! The shapes are biased, not restricted: every generator also emits arbitrary strings, numbers
//! and nesting, so what the library must refuse is exercised as much as what it must accept.

#![forbid(unsafe_code)]

mod checks;
mod host;
mod input;

pub use checks::{check_spec, repeats_a_key};
pub use host::inventory;
pub use input::input;
