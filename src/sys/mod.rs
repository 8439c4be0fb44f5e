//! The floor: the only code that knows descriptors, system calls, `O_*` and errno numbers, and
//! the rules that keep every read and write inside the root (docs/reference.md §4).
//!
//! Upper steps ask it for named things: the root's paths ([`Root`]), a directory handle that
//! cannot be walked out of (`Dir`), a file written atomically inside the root, a batch of closes.
//! It decides nothing about md: what to read or write is the business of the steps above. It
//! also holds the binary's allocator ([`Arena`]), which only `src/main.rs` installs.

mod arena;
mod atomic;
mod batch;
mod beneath;
mod calls;
mod consts;
mod dir;
mod listing;
mod root;

pub use arena::Arena;
pub(crate) use atomic::{read_file, remove_file, write_atomic};
pub(crate) use batch::Batch;
pub(crate) use calls::have_openat2;
pub(crate) use consts::{leads_out, EBUSY, ENODEV};
pub(crate) use dir::{trimmed, Dir};
pub use root::Root;
pub(crate) use root::{
    write_value, KernelFile, DEV_BY_ID, DEV_MD, LOCK_FILE, SYS_CPU, SYS_NODE, SYS_WORKQUEUE,
};
