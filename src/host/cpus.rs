//! The CPUs and NUMA nodes that `auto`'s default ceiling comes from (docs/auto.md §3), read once
//! per run, system-wide, never per array: the online CPUs (`cpu/online`), those of them the raid5
//! workqueue may run on, and the nodes with CPUs (`node/has_cpu`) next to the possible ones, and
//! whether the possible node ids are sparse (`0,8`); also the possible CPUs (`cpu/possible`),
//! which every blk-mq map spreads over its queues, to tell poll queues apart.
//!
//! Where the kernel gives more than one mask, the one it applies to unbound work decides: the
//! raid5 workqueue is unbound, so it runs on the CPUs of `wq_unbound_cpumask`
//! (`devices/virtual/workqueue/cpumask`), within its own `raid5wq/cpumask` when the two share a
//! CPU (`wqattrs_actualize_cpumask`). `isolcpus=` takes CPUs out of that mask on every kernel;
//! `nohz_full=` on some (6.1 and 6.12) and not on others (7.x), so `cpu/nohz_full` alone cannot
//! tell. Where the workqueue mask is absent, the online CPUs that `cpu/isolated` does not list.

use crate::md::CpuSet;
use crate::sys::{self, Dir};

/// What the ceiling is computed from; `None` where the kernel does not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpus {
    /// `cpu/online`, counted.
    pub online: Option<u64>,
    /// The online CPUs open to the raid5 workqueue; `None`: no mask to tell (all online).
    pub unbound: Option<u64>,
    /// `node/has_cpu`, counted.
    pub nodes_with_cpus: Option<u64>,
    /// `node/possible`, counted.
    pub possible_nodes: Option<u64>,
    /// The highest id in `node/possible`: at least `possible_nodes`, the ids are sparse.
    pub highest_node: Option<u64>,
    /// `cpu/possible`, counted.
    pub possible: Option<u64>,
}

impl Cpus {
    /// The possible node ids, as `node/possible` lists them, when they are sparse: the highest
    /// id + 1 exceeds how many there are (`0,8`), so raid5 would index its worker groups past
    /// their end (see `crate::md::kernel::sparse_nodes`). `None` when they are dense or unknown.
    pub(crate) fn sparse_nodes(&self) -> Option<(u64, u64)> {
        let (count, highest) = (self.possible_nodes?, self.highest_node?);
        crate::md::kernel::sparse_nodes(count, highest).then_some((count, highest))
    }
}

/// A list (or, with `mask`, a mask) file in `dir`, parsed; `None` when absent or not what the
/// kernel prints.
fn set(dir: Option<&Dir>, file: &str, mask: bool) -> Option<CpuSet> {
    let text = dir?.read(file).ok()??;
    if mask {
        CpuSet::from_mask(&text)
    } else {
        CpuSet::from_list(&text)
    }
}

/// Reads the CPU and node facts under `sys/`: each directory is opened once.
pub(crate) fn read(sys: &Dir) -> Cpus {
    let open = |dir| sys.dir_under(&[dir]).ok().flatten();
    let cpu = open(sys::SYS_CPU);
    let online = set(cpu.as_ref(), "online", false);
    let unbound = online.as_ref().and_then(|online| {
        let wq = open(sys::SYS_WORKQUEUE);
        let Some(mut mask) = set(wq.as_ref(), "cpumask", true) else {
            let isolated = set(cpu.as_ref(), "isolated", false)?;
            return Some(online.minus(&isolated).len());
        };
        if let Some(own) = set(wq.as_ref(), "raid5wq/cpumask", true) {
            let both = mask.and(&own);
            if !both.is_empty() {
                mask = both;
            }
        }
        Some(online.and(&mask).len())
    });
    let node = open(sys::SYS_NODE);
    let possible_nodes = set(node.as_ref(), "possible", false);
    Cpus {
        online: online.map(|s| s.len()),
        unbound,
        nodes_with_cpus: set(node.as_ref(), "has_cpu", false).map(|s| s.len()),
        possible_nodes: possible_nodes.as_ref().map(CpuSet::len),
        highest_node: possible_nodes.as_ref().and_then(CpuSet::highest),
        possible: set(cpu.as_ref(), "possible", false).map(|s| s.len()),
    }
}
