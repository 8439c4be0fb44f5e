//! The report, pure (docs/reference.md §3): the one JSON object a run prints (its shape:
//! `model`), built from the inventory, the plan and what applying did (`build`): each array's
//! part (`array`), each setting's `after` and `changed` (`setting`), the run's `compliant`
//! (`compliance`), and its `msg`, the one line a person reads first (`msg`, or `failure` when
//! the writes failed). Ansible reads the object as a module result; the Salt wrappers translate
//! it into state changes; `crate::view` prints it for a person. Building a report touches
//! nothing.

mod array;
mod build;
mod compliance;
mod failure;
mod model;
mod msg;
mod out;
mod setting;

pub use build::build;
pub use model::Report;
pub(crate) use model::{Setting, SyncPause};
pub(crate) use msg::pause_note;
