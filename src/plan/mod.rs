//! The plan, pure (docs/reference.md §2, §4): for every selected array and every managed setting,
//! the value in force, the value wanted and why. [`build`](plan) turns a spec and an inventory into
//! a plan, `auto` derives `group_thread_cnt` from the members' queues, `hold` marks what must wait
//! for a reshape or for mdmon and which sync a run pauses, `boost` wants an entry's `sync_boost`
//! while the array runs one of its syncs, `order` says in which order the kernel takes an
//! array's stripe cache and threshold, and `revert` turns saved originals into a plan.
//! Nothing here touches a file: every rule is tested with inventories built by hand.

mod auto;
mod boost;
mod build;
mod hold;
mod model;
mod order;
mod revert;

pub use build::plan;
pub use model::{
    ArrayPlan, BoostPlan, Change, Diff, Hold, LimitChange, Plan, PlanError, Skip, Source,
};
pub(crate) use order::{cache_order, CacheOrder};
pub(crate) use revert::{revert, Saved};
