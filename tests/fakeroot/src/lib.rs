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

/// How an NVMe controller splits its I/O queues, as the kernel logs it (`nvme nvme0: 2/4/2
/// default/read/poll queues`): one blk-mq map each (`nvme_pci_map_queues`,
/// `nvmf_map_queues`), laid out in that order in `mq/`, each spreading every possible CPU over
/// its queues. `nvme.write_queues` makes the read queues, `nvme.poll_queues` (fabrics:
/// `nr_poll_queues`) the poll queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvmeQueues {
    pub default: u32,
    pub read: u32,
    pub poll: u32,
}

impl NvmeQueues {
    /// Default queues only (no `write_queues`, no `poll_queues`: the usual host).
    pub fn plain(default: u32) -> NvmeQueues {
        NvmeQueues {
            default,
            read: 0,
            poll: 0,
        }
    }
}

/// How an md array looks; `Default` is a clean, idle raid5 with kernel defaults.
#[derive(Clone, Debug)]
pub struct MdSpec {
    pub level: String,
    pub uuid: String,
    pub array_state: String,
    pub metadata_version: String,
    pub sync_action: String,
    pub sync_completed: String,
    pub sync_speed: String,
    /// udev's `/dev/md/<devname>` link, if any.
    pub devname: Option<String>,
    /// Give `md/uuid` (kernels since about 5.9); older kernels only have udev's by-id link.
    pub kernel_uuid_file: bool,
    /// `md/uuid` reads all zeros, as on external-metadata (IMSM/DDF) arrays.
    pub zero_kernel_uuid: bool,
    /// `md/reshape_position`: `none`, or the sector a reshape has reached.
    pub reshape_position: String,
}

impl Default for MdSpec {
    fn default() -> Self {
        MdSpec {
            level: "raid5".into(),
            uuid: "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90".into(),
            array_state: "clean".into(),
            metadata_version: "1.2".into(),
            sync_action: "idle".into(),
            sync_completed: "none".into(),
            sync_speed: "none".into(),
            devname: None,
            kernel_uuid_file: true,
            zero_kernel_uuid: false,
            reshape_position: "none".into(),
        }
    }
}

impl MdSpec {
    pub fn level(level: &str, uuid_seed: u32) -> MdSpec {
        MdSpec {
            level: level.into(),
            uuid: format!("{uuid_seed:08x}:e5f60718:293a4b5c:6d7e8f90"),
            ..MdSpec::default()
        }
    }
    pub fn devname(mut self, name: &str) -> MdSpec {
        self.devname = Some(name.into());
        self
    }
    /// A raid5 member array `index` of the IMSM container `container` (Intel VROC): metadata
    /// `external:/<container>/<index>`, an all-zero `md/uuid`, the real uuid on udev's link.
    pub fn imsm_member(container: &str, index: u32, uuid_seed: u32) -> MdSpec {
        MdSpec {
            metadata_version: format!("external:/{container}/{index}"),
            zero_kernel_uuid: true,
            ..MdSpec::level("raid5", uuid_seed)
        }
    }
    /// An IMSM container: inactive forever, no level, no md/uuid.
    pub fn imsm_container(uuid_seed: u32) -> MdSpec {
        MdSpec {
            array_state: "inactive".into(),
            metadata_version: "external:imsm".into(),
            kernel_uuid_file: false,
            ..MdSpec::level("", uuid_seed)
        }
    }
    /// A raid5 in the middle of a reshape (`mdadm --grow`).
    pub fn reshaping(uuid_seed: u32) -> MdSpec {
        MdSpec {
            sync_action: "reshape".into(),
            sync_completed: "524288 / 4194304".into(),
            sync_speed: "52000".into(),
            reshape_position: "1048576".into(),
            ..MdSpec::level("raid5", uuid_seed)
        }
    }
}

/// How md uses one member, as `md/dev-<member>/state` and `slot` show it (md.c `state_show`,
/// `slot_show`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// `in_sync` in the next data slot.
    Active,
    /// `spare` but in the next data slot: recovery onto it is running.
    Rebuilding,
    /// `spare`, slot `none`.
    Spare,
    /// `faulty`, slot `none` (after `mdadm --fail`, before `--remove`).
    Faulty,
    /// `journal`, slot `journal` (`mdadm --write-journal`).
    Journal,
    /// In sync in the next data slot with bad blocks md has not acknowledged yet (native
    /// metadata, before the superblock records them): `state_show` prints `faulty,in_sync,blocked`.
    BadBlocks,
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
    /// An empty host: `proc/sys/dev/raid` with kernel defaults, `cpus` online CPUs, `run/`.
    pub fn new(dir: &Path, cpus: u32) -> FakeRoot {
        fs::create_dir_all(dir.join("sys/block")).unwrap();
        fs::create_dir_all(dir.join("run")).unwrap();
        fs::create_dir_all(dir.join("etc")).unwrap();
        fs::create_dir_all(dir.join("dev")).unwrap();
        write(&dir.join("proc/sys/dev/raid/speed_limit_min"), "1000");
        write(&dir.join("proc/sys/dev/raid/speed_limit_max"), "200000");
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

    fn block_dir(&mut self, name: &str, dir: PathBuf, queues: Option<u32>) {
        self.block_dir_split(name, dir, queues.map(NvmeQueues::plain));
    }

    /// A block device's directory. With `queues`, blk-mq's `mq/`: one `mq/<N>` per hardware
    /// context, the maps one after the other (default, read, poll: every driver lays them out
    /// so), each map giving every possible CPU to one of its contexts, round robin. Each
    /// `mq/<N>` holds `cpu_list`, `nr_tags`, `nr_reserved_tags` and a directory `cpu<K>` for
    /// every CPU mapped to it (`blk_mq_register_hctx` adds each software context there, in
    /// every map; its link count is 2 + those CPUs). `queue/io_poll` reads 1 when the poll map
    /// has queues (`queue_poll_show`).
    fn block_dir_split(&mut self, name: &str, dir: PathBuf, queues: Option<NvmeQueues>) {
        fs::create_dir_all(dir.join("holders")).unwrap();
        fs::create_dir_all(dir.join("slaves")).unwrap();
        write(&dir.join("size"), "134217728");
        write(&dir.join("ro"), "0");
        write(&dir.join("dev"), &format!("259:{}", self.devices.len()));
        // Whole devices have queue/; partitions share their disk's.
        if !dir.join("partition").exists() {
            write(&dir.join("queue/rotational"), "0");
            let polled = queues.is_some_and(|q| q.poll > 0);
            write(&dir.join("queue/io_poll"), if polled { "1" } else { "0" });
        }
        if let Some(q) = queues {
            let cpus = self.cpus.get();
            let mut first = 0;
            for group in [q.default, q.read, q.poll].into_iter().filter(|&g| g > 0) {
                for n in 0..group {
                    let mq = dir.join("mq").join((first + n).to_string());
                    let mine: Vec<u32> = (0..cpus).filter(|c| c % group == n).collect();
                    let list: Vec<String> = mine.iter().map(u32::to_string).collect();
                    write(&mq.join("cpu_list"), &list.join(", "));
                    write(&mq.join("nr_tags"), "1023");
                    write(&mq.join("nr_reserved_tags"), "0");
                    for c in mine {
                        fs::create_dir_all(mq.join(format!("cpu{c}"))).unwrap();
                    }
                }
                first += group;
            }
        }
        link(&self.dir.join("sys/block").join(name), &dir);
        self.devices.insert(name.to_string(), dir);
    }

    fn next_pci(&mut self) -> PathBuf {
        self.pci_slot += 1;
        let (bus, dev) = (self.pci_slot / 32, self.pci_slot % 32);
        self.dir
            .join(format!("sys/devices/pci0000:00/0000:{bus:02x}:{dev:02x}.0"))
    }

    /// A single-path NVMe namespace `nvme<ctrl>n1` with `queues` hardware queues.
    pub fn nvme(&mut self, ctrl: u32, queues: u32) -> String {
        self.nvme_split(ctrl, NvmeQueues::plain(queues))
    }

    /// A single-path PCIe NVMe namespace `nvme<ctrl>n1` whose controller splits its queues as
    /// `q` says (`nvme.write_queues`, `nvme.poll_queues`).
    pub fn nvme_split(&mut self, ctrl: u32, q: NvmeQueues) -> String {
        let name = format!("nvme{ctrl}n1");
        let dir = self.next_pci().join(format!("nvme/nvme{ctrl}")).join(&name);
        self.block_dir_split(&name, dir, Some(q));
        name
    }

    /// An NVMe native-multipath namespace: the head `nvme<subsys>n1` has no `mq/`; each path
    /// `nvme<subsys>c<ctrl>n1` (hidden, but listed in `/sys/block`) has its own queues.
    pub fn nvme_multipath(&mut self, subsys: u32, paths: &[(u32, u32)]) -> String {
        let paths: Vec<(u32, NvmeQueues)> = paths
            .iter()
            .map(|&(ctrl, q)| (ctrl, NvmeQueues::plain(q)))
            .collect();
        self.nvme_multipath_split(subsys, &paths, false)
    }

    /// An NVMe native-multipath namespace whose path controllers split their queues as given.
    /// With `fabrics`, the controllers are NVMe over fabrics (TCP): they sit under
    /// `devices/virtual/nvme-fabrics/ctl/nvme<ctrl>` with `transport` `tcp`, and their poll
    /// queues come from `nvme connect --nr-poll-queues`.
    pub fn nvme_multipath_split(
        &mut self,
        subsys: u32,
        paths: &[(u32, NvmeQueues)],
        fabrics: bool,
    ) -> String {
        let head = format!("nvme{subsys}n1");
        let sub = self.dir.join(format!(
            "sys/devices/virtual/nvme-subsystem/nvme-subsys{subsys}"
        ));
        self.block_dir(&head, sub.join(&head), None);
        for &(ctrl, queues) in paths {
            let path = format!("nvme{subsys}c{ctrl}n1");
            let ctrl_dir = if fabrics {
                let c = self
                    .dir
                    .join(format!("sys/devices/virtual/nvme-fabrics/ctl/nvme{ctrl}"));
                write(&c.join("transport"), "tcp");
                c
            } else {
                self.next_pci().join(format!("nvme/nvme{ctrl}"))
            };
            let dir = ctrl_dir.join(&path);
            write(&dir.join("hidden"), "1");
            self.block_dir_split(&path, dir, Some(queues));
            link(&sub.join(format!("nvme{ctrl}")), &ctrl_dir);
        }
        head
    }

    /// A SCSI disk (`sdX`) behind an AHCI or SAS host, with `queues` blk-mq queues.
    pub fn scsi(&mut self, name: &str, queues: u32) -> String {
        let host = self.scsi_host;
        self.scsi_host += 1;
        let dir = self.next_pci().join(format!(
            "ata{}/host{host}/target{host}:0:0/{host}:0:0:0/block/{name}",
            host + 1
        ));
        self.block_dir(name, dir, Some(queues));
        // The disk's `device` is its SCSI device (`H:C:T:L`), which has `scsi_disk/` and sits
        // on the scsi bus.
        let sdev = self
            .device_dir(name)
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let hctl = format!("{host}:0:0:0");
        link(&self.device_dir(name).join("device"), &sdev);
        // scsi_disk/H:C:T:L holds the sd driver's attributes (a file, so that the directory
        // survives in git: the committed demo host has no empty directories).
        write(
            &sdev.join("scsi_disk").join(&hctl).join("cache_type"),
            "write back",
        );
        link(&sdev.join("subsystem"), &self.dir.join("sys/bus/scsi"));
        write(&sdev.join("vendor"), "ATA");
        name.to_string()
    }

    /// A virtio-blk disk `vdX` with `queues` virtqueues (`virtblk_probe`: one hardware queue
    /// per virtqueue, `virtio-blk-pci,num-queues=N`). virtio-blk reads `queue/rotational` 1
    /// whatever backs it; its `device` is the virtio device (`virtioN`, on the virtio bus,
    /// driver `virtio_blk`) under its PCI function, and there is no SCSI device.
    pub fn virtio_blk(&mut self, name: &str, queues: u32) -> String {
        let n = self.pci_slot;
        let vdev = self.next_pci().join(format!("virtio{n}"));
        write(&vdev.join("device"), "0x0002");
        write(&vdev.join("vendor"), "0x1af4");
        link(&vdev.join("subsystem"), &self.dir.join("sys/bus/virtio"));
        link(
            &vdev.join("driver"),
            &self.dir.join("sys/bus/virtio/drivers/virtio_blk"),
        );
        self.block_dir(name, vdev.join("block").join(name), Some(queues));
        write(&self.device_dir(name).join("queue/rotational"), "1");
        link(&self.device_dir(name).join("device"), &vdev);
        name.to_string()
    }

    /// A hard disk (`queue/rotational` 1) behind a shared-tag SAS HBA (mpt3sas, megaraid_sas,
    /// smartpqi, virtio-scsi): `mq/` shows the host's `host_queues`, which say nothing about it.
    pub fn hdd(&mut self, name: &str, host_queues: u32) -> String {
        self.scsi(name, host_queues);
        write(&self.device_dir(name).join("queue/rotational"), "1");
        name.to_string()
    }

    /// Partition `n` of `disk`: a subdirectory of the disk with a `partition` file, no `mq/`.
    pub fn partition(&mut self, disk: &str, n: u32) -> String {
        let sep = if disk.ends_with(|c: char| c.is_ascii_digit()) {
            "p"
        } else {
            ""
        };
        let name = format!("{disk}{sep}{n}");
        let dir = self.device_dir(disk).join(&name);
        write(&dir.join("partition"), &n.to_string());
        write(&dir.join("start"), "2048");
        self.block_dir(&name, dir, None);
        name
    }

    fn stack(&self, upper: &str, lower: &str) {
        let (up, low) = (self.device_dir(upper), self.device_dir(lower));
        link(&up.join("slaves").join(lower), &low);
        link(&low.join("holders").join(upper), &up);
    }

    /// Request-based dm-multipath `dm-<n>` over `paths`: `mq/0` of its own (meaningless), the
    /// paths in `slaves/`.
    pub fn dm_multipath(&mut self, n: u32, paths: &[&str]) -> String {
        let name = format!("dm-{n}");
        let dir = self.dir.join("sys/devices/virtual/block").join(&name);
        write(&dir.join("dm/name"), &format!("mpath{n}"));
        write(&dir.join("dm/uuid"), &format!("mpath-36000c29{n:08x}"));
        self.block_dir(&name, dir, Some(1));
        for p in paths {
            self.stack(&name, p);
        }
        name
    }

    /// A request-based dm-multipath map `dm-<n>` whose paths are all gone (a SAN or NVMe-oF
    /// outage with `queue_if_no_path`, or a table with no path groups): it keeps its own
    /// `mq/0` (`dm_mod.dm_mq_nr_hw_queues`, not hardware) and its `slaves/` is empty.
    pub fn dm_multipath_no_paths(&mut self, n: u32) -> String {
        self.dm_multipath(n, &[])
    }

    /// A bio-based device-mapper device (LVM linear, dm-crypt): no `mq/`, lower devices in
    /// `slaves/`.
    pub fn dm_linear(&mut self, n: u32, lower: &[&str]) -> String {
        let name = format!("dm-{n}");
        let dir = self.dir.join("sys/devices/virtual/block").join(&name);
        write(&dir.join("dm/name"), &format!("vg-lv{n}"));
        self.block_dir(&name, dir, None);
        for l in lower {
            self.stack(&name, l);
        }
        name
    }

    /// An md array `name` over `members`, all active (members of an inactive array are spares,
    /// as md shows them before it runs), laid out as the kernel shows an array of `spec.level`.
    pub fn md(&mut self, name: &str, spec: &MdSpec, members: &[&str]) -> String {
        let u = if spec.array_state == "inactive" {
            Use::Spare
        } else {
            Use::Active
        };
        let roles: Vec<(&str, Use)> = members.iter().map(|m| (*m, u)).collect();
        self.md_with(name, spec, &roles)
    }

    /// An md array `name` whose members have the given uses: data members take slots 0, 1, ...
    /// in order; spares and faulty members show slot `none`, the journal slot `journal`.
    pub fn md_with(&mut self, name: &str, spec: &MdSpec, members: &[(&str, Use)]) -> String {
        let dir = self.dir.join("sys/devices/virtual/block").join(name);
        self.block_dir(name, dir.clone(), None);
        let md = dir.join("md");
        let level = spec.level.as_str();
        let active = spec.array_state != "inactive";
        let raid456 = active && matches!(level, "raid4" | "raid5" | "raid6");
        let redundant = active && (raid456 || matches!(level, "raid1" | "raid10"));
        // mdadm's defaults: left-symmetric (2) for raid5/6, near 2 copies (0x102) for raid10.
        let layout = if level == "raid10" { "258" } else { "2" };
        let files: &[(&str, &str)] = &[
            ("level", level),
            ("array_state", &spec.array_state),
            ("metadata_version", &spec.metadata_version),
            ("chunk_size", "524288"),
            ("layout", layout),
            ("component_size", "65536"),
            ("array_size", "default"),
            ("consistency_policy", if active { "resync" } else { "none" }),
            ("safe_mode_delay", "0.204"),
        ];
        for (f, v) in files {
            write(&md.join(f), v);
        }
        let data = members
            .iter()
            .filter(|(_, u)| matches!(u, Use::Active | Use::Rebuilding | Use::BadBlocks))
            .count();
        // A container's (inactive) members are all spares; raid_disks still counts them.
        let disks = if active { data } else { members.len() };
        write(&md.join("raid_disks"), &disks.to_string());
        write(&md.join("reshape_position"), &spec.reshape_position);
        if spec.zero_kernel_uuid {
            write(&md.join("uuid"), "00000000-0000-0000-0000-000000000000");
        } else if spec.kernel_uuid_file {
            write(&md.join("uuid"), &kernel_uuid(&spec.uuid));
        }
        if redundant {
            for (f, v) in [
                ("sync_action", spec.sync_action.as_str()),
                ("last_sync_action", "none"),
                ("sync_speed_min", "1000 (system)"),
                ("sync_speed_max", "200000 (system)"),
                ("sync_force_parallel", "0"),
                ("sync_completed", spec.sync_completed.as_str()),
                ("sync_speed", spec.sync_speed.as_str()),
                ("sync_min", "0"),
                ("sync_max", "max"),
                ("degraded", "0"),
                ("mismatch_cnt", "0"),
            ] {
                write(&md.join(f), v);
            }
            if self.sync_io_depth {
                write(&md.join("sync_io_depth"), "32 (system)");
            }
        }
        if raid456 {
            for (f, v) in [
                ("group_thread_cnt", "0"),
                ("stripe_cache_size", "256"),
                ("stripe_cache_active", "0"),
                ("preread_bypass_threshold", "1"),
                ("skip_copy", "0"),
                ("rmw_level", "1"),
                ("stripe_size", "4096"),
                ("ppl_write_hint", "0"),
            ] {
                write(&md.join(f), v);
            }
        }
        for &(m, u) in members {
            self.add_member(name, m, u);
        }
        let dev = self.dir.join("dev");
        if let Some(devname) = &spec.devname {
            link(&dev.join("md").join(devname), &dev.join(name));
        }
        link(
            &dev.join("disk/by-id")
                .join(format!("md-uuid-{}", spec.uuid)),
            &dev.join(name),
        );
        write(&dev.join(name), "");
        name.to_string()
    }

    /// Adds `member` to array `md` with use `u` (`mdadm --add`): data members take the next
    /// free slot (and an `rdN` link); spares and faulty members show slot `none`, the journal
    /// slot `journal`.
    pub fn add_member(&mut self, md: &str, member: &str, u: Use) {
        self.stack(md, member);
        let md_dir = self.device_dir(md).join("md");
        let dev = md_dir.join(format!("dev-{member}"));
        link(&dev.join("block"), &self.device_dir(member));
        let slot = match u {
            Use::Active | Use::Rebuilding | Use::BadBlocks => {
                let n = (0..)
                    .find(|n| fs::symlink_metadata(md_dir.join(format!("rd{n}"))).is_err())
                    .unwrap_or(0);
                link(&md_dir.join(format!("rd{n}")), &dev);
                n.to_string()
            }
            Use::Spare | Use::Faulty => "none".to_string(),
            Use::Journal => "journal".to_string(),
        };
        let state = match u {
            Use::Active => "in_sync",
            Use::Rebuilding | Use::Spare => "spare",
            Use::Faulty => "faulty",
            Use::Journal => "journal",
            Use::BadBlocks => "faulty,in_sync,blocked",
        };
        write(&dev.join("state"), state);
        write(&dev.join("slot"), &slot);
    }

    /// Reads an md attribute the way a test asserts on it (trimmed).
    pub fn read_md(&self, md: &str, attr: &str) -> String {
        fs::read_to_string(self.md_attr(md, attr))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Sets an md attribute, as the kernel would show it.
    pub fn set_md(&self, md: &str, attr: &str, value: &str) {
        write(&self.md_attr(md, attr), value);
    }
}

/// The bundled demo host (`examples/demo-host`): one array of every layout the tool handles.
pub fn demo_host(dir: &Path) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 32);
    // md0: SAP HANA data, raid5 over partitions of four 8-queue NVMe drives. auto -> 8.
    let parts: Vec<String> = (0..4)
        .map(|c| {
            let d = r.nvme(c, 8);
            r.partition(&d, 1)
        })
        .collect();
    let p: Vec<&str> = parts.iter().map(String::as_str).collect();
    r.md(
        "md0",
        &MdSpec::level("raid5", 0xa1b2c3d4).devname("hana_data"),
        &p,
    );
    // md1: SAP HANA log, raid10 over four NVMe multipath namespaces, mid-resync.
    let heads: Vec<String> = (4..8)
        .map(|s| r.nvme_multipath(s, &[(s, 4), (s + 10, 4)]))
        .collect();
    let h: Vec<&str> = heads.iter().map(String::as_str).collect();
    let mut log = MdSpec::level("raid10", 0xb2c3d4e5).devname("hana_log");
    log.sync_action = "resync".into();
    log.sync_completed = "1048576 / 4194304".into();
    log.sync_speed = "187000".into();
    r.md("md1", &log, &h);
    // md2: raid6 over dm-multipath devices, each over the two 16-queue controllers of a
    // dual-port NVMe drive (nvme_core.multipath=N, dm-multipath as on RHEL 8). auto -> 16.
    let mpaths: Vec<String> = (0..4)
        .map(|i| {
            let a = r.nvme(20 + 2 * i, 16);
            let b = r.nvme(21 + 2 * i, 16);
            r.dm_multipath(i, &[&a, &b])
        })
        .collect();
    let m: Vec<&str> = mpaths.iter().map(String::as_str).collect();
    r.md(
        "md2",
        &MdSpec::level("raid6", 0xc3d4e5f6).devname("archive"),
        &m,
    );
    // md3: raid5 over single-queue SATA disks. auto -> 0 (one thread gains nothing more).
    let sata: Vec<String> = ["sdi", "sdj", "sdk"].iter().map(|n| r.scsi(n, 1)).collect();
    let s: Vec<&str> = sata.iter().map(String::as_str).collect();
    r.md(
        "md3",
        &MdSpec::level("raid5", 0xd4e5f607).devname("scratch"),
        &s,
    );
    // md126: an IMSM container, inactive forever, no level.
    let imsm: Vec<String> = ["sdl", "sdm"].iter().map(|n| r.scsi(n, 1)).collect();
    let mut container = MdSpec::level("", 0xe5f60718);
    container.array_state = "inactive".into();
    container.metadata_version = "external:imsm".into();
    container.kernel_uuid_file = false;
    let i: Vec<&str> = imsm.iter().map(String::as_str).collect();
    r.md("md126", &container, &i);
    // md0 also has a SATA hot spare: reported with its role, not counted (it would make auto 0).
    let spare = r.scsi("sdn", 1);
    r.add_member("md0", &spare, Use::Spare);
    r
}

/// A benchmark host: `arrays` raid5 arrays, each over `drives` NVMe drives of `queues` queues.
pub fn bench_host(dir: &Path, arrays: u32, drives: u32, queues: u32) -> FakeRoot {
    let mut r = FakeRoot::new(dir, 64);
    for a in 0..arrays {
        let members: Vec<String> = (0..drives)
            .map(|d| r.nvme(a * drives + d, queues))
            .collect();
        let m: Vec<&str> = members.iter().map(String::as_str).collect();
        r.md(
            &format!("md{a}"),
            &MdSpec::level("raid5", 0x1000_0000 + a).devname(&format!("data{a}")),
            &m,
        );
    }
    r
}
