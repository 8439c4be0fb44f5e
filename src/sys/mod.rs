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

mod args;
mod atomic;
mod dir;
mod dir_write;
mod error;
mod listing;
mod owner;
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

/// Makes reads of `fd` return `WouldBlock` instead of waiting: a child's pipe, read while the
/// child runs.
pub(crate) fn set_nonblocking(fd: impl std::os::fd::AsFd) -> std::io::Result<()> {
    Ok(rustix::io::ioctl_fionbio(fd, true)?)
}

pub(crate) use atomic::{read_file, read_file_owned, remove_file, write_atomic};
pub(crate) use dir::{trimmed, Dir};
pub(crate) use dir_write::{LockFile, OpenLock};
pub(crate) use error::{in_place, leads_out, EBUSY, ENODEV};
pub(crate) use owner::{effective_uid, Owner};
pub use root::Root;
pub(crate) use root::{
    write_value, KernelFile, DEV_BY_ID, DEV_MD, LOCK_FILE, OSRELEASE, SYS_CPU, SYS_NODE,
    SYS_WORKQUEUE,
};
pub(crate) use signals::{caught as signal_caught, Deferred as SignalsDeferred};
