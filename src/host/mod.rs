//! The live host, read only (docs/reference.md §5): every md array under the root with its
//! level, state, members, the tunable values in force and the sync progress, and the system
//! facts `auto` needs. [`inventory`](read) reads the arrays; `topology` follows each member down
//! the block stack to the devices whose hardware queues count; `device` walks those devices'
//! directories cheaply and confined to `sys/`. It never decides what should change.

mod device;
#[cfg(test)]
pub(crate) mod fixtures;
mod inventory;
mod topology;

pub use inventory::{read, Array, External, Inventory, InventoryError, Scope, Sync};
pub use topology::{Leaf, Member, Role};
