//! Opening beneath a directory descriptor, never outside it: how every write under the root, and
//! every read-back after one, reaches its file (docs/reference.md §4). One
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from the root's (or `sys/`'s) descriptor,
//! in which the kernel resolves the whole path and refuses a `..`, an absolute link or a magic
//! link that would leave it (EXDEV). Where `openat2` is missing (kernels before 5.6), a walk from
//! the same descriptor opens every directory with `O_NOFOLLOW | O_DIRECTORY` relative to the one
//! before, resolves each link it meets itself (relative ones only, never `..` above the start),
//! and opens the file in the last directory it holds. Nothing resolved earlier is opened again by
//! name, so a directory swapped for a link while a run goes on cannot carry a write out.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::calls::{mkdir_at, open_at_mode, openat2_beneath, read_link_at, rename_at, unlink_at};
use super::consts::{
    EEXIST, ELOOP, ENOTDIR, EXDEV, O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_NONBLOCK,
    O_PATH, O_WRONLY,
};
use super::dir::Dir;

/// The most links one walk follows (the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Opens `path` (relative, `/`-separated) beneath `dir` with `flags` (and `mode`, with
/// `O_CREAT`): one `openat2`, or [`walk_beneath`] without it. EXDEV when resolving it would
/// leave `dir`.
pub(crate) fn open_beneath(
    dir: BorrowedFd<'_>,
    path: &str,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
    match openat2_beneath(dir, path, flags, mode)? {
        Some(fd) => Ok(fd),
        None => walk_beneath(dir, path, flags, mode),
    }
}

/// The components of `path` still to walk, last first (a stack), without empty ones and `.`.
fn parts(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .rev()
        .map(str::to_string)
}

/// [`open_beneath`] without `openat2`: every directory is opened with `O_NOFOLLOW |
/// O_DIRECTORY` relative to the one held before it; a component that is a link is read
/// (`readlinkat`) and its text walked in its place, refused (EXDEV) when it is absolute; a `..`
/// goes back to the directory held before, refused (EXDEV) above `dir`. The last component is
/// opened with `flags | O_NOFOLLOW`, and followed the same way when it is a link and `flags`
/// lacks `O_NOFOLLOW`.
pub(crate) fn walk_beneath(
    dir: BorrowedFd<'_>,
    path: &str,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
    let mut todo: Vec<String> = parts(path).collect();
    let mut held: Vec<OwnedFd> = Vec::new();
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            if held.pop().is_none() {
                return Err(io::Error::from_raw_os_error(EXDEV));
            }
            continue;
        }
        let at = held.last().map_or(dir, |d| d.as_fd());
        let last = todo.is_empty();
        let want = if last {
            flags | O_NOFOLLOW
        } else {
            O_DIRECTORY | O_NOFOLLOW
        };
        match open_at_mode(Some(at), &part, want, mode) {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => held.push(fd),
            // A link: ELOOP under O_NOFOLLOW, ENOTDIR when a directory was asked for.
            Err(e)
                if matches!(e.raw_os_error(), Some(ELOOP | ENOTDIR))
                    && !(last && flags & O_NOFOLLOW != 0) =>
            {
                let Ok(target) = read_link_at(Some(at), &part) else {
                    return Err(e);
                };
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::from_raw_os_error(ELOOP));
                }
                let target = target.to_str().unwrap_or("/").to_string();
                if target.starts_with('/') {
                    return Err(io::Error::from_raw_os_error(EXDEV));
                }
                todo.extend(parts(&target));
            }
            Err(e) => return Err(e),
        }
    }
    // The path ended at a directory reached by `..` (or was empty).
    let at = held.last().map_or(dir, |d| d.as_fd());
    open_at_mode(Some(at), ".", flags, mode)
}

/// Writing in a directory opened beneath the root: the files the floor writes atomically, the
/// lock. Names are one component; a link in place of one is never followed.
impl Dir {
    /// Creates `name` for writing with `mode`; it must not exist, not even as a link (EEXIST).
    pub(crate) fn create_new(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
        open_at_mode(Some(self.fd()), name, flags, mode).map(File::from)
    }

    /// Opens `name` for writing, created empty with `mode` when missing, never truncated.
    pub(crate) fn create_or_open(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW;
        open_at_mode(Some(self.fd()), name, flags, mode).map(File::from)
    }

    /// Opens `name` to append a log line to: `O_WRONLY | O_APPEND | O_NONBLOCK | O_NOFOLLOW`,
    /// never created, so that neither a link nor a FIFO without a reader can hold the caller.
    pub(crate) fn open_log(&self, name: &str) -> io::Result<File> {
        let flags = O_WRONLY | O_APPEND | O_NONBLOCK | O_NOFOLLOW;
        open_at_mode(Some(self.fd()), name, flags, 0).map(File::from)
    }

    /// `name` in this directory, pinned: opened `O_PATH | O_NOFOLLOW` (nothing of it is read, a
    /// link is not followed), and the path of that descriptor (`/proc/self/fd/N`), for calls
    /// that take only a path (a socket's address). While the file lives, the path names the
    /// file that was opened, whatever is renamed onto `name` meanwhile.
    pub(crate) fn pin(&self, name: &str) -> io::Result<(File, std::path::PathBuf)> {
        use std::os::fd::AsRawFd;
        let file = File::from(open_at_mode(Some(self.fd()), name, O_PATH | O_NOFOLLOW, 0)?);
        let path = format!("/proc/self/fd/{}", file.as_raw_fd()).into();
        Ok((file, path))
    }

    /// Renames `from` to `to`, both in this directory (a link at `to` is replaced).
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rename_at(self.fd(), from, to)
    }

    /// Removes the file `name` (a link is removed, not followed).
    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        unlink_at(self.fd(), name)
    }

    /// Creates the subdirectory `name` (mode 0755) unless something of that name is there.
    pub(crate) fn make_sub(&self, name: &str) -> io::Result<()> {
        match mkdir_at(self.fd(), name, 0o755) {
            Err(e) if e.raw_os_error() != Some(EEXIST) => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::calls::open_at;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mdtune-beneath-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::canonicalize(&dir).unwrap()
    }

    #[test]
    fn the_walk_follows_links_inside_and_refuses_what_openat2_refuses() {
        let top = scratch("walk");
        let root = top.join("root");
        fs::create_dir_all(root.join("sys/devices/md0/md")).unwrap();
        fs::create_dir_all(root.join("sys/block")).unwrap();
        fs::create_dir_all(top.join("outside")).unwrap();
        fs::write(root.join("sys/devices/md0/md/level"), "raid5\n").unwrap();
        fs::write(top.join("outside/level"), "outside\n").unwrap();
        symlink("../devices/md0", root.join("sys/block/md0")).unwrap();
        symlink(top.join("outside"), root.join("sys/block/abs")).unwrap();
        symlink("../../../outside", root.join("sys/block/up")).unwrap();
        symlink("loop", root.join("sys/block/loop")).unwrap();
        symlink("level", root.join("sys/devices/md0/md/link")).unwrap();
        let fd = open_at(None, root.to_str().unwrap(), O_DIRECTORY).unwrap();
        let read = |p: &str, flags: i32| -> io::Result<String> {
            let walked = walk_beneath(fd.as_fd(), p, flags, 0).map(File::from);
            let kernel = open_beneath(fd.as_fd(), p, flags, 0).map(File::from);
            let text =
                |f: io::Result<File>| f.and_then(io::read_to_string).map_err(|e| e.raw_os_error());
            let (w, k) = (text(walked), text(kernel));
            assert_eq!(w, k, "{p}: the walk and openat2 disagree");
            w.map_err(|e| io::Error::from_raw_os_error(e.unwrap_or(0)))
        };
        assert_eq!(read("sys/block/md0/md/level", 0).unwrap(), "raid5\n");
        assert_eq!(read("sys/block/md0/md/link", 0).unwrap(), "raid5\n");
        assert_eq!(read("sys/block/md0/../md0/md/level", 0).unwrap(), "raid5\n");
        for (p, errno) in [
            ("sys/block/abs/level", EXDEV),
            ("sys/block/up/level", EXDEV),
            ("../outside/level", EXDEV),
            ("sys/block/loop/level", ELOOP),
            ("sys/block/md0/md/link", ELOOP),
        ] {
            let flags = if p.ends_with("link") { O_NOFOLLOW } else { 0 };
            let e = read(p, flags).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(errno), "{p}: {e}");
        }
        fs::remove_dir_all(&top).unwrap();
    }
}
