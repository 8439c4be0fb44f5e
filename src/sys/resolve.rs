//! Opening a path beneath a directory descriptor, never outside it: how every file under the root
//! is reached (docs/reference.md §4).
//!
//! One way is chosen once per run, at the first path resolved, and kept for the whole run, as
//! libpathrs does: `openat2` (Linux 5.6 and later), in which the kernel resolves the whole path and
//! refuses a `..`, an absolute link or a magic link that would leave the start (EXDEV); or, where
//! the kernel lacks it (or a seccomp filter refuses it), a walk from the same descriptor that opens
//! every directory with `O_NOFOLLOW | O_DIRECTORY` relative to the one before, resolves each link
//! it meets itself (relative ones only, never `..` above the start), and opens the file in the
//! last directory it holds. Both give the same answers and the same errors where it matters
//! (EXDEV out, ELOOP for a link where none may be, ENOENT); nothing above this module knows which
//! was chosen. Nothing resolved earlier is opened again by name, so a directory swapped for a link
//! while a run goes on cannot carry a read or a write out.

use rustix::fs::{openat, openat2, readlinkat, Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};

/// What a path may pass through on its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Links {
    /// Relative links, followed while they stay beneath the start (`RESOLVE_BENEATH`): sysfs's
    /// `block/md0 -> ../devices/virtual/block/md0`.
    Beneath,
    /// None: any link on the way fails (`RESOLVE_NO_SYMLINKS`; a link in a directory's place
    /// fails ELOOP or ENOTDIR).
    None,
}

/// The way paths are resolved in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Openat2,
    Walk,
}

/// [`Backend`] once chosen: 0 not yet, 1 `openat2`, 2 the walk.
static BACKEND: AtomicU8 = AtomicU8::new(0);

/// The backend of this run, chosen at the first call by one probe: `openat2` of the absolute
/// path `/` with `RESOLVE_BENEATH`, which a kernel that has the call refuses (EXDEV: an absolute
/// path is never beneath) without opening anything. ENOSYS (before 5.6) and EPERM (a seccomp
/// filter that does not know the call) choose the walk; anything else `openat2`. The probe
/// opens nothing that could fail for another reason, so an EPERM of a real open (an immutable
/// file) is never taken for a missing call.
fn backend() -> Backend {
    match BACKEND.load(Ordering::Relaxed) {
        1 => Backend::Openat2,
        2 => Backend::Walk,
        _ => {
            let probe = openat2(
                CWD,
                "/",
                OFlags::PATH | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH,
            );
            let chosen = match probe {
                Err(Errno::NOSYS | Errno::PERM) => Backend::Walk,
                _ => Backend::Openat2,
            };
            BACKEND.store(
                if chosen == Backend::Walk { 2 } else { 1 },
                Ordering::Relaxed,
            );
            chosen
        }
    }
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`: one component, or a path whose links the
/// caller accepts.
pub(super) fn open_at(
    dir: impl AsFd,
    name: impl rustix::path::Arg,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    Ok(openat(dir, name, flags | OFlags::CLOEXEC, mode)?)
}

/// Opens `path` (relative, `/`-separated) beneath `dir` with `flags` (and `mode`, with
/// `O_CREAT`), passing only the links `links` allows: EXDEV when resolving it would leave `dir`.
pub(super) fn resolve(
    dir: BorrowedFd<'_>,
    path: &str,
    flags: OFlags,
    mode: Mode,
    links: Links,
) -> io::Result<OwnedFd> {
    let how = How { flags, mode, links };
    match backend() {
        Backend::Openat2 => kernel(dir, path, how),
        Backend::Walk => walk(dir, path, how),
    }
}

/// How [`resolve`] opens a path: the open's flags, the mode a created file gets, and the links it
/// may pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct How {
    pub(super) flags: OFlags,
    pub(super) mode: Mode,
    pub(super) links: Links,
}

/// How many times a walk that raced with a rename or mount elsewhere is made again (EAGAIN).
/// Each retry follows a rename on the system during the few microseconds of one walk; a host
/// renaming that often for this long is one the run reports an error for rather than spins on.
const OPENAT2_ATTEMPTS: u32 = 1000;

/// [`resolve`] by `openat2`.
fn kernel(dir: BorrowedFd<'_>, path: &str, how: How) -> io::Result<OwnedFd> {
    let How { flags, mode, links } = how;
    let resolve = match links {
        Links::Beneath => ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        Links::None => ResolveFlags::NO_SYMLINKS,
    };
    // The kernel refuses a mode without O_CREAT (EINVAL).
    let mode = if flags.contains(OFlags::CREATE) {
        mode
    } else {
        Mode::empty()
    };
    let mut attempts = 0;
    loop {
        match openat2(dir, path, flags | OFlags::CLOEXEC, mode, resolve) {
            // RESOLVE_BENEATH walks that cross a `..` (every sysfs link has them) fail with
            // EAGAIN when any rename or mount anywhere on the system raced with the walk, as
            // openat2(2) says: the walk is simply made again.
            Err(Errno::AGAIN) if attempts < OPENAT2_ATTEMPTS => attempts += 1,
            other => return Ok(other?),
        }
    }
}

/// The most links one walk follows (the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// The components of `path` still to walk, last first (a stack), without empty ones and `.`.
fn parts(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .rev()
        .map(str::to_string)
}

/// [`resolve`] without `openat2`: every directory is opened with `O_NOFOLLOW | O_DIRECTORY`
/// relative to the one held before it; a component that is a link is read (`readlinkat`) and its
/// text walked in its place ([`Links::Beneath`]: refused, EXDEV, when it is absolute), or the walk
/// fails with ELOOP, as `openat2` does ([`Links::None`]); a `..` goes back to the directory held
/// before, refused (EXDEV) above `dir`. The last component is opened with `flags | O_NOFOLLOW`, and
/// followed the same way when it is a link that may be followed and `flags` lacks `O_NOFOLLOW`.
pub(super) fn walk(dir: BorrowedFd<'_>, path: &str, how: How) -> io::Result<OwnedFd> {
    let How { flags, mode, links } = how;
    let mut todo: Vec<String> = parts(path).collect();
    let mut held: Vec<OwnedFd> = Vec::new();
    let mut followed = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            if held.pop().is_none() {
                return Err(Errno::XDEV.into());
            }
            continue;
        }
        let at = held.last().map_or(dir, |d| d.as_fd());
        let last = todo.is_empty();
        let want = if last {
            flags | OFlags::NOFOLLOW
        } else {
            OFlags::DIRECTORY | OFlags::NOFOLLOW
        };
        let may_follow = links == Links::Beneath && !(last && flags.contains(OFlags::NOFOLLOW));
        match open_at(at, &part, want, mode) {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => held.push(fd),
            // A link: ELOOP under O_NOFOLLOW, ENOTDIR when a directory was asked for.
            Err(e) if is_link_error(&e) => {
                let Ok(target) = readlinkat(at, part.as_str(), Vec::new()) else {
                    return Err(e);
                };
                if !may_follow {
                    return Err(Errno::LOOP.into());
                }
                followed += 1;
                if followed > MAX_LINKS {
                    return Err(Errno::LOOP.into());
                }
                let target = target.to_str().unwrap_or("/").to_string();
                if target.starts_with('/') {
                    return Err(Errno::XDEV.into());
                }
                todo.extend(parts(&target));
            }
            Err(e) => return Err(e),
        }
    }
    // The path ended at a directory reached by `..` (or was empty).
    let at = held.last().map_or(dir, |d| d.as_fd());
    open_at(at, ".", flags, mode)
}

/// Whether an open under `O_NOFOLLOW` may have met a link (ELOOP, or ENOTDIR when a directory
/// was asked for): [`walk`] then reads it as one.
fn is_link_error(e: &io::Error) -> bool {
    matches!(super::error::errno(e), Some(Errno::LOOP | Errno::NOTDIR))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{scratch, tree};
    use std::fs::{self, File};

    #[test]
    fn the_walk_follows_links_inside_and_refuses_what_openat2_refuses() {
        let top = scratch("walk");
        let root = top.join("root");
        let absolute = format!("root/sys/block/abs->{}", top.join("outside").display());
        tree(
            &top,
            &[
                "root/sys/devices/md0/md/level=raid5\n",
                "root/sys/block/",
                "outside/level=outside\n",
                "root/sys/block/md0->../devices/md0",
                &absolute,
                "root/sys/block/up->../../../outside",
                "root/sys/block/loop->loop",
                "root/sys/devices/md0/md/link->level",
            ],
        );
        let fd = File::open(&root).unwrap();
        let read = |p: &str, flags: OFlags, links: Links| -> Result<String, Option<i32>> {
            let text = |f: io::Result<OwnedFd>| {
                f.map(File::from)
                    .and_then(io::read_to_string)
                    .map_err(|e| e.raw_os_error())
            };
            let how = How {
                flags,
                mode: Mode::empty(),
                links,
            };
            let (walked, kernel) = (
                text(walk(fd.as_fd(), p, how)),
                text(kernel(fd.as_fd(), p, how)),
            );
            assert_eq!(
                walked, kernel,
                "{p} {links:?}: the walk and openat2 disagree"
            );
            walked
        };
        let (none, beneath) = (OFlags::empty(), Links::Beneath);
        assert_eq!(
            read("sys/block/md0/md/level", none, beneath).unwrap(),
            "raid5\n"
        );
        assert_eq!(
            read("sys/block/md0/md/link", none, beneath).unwrap(),
            "raid5\n"
        );
        let back = "sys/block/md0/../md0/md/level";
        assert_eq!(read(back, none, beneath).unwrap(), "raid5\n");
        assert_eq!(
            read("sys/devices/md0/md/level", none, Links::None).unwrap(),
            "raid5\n"
        );
        for (p, flags, links, errno) in [
            ("sys/block/abs/level", none, beneath, Errno::XDEV),
            ("sys/block/up/level", none, beneath, Errno::XDEV),
            ("../outside/level", none, beneath, Errno::XDEV),
            ("sys/block/loop/level", none, beneath, Errno::LOOP),
            (
                "sys/devices/md0/md/link",
                OFlags::NOFOLLOW,
                beneath,
                Errno::LOOP,
            ),
            ("sys/devices/md0/md/link", none, Links::None, Errno::LOOP),
            ("sys/block/md0/md/level", none, Links::None, Errno::LOOP),
        ] {
            let e = read(p, flags, links).unwrap_err();
            assert_eq!(e, Some(errno.raw_os_error()), "{p}");
        }
        fs::remove_dir_all(&top).unwrap();
    }
}
