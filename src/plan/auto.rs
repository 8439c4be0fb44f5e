//! How `auto` turns an array's members into a `group_thread_cnt` (docs/reference.md §2 and
//! docs/auto.md §3), and why, in one line with the numbers: the hardware queues of the counted
//! (active) members, combined by `min` (or `max`), 0 for one queue or fewer, else clamped to
//! `min..max`, where `max` defaults to the CPUs open to the raid5 workqueue per NUMA node with
//! CPUs ([`kernel::threads_per_node`]), then to the workers the stripe cache in force after the
//! run lets run ([`kernel::workers_the_cache_runs`]), never above the kernel's 8192; and always
//! 0 where the possible NUMA node ids are sparse ([`kernel::sparse_nodes`]). Pure: the queues,
//! CPUs and the stripe cache come from `crate::host` through the inventory and from the plan.

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
    /// 0 because the possible node ids are sparse (the run warns once).
    pub(crate) sparse: bool,
}

/// The stripe cache an array has once the run is applied, which bounds the workers that can run
/// ([`kernel::workers_the_cache_runs`]), and what its memory costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cache {
    /// `stripe_cache_size` after the run (planned in this run, or the live one).
    pub(crate) size: u64,
    /// `stripe_cache_size` when the run starts.
    pub(crate) live: u64,
    /// `md/raid_disks`: a stripe holds a page of each.
    pub(crate) disks: Option<u64>,
    /// The kernel's page size in bytes; 0 when unknown.
    pub(crate) page: u64,
}

impl Cache {
    /// Whether this run sets it (to a value other than the live one).
    fn planned(&self) -> bool {
        self.size != self.live
    }

    /// `stripe_cache_size 4096 (planned in this run)`.
    fn named(&self, size: u64) -> String {
        let planned = if self.planned() && size == self.size {
            " (planned in this run)"
        } else {
            ""
        };
        format!("stripe_cache_size {size}{planned}")
    }

    /// What a cache of `size` costs, `4 KiB x 4 disks x 512 = 8 MiB`; `None` when the disks or
    /// the page size are unknown.
    fn memory(&self, size: u64) -> Option<String> {
        let disks = self.disks.filter(|&d| d > 0)?;
        (self.page > 0).then(|| {
            format!(
                "{} x {disks} disks x {size} = {}",
                bytes(self.page),
                bytes(self.page.saturating_mul(disks).saturating_mul(size))
            )
        })
    }
}

/// `4 KiB`, `64 KiB`, `8 MiB`, `1.5 GiB`.
fn bytes(n: u64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in units {
        if n >= size {
            // One decimal, rounded down, in integers (float formatting would add to the binary).
            let tenths = n / (size / 10);
            return if n % size == 0 {
                format!("{} {unit}", n / size)
            } else {
                format!("{}.{} {unit}", tenths / 10, tenths % 10)
            };
        }
    }
    format!("{n} bytes")
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
/// `max` defaults to [`ceiling`], then to what the stripe cache `cache` lets run, and never above
/// the kernel's 8192. Where the possible node ids are sparse, 0 whatever the queues.
pub(crate) fn auto_threads(
    members: &[Member],
    params: &AutoParams,
    cpus: &Cpus,
    cache: Option<&Cache>,
) -> Result<Threads, String> {
    let (queues, mut why) = combined(members, params)?;
    if let Some((nodes, highest)) = cpus.sparse_nodes() {
        why.push_str(&format!(
            ": 0, since the possible NUMA node ids are sparse ({}, the highest id {highest}): \
             {}",
            count(nodes, "possible node", "possible nodes"),
            kernel::SPARSE_NODES_WHY
        ));
        return Ok(Threads {
            queues,
            threads: 0,
            why,
            sparse: true,
        });
    }
    if queues <= 1 {
        why.push_str(": one queue gains nothing from more threads, so 0 (the array's own thread)");
        return Ok(Threads {
            queues,
            threads: 0,
            why,
            sparse: false,
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
    if let Some(cache) = cache {
        threads = cache_bound(threads, cache, &mut why);
    }
    if threads > MAX_THREADS {
        threads = MAX_THREADS;
        why.push_str(&format!(", capped at the kernel's {MAX_THREADS}"));
    }
    Ok(Threads {
        queues,
        threads,
        why,
        sparse: false,
    })
}

/// The counted members' queues combined as `params` says, and the start of `why`
/// (`8 hardware queues (min over 4 members)`); why they cannot be known otherwise.
fn combined(members: &[Member], params: &AutoParams) -> Result<(u64, String), String> {
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
    let why = format!(
        "{} ({how} over {})",
        count(queues, "hardware queue", "hardware queues"),
        count(counted.len() as u64, "member", "members")
    );
    Ok((queues, why))
}

/// `threads` bounded by the workers `cache` lets run; `why` says so in numbers when the cache is
/// the limit (with the cache that would lift it and its memory), or when this run's cache lifts
/// a limit the live one would have set.
fn cache_bound(threads: u64, cache: &Cache, why: &mut String) -> u64 {
    let runs = kernel::workers_the_cache_runs(cache.size);
    let per = kernel::STRIPES_PER_WORKER;
    if threads > runs {
        // The cache that would let them all run, or the largest the kernel takes.
        let lift = threads.saturating_mul(per).min(kernel::STRIPE_CACHE_MAX);
        let (largest, lets) = if lift == kernel::STRIPE_CACHE_MAX {
            (
                "the largest ",
                kernel::workers_the_cache_runs(lift).min(threads),
            )
        } else {
            ("", threads)
        };
        let cost = cache
            .memory(lift)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        why.push_str(&format!(
            ", capped at {runs} = {} / {per} stripes per worker (raid5_wakeup_stripe_thread wakes \
             a worker per {per} queued stripes); {largest}stripe_cache_size {lift}{cost} would \
             let {lets} run",
            cache.named(cache.size)
        ));
        return runs;
    }
    if cache.planned() && threads > kernel::workers_the_cache_runs(cache.live) {
        why.push_str(&format!(
            ", within the {runs} workers {} lets run",
            cache.named(cache.size)
        ));
    }
    threads
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn memory_reads_in_the_largest_unit_with_one_decimal_at_most() {
        for (n, said) in [
            (4096, "4 KiB"),
            (65536, "64 KiB"),
            (8 << 20, "8 MiB"),
            (1536 << 20, "1.5 GiB"),
            (100, "100 bytes"),
        ] {
            assert_eq!(bytes(n), said, "{n}");
        }
    }
}
