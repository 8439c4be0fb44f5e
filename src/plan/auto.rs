//! How `auto` turns an array's members into a `group_thread_cnt` (docs/reference.md §2 and
//! docs/auto.md): the hardware queues of the counted (active) members, combined by `min` (or
//! `max`), 0 for one queue or fewer, else clamped to `min..max`, where `max` defaults to the
//! online CPUs per possible NUMA node, never above the kernel's 8192. Pure: the queues come from
//! `crate::host` through the inventory.

use crate::host::Member;
use crate::md::kernel;
use crate::spec::{AutoParams, Combine, MAX_THREADS};

/// The CPUs the `auto` default ceiling is computed from.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cpus {
    pub(crate) online: Option<u64>,
    /// Possible NUMA nodes; `None` is one node.
    pub(crate) nodes: Option<u64>,
}

/// The `auto` thread count for an array: `(combined queues, threads)`, or why it cannot be known.
///
/// Only counted (active) members take part. One queue or fewer gives 0 (a single-queue device
/// gains nothing from more threads); otherwise the combined count clamped to `min..max`, where
/// `max` defaults to the online CPUs divided by the possible NUMA nodes (the kernel starts that
/// many workers on every node, [`kernel::threads_per_node`]), and never above the kernel's 8192.
pub(crate) fn auto_threads(
    members: &[Member],
    params: &AutoParams,
    cpus: Cpus,
) -> Result<(u64, u64), String> {
    if members.is_empty() {
        return Err("the array has no members to count hardware queues on".into());
    }
    let counted: Vec<&Member> = members.iter().filter(|m| m.counted).collect();
    if counted.is_empty() {
        return Err("the array has no active members to count hardware queues on".into());
    }
    let mut counts = Vec::with_capacity(counted.len());
    for m in counted {
        match m.hw_queues {
            Some(q) => counts.push(q),
            None => {
                return Err(format!(
                    "hardware queues unknown for member {}: {}",
                    m.name,
                    m.problem.as_deref().unwrap_or("not found")
                ))
            }
        }
    }
    let queues = match params.combine {
        Combine::Min => counts.iter().min(),
        Combine::Max => counts.iter().max(),
    }
    .copied()
    .unwrap_or(0);
    if queues <= 1 {
        return Ok((queues, 0));
    }
    let mut threads = queues;
    let per_node = cpus
        .online
        .map(|n| kernel::threads_per_node(n, cpus.nodes.unwrap_or(1)));
    if let Some(max) = params.max.or(per_node) {
        threads = threads.min(max);
    }
    if let Some(min) = params.min {
        threads = threads.max(min);
    }
    Ok((queues, threads.min(MAX_THREADS)))
}
