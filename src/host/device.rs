//! How the rules of [`super::topology`] reach a block device's directory and read in it, confined
//! to `sys/` and cheaply.
//!
//! A [`Device`] is reached from `sys/` through the kernel's links
//! (`block/md0/md/dev-nvme0n1/block`), resolved beneath `sys/`: no walk may leave it (a `..` too
//! many, an absolute link). An array itself is a path from `sys/`, never opened: its `md/` is
//! what is read. A member's device is opened once, in one resolution, and everything read under
//! it (`partition`, `slaves/`, `mq/`, `queue/io_poll`) is opened relative to that descriptor,
//! one or two components that are never links: following a member costs one long walk, not one
//! per file. Only a partition's disk is opened by `..`, to learn its name from the kernel. How the
//! floor resolves a path (`openat2`, or its walk on kernels before 5.6) is its own business;
//! `tests/integration/layouts.rs` reads every layout both ways.

use crate::sys::{trimmed, Dir};
use std::cell::Cell;
use std::io;
use std::path::PathBuf;

/// A block device met on the way down from an md member.
pub(crate) struct Device {
    /// The kernel's name for it (`nvme0n1`, `dm-0`): the name of the link that led to it, which
    /// the kernel makes the device's own (`md/dev-<name>`, `slaves/<name>`, `block/<name>`).
    pub(crate) name: String,
    at: At,
    /// Its `mq/` count once read ([`Devices::queues`]): the partition check reads it first.
    queues: Cell<Option<(u64, u64)>>,
}

enum At {
    /// The path from `sys/` through links, never opened (an array).
    Path(String),
    /// The directory, open beneath `sys/`; its path is the one it was opened by from `sys/`
    /// (through links), or its real path (a partition's disk).
    Open(Dir),
}

/// `sys/`, from which every device is reached.
pub(crate) struct Devices<'a> {
    /// `sys/`, open; its path is real.
    sys: &'a Dir,
}

impl<'a> Devices<'a> {
    pub fn new(sys: &'a Dir) -> Devices<'a> {
        Devices { sys }
    }

    /// The md device `name` of `sys/block` and its `md/` directory, open; `None` when it has no
    /// `md/` or leads out of `sys/` (not an md device of this host).
    pub(crate) fn array(&self, name: &str) -> Option<(Device, Dir)> {
        let md = self.sys.dir_under(&["block", name, "md"]).ok()??;
        Some((self.at(name, format!("block/{name}")), md))
    }

    /// The device `name` of `sys/block` (an NVMe path device), open.
    pub(crate) fn block_entry(&self, name: &str) -> io::Result<Device> {
        let top = self.at(name, String::from("block"));
        self.below(&top, name, name)
    }

    /// The device that the link `link` under `dev` (`md/dev-sda/block`, `slaves/dm-0`) leads to,
    /// named `name`, open: one resolution from `sys/` through the links, kept inside `sys/`.
    pub(crate) fn below(&self, dev: &Device, link: &str, name: &str) -> io::Result<Device> {
        match self.sys.dir_under(&[self.path_in_sys(dev)?, link])? {
            Some(dir) => Ok(Device {
                name: name.to_string(),
                at: At::Open(dir),
                queues: Cell::new(None),
            }),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    /// `dev`'s path from `sys/` (through links, or real).
    fn path_in_sys<'d>(&self, dev: &'d Device) -> io::Result<&'d str> {
        let path = match &dev.at {
            At::Path(p) => Some(p.as_str()),
            At::Open(dir) => dir
                .path()
                .strip_prefix(self.sys.path())
                .ok()
                .and_then(|p| p.to_str()),
        };
        path.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// The disk of `dev` when it is a partition (it has a `partition` file): its parent
    /// directory, opened to learn its name from the kernel. The path through links has no
    /// lexical parent: `..` is resolved beneath `sys/`. A device with `mq/` is a disk, since no
    /// partition has one: its queue count, which the walk reads next anyway, is read first and
    /// kept, and the `partition` file is not looked for.
    pub(crate) fn disk_of(&self, dev: &Device) -> io::Result<Option<Device>> {
        let partition = match &dev.at {
            At::Path(p) => self.sys.exists_under(&[p, "partition"])?,
            At::Open(_) if self.queues(dev)?.0 > 0 => false,
            At::Open(dir) => dir.has("partition"),
        };
        if !partition {
            return Ok(None);
        }
        let disk = self.sys.real_under(&[self.path_in_sys(dev)?, ".."])?;
        Ok(disk.map(open))
    }

    /// The trimmed text of file `file` (a name or a path such as `queue/io_poll`) under `dev`.
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
            At::Open(dir) if !sub.contains('/') => Ok(dir.list_sub(sub)),
            _ => self.sys.list_under(&[self.path_in_sys(dev)?, sub]),
        }
    }

    /// How many entries `mq/` of `dev` has, and how many of them are numbered queue
    /// directories (from its link count where that tells: `Dir::count_sub`); read once per
    /// device.
    pub(crate) fn queues(&self, dev: &Device) -> io::Result<(u64, u64)> {
        if let Some(known) = dev.queues.get() {
            return Ok(known);
        }
        let numbered = |d: &str| d.parse::<u32>().is_ok();
        let counted = match &dev.at {
            At::Path(p) => self.sys.count_under(&[p, "mq"], numbered)?,
            At::Open(dir) => dir.count_sub("mq", numbered),
        };
        dev.queues.set(Some(counted));
        Ok(counted)
    }

    /// How many of `dev`'s `mq/` entries are poll queues (docs/auto.md §2): none unless
    /// `queue/io_poll` reads 1 (the poll map has queues: `queue_poll_show`). Then they are the
    /// last entries, since every driver lays its maps out default, read, poll
    /// (`nvme_pci_map_queues`, `nvmf_map_queues`, `virtblk_map_queues`), and each map gives every
    /// possible CPU to exactly one of its queues (`blk_mq_map_swqueue`), which `mq/<N>` shows as
    /// a `cpu<K>` directory (`blk_mq_register_hctx`; counted from its link count, one `statx`):
    /// the poll queues are the last entries whose CPUs add up to the `possible` CPUs. `Err` says
    /// why they cannot be told apart.
    pub(crate) fn poll_queues(&self, dev: &Device, possible: Option<u64>) -> Result<u64, String> {
        // Looked at, not kept: read onto the stack where the device is open.
        let polled = match &dev.at {
            At::Open(dir) => dir.read_with("queue/io_poll", |t| t == "1").ok().flatten(),
            At::Path(_) => self
                .read(dev, "queue/io_poll")
                .ok()
                .flatten()
                .map(|t| t == "1"),
        };
        if polled != Some(true) {
            return Ok(0);
        }
        let name = &dev.name;
        let Some(possible) = possible.filter(|&p| p > 0) else {
            return Err(format!(
                "{name} has poll queues (queue/io_poll is 1), and cpu/possible, which tells how \
                 many, cannot be read"
            ));
        };
        let mq = match &dev.at {
            At::Path(p) => self.sys.dir_under(&[p, "mq"]),
            At::Open(dir) => dir.sub("mq"),
        };
        let mut numbered: Vec<u32> = match mq {
            Ok(Some(ref mq)) => mq
                .list()
                .unwrap_or_default()
                .iter()
                .filter_map(|n| n.parse().ok())
                .collect(),
            _ => Vec::new(),
        };
        numbered.sort_unstable_by(|a, b| b.cmp(a));
        // cpu<K> directories, not the cpu_list file beside them.
        let cpu = |e: &str| {
            e.strip_prefix("cpu")
                .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        };
        let (mut cpus, mut polled) = (0, 0);
        if let Ok(Some(mq)) = &mq {
            for n in &numbered {
                cpus += mq.count_sub(&n.to_string(), cpu).1;
                polled += 1;
                if cpus >= possible {
                    break;
                }
            }
        }
        if cpus == possible && polled < numbered.len() as u64 {
            return Ok(polled);
        }
        Err(format!(
            "{name} has poll queues (queue/io_poll is 1), but its last mq/ entries do not map \
             the {possible} possible CPUs once (cpu<K> entries): which are poll queues cannot \
             be told"
        ))
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
            queues: Cell::new(None),
        }
    }
}

/// An open device directory, named as the kernel names it (the last part of its real path).
fn open(dir: Dir) -> Device {
    Device {
        name: dir.name(),
        at: At::Open(dir),
        queues: Cell::new(None),
    }
}
