//! The numbers of the system interface that std does not export, in one place: open flags from
//! the kernel's uapi headers, `openat2`'s resolve flags and system call numbers, and the errno
//! values mdtune tells apart. Nothing but constants and the one "is it absent" test; the calls
//! that use them are in [`super::calls`].
//!
//! Open flags: arm, arm64 and powerpc use their own `O_DIRECTORY` and `O_NOFOLLOW`, every other
//! Linux architecture the generic ones.

use std::io;

#[cfg(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
))]
mod arch {
    pub(crate) const O_DIRECTORY: i32 = 0o40000;
    pub(crate) const O_NOFOLLOW: i32 = 0o100000;
}
#[cfg(not(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
)))]
mod arch {
    pub(crate) const O_DIRECTORY: i32 = 0o200000;
    pub(crate) const O_NOFOLLOW: i32 = 0o400000;
}
pub(crate) use arch::{O_DIRECTORY, O_NOFOLLOW};

pub(crate) const O_CLOEXEC: i32 = 0o2000000;
/// Open flags that are the same on every architecture mdtune builds for.
pub(crate) const O_WRONLY: i32 = 0o1;
pub(crate) const O_CREAT: i32 = 0o100;
pub(crate) const O_EXCL: i32 = 0o200;
pub(crate) const O_TRUNC: i32 = 0o1000;
pub(crate) const O_APPEND: i32 = 0o2000;
pub(crate) const O_NONBLOCK: i32 = 0o4000;
/// A descriptor that only names the file (the same on every architecture mdtune builds for);
/// opening it runs none of the file's code.
pub(crate) const O_PATH: i32 = 0o10000000;
pub(crate) const AT_FDCWD: i32 = -100;

/// `getdents64`'s system call number: x86_64 has its own table, arm64 and riscv the generic one.
#[cfg(target_arch = "x86_64")]
pub(crate) const SYS_GETDENTS64: std::ffi::c_long = 217;
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
))]
pub(crate) const SYS_GETDENTS64: std::ffi::c_long = 61;
#[cfg(target_arch = "powerpc64")]
pub(crate) const SYS_GETDENTS64: std::ffi::c_long = 202;
#[cfg(target_arch = "s390x")]
pub(crate) const SYS_GETDENTS64: std::ffi::c_long = 220;

/// `statx(2)`'s number (Linux 4.11+).
#[cfg(target_arch = "x86_64")]
pub(crate) const SYS_STATX: std::ffi::c_long = 332;
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
))]
pub(crate) const SYS_STATX: std::ffi::c_long = 291;
#[cfg(target_arch = "powerpc64")]
pub(crate) const SYS_STATX: std::ffi::c_long = 383;
#[cfg(target_arch = "s390x")]
pub(crate) const SYS_STATX: std::ffi::c_long = 379;
/// `statx`'s flag: a link as the last component is described, not followed.
pub(crate) const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
/// `statx`'s mask: the file type (in `stx_mode`) and `stx_nlink`.
pub(crate) const STATX_TYPE: u32 = 0x1;
pub(crate) const STATX_NLINK: u32 = 0x4;
/// `st_mode`'s file-type bits, and a directory's.
pub(crate) const S_IFMT: u32 = 0o170000;
pub(crate) const S_IFDIR: u32 = 0o040000;

/// `openat2(2)`'s number (Linux 5.6+), the same on every architecture since 5.1's unified table.
pub(crate) const SYS_OPENAT2: std::ffi::c_long = 437;
/// `close_range(2)`'s number (Linux 5.9+), the same on every architecture (unified table).
pub(crate) const SYS_CLOSE_RANGE: std::ffi::c_long = 436;
/// `open_how.resolve`: fail with ELOOP on a magic link (`/proc/self/fd/N`).
pub(crate) const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
/// `open_how.resolve`: fail with ELOOP on a symlink in any component of the path.
pub(crate) const RESOLVE_NO_SYMLINKS: u64 = 0x04;
/// `open_how.resolve`: fail with EXDEV when resolving the path (its `..`, its symlinks) would
/// leave the directory it is relative to, or meets an absolute symlink.
pub(crate) const RESOLVE_BENEATH: u64 = 0x08;

pub(crate) const EPERM: i32 = 1;
pub(crate) const ENOENT: i32 = 2;
pub(crate) const EAGAIN: i32 = 11;
/// What an md array that is being stopped answers to a read of any `md/` file (`md_attr_show`:
/// EBUSY once `mddev_get` fails).
pub(crate) const EBUSY: i32 = 16;
pub(crate) const EEXIST: i32 = 17;
pub(crate) const EXDEV: i32 = 18;
/// What the raid456 attributes answer once the personality is gone (`raid5_show_*` with no
/// `conf`).
pub(crate) const ENODEV: i32 = 19;
pub(crate) const ENOTDIR: i32 = 20;
pub(crate) const ENAMETOOLONG: i32 = 36;
pub(crate) const ENOSYS: i32 = 38;
pub(crate) const ELOOP: i32 = 40;

/// The error of a path that leads out of the directory it must stay in (a `..` too many, a link
/// out of the root): its own kind of error, so that no "permission denied" from the kernel is
/// ever taken for it, nor it for one.
#[derive(Debug)]
pub(crate) struct LeadsOut(pub(crate) String);

impl std::fmt::Display for LeadsOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LeadsOut {}

/// An [`io::Error`] carrying [`LeadsOut`] with `msg`.
pub(crate) fn leads_out_error(msg: String) -> io::Error {
    io::Error::other(LeadsOut(msg))
}

/// Whether `e` says that a path leads out of where it must stay (see [`LeadsOut`]).
pub(crate) fn leads_out(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LeadsOut>())
}

/// Whether an open failed because nothing usable is there: absent, a file where a directory was
/// asked for, or a link (ELOOP under `O_NOFOLLOW`).
pub(crate) fn absent(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || matches!(e.raw_os_error(), Some(ENOTDIR | ELOOP))
}
