//! The system calls std does not expose, each behind one safe function: `openat`, `openat2`,
//! `readlinkat`, `getdents64`, `statx`, `close_range`, `mkdirat`, `renameat` and `unlinkat`. They
//! come from the C library (glibc or musl: no `libc` crate) through the `ffi` block below. With
//! the allocator (`super::arena`), this is the only `unsafe` code in the crate. `super::dir`
//! builds directory handles on them.

use std::cell::RefCell;
use std::ffi::c_char;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use super::consts::{
    AT_FDCWD, AT_SYMLINK_NOFOLLOW, EAGAIN, ENAMETOOLONG, ENOSYS, EPERM, O_CLOEXEC, O_CREAT,
    O_DIRECTORY, O_NOFOLLOW, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS,
    STATX_NLINK, STATX_TYPE, SYS_CLOSE_RANGE, SYS_GETDENTS64, SYS_OPENAT2, SYS_STATX, S_IFDIR,
    S_IFMT,
};

/// The C library's calls that std does not expose, declared by hand (no `libc` crate).
mod ffi {
    use std::ffi::{c_char, c_int, c_long, c_uint};

    extern "C" {
        /// `openat(2)`. Variadic in C: the mode, read only with `O_CREAT`, is always passed.
        pub(crate) fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
        /// `mkdirat(2)`.
        pub(crate) fn mkdirat(dirfd: c_int, path: *const c_char, mode: c_uint) -> c_int;
        /// `renameat(2)`.
        pub(crate) fn renameat(
            olddirfd: c_int,
            old: *const c_char,
            newdirfd: c_int,
            new: *const c_char,
        ) -> c_int;
        /// `unlinkat(2)`.
        pub(crate) fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
        /// `readlinkat(2)`.
        pub(crate) fn readlinkat(
            dirfd: c_int,
            path: *const c_char,
            buf: *mut c_char,
            size: usize,
        ) -> isize;
        /// `syscall(2)`: `getdents64` has no wrapper in glibc before 2.30 (the release binary
        /// links against glibc 2.17).
        pub(crate) fn syscall(number: c_long, ...) -> c_long;
    }
}

thread_local! {
    /// The bytes of the path of the call being made, reused: building a path allocates nothing
    /// once the buffer has grown to the longest path.
    static PATH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with `parts` joined with `/` as a NUL-terminated C string. A NUL byte (which no
/// kernel name has) is refused.
fn with_c_path<R>(parts: &[&str], f: impl FnOnce(*const c_char) -> R) -> io::Result<R> {
    PATH.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                buf.push(b'/');
            }
            buf.extend_from_slice(part.as_bytes());
        }
        if buf.contains(&0) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"));
        }
        buf.push(0);
        Ok(f(buf.as_ptr().cast()))
    })
}

/// `openat(dir, name, flags | O_CLOEXEC)`; `dir` `None` is the current directory.
pub(crate) fn open_at(dir: Option<BorrowedFd<'_>>, name: &str, flags: i32) -> io::Result<OwnedFd> {
    open_at_mode(dir, name, flags, 0)
}

/// [`open_at`] with the `mode` a file created with `O_CREAT` gets.
pub(crate) fn open_at_mode(
    dir: Option<BorrowedFd<'_>>,
    name: &str,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
    let dirfd = dir.map_or(AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `name` is a NUL-terminated string that outlives the call; `dirfd` is AT_FDCWD or
    // a descriptor borrowed for the call; the mode goes as the C `unsigned int` it is read as.
    let fd = with_c_path(&[name], |name| unsafe {
        ffi::openat(dirfd, name, flags | O_CLOEXEC, std::ffi::c_uint::from(mode))
    })?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd`, open and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Set once `openat2` turns out to be missing (kernels before 5.6, or a seccomp filter that does
/// not know it); from then on the callers take their way without it.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Whether `openat2` may be there (not yet found missing).
pub(crate) fn have_openat2() -> bool {
    !NO_OPENAT2.load(Ordering::Relaxed)
}

/// `openat2(dir, path, {flags, mode, resolve})` (`mode` only with `O_CREAT`, as the kernel
/// requires). `Ok(None)` when the kernel lacks it (ENOSYS, or EPERM from a seccomp filter that
/// does not know it), which is remembered.
fn openat2(
    dir: BorrowedFd<'_>,
    path: &[&str],
    flags: i32,
    mode: u32,
    resolve: u64,
) -> io::Result<Option<OwnedFd>> {
    if !have_openat2() {
        return Ok(None);
    }
    let mode = if flags & O_CREAT != 0 { mode } else { 0 };
    // struct open_how { u64 flags; u64 mode; u64 resolve; }
    let how: [u64; 3] = [
        u64::from((flags | O_CLOEXEC) as u32),
        u64::from(mode),
        resolve,
    ];
    let mut attempts = 0;
    loop {
        // SAFETY: `c_path` is NUL-terminated and `how` is a valid open_how of the size passed;
        // both outlive the call; the descriptor is borrowed for it.
        let fd = with_c_path(path, |c_path| unsafe {
            ffi::syscall(
                SYS_OPENAT2,
                std::ffi::c_long::from(dir.as_raw_fd()),
                c_path,
                how.as_ptr(),
                std::mem::size_of_val(&how),
            )
        })?;
        if let Ok(fd) = i32::try_from(fd) {
            if fd >= 0 {
                // SAFETY: the kernel just returned `fd`, open and owned by nobody else.
                return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }));
            }
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // RESOLVE_BENEATH walks that cross a `..` (every sysfs link has them) fail with
            // EAGAIN when any rename or mount anywhere on the system raced with the walk, as
            // openat2(2) says: the walk is simply made again.
            Some(EAGAIN) if attempts < OPENAT2_ATTEMPTS => attempts += 1,
            Some(ENOSYS | EPERM) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                return Ok(None);
            }
            _ => return Err(e),
        }
    }
}

/// How many times a walk that raced with a rename or mount elsewhere is made again (EAGAIN).
/// Each retry follows a rename on the system during the few microseconds of one walk; a host
/// renaming that often for this long is one the run reports an error for rather than spins on.
const OPENAT2_ATTEMPTS: u32 = 1000;

/// Opens the relative `path` (several components) in `dir` when no component is a symlink, so it
/// is inside `dir`: one `openat2(RESOLVE_NO_SYMLINKS)`, or, without it, [`walk_no_symlinks`].
pub(crate) fn open_no_symlinks(dir: BorrowedFd<'_>, path: &str, flags: i32) -> io::Result<OwnedFd> {
    match openat2(dir, &[path], flags, 0, RESOLVE_NO_SYMLINKS)? {
        Some(fd) => Ok(fd),
        None => walk_no_symlinks(dir, path, flags),
    }
}

/// [`open_no_symlinks`] without `openat2`: `openat(O_NOFOLLOW)` component by component.
pub(crate) fn walk_no_symlinks(dir: BorrowedFd<'_>, path: &str, flags: i32) -> io::Result<OwnedFd> {
    let (dirs, last) = path.rsplit_once('/').unwrap_or(("", path));
    let mut held: Option<OwnedFd> = None;
    for part in dirs.split('/').filter(|p| !p.is_empty()) {
        let at = held.as_ref().map_or(dir, |d| d.as_fd());
        held = Some(open_at(Some(at), part, O_DIRECTORY | O_NOFOLLOW)?);
    }
    let at = held.as_ref().map_or(dir, |d| d.as_fd());
    open_at(Some(at), last, flags | O_NOFOLLOW)
}

/// Opens the relative path `path` (its parts joined with `/`) in `dir`, following its links,
/// only as far as resolving it stays inside `dir`: one `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, which fails with EXDEV
/// for a `..` or a link that would leave `dir` and for an absolute link. `Ok(None)` when the
/// kernel has no `openat2`: the caller must then confine the path itself.
pub(crate) fn open_under(
    dir: BorrowedFd<'_>,
    path: &[&str],
    flags: i32,
) -> io::Result<Option<OwnedFd>> {
    openat2(dir, path, flags, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
}

/// [`open_under`] for one path, with the `mode` a file created with `O_CREAT` gets.
pub(crate) fn openat2_beneath(
    dir: BorrowedFd<'_>,
    path: &str,
    flags: i32,
    mode: u32,
) -> io::Result<Option<OwnedFd>> {
    openat2(
        dir,
        &[path],
        flags,
        mode,
        RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    )
}

/// A C return value of 0 as `Ok`, anything else as the error in errno.
fn zero(ret: std::ffi::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `mkdirat(dir, name, mode)`.
pub(crate) fn mkdir_at(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated and outlives the call; the descriptor is borrowed for it.
    zero(with_c_path(&[name], |name| unsafe {
        ffi::mkdirat(dir.as_raw_fd(), name, mode)
    })?)
}

/// `unlinkat(dir, name, 0)`: removes a file, or a link without following it.
pub(crate) fn unlink_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: as for `mkdir_at`.
    zero(with_c_path(&[name], |name| unsafe {
        ffi::unlinkat(dir.as_raw_fd(), name, 0)
    })?)
}

/// `renameat(dir, from, dir, to)`: both names in the one directory.
pub(crate) fn rename_at(dir: BorrowedFd<'_>, from: &str, to: &str) -> io::Result<()> {
    let c = |s: &str| {
        std::ffi::CString::new(s)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
    };
    let (from, to) = (c(from)?, c(to)?);
    let fd = dir.as_raw_fd();
    // SAFETY: both strings are NUL-terminated and outlive the call; the descriptor is borrowed.
    zero(unsafe { ffi::renameat(fd, from.as_ptr(), fd, to.as_ptr()) })
}

/// `readlinkat(dir, name)`: the text of the link, not resolved, read into a stack buffer.
pub(crate) fn read_link_at(dir: Option<BorrowedFd<'_>>, name: &str) -> io::Result<PathBuf> {
    let mut buf = [0u8; 4096];
    // SAFETY: `name` is NUL-terminated; `buf` is writable for `buf.len()` bytes; the kernel
    // writes at most that many and returns the count.
    let n = with_c_path(&[name], |name| unsafe {
        ffi::readlinkat(
            dir.map_or(AT_FDCWD, |d| d.as_raw_fd()),
            name,
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })?;
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    if n == buf.len() {
        return Err(io::Error::from_raw_os_error(ENAMETOOLONG));
    }
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..n])))
}

/// One `getdents64` call into `buf`: the number of bytes of records, 0 at the end.
pub(crate) fn getdents(dir: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is writable for `buf.len()` bytes and the kernel writes at most that many;
    // the descriptor is borrowed for the call.
    let n = unsafe {
        ffi::syscall(
            SYS_GETDENTS64,
            std::ffi::c_long::from(dir.as_raw_fd()),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Closes `run`, descriptors with consecutive numbers in ascending order, with one
/// `close_range(first, last)`. When the kernel has no `close_range` (before 5.9) or refuses it,
/// the descriptors are given back, still open, for the caller to close one by one.
pub(crate) fn close_run(run: Vec<OwnedFd>) -> Result<(), Vec<OwnedFd>> {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return Ok(());
    };
    let (first, last) = (first.as_raw_fd(), last.as_raw_fd());
    let consecutive = run
        .iter()
        .zip(first..)
        .all(|(fd, number)| fd.as_raw_fd() == number);
    if !consecutive {
        return Err(run);
    }
    // SAFETY: `run` owns every descriptor from `first` to `last` (consecutive, checked above),
    // so this closes only descriptors this call was given; they are then forgotten, not closed
    // again.
    let ret = unsafe {
        ffi::syscall(
            SYS_CLOSE_RANGE,
            std::ffi::c_long::from(first),
            std::ffi::c_long::from(last),
            0 as std::ffi::c_long,
        )
    };
    if ret != 0 {
        return Err(run);
    }
    for fd in run {
        let _closed = fd.into_raw_fd();
    }
    Ok(())
}

/// What `statx(dir, name, AT_SYMLINK_NOFOLLOW)` says of `name` (one component, not followed):
/// whether it is a directory, and its link count. `Ok(None)` when the kernel has no `statx`
/// (before 4.11) or a seccomp filter refuses it, which is remembered, and for a path of several
/// components (whose links `statx` would follow): the caller then opens it its own way.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<(bool, u64)>> {
    if NO_STATX.load(Ordering::Relaxed) || name.contains('/') {
        return Ok(None);
    }
    // struct statx: 256 bytes, aligned to 8; stx_nlink is the u32 at 16, stx_mode the u16 at 28.
    #[repr(C, align(8))]
    struct Statx([u8; 256]);
    let mut buf = Statx([0; 256]);
    // SAFETY: `name` is NUL-terminated and outlives the call; `buf` is a writable, aligned
    // struct statx of the kernel's size; the descriptor is borrowed for the call.
    let ret = with_c_path(&[name], |name| unsafe {
        ffi::syscall(
            SYS_STATX,
            std::ffi::c_long::from(dir.as_raw_fd()),
            name,
            std::ffi::c_long::from(AT_SYMLINK_NOFOLLOW),
            std::ffi::c_long::from(STATX_TYPE | STATX_NLINK),
            buf.0.as_mut_ptr(),
        )
    })?;
    if ret != 0 {
        let e = io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(ENOSYS | EPERM)) {
            NO_STATX.store(true, Ordering::Relaxed);
            return Ok(None);
        }
        return Err(e);
    }
    let b = &buf.0;
    let nlink = u32::from_ne_bytes([b[16], b[17], b[18], b[19]]);
    let mode = u16::from_ne_bytes([b[28], b[29]]);
    Ok(Some((
        u32::from(mode) & S_IFMT == S_IFDIR,
        u64::from(nlink),
    )))
}

static NO_STATX: AtomicBool = AtomicBool::new(false);
