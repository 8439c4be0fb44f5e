//! How the rules of [`super::topology`] reach a block device's directory and read in it, confined
//! to `sys/` and cheaply.
//!
//! A [`Device`] is a path from `sys/` through the kernel's links
//! (`block/md0/md/dev-nvme0n1/block`), never opened itself: each file or directory under it is
//! opened with one `openat2(RESOLVE_BENEATH)` from `sys/`, and the kernel refuses any walk that
//! would leave `sys/` (a `..` too many, an absolute link; a walk that races with a rename
//! elsewhere is made again, in `crate::sys`). Following a member thus costs no system
//! call of its own: reading its `mq/` is one open, as for a program that trusts every link. Only a
//! partition's disk is opened, to learn its name from the kernel (`/proc/self/fd`).
//!
//! Kernels without `openat2` (before 5.6) take the older way: every device directory is opened
//! through its link and its real path checked against `sys/` ([`Dir::follow`]), three system
//! calls per link. Both ways give the same answers; `tests/integration/layouts.rs` runs the
//! layouts both ways.

use crate::sys::{trimmed, Dir};
use std::io;
use std::path::PathBuf;

/// A block device met on the way down from an md member.
pub(crate) struct Device {
    /// The kernel's name for it (`nvme0n1`, `dm-0`): the name of the link that led to it, which
    /// the kernel makes the device's own (`md/dev-<name>`, `slaves/<name>`, `block/<name>`).
    pub(crate) name: String,
    at: At,
}

enum At {
    /// The path from `sys/` through links, never opened.
    Path(String),
    /// The directory, open, its real path checked to be inside `sys/` (no `openat2`).
    Open(Dir),
}

/// `sys/`, from which every device is reached.
pub(crate) struct Devices<'a> {
    /// `sys/`, open; its path is real.
    sys: &'a Dir,
    /// `sys/block`, open (the older way follows its links).
    block: &'a Dir,
}

impl<'a> Devices<'a> {
    pub fn new(sys: &'a Dir, block: &'a Dir) -> Devices<'a> {
        Devices { sys, block }
    }

    /// The md device `name` of `sys/block` and its `md/` directory, open; `None` when it has no
    /// `md/` or leads out of `sys/` (not an md device of this host).
    pub(crate) fn array(&self, name: &str) -> Option<(Device, Dir)> {
        match self.sys.dir_under(&["block", name, "md"]) {
            Ok(md) => md.map(|md| (self.at(name, format!("block/{name}")), md)),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                let dir = self.block.follow(name, self.sys.path()).ok()?;
                let md = dir.sub("md").ok()??;
                Some((open(dir), md))
            }
            Err(_) => None,
        }
    }

    /// The device `name` of `sys/block` (an NVMe path device).
    pub(crate) fn block_entry(&self, name: &str) -> io::Result<Device> {
        if crate::sys::have_openat2() {
            return Ok(self.at(name, format!("block/{name}")));
        }
        self.block.follow(name, self.sys.path()).map(open)
    }

    /// The device that the link `link` under `dev` (`md/dev-sda/block`, `slaves/dm-0`) leads to,
    /// named `name`.
    pub(crate) fn below(&self, dev: &Device, link: &str, name: &str) -> io::Result<Device> {
        match &dev.at {
            At::Path(p) if crate::sys::have_openat2() => {
                Ok(self.at(name, [p.as_str(), "/", link].concat()))
            }
            At::Path(p) => self
                .sys
                .follow(&format!("{p}/{link}"), self.sys.path())
                .map(open),
            At::Open(dir) => dir.follow(link, self.sys.path()).map(open),
        }
    }

    /// The disk of `dev` when it is a partition (it has a `partition` file): its parent
    /// directory, opened to learn its name.
    pub(crate) fn disk_of(&self, dev: &Device) -> io::Result<Option<Device>> {
        match &dev.at {
            At::Path(p) => {
                if !self.sys.exists_under(&[p, "partition"])? {
                    return Ok(None);
                }
                let disk = self.sys.real_under(&[p, ".."], self.sys.path())?;
                Ok(disk.map(open))
            }
            At::Open(dir) => Ok(dir
                .has("partition")
                .then(|| dir.parent(self.sys.path()))
                .flatten()
                .map(open)),
        }
    }

    /// The trimmed text of file `file` (a name or a path such as `queue/rotational`) under `dev`.
    pub(crate) fn read(&self, dev: &Device, file: &str) -> io::Result<Option<String>> {
        let text = match &dev.at {
            At::Path(p) => self.sys.read_under(&[p, file])?,
            At::Open(dir) => dir.read(file).ok().flatten(),
        };
        Ok(text.map(trimmed))
    }

    /// The entry names of subdirectory `sub` of `dev`, sorted; empty when it is absent.
    pub(crate) fn list(&self, dev: &Device, sub: &str) -> io::Result<Vec<String>> {
        match &dev.at {
            At::Path(p) => self.sys.list_under(&[p, sub]),
            At::Open(dir) => Ok(dir
                .sub(sub)
                .ok()
                .flatten()
                .and_then(|d| d.list().ok())
                .unwrap_or_default()),
        }
    }

    /// How many entries subdirectory `sub` of `dev` has, and how many of them `pick` accepts
    /// (from its link count where that tells: `Dir::count_sub`).
    pub(crate) fn count(
        &self,
        dev: &Device,
        sub: &str,
        pick: fn(&str) -> bool,
    ) -> io::Result<(u64, u64)> {
        match &dev.at {
            At::Path(p) => self.sys.count_under(&[p, sub], pick),
            At::Open(dir) => Ok(dir.count_sub(sub, pick)),
        }
    }

    /// Where `dev` is, for messages: its path through links, or its real path.
    pub(crate) fn path(&self, dev: &Device) -> PathBuf {
        match &dev.at {
            At::Path(p) => self.sys.path().join(p),
            At::Open(dir) => dir.path().to_path_buf(),
        }
    }

    fn at(&self, name: &str, path: String) -> Device {
        Device {
            name: name.to_string(),
            at: At::Path(path),
        }
    }
}

/// An open device directory, named as the kernel names it (the last part of its real path).
fn open(dir: Dir) -> Device {
    Device {
        name: dir.name(),
        at: At::Open(dir),
    }
}
