//! The md vocabulary, pure: the attributes mdtune may touch, the values the kernel prints and
//! accepts for them, the sync controls (`sync`), the one table of kernel facts that decisions
//! rest on (`kernel`), and the values the kernel starts with (`defaults`). No I/O and no
//! decisions: every step above names md things with these types.

mod attr;
mod cpus;
mod defaults;
pub(crate) mod kernel;
pub(crate) mod sync;
mod uuid;
mod values;

pub(crate) use attr::Family;
pub use attr::{Attr, Kind, SpeedLimit};
pub use cpus::CpuSet;
pub use defaults::default_of;
pub use sync::SyncRun;
pub(crate) use uuid::{uuid_hex, uuid_like};
pub(crate) use values::kernel_text;
pub use values::{parse_progress, parse_value, Value};
