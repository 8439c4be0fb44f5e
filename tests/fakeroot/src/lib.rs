//! Builds fake system roots for mdtune: a directory holding the `sys/`, `proc/`, `dev/`, `run/` and
//! `etc/` that mdtune reads and writes, with md arrays over NVMe, SCSI, virtio-blk and
//! device-mapper devices, for the integration tests (`tests/integration`), the demo host
//! (`examples/mkroot.rs` writes `examples/demo-host`) and the benchmark hosts (`mkroot bench`,
//! which `bench/bench.py` runs).
//!
//! Each layout mirrors what the real kernel shows, so that a test on a fake root tests what a host
//! has: `/sys/block/<dev>` is a relative symlink into `../devices/...`; disks sit under their PCI
//! or SCSI parents; partitions are subdirectories of their disk with a `partition` file; `slaves/`
//! and `holders/` hold relative links both ways; blk-mq disks have
//! `mq/<N>/{cpu_list,nr_tags,nr_reserved_tags}` and a `cpu<K>` directory for every CPU mapped to
//! that queue, the maps (default, read, poll) one after the other, each spreading every possible
//! CPU over its queues, and `queue/io_poll` 1 when a poll map has queues (NVMe with
//! `nvme.poll_queues`, or over fabrics with `nr_poll_queues`: [`NvmeQueues`]); NVMe native
//! multipath has a head without `mq/` under `devices/virtual/nvme-subsystem/` and hidden path
//! devices `nvmeXcYnZ` that do have it, under a PCI controller or an NVMe-over-fabrics one
//! (`devices/virtual/nvme-fabrics/ctl/`); request-based dm-multipath shows a meaningless `mq/0`
//! and its paths in `slaves/`; every whole device has `queue/rotational` (1 for a hard disk)
//! and `queue/io_poll`; every LUN of a SCSI host shows the host's queue count in `mq/`. md
//! arrays get the files the kernel shows for their level
//! (raid456 files only for raid4/5/6, redundancy files only for redundant levels, neither for
//! inactive arrays and containers), `md/dev-*/{block,state,slot}` for every member with the role md
//! gives it (active, rebuilding, spare, faulty, journal, or in sync with unacknowledged bad
//! blocks), `md/rdN` links for the slots,
//! `md/reshape_position`, and udev's `/dev/md/NAME` and `/dev/disk/by-id/md-uuid-*` links.
//! External-metadata (IMSM) member arrays read an all-zero `md/uuid`; their mdmon is a pid file
//! under `run/mdadm/` and a `proc/<pid>/comm`. CPUs are `sys/devices/system/cpu/{possible,online}`;
//! NUMA nodes are `sys/devices/system/node/possible`
//! and `has_cpu` (a CPU-less memory node is only in the first; ids may be sparse, `0,8` as on
//! POWER), isolated CPUs
//! `sys/devices/system/cpu/isolated`. A SCSI disk's `device` link leads to its SCSI device (with
//! `scsi_disk/`); a virtio-blk disk's to its virtio device, and it reads rotational 1.
//!
//! This is test support, not part of the tool (a dev-dependency, never published): it panics on I/O
//! errors, and it knows nothing of mdtune's binary or of where the tests keep their roots.
//!
//! `devices` builds the block devices (NVMe, SCSI, virtio-blk, partitions, device-mapper), `md`
//! the arrays over them, `hosts` the demo and benchmark hosts; this file the root itself, its
//! CPUs and NUMA nodes.

mod devices;
mod hosts;
mod md;

pub use devices::NvmeQueues;
pub use hosts::{bench_host, demo_host};
pub use md::{MdSpec, Use};

use std::cell::Cell;
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A fake root directory being built. Device names map to their directory under `sys/`.
pub struct FakeRoot {
    pub dir: PathBuf,
    devices: HashMap<String, PathBuf>,
    pci_slot: u32,
    scsi_host: u32,
    /// The possible CPUs (`cpu/possible`), which every blk-mq map spreads over its queues.
    cpus: Cell<u32>,
    /// A kernel of 6.16 or later: redundant arrays have `md/sync_io_depth`.
    sync_io_depth: bool,
}

fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, format!("{content}\n")).unwrap();
}

/// The relative path from directory `from` to `to` (both absolute, without `..`).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..from.len() {
        rel.push("..");
    }
    for c in &to[common..] {
        rel.push(c);
    }
    rel
}

/// Creates `link` as a relative symlink to `target` (both absolute).
pub fn link(link: &Path, target: &Path) {
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(relative(link.parent().unwrap(), target), link).unwrap();
}

/// The kernel's dashed form of mdadm's colon uuid (1.x metadata).
pub fn kernel_uuid(mdadm: &str) -> String {
    let hex: String = mdadm.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl FakeRoot {
    /// An empty host: `proc/sys/dev/raid` with kernel defaults, `cpus` online CPUs, `run/`, and
    /// `proc/sys/kernel/osrelease` of a 6.12 kernel ([`FakeRoot::set_release`]).
    pub fn new(dir: &Path, cpus: u32) -> FakeRoot {
        fs::create_dir_all(dir.join("sys/block")).unwrap();
        fs::create_dir_all(dir.join("run")).unwrap();
        fs::create_dir_all(dir.join("etc")).unwrap();
        fs::create_dir_all(dir.join("dev")).unwrap();
        write(&dir.join("proc/sys/dev/raid/speed_limit_min"), "1000");
        write(&dir.join("proc/sys/dev/raid/speed_limit_max"), "200000");
        write(
            &dir.join("proc/sys/kernel/osrelease"),
            "6.12.57+deb13-cloud-amd64",
        );
        let root = FakeRoot {
            dir: dir.to_path_buf(),
            devices: HashMap::new(),
            pci_slot: 0,
            scsi_host: 0,
            cpus: Cell::new(cpus.max(1)),
            sync_io_depth: false,
        };
        root.set_cpus(cpus);
        root
    }

    /// The kernel's release as `uname -r` prints it (`proc/sys/kernel/osrelease`); `None`
    /// removes the file.
    pub fn set_release(&self, release: Option<&str>) {
        let path = self.dir.join("proc/sys/kernel/osrelease");
        match release {
            Some(r) => write(&path, r),
            None => {
                let _ = fs::remove_file(path);
            }
        }
    }

    /// Makes the host a kernel of 6.16 or later, which has the sync I/O depth (md.c
    /// `sync_io_depth_show`): `proc/sys/dev/raid/sync_io_depth` (default 32), and on every
    /// redundant array made after this `md/sync_io_depth`, `32 (system)`.
    pub fn with_sync_io_depth(&mut self) {
        write(&self.dir.join("proc/sys/dev/raid/sync_io_depth"), "32");
        self.sync_io_depth = true;
    }

    /// `cpus` CPUs, all possible and online (`cpu/possible`, `cpu/online`), none isolated, one
    /// NUMA node. Devices made afterwards spread these CPUs over their `mq/` entries.
    pub fn set_cpus(&self, cpus: u32) {
        let online = if cpus <= 1 {
            "0".to_string()
        } else {
            format!("0-{}", cpus - 1)
        };
        self.cpus.set(cpus.max(1));
        write(&self.dir.join("sys/devices/system/cpu/online"), &online);
        write(&self.dir.join("sys/devices/system/cpu/possible"), &online);
        // The kernel always shows cpu/isolated (an empty line when no CPU is isolated) and,
        // with NUMA, node/has_cpu next to node/possible.
        write(&self.dir.join("sys/devices/system/cpu/isolated"), "");
        write(&self.dir.join("sys/devices/system/node/possible"), "0");
        write(&self.dir.join("sys/devices/system/node/has_cpu"), "0");
    }

    /// `nodes` possible NUMA nodes (`0-<nodes-1>`); 0 removes the file (a kernel without NUMA).
    /// Every node has CPUs (`node/has_cpu` is the same list).
    pub fn set_nodes(&self, nodes: u32) {
        let node = self.dir.join("sys/devices/system/node");
        match nodes {
            0 => {
                let _ = fs::remove_file(node.join("possible"));
                let _ = fs::remove_file(node.join("has_cpu"));
            }
            1 => self.set_numa("0", Some("0")),
            n => {
                let list = format!("0-{}", n - 1);
                self.set_numa(&list, Some(&list));
            }
        }
    }

    /// NUMA nodes as the kernel lists them: `node/possible` and `node/has_cpu` (`None` removes
    /// it, as on kernels or roots without it). A node with memory and no CPUs (CXL memory,
    /// Optane PMem onlined as memory, HBM in flat mode, a CFMWS window since 5.17) is in
    /// `possible` but not in `has_cpu`.
    pub fn set_numa(&self, possible: &str, has_cpu: Option<&str>) {
        let node = self.dir.join("sys/devices/system/node");
        write(&node.join("possible"), possible);
        match has_cpu {
            Some(list) => write(&node.join("has_cpu"), list),
            None => {
                let _ = fs::remove_file(node.join("has_cpu"));
            }
        }
    }

    /// `cpu/isolated`: the CPUs `isolcpus=` takes out of the scheduler's domains, as the
    /// kernel lists them (`0-3,8`); `""` for none.
    pub fn set_isolated(&self, list: &str) {
        write(&self.dir.join("sys/devices/system/cpu/isolated"), list);
    }

    /// The kernel's mask for unbound work (`wq_unbound_cpumask`), as
    /// `devices/virtual/workqueue/cpumask` prints it: hex, in comma-separated 32-bit groups
    /// (`0000ffff,ffffffff`). isolcpus= takes CPUs out of it on every kernel, nohz_full= on some.
    pub fn set_unbound_cpumask(&self, hex: &str) {
        write(&self.dir.join("sys/devices/virtual/workqueue/cpumask"), hex);
    }

    /// The raid5 workqueue's own mask (`WQ_SYSFS`: `devices/virtual/workqueue/raid5wq/cpumask`,
    /// there once raid456 is loaded); it runs on its CPUs within the unbound mask.
    pub fn set_raid5wq_cpumask(&self, hex: &str) {
        write(
            &self
                .dir
                .join("sys/devices/virtual/workqueue/raid5wq/cpumask"),
            hex,
        );
    }

    /// An mdmon for `container`: `run/mdadm/<container>.pid` naming `pid`, whose
    /// `proc/<pid>/comm` is `comm` (`None`: the process is gone).
    pub fn mdmon(&self, container: &str, pid: u32, comm: Option<&str>) {
        write(
            &self.dir.join(format!("run/mdadm/{container}.pid")),
            &pid.to_string(),
        );
        let proc = self.dir.join(format!("proc/{pid}"));
        match comm {
            Some(c) => write(&proc.join("comm"), c),
            None => {
                let _ = fs::remove_dir_all(proc);
            }
        }
    }

    /// The directory of a device created earlier.
    pub fn device_dir(&self, name: &str) -> PathBuf {
        self.devices
            .get(name)
            .unwrap_or_else(|| panic!("no device {name}"))
            .clone()
    }

    /// Path of an md attribute file of array `md`.
    pub fn md_attr(&self, md: &str, attr: &str) -> PathBuf {
        self.device_dir(md).join("md").join(attr)
    }
}
