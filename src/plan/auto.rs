//! How `auto` turns an array's members into a `group_thread_cnt` (docs/reference.md §2 and
//! docs/auto.md §3), and why, in one line with the numbers: the hardware queues of the counted
//! (active) members, combined by `min` (or `max`), 0 for one queue or fewer, else clamped to
//! `min..max`, where `max` defaults to the CPUs open to the raid5 workqueue per NUMA node with
//! CPUs ([`kernel::threads_per_node`]), never above the kernel's 8192. Pure: the queues and CPUs
//! come from `crate::host` through the inventory.

use crate::host::{Cpus, Member};
use crate::md::kernel;
use crate::spec::{AutoParams, Combine, MAX_THREADS};

/// What `auto` decided for an array, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Threads {
    /// The counted members' queues, combined.
    pub(crate) queues: u64,
    pub(crate) threads: u64,
    /// One line a person can check: the queues, how they were combined, the ceiling and where
    /// it came from (docs/reference.md §3).
    pub(crate) why: String,
}

/// `n` and the noun, singular or plural.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The default ceiling and how it was computed (`4 = 8 CPUs / 2 nodes with CPUs`), or `None`
/// when the online CPUs are unknown.
fn ceiling(cpus: &Cpus) -> Option<(u64, String)> {
    let online = cpus.online?;
    let usable = cpus.unbound.unwrap_or(online).min(online);
    let (nodes, which) = match (cpus.nodes_with_cpus, cpus.possible_nodes) {
        (Some(n), _) if n > 0 => (n, count(n, "node with CPUs", "nodes with CPUs")),
        (_, Some(n)) if n > 0 => (n, count(n, "possible node", "possible nodes")),
        _ => (1, "1 node".to_string()),
    };
    let cap = kernel::threads_per_node(usable, nodes);
    let cpus = if usable < online {
        format!(
            "{} ({online} online, {} isolated)",
            count(usable, "CPU", "CPUs"),
            online - usable
        )
    } else {
        count(online, "CPU", "CPUs")
    };
    Some((cap, format!("{cap} = {cpus} / {which}")))
}

/// The `auto` thread count for an array, or why it cannot be known.
///
/// Only counted (active) members take part. One queue or fewer gives 0 (a single-queue device
/// gains nothing from more threads); otherwise the combined count clamped to `min..max`, where
/// `max` defaults to [`ceiling`], and never above the kernel's 8192.
pub(crate) fn auto_threads(
    members: &[Member],
    params: &AutoParams,
    cpus: &Cpus,
) -> Result<Threads, String> {
    if members.is_empty() {
        return Err("the array has no members to count hardware queues on".into());
    }
    let counted: Vec<&Member> = members.iter().filter(|m| m.counted).collect();
    if counted.is_empty() {
        return Err("the array has no active members to count hardware queues on".into());
    }
    let mut counts = Vec::with_capacity(counted.len());
    for m in &counted {
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
    let (queues, how) = match params.combine {
        Combine::Min => (counts.iter().min(), "min"),
        Combine::Max => (counts.iter().max(), "max"),
    };
    let queues = queues.copied().unwrap_or(0);
    let mut why = format!(
        "{} ({how} over {})",
        count(queues, "hardware queue", "hardware queues"),
        count(counted.len() as u64, "member", "members")
    );
    if queues <= 1 {
        why.push_str(": one queue gains nothing from more threads, so 0 (the array's own thread)");
        return Ok(Threads {
            queues,
            threads: 0,
            why,
        });
    }
    let mut threads = queues;
    let max = match params.max {
        Some(max) => Some((max, format!("{max} = thread_policy.max"))),
        None => ceiling(cpus),
    };
    match max {
        Some((max, text)) if threads > max => {
            threads = max;
            why.push_str(&format!(", capped at {text}"));
        }
        Some((_, text)) => why.push_str(&format!(", within the cap {text}")),
        None => why.push_str(", no CPU cap (cpu/online unreadable)"),
    }
    if let Some(min) = params.min.filter(|&min| threads < min) {
        threads = min;
        why.push_str(&format!(", raised to thread_policy.min {min}"));
    }
    if threads > MAX_THREADS {
        threads = MAX_THREADS;
        why.push_str(&format!(", capped at the kernel's {MAX_THREADS}"));
    }
    Ok(Threads {
        queues,
        threads,
        why,
    })
}
