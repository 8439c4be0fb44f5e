//! The plan: for every selected array and every managed setting, the value in force, the value
//! wanted and where the wish came from. Pure: it reads a [`Spec`] and an [`Inventory`] and touches
//! nothing, so every rule of the contract about selection, precedence, skipping and the `auto`
//! thread policy is tested here without a filesystem.
//!
//! Rules applied here (docs/reference.md §2): entries select arrays by kernel name, glob, mdadm
//! name or uuid; a later entry overrides an earlier one per setting; `thread_policy` fills in
//! `group_thread_cnt` where no entry set it; a setting the array's level lacks is skipped when it
//! came from a glob or the policy, and is an error when an exact entry asked for it. An array that
//! could not be read is skipped whole, with a warning. What must wait (a reshape, a missing mdmon)
//! is planned but held back: see [`super::hold`]. The `group_thread_cnt` that `auto` decides is
//! bounded by the stripe cache in force after the run (the one this run sets, unless it is held
//! back); on a host whose possible NUMA node ids are sparse, any value above 0 that the input asks
//! for is refused (docs/auto.md §3).

use super::auto::{auto_threads, Cache};
use super::boost::plan_boost;
use super::hold;
use super::model::{ArrayPlan, Change, LimitChange, Plan, PlanError, Skip, Source};
use crate::host::{Array, Inventory};
use crate::md::{kernel, Attr, Value};
use crate::spec::{AutoParams, Boost, Entry, NameSelector, Spec, Want};
use std::collections::BTreeMap;

/// What an array should get for one setting, and whether the entry that asked named it exactly.
#[derive(Clone, Copy)]
struct Wish {
    want: Want,
    source: Source,
    exact: bool,
}

/// Computes the plan. Errors are the input's fault on this host: nothing has been written.
pub fn plan(spec: &Spec, inv: &Inventory) -> Result<Plan, PlanError> {
    let mut plan = Plan::default();
    // Selected arrays (by inventory index) and what each entry wished for them, later entries last.
    let mut wishes: BTreeMap<usize, BTreeMap<Attr, Wish>> = BTreeMap::new();
    // Each array's sync_boost: the later entry's, whole.
    let mut boosts: BTreeMap<usize, (&Boost, usize, bool)> = BTreeMap::new();
    for entry in &spec.arrays {
        let matched = match select(entry, inv, &mut plan.warnings) {
            // Under udev only one array is read: entries naming others are not errors.
            Err(PlanError::NoMatch { .. }) if spec.only.is_some() => Vec::new(),
            other => other?,
        };
        for i in matched {
            if let Some(b) = &entry.boost {
                boosts.insert(i, (b, entry.index, entry.is_exact()));
            }
            let w = wishes.entry(i).or_default();
            for (&attr, &want) in &entry.settings {
                w.insert(
                    attr,
                    Wish {
                        want,
                        source: Source::Entry(entry.index),
                        exact: entry.is_exact(),
                    },
                );
            }
        }
    }
    for (i, mut wish) in wishes {
        let array = &inv.arrays[i];
        wish.entry(Attr::GroupThreadCnt).or_insert(Wish {
            want: spec.thread_policy.want,
            source: Source::ThreadPolicy,
            exact: false,
        });
        // An entry's "auto" takes min/max/combine from the thread policy object too.
        let auto = &spec.thread_policy.auto;
        let mut ap = plan_array(i, array, &wish, auto, inv, &mut plan.warnings)?;
        if let Some(&(b, index, exact)) = boosts.get(&i) {
            plan_boost(array, &mut ap, b, index, exact)?;
        }
        plan.arrays.push(ap);
    }
    for (&limit, &after) in &spec.speed_limits {
        let before = *inv.speed_limits.get(&limit).ok_or(PlanError::NoSuchLimit {
            limit: limit.name(),
            why: if limit.always_there() {
                "the md module is not loaded"
            } else {
                "md has it from Linux 6.16"
            },
        })?;
        plan.limits.push(LimitChange {
            limit,
            before,
            after: Value::Int(after),
        });
    }
    Ok(plan)
}

/// The arrays an entry selects, as inventory indices.
fn select(
    entry: &Entry,
    inv: &Inventory,
    warnings: &mut Vec<String>,
) -> Result<Vec<usize>, PlanError> {
    let by_name = |a: &Array| match &entry.name {
        None => true,
        Some(NameSelector::Glob(p)) => p.matches(&a.name),
        Some(NameSelector::Exact(n)) => {
            a.name == *n || (!inv.arrays.iter().any(|b| b.name == *n) && a.devnames.contains(n))
        }
        Some(NameSelector::DevMd(n)) => a.devnames.contains(n),
    };
    let by_uuid = |a: &Array| entry.uuid.is_none() || a.uuid == entry.uuid;
    let matched: Vec<usize> = (0..inv.arrays.len())
        .filter(|&i| by_name(&inv.arrays[i]) && by_uuid(&inv.arrays[i]))
        .collect();
    if matched.is_empty() {
        let key = format!("arrays[{}]", entry.index);
        let (what, value) = match (&entry.name, &entry.uuid) {
            (Some(NameSelector::Glob(p)), None) => {
                warnings.push(format!("{key}.name: glob \"{p}\" matches no md array"));
                return Ok(matched);
            }
            // A uuid is exact even beside a glob.
            (Some(NameSelector::Glob(p)), Some(u)) => {
                ("uuid", format!("\"{u}\" with name glob \"{p}\""))
            }
            (Some(NameSelector::Exact(n) | NameSelector::DevMd(n)), None) => {
                ("name", format!("\"{n}\""))
            }
            (None, Some(u)) => ("uuid", format!("\"{u}\"")),
            (Some(NameSelector::Exact(n) | NameSelector::DevMd(n)), Some(u)) => {
                ("name", format!("\"{n}\" with uuid \"{u}\""))
            }
            (None, None) => ("name", "nothing".to_string()),
        };
        // The name matches, the uuid does not: say which uuid that array has.
        if let (Some(NameSelector::Exact(_) | NameSelector::DevMd(_)), Some(_)) =
            (&entry.name, &entry.uuid)
        {
            let named = inv.arrays.iter().find(|a| by_name(a));
            if let Some((a, hex)) = named.and_then(|a| Some((a, a.uuid.as_deref()?))) {
                let given = entry.uuid_given.clone().unwrap_or_default();
                return Err(PlanError::UuidDiffers {
                    key: format!("{key}.uuid"),
                    array: a.name.clone(),
                    has: crate::md::uuid_like(hex, &given),
                    given,
                });
            }
        }
        // With their mdadm names: a person looks for `hana_data`, not `md0`.
        let known: Vec<String> = inv
            .arrays
            .iter()
            .map(|a| match a.devnames.as_slice() {
                [] => a.name.clone(),
                names => format!("{} ({})", a.name, names.join(", ")),
            })
            .collect();
        return Err(PlanError::NoMatch {
            key: format!("{key}.{what}"),
            value,
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    }
    Ok(matched)
}

fn plan_array(
    index: usize,
    array: &Array,
    wish: &BTreeMap<Attr, Wish>,
    auto: &AutoParams,
    host: &Inventory,
    warnings: &mut Vec<String>,
) -> Result<ArrayPlan, PlanError> {
    let threads = auto_threads(&array.members, auto, &host.cpus, None);
    let mut ap = ArrayPlan {
        array: index,
        name: array.name.clone(),
        hw_queues: threads.as_ref().ok().map(|t| t.queues),
        why: None,
        changes: Vec::new(),
        skipped: Vec::new(),
        pause: None,
        boost: None,
    };
    if let Some(why) = &array.unreadable {
        // Skipped whole, whoever asked: the array is being stopped or reads what the kernel
        // would not print.
        warnings.push(format!("{}: skipped: {why}", array.name));
        ap.hw_queues = None;
        for (&attr, w) in wish {
            ap.skipped.push(Skip {
                setting: attr,
                reason: array.lacks(attr.family()),
                source: w.source,
            });
        }
        return Ok(ap);
    }
    for (&attr, w) in wish {
        let key = match w.source {
            Source::Entry(i) => format!("arrays[{i}].{attr}"),
            Source::Auto | Source::ThreadPolicy | Source::Saved => "thread_policy".to_string(),
        };
        let Some(&before) = array.values.get(&attr) else {
            let mut reason = array.lacks(attr.family());
            if let (true, Some(v)) = (reason.ends_with("does not offer it"), attr.since()) {
                reason.push_str(&format!(" (md has {attr} from Linux {v})"));
            }
            if w.exact && matches!(w.source, Source::Entry(_)) {
                return Err(PlanError::NotAvailable { key, attr, reason });
            }
            ap.skipped.push(Skip {
                setting: attr,
                reason,
                source: w.source,
            });
            continue;
        };
        let (after, source) = match w.want {
            Want::Value(v) => (v, w.source),
            Want::Auto => match &threads {
                Ok(t) => {
                    ap.why = Some(t.why.clone());
                    (Value::Int(t.threads), Source::Auto)
                }
                Err(why) => {
                    warnings.push(format!("{}: {attr} left unchanged: {why}", array.name));
                    ap.skipped.push(Skip {
                        setting: attr,
                        reason: why.clone(),
                        source: Source::Auto,
                    });
                    continue;
                }
            },
        };
        refuse_on_sparse_nodes(attr, after, &key, host)?;
        ap.changes.push(Change::new(attr, before, after, source));
    }
    // The kernel refuses a preread_bypass_threshold above the stripe cache size (EINVAL).
    let cache = ap.stripe_cache_after(array);
    if let (Some(c), Some(Value::Int(cache))) = (
        ap.changes
            .iter()
            .find(|c| c.attr == Attr::PrereadBypassThreshold),
        cache,
    ) {
        if let (Value::Int(v), Source::Entry(i)) = (c.after, c.source) {
            if v > cache && c.is_due() {
                return Err(PlanError::AboveStripeCache {
                    key: format!("arrays[{i}].preread_bypass_threshold"),
                    value: v,
                    array: array.name.clone(),
                    cache,
                });
            }
        }
    }
    bound_by_the_cache(array, &mut ap, auto, host);
    if threads.as_ref().is_ok_and(|t| t.sparse) {
        let (nodes, highest) = host.cpus.sparse_nodes().unwrap_or_default();
        let w = format!(
            "group_thread_cnt stays 0 on every raid4/5/6 array: the possible NUMA node ids are \
             sparse ({nodes} nodes, the highest id {highest}), and {}",
            kernel::SPARSE_NODES_WHY
        );
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    // Checked against the wanted cache above; now mark what has to wait, and the sync that the
    // writes left go in around.
    hold::hold_back(array, &mut ap, warnings);
    ap.pause = hold::pause_for(array, &ap);
    Ok(ap)
}

/// Refuses a `group_thread_cnt` above 0 (`key` asked for it) on a host whose possible NUMA node
/// ids are sparse ([`kernel::sparse_nodes`]): nothing is written.
fn refuse_on_sparse_nodes(
    attr: Attr,
    after: Value,
    key: &str,
    host: &Inventory,
) -> Result<(), PlanError> {
    match (attr, after, host.cpus.sparse_nodes()) {
        (Attr::GroupThreadCnt, Value::Int(value), Some((nodes, highest))) if value > 0 => {
            Err(PlanError::SparseNodes {
                key: key.to_string(),
                value,
                nodes,
                highest,
                why: kernel::SPARSE_NODES_WHY,
            })
        }
        _ => Ok(()),
    }
}

/// Bounds the `group_thread_cnt` that `auto` decided by the workers the stripe cache in force
/// after this run lets run (docs/auto.md §3): the cache this run sets, unless it is held back,
/// else the live one.
fn bound_by_the_cache(array: &Array, ap: &mut ArrayPlan, auto: &AutoParams, host: &Inventory) {
    let Some(i) = ap
        .changes
        .iter()
        .position(|c| c.attr == Attr::GroupThreadCnt && c.source == Source::Auto)
    else {
        return;
    };
    let Some(&Value::Int(live)) = array.values.get(&Attr::StripeCacheSize) else {
        return;
    };
    // What hold would leave of this plan's cache: computed on a copy, its warnings dropped.
    let mut probe = ap.clone();
    hold::hold_back(array, &mut probe, &mut Vec::new());
    let size = match probe.stripe_cache_after(array) {
        Some(Value::Int(size)) => size,
        _ => live,
    };
    let cache = Cache {
        size,
        live,
        disks: array.raid_disks,
        page: host.page_size,
    };
    if let Ok(t) = auto_threads(&array.members, auto, &host.cpus, Some(&cache)) {
        ap.changes[i].after = Value::Int(t.threads);
        ap.why = Some(t.why);
    }
}

#[cfg(test)]
mod tests;
