//! The root every path mdtune reads or writes is built from, and its confinement: opening the
//! root, opening what is under it beneath it, and the small reads and writes of kernel files.
//! Which paths those are (the host's named paths: `sys/block/<array>/md/<attr>`, `etc/mdtune/`,
//! ...) is `paths`. What the files mean (attributes, values) is `crate::md`'s.
//!
//! Nothing else in the crate joins path components onto the root. That is what keeps a selector or
//! a symlink from steering a write outside `sys/`, and what lets tests and chroots run against a
//! fake root. [`Root::new`] refuses a root whose top-level directories (`TOP_LEVEL`) lead out of
//! it, and opens the root and each of them once; the inventory then reads under `sys/` through
//! directory handles confined to its real path ([`super::dir`]), and every write, its read-back
//! and the persisted files are opened beneath the descriptor of their top-level directory
//! ([`super::resolve`]): no path checked earlier is opened again by name. This module does no
//! policy: it does not decide what to write.

use super::dir::{self, Dir};
use super::error::{absent, errno, leads_out_error};
use super::listing::{list_end_of, ListEnd};
use super::owner::{self, Owner};
use super::resolve::{open_at, resolve, Links};
use crate::md::SpeedLimit;
use rustix::fs::{fstat, readlinkat, Mode, OFlags, CWD};
use rustix::io::Errno;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub(super) mod paths;

/// `st_mode`'s file-type bits, and those of a regular file and a link.
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// The top-level directories of the root that a run reads or writes. Each must resolve inside
/// the root: a link such as `sys -> /elsewhere` would carry every read and write with it.
pub(crate) const TOP_LEVEL: [&str; 6] = ["sys", "proc", "dev", "etc", "run", "usr"];

/// The system root every path is built from (`/` on a real host).
#[derive(Clone, Debug)]
pub struct Root {
    /// The real path of the root directory, as the kernel names the descriptor: for messages,
    /// and to tell the host's own root (`/`) from another.
    base: PathBuf,
    /// The path the root was given by.
    given: PathBuf,
    /// The real path of `base/sys` (inside `base`): everything read under `sys/` must resolve
    /// below it.
    sys: PathBuf,
    /// The root directory, open: what is opened under a top-level directory that did not
    /// exist when the root was opened (`etc/` before the first `persist`) is opened beneath it.
    fd: Arc<OwnedFd>,
    /// `sys/`, when it exists: the `TOP_LEVEL` directory every read under `sys/` starts from, and
    /// what the md attributes are opened beneath. Its listings end as its file system allows
    /// (sysfs on a host: one `fstatfs` when the root is opened).
    sys_dir: Option<Arc<Dir>>,
    /// The other `TOP_LEVEL` directories that exist, each opened once and its real path
    /// checked to be inside the root: everything under one is opened beneath it (the speed
    /// limits beneath `proc/`, the lock beneath `run/`).
    tops: Arc<Vec<(&'static str, OwnedFd)>>,
}

/// What a kernel value lives in: an md attribute of an array, or a system speed limit.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KernelFile<'a> {
    /// `sys/block/<array>/md/<attr>`, beneath `sys/`.
    Md { array: &'a str, attr: &'a str },
    /// `proc/sys/dev/raid/<limit>`, beneath the root.
    Limit(SpeedLimit),
}

/// Why a root cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("does not exist")]
    Missing,
    #[error("is a regular file, not a directory")]
    File,
    #[error("is not a directory")]
    NotDirectory,
    #[error("cannot be used: {0}")]
    Unusable(io::Error),
}

impl Root {
    /// Opens a root: its path is resolved once, by one open; everything after is opened beneath
    /// that descriptor. Each `TOP_LEVEL` directory that exists is opened beneath it once;
    /// fails when one of them is a link that leads out of it (or nowhere). A root given through
    /// a link is the directory the link leads to: [`Root::base`] is its real path, as the
    /// kernel names the open directory, and [`Root::given_through_link`] says so.
    pub fn new(given: &Path) -> Result<Root, RootError> {
        let unusable = RootError::Unusable;
        let fd = match open_at(CWD, given, OFlags::DIRECTORY, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) if errno(&e) == Some(Errno::NOTDIR) => return Err(not_a_directory(given)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(RootError::Missing),
            Err(e) => return Err(unusable(e)),
        };
        let base = real_path(&fd).unwrap_or_else(|| given.to_path_buf());
        let sys = base.join("sys");
        let (mut sys_dir, mut tops) = (None, Vec::new());
        for name in TOP_LEVEL {
            match open_top(&fd, &base, name).map_err(unusable)? {
                Some(top) if name == "sys" => {
                    let end = list_end_of(&top);
                    sys_dir = Some(Arc::new(Dir::from_fd(top, sys.clone(), end)));
                }
                Some(top) => tops.push((name, top)),
                None => {}
            }
        }
        Ok(Root {
            given: given.to_path_buf(),
            sys,
            base,
            fd: Arc::new(fd),
            sys_dir,
            tops: Arc::new(tops),
        })
    }

    /// The path the root was given by, when it is not the directory's real path (a link on the
    /// way, or a relative path): what the answer names beside the directory the run used.
    pub fn given_through_link(&self) -> Option<&Path> {
        let plain = self.given.is_absolute()
            && !self
                .given
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir));
        (plain && self.given != self.base).then_some(self.given.as_path())
    }

    /// The directory `rel` of the root (`dev/md`), open, when it exists and resolves inside
    /// the root.
    pub(crate) fn dir(&self, rel: &str) -> Option<Dir> {
        let fd = self.open_in_root(rel, OFlags::DIRECTORY).ok()?;
        Some(Dir::from_fd(fd, self.base.join(rel), ListEnd::Zero))
    }

    /// `sys/`, open: the directory [`Root::new`] opened.
    pub(crate) fn sys_dir(&self) -> io::Result<&Dir> {
        self.sys_dir
            .as_deref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Whether `sys/block` is there: a root without it has no array to check. A directory is
    /// seen by one `statx`; a link (or no `statx`) is opened beneath `sys/` to tell.
    pub(crate) fn has_block(&self) -> bool {
        self.sys_dir().is_ok_and(|sys| {
            sys.is_dir("block") || sys.dir_under(&["block"]).is_ok_and(|block| block.is_some())
        })
    }

    /// Whether the file `path` (under the root) exists, its last component not followed.
    pub(crate) fn exists(&self, path: &Path) -> bool {
        self.relative(path)
            .and_then(|rel| self.open_in_root(rel, OFlags::PATH | OFlags::NOFOLLOW))
            .is_ok()
    }

    /// Whether the file `path` (under the root) is a link, not followed.
    pub(crate) fn is_link(&self, path: &Path) -> bool {
        self.relative(path)
            .and_then(|rel| self.open_in_root(rel, OFlags::PATH | OFlags::NOFOLLOW))
            .and_then(|fd| Ok(fstat(&fd)?))
            .is_ok_and(|st| st.st_mode & S_IFMT == S_IFLNK)
    }

    /// The file `path` (under the root), opened `O_PATH` beneath the root, its last component
    /// not followed: its identity, for comparing it with another file (`fstat`).
    pub(crate) fn identity(&self, path: &Path) -> io::Result<(u64, u64)> {
        let fd = self.open_in_root(self.relative(path)?, OFlags::PATH | OFlags::NOFOLLOW)?;
        let st = fstat(&fd)?;
        #[allow(clippy::useless_conversion)] // their types differ by architecture
        Ok((u64::from(st.st_dev), u64::from(st.st_ino)))
    }

    /// The file `path` (under the root), opened `O_PATH` beneath the root and followed while
    /// links stay inside it (an installed binary behind alternatives): who owns what it leads
    /// to, asked of the descriptor (`fstat`).
    pub(crate) fn owner(&self, path: &Path) -> io::Result<Owner> {
        let fd = self.open_in_root(self.relative(path)?, OFlags::PATH)?;
        owner::of(&fd)
    }

    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    /// `path` relative to the root, refused when it is not below it.
    fn relative<'p>(&self, path: &'p Path) -> io::Result<&'p str> {
        path.strip_prefix(&self.base)
            .ok()
            .and_then(Path::to_str)
            .ok_or_else(|| outside(path))
    }

    /// The top-level directory `name`, open, when it existed when the root was opened.
    fn top(&self, name: &str) -> Option<BorrowedFd<'_>> {
        if name == "sys" {
            return self.sys_dir.as_ref().map(|d| d.fd());
        }
        self.tops
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, fd)| fd.as_fd())
    }

    /// Opens `rel` ([`super::resolve`]) beneath its top-level directory, or beneath the root
    /// when that did not exist; resolving it out of there is an error saying it leads out of
    /// the root, naming it.
    fn open_in_root(&self, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
        let (top, below) = rel.split_once('/').unwrap_or((rel, "."));
        let (at, path) = match self.top(top) {
            Some(fd) => (fd, below),
            None => (self.fd.as_fd(), rel),
        };
        resolve(at, path, flags, Mode::empty(), Links::Beneath)
            .map_err(|e| refused(e, &self.base.join(rel)))
    }

    /// Opens a kernel value's file beneath its directory: for writing (`O_WRONLY | O_TRUNC`,
    /// never `O_CREAT`: on sysfs a missing file must fail with ENOENT, and a test root made of
    /// regular files needs the truncate, which sysfs ignores), or to read it (back). The last
    /// component is never followed. A path that leads out of `sys/` (an md attribute) or the root
    /// (a speed limit) is an error of kind [`LeadsOut`](super::error::LeadsOut).
    pub(crate) fn open_kernel(&self, file: KernelFile<'_>, write: bool) -> io::Result<File> {
        let flags = OFlags::NOFOLLOW
            | if write {
                OFlags::WRONLY | OFlags::TRUNC
            } else {
                OFlags::empty()
            };
        let fd = match file {
            KernelFile::Md { array, attr } => {
                self.open_in_root(&format!("sys/block/{array}/md/{attr}"), flags)?
            }
            KernelFile::Limit(l) => {
                self.open_in_root(&format!("proc/sys/dev/raid/{}", l.name()), flags)?
            }
        };
        Ok(File::from(fd))
    }

    /// The text of a kernel value's file, opened as [`Root::open_kernel`] does.
    pub(crate) fn read_kernel(&self, file: KernelFile<'_>) -> io::Result<String> {
        dir::utf8(dir::read_all(self.open_kernel(file, false)?)?)
    }

    /// The text of the file `path` (under the root), opened beneath the root, its last
    /// component not followed: the mdmon pid files and process names.
    pub(crate) fn read_text(&self, path: &Path) -> io::Result<String> {
        let fd = self.open_in_root(self.relative(path)?, OFlags::NOFOLLOW)?;
        dir::utf8(dir::read_all(File::from(fd))?)
    }

    /// The directory `path` (under the root), opened beneath the root: `Ok(None)` when it does
    /// not exist, an error when it leads out of the root.
    pub(crate) fn dir_beneath(&self, path: &Path) -> io::Result<Option<Dir>> {
        let rel = self.relative(path)?;
        match self.open_in_root(rel, OFlags::DIRECTORY) {
            Ok(fd) => Ok(Some(Dir::from_fd(fd, path.to_path_buf(), ListEnd::Zero))),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The directory of a file under the root, opened beneath it, and the file's name:
    /// `Ok(None)` when the directory does not exist, an error when it leads out of the root.
    /// The file itself is not resolved: open it with `O_NOFOLLOW` (or replace it with a rename).
    pub(crate) fn real_file(&self, path: &Path) -> io::Result<Option<(Dir, String)>> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Err(outside(path));
        };
        Ok(self.dir_beneath(dir)?.map(|d| (d, name.to_string())))
    }

    /// Creates `dir` and its missing parents beneath the root, one level at a time (each parent
    /// synced after), and returns it open; refused when an existing part of it leads out of the
    /// root.
    pub(crate) fn make_dir(&self, dir: &Path) -> io::Result<Dir> {
        let rel = self.relative(dir)?;
        let mut held = Dir::from_fd(self.fd.try_clone()?, self.base.clone(), ListEnd::Zero);
        let mut prefix = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let fd = match self.open_in_root(&prefix, OFlags::DIRECTORY) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // Synced, so that the files then written in it are found after a power cut.
                    held.make_sub(part)?;
                    held.sync()?;
                    self.open_in_root(&prefix, OFlags::DIRECTORY)?
                }
                other => other?,
            };
            held = Dir::from_fd(fd, self.base.join(&prefix), ListEnd::Zero);
        }
        Ok(held)
    }
}

/// Why `given`, which did not open as a directory, is not one: a regular file or something
/// else (opened `O_PATH`, which opens a FIFO without waiting for a writer), or why it cannot be
/// told.
fn not_a_directory(given: &Path) -> RootError {
    let found = match open_at(CWD, given, OFlags::PATH, Mode::empty()) {
        Ok(found) => found,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return RootError::Missing,
        Err(e) => return RootError::Unusable(e),
    };
    match fstat(&found).map(|st| st.st_mode & S_IFMT) {
        Ok(S_IFREG) => RootError::File,
        Ok(_) => RootError::NotDirectory,
        Err(e) => RootError::Unusable(e.into()),
    }
}

/// `e` from an open beneath a directory; a path that resolves out of it (EXDEV) is said to lead
/// out of the root, naming `path`.
fn refused(e: io::Error, path: &Path) -> io::Error {
    match errno(&e) {
        Some(Errno::XDEV) => outside(path),
        _ => e,
    }
}

/// The real path of the open directory `fd`, as the kernel names it (`/proc/self/fd`); `None`
/// without /proc (a bare chroot), where the path given stands for it in messages.
fn real_path(fd: &OwnedFd) -> Option<PathBuf> {
    let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let text = readlinkat(CWD, link, Vec::new()).ok()?;
    Some(PathBuf::from(OsString::from_vec(text.into_bytes())))
}

/// The top-level directory `name` of the root `fd` (whose path is `base`), opened beneath it:
/// `None` when there is none (or it is not a directory); an error of kind `LeadsOut` when it is
/// a link that leads out of the root or nowhere, naming it.
fn open_top(fd: &OwnedFd, base: &Path, name: &str) -> io::Result<Option<OwnedFd>> {
    match resolve(
        fd.as_fd(),
        name,
        OFlags::DIRECTORY,
        Mode::empty(),
        Links::Beneath,
    ) {
        Ok(top) => Ok(Some(top)),
        Err(e) => match errno(&e) {
            Some(Errno::XDEV) => Err(leads_out_error(describe_link(
                base,
                name,
                "out of the root",
            ))),
            Some(Errno::NOENT | Errno::LOOP) if readlinkat(fd, name, Vec::new()).is_ok() => {
                Err(leads_out_error(describe_link(base, name, "nowhere")))
            }
            Some(Errno::NOENT | Errno::NOTDIR) => Ok(None),
            _ => Err(e),
        },
    }
}

/// What is said of the top-level link `base/name` that was refused: where it leads, for the
/// person who must fix it. Resolved here for the message only; nothing is opened through it.
fn describe_link(base: &Path, name: &str, refused: &str) -> String {
    let path = base.join(name);
    match fs::canonicalize(&path) {
        Ok(real) if refused != "nowhere" => format!(
            "{} is a link that leads out of the root (to {})",
            path.display(),
            real.display()
        ),
        Ok(_) => format!("{} is a link that leads {refused}", path.display()),
        Err(e) => format!("{} is a link that leads nowhere: {e}", path.display()),
    }
}

fn outside(path: &Path) -> io::Error {
    leads_out_error(format!("{} leads out of the root", path.display()))
}

/// Writes `text` and a newline in one `write(2)`, as `echo` does.
pub(crate) fn write_value(file: &mut fs::File, text: &str) -> io::Result<()> {
    file.write_all(format!("{text}\n").as_bytes())
}
