//! Every path mdtune reads or writes, built from one root, and the small reads and writes of
//! kernel files. What the files mean (attributes, values) is `crate::md`'s.
//!
//! Nothing else in the crate joins path components onto the root. That is what keeps a selector or
//! a symlink from steering a write outside `sys/` (see [`Root::confine`]), and what lets tests and
//! chroots run against a fake root. [`Root::new`] refuses a root whose top-level directories
//! (`TOP_LEVEL`) lead out of it; the inventory then reads under `sys/` through directory
//! handles confined to its real path ([`super::dir`]), the persisted files and writes by path.
//! This module does no policy: it does not decide what to write.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::consts::{absent, leads_out_error, O_NOFOLLOW};
use super::dir::{self, Dir};
use crate::md::SpeedLimit;

/// The top-level directories of the root that a run reads or writes. Each must resolve inside
/// the root: a link such as `sys -> /elsewhere` would carry every read and write with it.
pub(crate) const TOP_LEVEL: [&str; 6] = ["sys", "proc", "dev", "etc", "run", "usr"];

/// Under `sys/`: the CPU and NUMA node lists that `auto`'s ceiling is computed from.
pub(crate) const SYS_CPU: &str = "devices/system/cpu";
pub(crate) const SYS_NODE: &str = "devices/system/node";
/// Under the root: udev's `NAME -> ../mdX` links, and its `md-uuid-<uuid> -> ../../mdX` links.
pub(crate) const DEV_MD: &str = "dev/md";
pub(crate) const DEV_BY_ID: &str = "dev/disk/by-id";

/// The lock's file name under `run/`.
pub(crate) const LOCK_FILE: &str = "mdtune.lock";

/// The system root every path is built from (`/` on a real host).
#[derive(Clone, Debug)]
pub struct Root {
    base: PathBuf,
    /// `base/sys`, canonicalized once (inside `base`): everything read or written under `sys/`
    /// must resolve below it.
    sys: PathBuf,
}

impl Root {
    /// Opens a root. Fails when the directory does not exist, and when one of the
    /// `TOP_LEVEL` directories is a link that leads out of it (or nowhere).
    pub fn new(base: &Path) -> io::Result<Root> {
        let base = fs::canonicalize(base)?;
        for name in TOP_LEVEL {
            check_top_level(&base, name)?;
        }
        let sys = fs::canonicalize(base.join("sys")).unwrap_or_else(|_| base.join("sys"));
        Ok(Root { base, sys })
    }

    /// The real path of `sys/`: what every directory read under it must stay inside.
    pub(crate) fn sys(&self) -> &Path {
        &self.sys
    }

    /// The directory `rel` of the root (`dev/md`), open, when it exists and resolves inside
    /// the root.
    pub(crate) fn dir(&self, rel: &str) -> Option<Dir> {
        Dir::open_within(&self.base.join(rel), &self.base).ok()
    }

    /// `sys/`, open.
    pub(crate) fn sys_dir(&self) -> io::Result<Dir> {
        Dir::open(&self.sys)
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

    /// Resolves every link in `path` and returns the result only when it stays inside `sys/`.
    /// Returns `None` for a path that does not exist or that escapes the root's `sys/`.
    pub(crate) fn confine(&self, path: &Path) -> Option<PathBuf> {
        let real = fs::canonicalize(path).ok()?;
        real.starts_with(&self.sys).then_some(real)
    }

    /// Like [`Root::confine`], for paths that must stay inside the root as a whole.
    pub(crate) fn confine_to_root(&self, path: &Path) -> Option<PathBuf> {
        let real = fs::canonicalize(path).ok()?;
        real.starts_with(&self.base).then_some(real)
    }

    /// The real path of a file whose directory must be inside the root: `Ok(None)` when the
    /// directory does not exist, an error when it leads out of the root. The file itself is not
    /// resolved: open it with `O_NOFOLLOW` (or replace it with a rename).
    pub(crate) fn real_file(&self, path: &Path) -> io::Result<Option<PathBuf>> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(outside(path));
        };
        // One open and one readlink of /proc/self/fd, instead of a realpath(3) walk that asks
        // about every component of the root's own path (it runs once per array).
        match Dir::open_within(dir, &self.base) {
            Ok(real) => Ok(Some(real.path().join(name))),
            Err(e) if absent(&e) => Ok(None),
            Err(_) => Err(outside(path)),
        }
    }

    /// Creates `dir` and its missing parents inside the root and returns its real path; refused
    /// when an existing part of it leads out of the root.
    pub(crate) fn make_dir(&self, dir: &Path) -> io::Result<PathBuf> {
        let mut existing = dir;
        while !existing.exists() {
            existing = existing.parent().ok_or_else(|| outside(dir))?;
        }
        if self.confine_to_root(existing).is_none() {
            return Err(outside(dir));
        }
        fs::create_dir_all(dir)?;
        self.confine_to_root(dir).ok_or_else(|| outside(dir))
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

fn outside(path: &Path) -> io::Error {
    leads_out_error(format!("{} leads out of the root", path.display()))
}

/// Reads a small file as text, by path (the read-back after a write, the persisted files; the
/// inventory reads through directory handles, `crate::dirfd`).
///
/// The last component is never followed when it is a symlink (`O_NOFOLLOW`: ELOOP): callers
/// resolve the directory once with [`Root::confine`], so a file in it cannot lead out of the root.
pub fn read(path: &Path) -> io::Result<String> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads a whole file without following a symlink in its last component: one `read` for a file
/// under 4 KiB (no `fstat`, no `lseek`).
pub(crate) fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    dir::read_path(path)
}

/// Opens an existing attribute file for writing: `O_WRONLY|O_TRUNC` and never `O_CREAT`. On
/// sysfs a missing file must fail with ENOENT (a create gives EACCES), and a test root made of
/// regular files needs the truncate (sysfs ignores it). Nothing is written yet.
pub(crate) fn open_for_write(path: &Path) -> io::Result<fs::File> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(O_NOFOLLOW)
        .open(path)
}

/// Writes `text` and a newline in one `write(2)`, as `echo` does.
pub(crate) fn write_value(file: &mut fs::File, text: &str) -> io::Result<()> {
    file.write_all(format!("{text}\n").as_bytes())
}
