//! Directory handles: how mdtune reads the tree under the root, confined and cheaply.
//!
//! A [`Dir`] is an open directory whose real path is known to lie inside a confining directory
//! (the root's `sys/`, or the root). Everything in it is reached relative to its descriptor:
//! files are opened with `openat(O_NOFOLLOW)` (a file cannot be a link out of the root) and read
//! with one `read` into a stack buffer; subdirectories are opened the same way; directories are
//! listed with `getdents64` into one reused buffer. Only a link that must be followed
//! (`sys/block/md0`, `md/dev-nvme0n1/block`, `slaves/dm-0`) is resolved: opened once, and its real
//! path, as the kernel reports it in `/proc/self/fd`, checked against the confining directory.
//! Confinement thus costs one `readlink` per link instead of one per path component of every
//! path (docs/performance.md has the figures).
//!
//! std has no `openat`, `readlinkat` or `getdents64`. They come from the C library (glibc or
//! musl: no crate) through the `ffi` block below, each behind one safe function; this is the only
//! `unsafe` code in the crate. Reading and closing go through std ([`File`], [`OwnedFd`]).

use std::cell::RefCell;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sysfs::O_NOFOLLOW;

/// The C library's calls that std does not expose, declared by hand (no `libc` crate).
mod ffi {
    use std::ffi::{c_char, c_int, c_long};

    extern "C" {
        /// `openat(2)`. Variadic in C (the mode); never called with `O_CREAT`, so never passed.
        pub fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
        /// `readlinkat(2)`.
        pub fn readlinkat(
            dirfd: c_int,
            path: *const c_char,
            buf: *mut c_char,
            size: usize,
        ) -> isize;
        /// `syscall(2)`: `getdents64` has no wrapper in glibc before 2.30 (the release binary
        /// links against glibc 2.17).
        pub fn syscall(number: c_long, ...) -> c_long;
    }
}

/// `getdents64`'s system call number: x86_64 has its own table, arm64 and riscv the generic one.
#[cfg(target_arch = "x86_64")]
const SYS_GETDENTS64: std::ffi::c_long = 217;
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
))]
const SYS_GETDENTS64: std::ffi::c_long = 61;
#[cfg(target_arch = "powerpc64")]
const SYS_GETDENTS64: std::ffi::c_long = 202;
#[cfg(target_arch = "s390x")]
const SYS_GETDENTS64: std::ffi::c_long = 220;

/// `O_DIRECTORY` from the kernel's uapi headers (std exports no open flags): arm, arm64 and
/// powerpc use their own value, every other Linux architecture the generic one (as for
/// [`O_NOFOLLOW`]).
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
))]
const O_DIRECTORY: i32 = 0o40000;
#[cfg(not(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
)))]
const O_DIRECTORY: i32 = 0o200000;
const O_CLOEXEC: i32 = 0o2000000;
const AT_FDCWD: i32 = -100;

/// A name as C wants it; a NUL byte (which no kernel name has) is refused.
fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// `openat(dir, name, flags | O_CLOEXEC)`; `dir` `None` is the current directory.
fn open_at(dir: Option<BorrowedFd<'_>>, name: &str, flags: i32) -> io::Result<OwnedFd> {
    let name = c_name(name)?;
    let dirfd = dir.map_or(AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `name` is a NUL-terminated string that outlives the call; `dirfd` is AT_FDCWD or
    // a descriptor borrowed for the call; no mode is read since O_CREAT is never passed.
    let fd = unsafe { ffi::openat(dirfd, name.as_ptr(), flags | O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd`, open and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat2(2)`'s number (Linux 5.6+), the same on every architecture since 5.1's unified table.
const SYS_OPENAT2: std::ffi::c_long = 437;
/// `open_how.resolve`: fail with ELOOP on a symlink in any component of the path.
const RESOLVE_NO_SYMLINKS: u64 = 0x04;

/// Set once `openat2` turns out to be missing (kernels before 5.6, or a seccomp filter that does
/// not know it); from then on paths are walked one component at a time.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens the relative `path` (several components) in `dir` when no component is a symlink, so it
/// is inside `dir`: one `openat2(RESOLVE_NO_SYMLINKS)`, or, without it, `openat(O_NOFOLLOW)`
/// component by component.
fn open_beneath(dir: BorrowedFd<'_>, path: &str, flags: i32) -> io::Result<OwnedFd> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let c_path = c_name(path)?;
        // struct open_how { u64 flags; u64 mode; u64 resolve; }
        let how: [u64; 3] = [
            u64::from((flags | O_CLOEXEC) as u32),
            0,
            RESOLVE_NO_SYMLINKS,
        ];
        // SAFETY: `c_path` is NUL-terminated and `how` is a valid open_how of the size passed;
        // both outlive the call; the descriptor is borrowed for it.
        let fd = unsafe {
            ffi::syscall(
                SYS_OPENAT2,
                std::ffi::c_long::from(dir.as_raw_fd()),
                c_path.as_ptr(),
                how.as_ptr(),
                std::mem::size_of_val(&how),
            )
        };
        if let Ok(fd) = i32::try_from(fd) {
            if fd >= 0 {
                // SAFETY: the kernel just returned `fd`, open and owned by nobody else.
                return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        let e = io::Error::last_os_error();
        const EPERM: i32 = 1;
        const ENOSYS: i32 = 38;
        if !matches!(e.raw_os_error(), Some(ENOSYS | EPERM)) {
            return Err(e);
        }
        NO_OPENAT2.store(true, Ordering::Relaxed);
    }
    let (dirs, last) = path.rsplit_once('/').unwrap_or(("", path));
    let mut held: Option<OwnedFd> = None;
    for part in dirs.split('/').filter(|p| !p.is_empty()) {
        let at = held.as_ref().map_or(dir, |d| d.as_fd());
        held = Some(open_at(Some(at), part, O_DIRECTORY | O_NOFOLLOW)?);
    }
    let at = held.as_ref().map_or(dir, |d| d.as_fd());
    open_at(Some(at), last, flags | O_NOFOLLOW)
}

/// `readlinkat(dir, name)`: the text of the link, not resolved, read into a stack buffer.
fn read_link_at(dir: Option<BorrowedFd<'_>>, name: &str) -> io::Result<PathBuf> {
    let name = c_name(name)?;
    let mut buf = [0u8; 4096];
    // SAFETY: `name` is NUL-terminated; `buf` is writable for `buf.len()` bytes; the kernel
    // writes at most that many and returns the count.
    let n = unsafe {
        ffi::readlinkat(
            dir.map_or(AT_FDCWD, |d| d.as_raw_fd()),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    if n == buf.len() {
        const ENAMETOOLONG: i32 = 36;
        return Err(io::Error::from_raw_os_error(ENAMETOOLONG));
    }
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..n])))
}

/// One `getdents64` call into `buf`: the number of bytes of records, 0 at the end.
fn getdents(dir: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
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

/// Big enough for `sys/block` of a host with about 1,000 block devices in one call.
const DENTS_BUFFER: usize = 32 * 1024;

thread_local! {
    /// The one buffer every directory listing reuses.
    static DENTS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with each entry name in one `getdents64` buffer (`struct linux_dirent64`: inode
/// u64, offset i64, record length u16, type u8, then the NUL-terminated name), skipping `.`,
/// `..` and names that are not UTF-8 (no kernel device or attribute has one).
fn parse_dents(mut records: &[u8], f: &mut dyn FnMut(&str)) {
    while records.len() >= 19 {
        let reclen = usize::from(u16::from_ne_bytes([records[16], records[17]]));
        if reclen < 19 || reclen > records.len() {
            return;
        }
        let name = &records[19..reclen];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        if name != b"." && name != b".." {
            if let Ok(name) = std::str::from_utf8(name) {
                f(name);
            }
        }
        records = &records[reclen..];
    }
}

/// Reads what is left of `file` with one `read` for anything under 4 KiB (every sysfs and procfs
/// attribute): no `fstat`, no `lseek`. A longer file takes more reads.
fn read_all(mut file: File) -> io::Result<Vec<u8>> {
    let mut page = [0u8; 4096];
    let n = file.read(&mut page)?;
    let mut bytes = page[..n].to_vec();
    if n == page.len() {
        file.read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads a small file by path, not following a link in its last component: for callers that
/// hold a path rather than a [`Dir`] (the persisted files, read-back after a write).
pub(crate) fn read_path(path: &Path) -> io::Result<Vec<u8>> {
    let path = path
        .to_str()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?;
    read_all(File::from(open_at(None, path, O_NOFOLLOW)?))
}

/// An open directory and its real path, inside the directory that confines it.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens the directory at `real`, a path already resolved (canonical).
    pub(crate) fn open(real: &Path) -> io::Result<Dir> {
        let text = real
            .to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?;
        Ok(Dir {
            fd: open_at(None, text, O_DIRECTORY)?,
            path: real.to_path_buf(),
        })
    }

    /// The real path of this directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The last component of the real path (`nvme0n1` for `.../nvme/nvme0/nvme0n1`).
    pub(crate) fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The subdirectory `name` (one component), which must be a directory and not a link: then
    /// it is inside whatever this directory is inside. `Ok(None)` when it is absent, a file or a
    /// link.
    pub(crate) fn sub(&self, name: &str) -> io::Result<Option<Dir>> {
        match open_at(Some(self.fd.as_fd()), name, O_DIRECTORY | O_NOFOLLOW) {
            Ok(fd) => Ok(Some(Dir {
                fd,
                path: self.path.join(name),
            })),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens the directory at `path`, following links, only when its real path lies inside
    /// `within`.
    pub(crate) fn open_within(path: &Path, within: &Path) -> io::Result<Dir> {
        let text = path
            .to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?;
        let fd = open_at(None, text, O_DIRECTORY)?;
        confined(fd, path, within)
    }

    /// Follows `name` (a link to a directory, such as `slaves/nvme0n1`; it may hold `/`) and
    /// returns the directory it leads to, only when that lies inside `within` (else an error of
    /// kind `PermissionDenied` saying where it leads).
    pub(crate) fn follow(&self, name: &str, within: &Path) -> io::Result<Dir> {
        let fd = open_at(Some(self.fd.as_fd()), name, O_DIRECTORY)?;
        confined(fd, &self.path.join(name), within)
    }

    /// The parent directory (a partition's disk), only when it lies inside `within`. `..` of a
    /// directory is its real parent, so no link is resolved.
    pub(crate) fn parent(&self, within: &Path) -> Option<Dir> {
        let path = self.path.parent()?;
        if !path.starts_with(within) {
            return None;
        }
        let fd = open_at(Some(self.fd.as_fd()), "..", O_DIRECTORY).ok()?;
        Some(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The bytes of file `name`: one component, or a path such as `queue/rotational` or
    /// `dev-sda/state`; no component may be a link (ELOOP).
    pub(crate) fn read_bytes(&self, name: &str) -> io::Result<Vec<u8>> {
        let file = if name.contains('/') {
            open_beneath(self.fd.as_fd(), name, 0)?
        } else {
            open_at(Some(self.fd.as_fd()), name, O_NOFOLLOW)?
        };
        read_all(File::from(file))
    }

    /// The text of file `name` (as for [`Dir::read_bytes`]); `Ok(None)` when it does not exist
    /// (the kernel's ENOENT for an attribute the level lacks).
    pub(crate) fn read(&self, name: &str) -> io::Result<Option<String>> {
        match self.read_bytes(name) {
            Ok(bytes) => utf8(bytes).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `name` exists here and is not a link (a partition's `partition` file).
    pub(crate) fn has(&self, name: &str) -> bool {
        open_at(Some(self.fd.as_fd()), name, O_NOFOLLOW).is_ok()
    }

    /// The text of link `name`, not followed (udev's `dev/md/NAME -> ../md0`).
    pub(crate) fn read_link(&self, name: &str) -> io::Result<PathBuf> {
        read_link_at(Some(self.fd.as_fd()), name)
    }

    /// Calls `f` with each entry name of this directory, in the order the file system gives
    /// them, allocating nothing.
    pub(crate) fn for_each(&self, f: &mut dyn FnMut(&str)) -> io::Result<()> {
        DENTS.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.resize(DENTS_BUFFER, 0);
            loop {
                let n = getdents(self.fd.as_fd(), &mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                parse_dents(&buf[..n], f);
            }
        })
    }

    /// This directory's entry names, sorted.
    pub(crate) fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        self.for_each(&mut |name| names.push(name.to_string()))?;
        names.sort();
        Ok(names)
    }

    /// How many entries subdirectory `name` (not a link) has, and how many of them `pick`
    /// accepts: (0, 0) when it is absent. Allocates nothing (`mq/` of every disk is counted).
    pub(crate) fn count_sub(&self, name: &str, pick: fn(&str) -> bool) -> (u64, u64) {
        let (mut all, mut picked) = (0, 0);
        if let Ok(Some(d)) = self.sub(name) {
            let _ = d.for_each(&mut |entry| {
                all += 1;
                picked += u64::from(pick(entry));
            });
        }
        (all, picked)
    }
}

/// `fd`, opened through `path`, as a [`Dir`] when its real path lies inside `within`. The real
/// path is the kernel's own name for what was opened (`/proc/self/fd`); without /proc (a bare
/// chroot) it is resolved in user space instead.
fn confined(fd: OwnedFd, path: &Path, within: &Path) -> io::Result<Dir> {
    let real = read_link_at(None, &format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .or_else(|_| std::fs::canonicalize(path))?;
    if !real.starts_with(within) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} leads out of {} (to {})",
                path.display(),
                within.display(),
                real.display()
            ),
        ));
    }
    Ok(Dir { fd, path: real })
}

/// Errors that mean "no such directory here": absent, a file, or a link (ELOOP with O_NOFOLLOW).
fn absent(e: &io::Error) -> bool {
    const ENOTDIR: i32 = 20;
    const ELOOP: i32 = 40;
    e.kind() == io::ErrorKind::NotFound || matches!(e.raw_os_error(), Some(ENOTDIR | ELOOP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mdtune-dirfd-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::canonicalize(&dir).unwrap()
    }

    #[test]
    fn files_are_read_relative_to_the_directory_and_links_are_not_followed() {
        let dir = scratch("read");
        fs::create_dir_all(dir.join("sys/md")).unwrap();
        fs::write(dir.join("sys/md/level"), "raid5\n").unwrap();
        fs::write(dir.join("secret"), "outside\n").unwrap();
        symlink(dir.join("secret"), dir.join("sys/md/uuid")).unwrap();
        let md = Dir::open(&dir.join("sys"))
            .unwrap()
            .sub("md")
            .unwrap()
            .unwrap();
        assert_eq!(md.read("level").unwrap().as_deref(), Some("raid5\n"));
        assert_eq!(md.read("missing").unwrap(), None);
        assert!(
            md.read("uuid").is_err(),
            "a link in place of a file is refused"
        );
        assert_eq!(md.list().unwrap(), ["level", "uuid"]);
        assert_eq!(md.path(), dir.join("sys/md"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_followed_link_must_stay_inside_the_confining_directory() {
        let dir = scratch("follow");
        let sys = dir.join("sys");
        fs::create_dir_all(sys.join("devices/disk0/mq/0")).unwrap();
        fs::create_dir_all(sys.join("block")).unwrap();
        fs::create_dir_all(dir.join("elsewhere")).unwrap();
        symlink("../devices/disk0", sys.join("block/disk0")).unwrap();
        symlink("../../elsewhere", sys.join("block/out")).unwrap();
        let block = Dir::open(&sys).unwrap().sub("block").unwrap().unwrap();
        let disk = block.follow("disk0", &sys).unwrap();
        assert_eq!(disk.path(), sys.join("devices/disk0"));
        assert_eq!(disk.count_sub("mq", |_| true), (1, 1));
        let out = block.follow("out", &sys).unwrap_err();
        assert_eq!(out.kind(), io::ErrorKind::PermissionDenied);
        assert!(out
            .to_string()
            .ends_with(&format!("(to {})", dir.join("elsewhere").display())));
        let none = block.follow("none", &sys).unwrap_err();
        assert_eq!(none.kind(), io::ErrorKind::NotFound);
        assert!(
            block.sub("disk0").unwrap().is_none(),
            "sub() never follows a link"
        );
        let devices = disk.parent(&sys).unwrap();
        assert_eq!(devices.path(), sys.join("devices"));
        assert!(devices.parent(&sys).unwrap().parent(&sys).is_none());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_under_a_directory_are_read_with_or_without_openat2_and_never_through_a_link() {
        let dir = scratch("beneath");
        fs::create_dir_all(dir.join("dev/queue")).unwrap();
        fs::write(dir.join("dev/queue/rotational"), "1\n").unwrap();
        fs::create_dir_all(dir.join("elsewhere")).unwrap();
        fs::write(dir.join("elsewhere/rotational"), "0\n").unwrap();
        symlink("../elsewhere", dir.join("dev/linked")).unwrap();
        symlink("../elsewhere/rotational", dir.join("dev/queue/link")).unwrap();
        let dev = Dir::open(&dir.join("dev")).unwrap();
        // Both ways, whatever this kernel has: openat2 first, then the component walk.
        for walk in [false, true] {
            if walk {
                NO_OPENAT2.store(true, Ordering::Relaxed);
            }
            assert_eq!(
                dev.read("queue/rotational").unwrap().as_deref(),
                Some("1\n")
            );
            assert_eq!(dev.read("queue/missing").unwrap(), None);
            assert!(
                dev.read("linked/rotational").is_err(),
                "walk {walk}: a linked directory"
            );
            assert!(
                dev.read("queue/link").is_err(),
                "walk {walk}: a linked file"
            );
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn long_listings_and_long_files_are_read_whole() {
        let dir = scratch("long");
        for i in 0..3000 {
            fs::write(dir.join(format!("entry-with-a-long-name-{i:05}")), "").unwrap();
        }
        fs::write(dir.join("big"), "x".repeat(10_000)).unwrap();
        let d = Dir::open(&dir).unwrap();
        assert_eq!(d.list().unwrap().len(), 3001);
        assert_eq!(d.read("big").unwrap().unwrap().len(), 10_000);
        fs::remove_dir_all(&dir).unwrap();
    }
}
