//! One run, from input to report, and the edge that ends it (docs/reference.md §1): `module`
//! validates the input and the root, reads the host, plans, takes the lock, reads and plans
//! again, applies, persists or reverts, and builds the report; `udev` is the persisted rule's
//! entry point; `lock` is the host-wide lock; `exit` the exit status, the failure object and
//! the panic hook. Glue: each decision lives in the step named after it.

mod exit;
mod lock;
mod module;
mod udev;

pub use exit::{failure, install_panic_hook, print_and_exit, Exit};
pub use module::module;
pub use udev::udev;
