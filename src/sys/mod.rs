//! The floor: the only code that knows descriptors, system calls and their flags and error
//! numbers, and the rules that keep every read and write inside the root (docs/reference.md §4).
//! Every system call goes through rustix, with typed flags; none is declared by hand.
//!
//! Upper steps ask it for named things: the root's paths ([`Root`]), a directory handle that
//! cannot be walked out of (`Dir`), a file written atomically inside the root, and node_exporter's
//! textfile written outside it through no link (`write_textfile`). How a path is
//! resolved beneath a directory (`openat2`, or a walk on kernels without it) is chosen once,
//! inside `resolve`; nothing above this folder asks which. It decides nothing about md: what to
//! read or write is the business of the steps above.
//!
//! The rule: no code above this folder makes a system call of its own. Starting a program (one
//! way, with a bounded wait: `run_bounded`), reading `/proc/self` (the running binary, a
//! descriptor's path), asking for the effective user, and sending to a socket are done here
//! (`process`, `dir_write`). What stays above: `std::process::id()` (the pid for a log line or
//! a lock record, no system call that can fail) and `std::process::exit` at the edge (`main`,
//! `crate::run`).

mod args;
mod atomic;
mod dir;
mod dir_write;
mod error;
mod listing;
mod owner;
mod process;
mod resolve;
mod root;
mod signals;
mod textfile;

pub use args::{open_args_file, ArgsFileError};
pub use textfile::{write_textfile, TextfileError};

/// The kernel's page size in bytes, as the kernel handed it to this process (`AT_PAGESZ`): the
/// page of every stripe cache entry.
pub(crate) fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

pub(crate) use atomic::{read_file, read_file_owned, remove_file, write_atomic};
pub(crate) use dir::{trimmed, Dir};
pub(crate) use dir_write::{LockFile, OpenLock};
pub(crate) use error::{in_place, leads_out, EBUSY, ENODEV};
pub(crate) use owner::Owner;
pub(crate) use process::{
    effective_uid, run_bounded, running_binary, running_binary_path, running_identity, Keep,
    NoAnswer,
};
pub(crate) use root::paths::{
    DEV_BY_ID, DEV_MD, LOCK_FILE, OSRELEASE, SYS_CPU, SYS_NODE, SYS_WORKQUEUE,
};
pub use root::Root;
pub(crate) use root::{write_value, KernelFile};
pub(crate) use signals::{caught as signal_caught, Deferred as SignalsDeferred};
