//! mdtune: idempotent tuning of Linux md RAID for configuration tools.
//!
//! A run flows one way, one module per step:
//! input JSON → [`spec`] (validated desired state) → [`inventory`] (the live host, read only) →
//! [`plan`] (pure: every setting's before, after and reason) → [`apply`] (writes, read-back,
//! rollback, lock; skipped in check mode and `query`) → [`report`] (the JSON result).
//! [`persist`] keeps the desired state across reboots, [`originals`] the values saved before the
//! first change, for `state: reverted`; [`run`] is the glue that [`main`](../mdtune/index.html)
//! calls, [`udev`] the entry point of the persisted udev rule and [`rule`] its text and reload.
//! Every path is built by [`sysfs`]; the values it reads and writes are parsed by [`values`].
//! [`topology`] follows members down to their hardware queues for [`inventory`]; [`auto`]
//! derives `group_thread_cnt` from them; [`hold`] says what waits for a reshape or for mdmon;
//! [`kernel`] is the one table of kernel facts these decisions rest on.

pub mod apply;
pub mod auto;
mod calls;
mod device;
mod dirfd;
pub mod entry;
pub mod hold;
pub mod input;
pub mod inventory;
pub mod kernel;
pub mod originals;
pub mod persist;
pub mod plan;
pub mod policy;
pub mod report;
pub mod rule;
pub mod run;
pub mod spec;
pub mod sysfs;
pub mod topology;
pub mod udev;
pub mod values;
