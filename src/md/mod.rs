//! The md vocabulary, pure: the one table of tunables (`table`: a row per attribute and system
//! limit, with its range, default, first kernel, unit and kernel references), the names of its
//! rows (`attr`), the values the kernel prints and accepts for them, the sync controls (`sync`),
//! the kernel facts that decisions rest on (`kernel`), and the values the kernel starts with
//! (`defaults`). No I/O and no decisions: every step above names md things with these types.

mod attr;
mod cpus;
mod defaults;
pub(crate) mod kernel;
pub(crate) mod sync;
mod table;
mod uuid;
mod values;

pub use attr::{Attr, SpeedLimit};
pub use cpus::CpuSet;
pub use defaults::default_of;
pub(crate) use kernel::kernel_text;
pub use sync::SyncRun;
pub use table::{tunables, Family, Place, Tunable, Units};
pub(crate) use table::{ATTR_ROWS, LIMIT_ROWS};
pub(crate) use uuid::{uuid_hex, uuid_like};
pub use values::{parse_progress, parse_value, Kind, Value};
