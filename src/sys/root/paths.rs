//! The host's named paths under the root: where md, the kernel, udev, mdadm and mdtune itself
//! keep what a run reads and writes (`sys/block/<array>/md/<attr>`, `proc/sys/dev/raid/`,
//! `etc/mdtune/`, `run/mdtune.lock`, ...). Each is built here once, from the root's real path;
//! how a path is then opened, and kept from leading out of the root, is `super`'s.

use super::Root;
use crate::md::SpeedLimit;
use std::path::PathBuf;

/// Under `sys/`: the CPU and NUMA node lists that `auto`'s ceiling is computed from.
pub(crate) const SYS_CPU: &str = "devices/system/cpu";
pub(crate) const SYS_NODE: &str = "devices/system/node";
/// Under `sys/`: the workqueues; `cpumask` is the kernel's mask for unbound work, and
/// `raid5wq/cpumask` the raid5 workqueue's own (`WQ_SYSFS`).
pub(crate) const SYS_WORKQUEUE: &str = "devices/virtual/workqueue";
/// Under the root: udev's `NAME -> ../mdX` links, and its `md-uuid-<uuid> -> ../../mdX` links.
pub(crate) const DEV_MD: &str = "dev/md";
pub(crate) const DEV_BY_ID: &str = "dev/disk/by-id";

/// The kernel's release, as `uname -r` prints it, under the root.
pub(crate) const OSRELEASE: &str = "proc/sys/kernel/osrelease";
/// The lock's file name under `run/`.
pub(crate) const LOCK_FILE: &str = "mdtune.lock";

impl Root {
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

    /// `var/lib/mdtune/`: what mdtune keeps across reboots that is not replayed (the checks'
    /// record).
    pub(crate) fn var_lib(&self) -> PathBuf {
        self.base.join("var/lib/mdtune")
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
}
