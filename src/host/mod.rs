//! The live host, read only (docs/reference.md §5): every md array under the root with its level,
//! state, members, the tunable values in force and the sync progress, and the system facts `auto`
//! needs. [`inventory`](read) reads the arrays, each into an `array`; `topology` follows each
//! member down the block stack to the devices whose hardware queues count, and says what it found
//! as a `member`; `device` walks those devices' directories cheaply and confined to `sys/`;
//! `pauses` and `boosts` read mdtune's records of a paused sync and of a sync boost under
//! `run/mdtune/`; `health` reads what `md/` says of a redundant array's health, when asked;
//! `cpus` reads the CPUs and NUMA nodes, once per run. It never decides what should change.

mod array;
mod boosts;
mod cpus;
mod device;
#[cfg(test)]
pub(crate) mod fixtures;
mod health;
mod inventory;
mod member;
mod pauses;
mod topology;

pub use array::{Array, External, Raid10, Sync};
pub(crate) use boosts::{is_record_name as is_boost_record, path as boost_path};
pub use boosts::{records as boost_records, untyped, Record as BoostRecord};
pub use cpus::Cpus;
pub use health::Health;
pub use inventory::{read, Inventory, InventoryError, Scope};
pub use member::{Leaf, Member, Role};
pub(crate) use pauses::path as pause_path;
pub use pauses::{records as pause_records, FrozenBy, Record as PauseRecord};
