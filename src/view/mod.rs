//! Text for people (docs/reference.md §1): `mdtune --show`, a read-only view of the host, and
//! `mdtune --text`, a run's report. Both are rendered from JSON the run already made (the report,
//! and for `--show` the host facts beside it), so the text says nothing the JSON does not. Pure:
//! strings in, a string out. Not for machines: the JSON stays the interface.

mod cells;
mod show;
mod text;

pub use show::host;
pub use text::report;
