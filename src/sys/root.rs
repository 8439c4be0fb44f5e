//! Every path mdtune reads or writes, built from one root, and the small reads and writes of
//! kernel files. What the files mean (attributes, values) is `crate::md`'s.
//!
//! Nothing else in the crate joins path components onto the root. That is what keeps a selector or
//! a symlink from steering a write outside `sys/`, and what lets tests and chroots run against a
//! fake root. [`Root::new`] refuses a root whose top-level directories (`TOP_LEVEL`) lead out of
//! it, and opens the root and each of them once; the inventory then reads under `sys/` through
//! directory handles confined to its real path ([`super::dir`]), and every write, its read-back
//! and the persisted files are opened beneath the descriptor of their top-level directory
//! ([`super::resolve`]): no path checked earlier is opened again by name. This module does no
//! policy: it does not decide what to write.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, CWD};
use rustix::io::Errno;

use super::dir::{self, Dir};
use super::error::{absent, errno, leads_out_error};
use super::resolve::{open_at, resolve, Links};
use crate::md::SpeedLimit;

/// The top-level directories of the root that a run reads or writes. Each must resolve inside
/// the root: a link such as `sys -> /elsewhere` would carry every read and write with it.
pub(crate) const TOP_LEVEL: [&str; 6] = ["sys", "proc", "dev", "etc", "run", "usr"];

/// Under `sys/`: the CPU and NUMA node lists that `auto`'s ceiling is computed from.
pub(crate) const SYS_CPU: &str = "devices/system/cpu";
pub(crate) const SYS_NODE: &str = "devices/system/node";
/// Under `sys/`: the workqueues; `cpumask` is the kernel's mask for unbound work, and
/// `raid5wq/cpumask` the raid5 workqueue's own (`WQ_SYSFS`).
pub(crate) const SYS_WORKQUEUE: &str = "devices/virtual/workqueue";
/// Under the root: udev's `NAME -> ../mdX` links, and its `md-uuid-<uuid> -> ../../mdX` links.
pub(crate) const DEV_MD: &str = "dev/md";
pub(crate) const DEV_BY_ID: &str = "dev/disk/by-id";

/// The lock's file name under `run/`.
pub(crate) const LOCK_FILE: &str = "mdtune.lock";

/// The system root every path is built from (`/` on a real host).
#[derive(Clone, Debug)]
pub struct Root {
    base: PathBuf,
    /// The real path of `base/sys` (inside `base`): everything read under `sys/` must resolve
    /// below it.
    sys: PathBuf,
    /// The root directory, open: what is opened under a top-level directory that did not
    /// exist when the root was opened (`etc/` before the first `persist`) is opened beneath it.
    fd: Arc<OwnedFd>,
    /// The `TOP_LEVEL` directories that exist, each opened once and its real path checked to be
    /// inside the root: everything under one is opened beneath it (the md attributes beneath
    /// `sys/`, the speed limits beneath `proc/`, the lock beneath `run/`), and every read under
    /// `sys/` starts from `sys/`.
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

impl Root {
    /// Opens a root. Fails when the directory does not exist, and when one of the
    /// `TOP_LEVEL` directories is a link that leads out of it (or nowhere).
    pub fn new(base: &Path) -> io::Result<Root> {
        let base = fs::canonicalize(base)?;
        for name in TOP_LEVEL {
            check_top_level(&base, name)?;
        }
        let text = base
            .to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?;
        let fd = Arc::new(open_at(CWD, text, OFlags::DIRECTORY, Mode::empty())?);
        let mut sys = base.join("sys");
        let mut tops = Vec::new();
        for name in TOP_LEVEL {
            // Opened, then its real path checked: what it is now, not what it was at the check.
            if let Ok(d) = open_within(&base.join(name), &base) {
                if name == "sys" {
                    sys = d.path().to_path_buf();
                }
                tops.push((name, d.into_fd()));
            }
        }
        Ok(Root {
            base,
            sys,
            fd,
            tops: Arc::new(tops),
        })
    }

    /// The directory `rel` of the root (`dev/md`), open, when it exists and resolves inside
    /// the root.
    pub(crate) fn dir(&self, rel: &str) -> Option<Dir> {
        open_within(&self.base.join(rel), &self.base).ok()
    }

    /// `sys/`, open: the directory [`Root::new`] opened, opened again through its descriptor.
    pub(crate) fn sys_dir(&self) -> io::Result<Dir> {
        match self.top("sys") {
            Some(fd) => Ok(Dir::from_fd(
                open_at(fd, ".", OFlags::DIRECTORY, Mode::empty())?,
                self.sys.clone(),
            )),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    /// `sys/block`: one entry (a symlink into `../devices/...`) per block device.
    pub(crate) fn block_dir(&self) -> PathBuf {
        self.sys.join("block")
    }

    /// `sys/block/<name>`, the device directory of a kernel block device name.
    pub(crate) fn block(&self, name: &str) -> PathBuf {
        self.block_dir().join(name)
    }

    /// `sys/block/<name>/md/<attr>`: the one place an md attribute path is made.
    pub(crate) fn md_attr(&self, name: &str, attr: &str) -> PathBuf {
        self.block(name).join("md").join(attr)
    }

    /// `proc/sys/dev/raid/<limit>`.
    pub(crate) fn speed_limit(&self, limit: SpeedLimit) -> PathBuf {
        self.base.join("proc/sys/dev/raid").join(limit.name())
    }

    /// `run/mdadm/map`: mdadm's map of the arrays it assembled, with their uuids.
    pub(crate) fn mdadm_map(&self) -> PathBuf {
        self.base.join("run/mdadm/map")
    }

    /// `run/mdadm/<container>.pid`: the pid file of the mdmon that manages an external-metadata
    /// container (mdadm's `MDMON_DIR`). `container` is a kernel name (no `/`).
    pub(crate) fn mdmon_pid(&self, container: &str) -> PathBuf {
        self.base.join("run/mdadm").join(format!("{container}.pid"))
    }

    /// `proc/<pid>/comm`: the command name of a running process.
    pub(crate) fn proc_comm(&self, pid: u32) -> PathBuf {
        self.base.join("proc").join(pid.to_string()).join("comm")
    }

    /// `run/`, where the lock lives.
    pub(crate) fn run(&self) -> PathBuf {
        self.base.join("run")
    }

    /// `run/mdtune.lock`: the host-wide lock.
    pub(crate) fn lock_file(&self) -> PathBuf {
        self.run().join(LOCK_FILE)
    }

    /// `run/mdtune/`: originals saved before the first change, for `state: reverted`.
    pub(crate) fn saved_state(&self) -> PathBuf {
        self.base.join("run/mdtune")
    }

    /// `etc/mdtune/`: the persisted desired state.
    pub(crate) fn etc(&self) -> PathBuf {
        self.base.join("etc/mdtune")
    }

    /// `etc/udev/rules.d/<file>`.
    pub(crate) fn udev_rule(&self, file: &str) -> PathBuf {
        self.base.join("etc/udev/rules.d").join(file)
    }

    /// `usr/local/sbin/mdtune`.
    pub(crate) fn installed_binary(&self) -> PathBuf {
        self.base.join("usr/local/sbin/mdtune")
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
            Ok(fd) => Ok(Some(Dir::from_fd(fd, path.to_path_buf()))),
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

    /// Creates `dir` and its missing parents beneath the root, one level at a time, and returns
    /// it open; refused when an existing part of it leads out of the root.
    pub(crate) fn make_dir(&self, dir: &Path) -> io::Result<Dir> {
        let rel = self.relative(dir)?;
        let mut held = Dir::from_fd(self.fd.try_clone()?, self.base.clone());
        let mut prefix = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let fd = match self.open_in_root(&prefix, OFlags::DIRECTORY) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    held.make_sub(part)?;
                    self.open_in_root(&prefix, OFlags::DIRECTORY)?
                }
                other => other?,
            };
            held = Dir::from_fd(fd, self.base.join(&prefix));
        }
        Ok(held)
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

/// Checks that `base/<name>` (`base` canonical) is inside the root: a real directory, nothing
/// yet, or a link that resolves inside `base`. A real directory is inside by construction; only a
/// link can lead out (or nowhere), and the error says so, naming it.
pub(crate) fn check_top_level(base: &Path, name: &str) -> io::Result<()> {
    let path = base.join(name);
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    match fs::canonicalize(&path) {
        Ok(real) if real.starts_with(base) => Ok(()),
        Ok(real) => Err(leads_out_error(format!(
            "{} is a link that leads out of the root (to {})",
            path.display(),
            real.display()
        ))),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("{} is a link that leads nowhere: {e}", path.display()),
        )),
    }
}

/// Opens the directory at `path`, following links, only when its real path (the kernel's name
/// for what was opened, `/proc/self/fd`; without /proc, resolved in user space) lies inside
/// `within`.
fn open_within(path: &Path, within: &Path) -> io::Result<Dir> {
    let fd = open_at(CWD, path, OFlags::DIRECTORY, Mode::empty())?;
    let real = rustix::fs::readlinkat(
        CWD,
        format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)),
        Vec::new(),
    )
    .map(|t| PathBuf::from(t.to_string_lossy().into_owned()))
    .or_else(|_| fs::canonicalize(path))?;
    if !real.starts_with(within) {
        return Err(leads_out_error(format!(
            "{} leads out of {} (to {})",
            path.display(),
            within.display(),
            real.display()
        )));
    }
    Ok(Dir::from_fd(fd, real))
}

fn outside(path: &Path) -> io::Error {
    leads_out_error(format!("{} leads out of the root", path.display()))
}

/// Writes `text` and a newline in one `write(2)`, as `echo` does.
pub(crate) fn write_value(file: &mut fs::File, text: &str) -> io::Result<()> {
    file.write_all(format!("{text}\n").as_bytes())
}
