//! Block devices as the kernel lays them out under `sys/`: NVMe (plain, split queue maps,
//! native multipath over PCI or fabrics), SCSI disks under their host, virtio-blk, partitions,
//! and device-mapper devices (multipath with or without paths, linear), each linked both ways
//! through `slaves/` and `holders/`.

use super::{link, write, FakeRoot};
use std::fs;
use std::path::PathBuf;

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

impl FakeRoot {
    pub(crate) fn block_dir(&mut self, name: &str, dir: PathBuf, queues: Option<u32>) {
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

    pub(crate) fn stack(&self, upper: &str, lower: &str) {
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
}
