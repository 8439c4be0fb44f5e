//! How the rules of [`super::topology`] reach a block device's directory and read in it, confined
//! to `sys/` and cheaply.
//!
//! A [`Device`] is an open directory. With `openat2` (Linux 5.6 and later) it is opened in one
//! `openat2(RESOLVE_BENEATH)` from `sys/` through the kernel's links
//! (`block/md0/md/dev-nvme0n1/block`), and the kernel refuses any walk that would leave `sys/` (a
//! `..` too many, an absolute link; a walk that races with a rename elsewhere is made again, in
//! `crate::sys`). Everything read under it (`partition`, `slaves/`, `mq/`, `queue/rotational`)
//! is then opened relative to that descriptor, one or two components that are never links:
//! following a member costs one long walk, not one per file. Only a partition's disk is opened
//! by `..`, to learn its name from the kernel (`/proc/self/fd`). An array itself is a path from
//! `sys/`, never opened: its `md/` is what is read.
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
    /// The path from `sys/` through links, never opened (an array).
    Path(String),
    /// The directory, open beneath `sys/`; its path is the one it was opened by from `sys/`
    /// (through links, with `openat2`) or its real path, checked to be inside `sys/` (without).
    Open(Dir),
}

/// A device's directory is only read: it is closed with the other files of the run's batch.
impl Drop for Device {
    fn drop(&mut self) {
        if let At::Open(dir) = std::mem::replace(&mut self.at, At::Path(String::new())) {
            dir.close_later();
        }
    }
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

    /// The device `name` of `sys/block` (an NVMe path device), open.
    pub(crate) fn block_entry(&self, name: &str) -> io::Result<Device> {
        if crate::sys::have_openat2() {
            let top = self.at(name, String::from("block"));
            return self.below(&top, name, name);
        }
        self.block.follow(name, self.sys.path()).map(open)
    }

    /// The device that the link `link` under `dev` (`md/dev-sda/block`, `slaves/dm-0`) leads to,
    /// named `name`, open: with `openat2`, one walk from `sys/` through the links, which the
    /// kernel keeps inside `sys/`; without it, [`Dir::follow`] from `dev`'s open directory.
    pub(crate) fn below(&self, dev: &Device, link: &str, name: &str) -> io::Result<Device> {
        if crate::sys::have_openat2() {
            if let Some(from_sys) = self.path_in_sys(dev) {
                return match self.sys.dir_under(&[from_sys, link]) {
                    Ok(Some(dir)) => Ok(Device {
                        name: name.to_string(),
                        at: At::Open(dir),
                    }),
                    Ok(None) => Err(io::Error::from(io::ErrorKind::NotFound)),
                    // openat2 vanished (a seccomp filter, say): the older way below.
                    Err(e) if e.kind() == io::ErrorKind::Unsupported => self.follow(dev, link),
                    Err(e) => Err(e),
                };
            }
        }
        self.follow(dev, link)
    }

    /// [`Devices::below`] without `openat2`: the link is opened and where it leads checked.
    fn follow(&self, dev: &Device, link: &str) -> io::Result<Device> {
        match &dev.at {
            At::Path(p) => self
                .sys
                .follow(&format!("{p}/{link}"), self.sys.path())
                .map(open),
            At::Open(dir) => dir.follow(link, self.sys.path()).map(open),
        }
    }

    /// `dev`'s path from `sys/` (through links, or real).
    fn path_in_sys<'d>(&self, dev: &'d Device) -> Option<&'d str> {
        match &dev.at {
            At::Path(p) => Some(p),
            At::Open(dir) => dir.path().strip_prefix(self.sys.path()).ok()?.to_str(),
        }
    }

    /// The disk of `dev` when it is a partition (it has a `partition` file): its parent
    /// directory, opened to learn its name from the kernel.
    pub(crate) fn disk_of(&self, dev: &Device) -> io::Result<Option<Device>> {
        let partition = match &dev.at {
            At::Path(p) => self.sys.exists_under(&[p, "partition"])?,
            At::Open(dir) => dir.has("partition"),
        };
        if !partition {
            return Ok(None);
        }
        match (&dev.at, self.path_in_sys(dev)) {
            // The path through links has no lexical parent: the kernel resolves `..`.
            (_, Some(p)) if crate::sys::have_openat2() => {
                let disk = self.sys.real_under(&[p, ".."], self.sys.path())?;
                Ok(disk.map(open))
            }
            (At::Open(dir), _) => Ok(dir.parent(self.sys.path()).map(open)),
            (At::Path(_), _) => Ok(None),
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

    /// The entry names of subdirectory `sub` of `dev`, sorted; empty when it is absent. A path
    /// through a link (`device/scsi_disk`: `device` is one) is resolved from `sys/` and must
    /// stay inside it (an error of kind `LeadsOut` when it does not).
    pub(crate) fn list(&self, dev: &Device, sub: &str) -> io::Result<Vec<String>> {
        match &dev.at {
            At::Path(p) => self.sys.list_under(&[p, sub]),
            At::Open(dir) if !sub.contains('/') => Ok(dir.list_sub(sub)),
            At::Open(dir) => match self.path_in_sys(dev) {
                Some(p) if crate::sys::have_openat2() => match self.sys.list_under(&[p, sub]) {
                    Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                        self.list_followed(dir, sub)
                    }
                    listed => listed,
                },
                _ => self.list_followed(dir, sub),
            },
        }
    }

    /// [`Devices::list`] of a path through links without `openat2`: followed from `dir`, and
    /// where it leads checked to be inside `sys/`.
    fn list_followed(&self, dir: &Dir, sub: &str) -> io::Result<Vec<String>> {
        match dir.follow(sub, self.sys.path()) {
            Ok(d) => {
                let names = d.list();
                d.close_later();
                names
            }
            Err(e) if crate::sys::leads_out(&e) => Err(e),
            Err(_) => Ok(Vec::new()),
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
