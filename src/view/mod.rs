//! Text for people (docs/reference.md §1): `mdtune --show`, a read-only view of the host,
//! `mdtune --text`, a run's report, and `mdtune --verify`, the host against what was rolled out,
//! one row per setting; and for the fleet's monitoring, `mdtune --metrics`, the host in
//! Prometheus' text format. Both are rendered from JSON the run already made (the report,
//! and for `--show` the host facts beside it), so the text says nothing the JSON does not. Pure:
//! strings in, a string out. Not for machines: the JSON stays the interface. Every string of that
//! JSON is escaped before it is rendered (`escape`): what came from the host or the input never
//! reaches a terminal as a control character or a direction override.

mod cells;
pub(crate) mod escape;
mod families;
mod health;
mod host;
mod host_head;
mod metrics;
mod oncall;
mod text;
mod verify;

pub use escape::escaped;
pub use host::host;
pub use metrics::metrics;
pub use text::report;
pub use verify::verify;
