//! The report, pure (docs/reference.md §3): the one JSON object a run prints (its shape:
//! `model`), built from the inventory, the plan and what applying did (`build`), and its `msg`,
//! the one line a person reads first (`msg`). Ansible reads the object as a module result; the
//! Salt wrappers translate it into state changes; `crate::view` prints it for a person. Building
//! a report touches nothing.

mod build;
mod model;
mod msg;

pub use build::build;
pub use model::{Persist, Report};
