//! Where members become queues (docs/reference.md §5): the array's members as md lists them, the
//! role md gives each (active, rebuilding, spare, faulty, journal), and the devices that carry
//! each member's hardware queues, followed down the block stack.
//!
//! The rules, in the order they are tried on every device met on the way down:
//! - a partition (it has a `partition` file) is replaced by its disk, its parent directory,
//!   wherever it sits: an md member, under device-mapper, under a nested md array, or a
//!   partition of an NVMe multipath head;
//! - a nested md array is followed through its own counted members (`md/dev-*` with their
//!   roles), not `slaves/`, which lists every bound rdev, spares and faulty ones too;
//! - a device with entries in `slaves/` (device-mapper) is followed down through all of them,
//!   even when it shows an `mq/` of its own (request-based dm-multipath's `mq/0` says nothing
//!   about the hardware); a device-mapper device with an empty `slaves/` (a multipath map with
//!   every path gone) has unknown queues;
//! - a disk with `mq/` counts its numbered `mq/*` directories (from `mq/`'s link count, see
//!   `super::device`) but its poll queues, which carry none of md's I/O
//!   ([`kernel::md_io_queues`]; `Devices::poll_queues` finds them), except that a SCSI disk, a
//!   hard disk or an SSD, counts as [`kernel::SCSI_QUEUES`]: its `mq/` is its host adapter's;
//! - an NVMe multipath head (no `mq/`) is followed to its path devices `nvmeXcYnZ`.
//!
//! A member reached through several devices counts as the smallest of them. Only active members
//! (a numeric `slot`, not faulty, not the journal) are counted, at every level; every member of
//! the top array is reported.
//!
//! The output is a plain [`Member`] per member (`super::member`), which `plan` reads without
//! touching a filesystem. Every read of a device goes through `super::device`, which reaches it
//! from `sys/` through the kernel's links and keeps every walk inside `sys/`, so the I/O can change
//! without touching the rules.

use super::device::{Device, Devices};
use super::member::{unresolved, Leaf, Member, Role};
use crate::md::kernel;
use crate::sys::leads_out;
use crate::sys::Dir;
use std::collections::HashMap;
use std::io;

/// What a device resolved to: its leaves, or why they cannot be found.
type Resolved = Result<Vec<Leaf>, String>;

/// Stacks deeper than this are treated as a loop.
const MAX_DEPTH: usize = 16;

/// Follows members down the block stack, remembering each device so shared paths are read once.
pub(crate) struct Topology<'a> {
    /// How devices are reached and read, confined to `sys/`.
    devices: Devices<'a>,
    /// The names in `sys/block` that the walk may look up: NVMe path devices (see
    /// [`nvme_path`]) are found among them.
    block_names: &'a [String],
    /// `cpu/possible`, counted: every blk-mq map spreads these over its queues, which tells the
    /// poll queues apart.
    possible_cpus: Option<u64>,
    /// Each device's answer, by kernel name (unique on a host).
    cache: HashMap<String, Resolved>,
}

impl<'a> Topology<'a> {
    pub fn new(
        devices: Devices<'a>,
        block_names: &'a [String],
        possible_cpus: Option<u64>,
    ) -> Topology<'a> {
        Topology {
            devices,
            block_names,
            possible_cpus,
            // Sized once: about one device per block device, and growing would hash every name
            // again.
            cache: HashMap::with_capacity(block_names.len()),
        }
    }

    /// The md device `name` and its `md/` directory (see [`Devices::array`]).
    pub(crate) fn array(&self, name: &str) -> Option<(Device, Dir)> {
        self.devices.array(name)
    }

    /// Every member of the array `array` whose `md/` is `md`: from `md/dev-*/block` with their
    /// roles, or from `slaves/` (role unknown) when md lists none.
    pub(crate) fn members(&mut self, array: &Device, md: &Dir) -> Vec<Member> {
        let entries = md.list_with("dev-").unwrap_or_default();
        // Sized once: a member is big, and growing the list would move it several times.
        let mut members = Vec::with_capacity(entries.len());
        // The paths of a member's files, built in one buffer per array.
        let mut path = String::new();
        for entry in entries {
            let Some(name) = entry.strip_prefix("dev-") else {
                continue;
            };
            let role = role(md, &mut path, &entry);
            path.clear();
            path.extend(["md/", entry.as_str(), "/block"]);
            members.push(self.member(name, array, &path, role));
        }
        if members.is_empty() {
            for name in self.devices.list(array, "slaves").unwrap_or_default() {
                members.push(self.member(&name, array, &format!("slaves/{name}"), Role::Unknown));
            }
        }
        members
    }

    /// Member `name`, reached through the link `link` under the array `array`.
    fn member(&mut self, name: &str, array: &Device, link: &str, role: Role) -> Member {
        let unresolved = || {
            let path = self.devices.path(array).join(link);
            unresolved(name, role, &path)
        };
        let Ok(dev) = self.devices.below(array, link, name) else {
            return unresolved();
        };
        let mut m = Member {
            name: name.to_string(),
            role,
            counted: role.not_counted().is_none(),
            reason: role.not_counted().map(String::from),
            ..Member::default()
        };
        // The member itself was checked for a partition here; its disk is checked again below.
        let (disk, checked) = match self.devices.disk_of(&dev) {
            Ok(Some(disk)) => (disk, false),
            Ok(None) => (dev, true),
            Err(e) if leads_out(&e) => return unresolved(),
            Err(_) => (dev, true),
        };
        match self.resolve(&disk, 0, checked) {
            Ok(leaves) => {
                m.hw_queues = leaves.iter().map(|l| l.hw_queues).min();
                m.note = leaves_note(leaves);
                let direct = leaves.len() == 1 && leaves[0].name == disk.name;
                if !direct {
                    m.paths.clone_from(leaves);
                }
            }
            Err(why) => m.problem = Some(why.clone()),
        }
        m.device = Some(disk.name);
        m
    }

    /// What `dev` resolves to; `whole` when it is already known not to be a partition. The
    /// answer is kept, and lent: most devices are met once, and copying it is for the caller
    /// that keeps it.
    fn resolve(&mut self, dev: &Device, depth: usize, whole: bool) -> &Resolved {
        if self.cache.contains_key(&dev.name) {
            return &self.cache[&dev.name];
        }
        let r = self
            .resolve_uncached(dev, depth, whole)
            .map_err(|why| match why {
                Why::LeadsOut => format!(
                    "{}: {} does not resolve inside sys/",
                    dev.name,
                    self.devices.path(dev).display()
                ),
                Why::Said(why) => why,
            });
        self.cache.entry(dev.name.clone()).or_insert(r)
    }

    fn resolve_uncached(
        &mut self,
        dev: &Device,
        depth: usize,
        whole: bool,
    ) -> Result<Vec<Leaf>, Why> {
        let name = &dev.name;
        if depth > MAX_DEPTH {
            return Err(Why::Said(format!(
                "{name}: device stack deeper than {MAX_DEPTH}"
            )));
        }
        // A partition anywhere in the stack: its queues are its disk's.
        if !whole {
            if let Some(disk) = ok(self.devices.disk_of(dev))?.flatten() {
                return self
                    .resolve(&disk, depth + 1, false)
                    .clone()
                    .map_err(Why::Said);
            }
        }
        // A nested md array: through its own members and roles, not slaves/, where
        // bind_rdev_to_array links every rdev, spares and faulty ones included.
        if name.starts_with("md") {
            if let Some(leaves) = self.nested(dev, depth)? {
                return Ok(leaves);
            }
        }
        let devices = &self.devices;
        // Stacked devices (dm, nested md): follow slaves even if an mq/ is shown.
        let lower = ok(devices.list(dev, "slaves"))?.unwrap_or_default();
        if !lower.is_empty() {
            let lower = lower
                .iter()
                .map(|n| (devices.below(dev, &format!("slaves/{n}"), n), n))
                .collect();
            return self.resolve_all(name, lower, depth);
        }
        // A dm device with nothing below: its own mq/ is dm_mq_nr_hw_queues, not hardware.
        if name.starts_with(kernel::DM_PREFIX) {
            return Err(Why::Said(format!(
                "{name} is a device-mapper device with nothing in slaves/ (a multipath map with \
                 every path gone?): its own mq/ is no hardware count"
            )));
        }
        let (entries, dirs) = ok(devices.queues(dev))?.unwrap_or_default();
        if entries > 0 {
            return self.leaf(dev, dirs);
        }
        // NVMe native multipath: the head nvmeXnY has no mq/; its paths are nvmeXcZnY.
        if let Some(head) = nvme_head(name) {
            let paths: Vec<_> = self
                .block_names
                .iter()
                .filter(|p| nvme_path_of(p) == Some(head))
                .map(|p| (devices.block_entry(p), p))
                .collect();
            if !paths.is_empty() {
                return self.resolve_all(name, paths, depth);
            }
        }
        Err(Why::Said(format!(
            "{name} has no mq/, no slaves/ and no NVMe paths"
        )))
    }

    /// A disk with `dirs` numbered `mq/` entries: a SCSI disk (its `device` has `scsi_disk/`)
    /// counts as one queue, its `mq/` being its host's; any other disk counts its entries but
    /// its poll queues (a device with one entry has none: a poll map needs a queue left for the
    /// rest). Only the sd driver's disks have `scsi_disk/`, and it names each `sd<letters>`
    /// (`sd_probe`, `sd_format_disk_name`), so `scsi_disk/` is looked for under those names
    /// only: an NVMe or virtio disk costs no failed open.
    fn leaf(&self, dev: &Device, dirs: u64) -> Result<Vec<Leaf>, Why> {
        let devices = &self.devices;
        let scsi = dev.name.starts_with("sd")
            && !ok(devices.list(dev, "device/scsi_disk"))?
                .unwrap_or_default()
                .is_empty();
        let mut leaf = Leaf {
            name: dev.name.clone(),
            hw_queues: kernel::SCSI_QUEUES,
            scsi,
            poll_queues: 0,
            mq_dirs: dirs,
        };
        if !scsi {
            if dirs > 1 {
                leaf.poll_queues = devices
                    .poll_queues(dev, self.possible_cpus)
                    .map_err(Why::Said)?;
            }
            leaf.hw_queues = kernel::md_io_queues(dirs, leaf.poll_queues);
        }
        Ok(vec![leaf])
    }

    /// The leaves of a nested md array `dev` through its counted members (`md/dev-*` with their
    /// roles, as for the top array); `None` when md lists no member (then `slaves/` tells).
    fn nested(&mut self, dev: &Device, depth: usize) -> Result<Option<Vec<Leaf>>, Why> {
        let entries = ok(self.devices.list(dev, "md"))?.unwrap_or_default();
        let listed: Vec<&str> = entries
            .iter()
            .filter_map(|e| e.strip_prefix("dev-"))
            .collect();
        if listed.is_empty() {
            return Ok(None);
        }
        let file = |m: &str, f: &str| {
            let text = self.devices.read(dev, &format!("md/dev-{m}/{f}"));
            text.ok().flatten()
        };
        let counted: Vec<String> = listed
            .into_iter()
            .filter(|m| {
                let role = Role::from_md(file(m, "state").as_deref(), file(m, "slot").as_deref());
                role.not_counted().is_none()
            })
            .map(String::from)
            .collect();
        if counted.is_empty() {
            return Err(Why::Said(format!("{}: no active member", dev.name)));
        }
        let lower = counted
            .iter()
            .map(|m| (self.devices.below(dev, &format!("md/dev-{m}/block"), m), m))
            .collect();
        self.resolve_all(&dev.name, lower, depth).map(Some)
    }

    /// Resolves every lower device of `name` (each reached, or not, from its link); the result
    /// is all their leaves, or the first problem.
    fn resolve_all(
        &mut self,
        name: &str,
        lower: Vec<(io::Result<Device>, &String)>,
        depth: usize,
    ) -> Result<Vec<Leaf>, Why> {
        let mut leaves = Vec::new();
        for (dev, link) in lower {
            let Ok(dev) = dev else {
                return Err(Why::Said(format!(
                    "{name}: {link} does not resolve inside sys/"
                )));
            };
            match self.resolve(&dev, depth + 1, false) {
                Ok(below) => leaves.extend_from_slice(below),
                Err(why) => return Err(Why::Said(why.clone())),
            }
        }
        Ok(leaves)
    }
}

/// Why a device's queues cannot be found.
enum Why {
    /// A path under it leads out of `sys/`.
    LeadsOut,
    /// Anything else, said.
    Said(String),
}

/// A read's result: `Some` when it worked, `None` when it failed as if absent, [`Why::LeadsOut`]
/// when the path leads out of `sys/`.
fn ok<T>(r: io::Result<T>) -> Result<Option<T>, Why> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if leads_out(&e) => Err(Why::LeadsOut),
        Err(_) => Ok(None),
    }
}

/// Says how the leaves whose queues are not plain `mq/` were counted: SCSI disks as one queue,
/// devices with poll queues without them.
fn leaves_note(leaves: &[Leaf]) -> Option<String> {
    let list = |f: &dyn Fn(&Leaf) -> Option<String>| -> Vec<String> {
        leaves.iter().filter_map(f).collect()
    };
    let scsi = list(&|l: &Leaf| l.scsi.then(|| format!("{} ({} mq/)", l.name, l.mq_dirs)));
    let poll = list(&|l: &Leaf| {
        (l.poll_queues > 0)
            .then(|| format!("{} ({} mq/, {} poll)", l.name, l.mq_dirs, l.poll_queues))
    });
    let mut notes = Vec::new();
    if !scsi.is_empty() {
        notes.push(format!(
            "SCSI disk, counted as {} queue: its mq/ entries are its host adapter's, shown by \
             every disk behind it: {}",
            kernel::SCSI_QUEUES,
            scsi.join(", ")
        ));
    }
    if !poll.is_empty() {
        notes.push(format!(
            "poll queues not counted (md never submits polled I/O): {}",
            poll.join(", ")
        ));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// `nvme<S>n<N>` -> (S, N).
fn nvme_head(name: &str) -> Option<(u32, u32)> {
    let (s, n) = name.strip_prefix("nvme")?.split_once('n')?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

/// Whether `name` is an NVMe path device (`nvme<S>c<C>n<N>`): the names of `sys/block` that
/// the walk looks up (beside the arrays).
pub(super) fn nvme_path(name: &str) -> bool {
    nvme_path_of(name).is_some()
}

/// `nvme<S>c<C>n<N>` -> (S, N).
fn nvme_path_of(name: &str) -> Option<(u32, u32)> {
    let (s, rest) = name.strip_prefix("nvme")?.split_once('c')?;
    let (c, n) = rest.split_once('n')?;
    c.parse::<u32>().ok()?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

/// The role md gives the member of `md/` entry `entry` (`dev-nvme0n1`), from its `state` and
/// `slot` (`None` for one that cannot be read), each read onto the stack and not kept; `path`
/// is the buffer their paths are built in. No component is followed if it is a link.
fn role(md: &Dir, path: &mut String, entry: &str) -> Role {
    path.clear();
    path.extend([entry, "/slot"]);
    let slot_at = path.len();
    path.extend([entry, "/state"]);
    let (slot, state) = path.split_at(slot_at);
    let with_slot =
        |state: Option<&str>| match md.read_with(slot, |s| Role::from_md(state, Some(s))) {
            Ok(Some(role)) => role,
            _ => Role::from_md(state, None),
        };
    match md.read_with(state, |state| with_slot(Some(state))) {
        Ok(Some(role)) => role,
        _ => with_slot(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvme_names_split_into_subsystem_and_namespace() {
        assert_eq!(nvme_head("nvme0n1"), Some((0, 1)));
        assert_eq!(nvme_head("nvme0c1n1"), None);
        assert_eq!(nvme_head("nvme0n1p1"), None);
        assert_eq!(nvme_path_of("nvme3c12n2"), Some((3, 2)));
        assert_eq!(nvme_path_of("nvme3n2"), None);
    }
}
