//! The live host, read only: every md array under the root with its level, state, members, the
//! hardware queues behind each member, the tunable values in force and the sync progress.
//!
//! Queue counting follows the kernel's layout (contract section 5): a partition resolves to its
//! disk; a device with `slaves/` (device-mapper, a nested md array) is followed down through them
//! even when it shows an `mq/` of its own (request-based dm-multipath's `mq/0` says nothing about
//! the hardware); an NVMe multipath head, which has no `mq/`, is followed to its path devices
//! `nvmeXcYnZ`; a disk with `mq/` and no slaves counts its numbered `mq/*` directories. Several
//! paths to one member count as the smallest path, never their sum. This module reads; it never
//! decides what should change.

use crate::dirfd::Dir;
use crate::sysfs::{self, Attr, Family, Root, SpeedLimit, Value};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{array}: cannot parse md/{attr}: {text:?} is not a value the kernel prints")]
    Parse {
        array: String,
        attr: Attr,
        text: String,
    },
    #[error("{path}: {text:?} is not a number")]
    Number { path: String, text: String },
}

/// One leaf device (a disk with `mq/`) under a member.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Leaf {
    pub name: String,
    pub hw_queues: u64,
}

/// An md member and what it resolved to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Member {
    /// The member as md names it (`nvme0n1p1`).
    pub name: String,
    /// The disk or stacked device behind it (`nvme0n1`, `dm-0`); the member itself when whole.
    pub device: Option<String>,
    /// The member's hardware queues (smallest path), or `None` when they cannot be found.
    pub hw_queues: Option<u64>,
    /// The disks whose `mq/` was counted, when they differ from `device` (multipath, dm, md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<Leaf>,
    /// Why `hw_queues` is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A running resync, recovery, check or reshape, or `idle`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sync {
    pub action: String,
    /// `[done, total]` sectors, or `None` when idle or delayed.
    pub completed: Option<[u64; 2]>,
    pub speed_kib_s: Option<u64>,
}

/// One md device as the kernel shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    /// Kernel name: `md0`, `md_d0`, `md_home`.
    pub name: String,
    /// mdadm names published under `dev/md/`, sorted.
    pub devnames: Vec<String>,
    /// 32 lowercase hex digits, from `md/uuid` or udev's `md-uuid-*` link.
    pub uuid: Option<String>,
    /// `raid5`, `raid10`, ...; empty for inactive arrays and containers.
    pub level: String,
    pub array_state: String,
    pub metadata_version: String,
    pub members: Vec<Member>,
    /// Redundant levels only.
    pub sync: Option<Sync>,
    /// The tunable attributes whose files exist, with their values.
    pub values: BTreeMap<Attr, Value>,
}

impl Array {
    pub fn is_container(&self) -> bool {
        self.metadata_version.starts_with("external:") && self.level.is_empty()
    }

    pub fn is_inactive(&self) -> bool {
        matches!(self.array_state.as_str(), "inactive" | "clear" | "")
    }

    /// The mdadm form of the uuid (`aaaaaaaa:bbbbbbbb:cccccccc:dddddddd`).
    pub fn mdadm_uuid(&self) -> Option<String> {
        let u = self.uuid.as_ref()?;
        Some(format!(
            "{}:{}:{}:{}",
            &u[0..8],
            &u[8..16],
            &u[16..24],
            &u[24..32]
        ))
    }

    /// Why an attribute of `family` is absent from this array, in words a person can act on.
    pub fn lacks(&self, family: Family) -> String {
        let wants = match family {
            Family::Raid456 => "raid4/5/6",
            Family::Redundant => "raid1/4/5/6/10",
        };
        if self.is_container() {
            format!(
                "{} is a {} container, not an array",
                self.name, self.metadata_version
            )
        } else if self.is_inactive() {
            format!(
                "{} is inactive (only running {wants} arrays have it)",
                self.name
            )
        } else {
            let level = if self.level.is_empty() {
                "no level"
            } else {
                &self.level
            };
            format!("{} is {level}; only {wants} arrays have it", self.name)
        }
    }
}

/// Everything a plan needs from the host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inventory {
    pub arrays: Vec<Array>,
    /// The system speed limits that were asked to be read.
    pub speed_limits: BTreeMap<SpeedLimit, u64>,
    pub online_cpus: Option<u64>,
}

/// What to read beyond the arrays themselves.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// Read only this array (the udev path); `None` reads them all.
    pub only: Option<String>,
    pub speed_limits: Vec<SpeedLimit>,
}

fn read_err(path: &Path, source: io::Error) -> InventoryError {
    InventoryError::Read {
        path: path.display().to_string(),
        source,
    }
}

/// Reads file `name` of `dir`, `Ok(None)` when it does not exist.
fn read_opt(dir: &Dir, name: &str) -> Result<Option<String>, InventoryError> {
    dir.read(name)
        .map_err(|e| read_err(&dir.path().join(name), e))
}

/// Maps link targets' file names to the link names in `dir` (udev's `dev/md`, `dev/disk/by-id`).
fn links_by_target(root: &Root, dir: &str, prefix: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    let Some(dir) = root.dir(dir) else {
        return map;
    };
    for name in dir.list().unwrap_or_default() {
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        if let Ok(target) = dir.read_link(&name) {
            if let Some(t) = target.file_name().and_then(|t| t.to_str()) {
                map.entry(t.to_string()).or_default().push(rest.to_string());
            }
        }
    }
    map
}

/// Whether a `sys/block` entry can be an md device: the kernel names every one `md<N>`,
/// `md_d<N>` or `md_<name>` (md.c, `md_alloc`), so other devices are not even looked at.
fn md_name(name: &str) -> bool {
    name.starts_with("md")
}

/// Reads the host under `root`.
pub fn read(root: &Root, scope: &Scope) -> Result<Inventory, InventoryError> {
    let mut inv = Inventory::default();
    for &limit in &scope.speed_limits {
        let path = root.speed_limit(limit);
        let text = root
            .confine_to_root(&path)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "missing or outside the root"))
            .and_then(|p| sysfs::read(&p))
            .map_err(|e| read_err(&path, e))?;
        let n = text.trim().parse().map_err(|_| InventoryError::Number {
            path: path.display().to_string(),
            text: text.trim().to_string(),
        })?;
        inv.speed_limits.insert(limit, n);
    }
    // No sys/ (or no sys/block) is a host without arrays.
    let Ok(sys) = root.sys_dir() else {
        return Ok(inv);
    };
    inv.online_cpus = match sys.follow("devices/system/cpu", root.sys()) {
        Ok(cpu) => read_opt(&cpu, "online")?.and_then(|t| sysfs::parse_cpu_list(&t)),
        Err(_) => None,
    };
    let Ok(block) = sys.follow("block", root.sys()) else {
        return Ok(inv);
    };
    let block_names = block.list().unwrap_or_default();
    let mut md_names: Vec<&String> = block_names
        .iter()
        .filter(|n| md_name(n))
        .filter(|n| scope.only.as_ref().is_none_or(|only| only == *n))
        .collect();
    md_names.sort_by_key(|n| natural_key(n));
    if md_names.is_empty() {
        return Ok(inv);
    }
    let devnames = links_by_target(root, "dev/md", "");
    let mut queues = Queues {
        sys: root.sys(),
        block: &block,
        block_names: &block_names,
        cache: HashMap::new(),
    };
    for name in md_names {
        // An md device whose directory resolves outside sys/ is not ours to read; one without
        // md/ (a real directory, never a link) is not an md device.
        let Ok(dir) = block.follow(name, root.sys()) else {
            continue;
        };
        let Ok(Some(md)) = dir.sub("md") else {
            continue;
        };
        inv.arrays
            .push(read_array(name, &dir, &md, &devnames, &mut queues)?);
    }
    // udev's by-id links tell the uuid on kernels without md/uuid (before about 5.9).
    if inv.arrays.iter().any(|a| a.uuid.is_none()) {
        let by_id = links_by_target(root, "dev/disk/by-id", "md-uuid-");
        for a in inv.arrays.iter_mut().filter(|a| a.uuid.is_none()) {
            a.uuid = by_id
                .get(&a.name)
                .and_then(|ids| ids.iter().find_map(|u| crate::spec::uuid_hex(u)));
        }
    }
    Ok(inv)
}

fn read_array(
    name: &str,
    dir: &Dir,
    md: &Dir,
    devnames: &HashMap<String, Vec<String>>,
    queues: &mut Queues,
) -> Result<Array, InventoryError> {
    let text = |f: &str| -> Result<String, InventoryError> {
        Ok(read_opt(md, f)?.unwrap_or_default().trim().to_string())
    };
    let uuid = read_opt(md, "uuid")?.and_then(|u| crate::spec::uuid_hex(u.trim()));
    let mut values = BTreeMap::new();
    for attr in Attr::ALL {
        // Absent files are how the kernel says the level lacks the attribute (ENOENT).
        let Some(t) = read_opt(md, attr.name())? else {
            continue;
        };
        let v = sysfs::parse_value(attr.kind(), &t).ok_or_else(|| InventoryError::Parse {
            array: name.to_string(),
            attr,
            text: t.trim().to_string(),
        })?;
        values.insert(attr, v);
    }
    let sync = match read_opt(md, "sync_action")? {
        None => None,
        Some(action) => Some(Sync {
            action: action.trim().to_string(),
            completed: sysfs::parse_progress(&text("sync_completed")?),
            speed_kib_s: text("sync_speed")?.parse().ok(),
        }),
    };
    let members = queues.members(dir, md);
    let mut names = devnames.get(name).cloned().unwrap_or_default();
    names.sort();
    Ok(Array {
        name: name.to_string(),
        devnames: names,
        uuid,
        level: text("level")?,
        array_state: text("array_state")?,
        metadata_version: text("metadata_version")?,
        members,
        sync,
        values,
    })
}

/// What a device resolved to: its leaves (disks with `mq/`) or why they cannot be found.
type Resolved = Result<Vec<Leaf>, String>;

/// Counts queues, remembering each device so shared paths are read once.
struct Queues<'a> {
    /// The real path of `sys/`: every device directory must stay inside it.
    sys: &'a Path,
    /// `sys/block`, open, and its entries (NVMe path devices are found among them).
    block: &'a Dir,
    block_names: &'a [String],
    cache: HashMap<PathBuf, Resolved>,
}

/// Stacks deeper than this are treated as a loop.
const MAX_DEPTH: usize = 16;

impl Queues<'_> {
    /// The array's members: `slaves/*`, or `md/dev-*/block` when `slaves/` is empty.
    fn members(&mut self, dir: &Dir, md: &Dir) -> Vec<Member> {
        if let Ok(Some(slaves)) = dir.sub("slaves") {
            let names = slaves.list().unwrap_or_default();
            if !names.is_empty() {
                return names.iter().map(|m| self.member(m, &slaves, m)).collect();
            }
        }
        md.list()
            .unwrap_or_default()
            .iter()
            .filter_map(|d| {
                let m = d.strip_prefix("dev-")?;
                Some(self.member(m, md, &format!("{d}/block")))
            })
            .collect()
    }

    /// Member `name`, reached through link `link` of `from`.
    fn member(&mut self, name: &str, from: &Dir, link: &str) -> Member {
        let dir = match from.follow(link, self.sys) {
            Ok(dir) => dir,
            Err(_) => {
                return Member {
                    name: name.to_string(),
                    device: None,
                    hw_queues: None,
                    paths: Vec::new(),
                    problem: Some(format!(
                        "{} does not resolve inside sys/",
                        from.path().join(link).display()
                    )),
                }
            }
        };
        // A partition has a `partition` file; its parent directory is the disk.
        let disk = if dir.has("partition") {
            dir.parent(self.sys).unwrap_or(dir)
        } else {
            dir
        };
        let device = disk.name();
        let resolved = self.resolve(&disk, 0);
        let (hw_queues, paths, problem) = match resolved {
            Ok(leaves) => {
                let min = leaves.iter().map(|l| l.hw_queues).min();
                let direct = leaves.len() == 1 && leaves[0].name == device;
                (min, if direct { Vec::new() } else { leaves }, None)
            }
            Err(why) => (None, Vec::new(), Some(why)),
        };
        Member {
            name: name.to_string(),
            device: Some(device),
            hw_queues,
            paths,
            problem,
        }
    }

    fn resolve(&mut self, disk: &Dir, depth: usize) -> Resolved {
        if let Some(r) = self.cache.get(disk.path()) {
            return r.clone();
        }
        let r = self.resolve_uncached(disk, depth);
        self.cache.insert(disk.path().to_path_buf(), r.clone());
        r
    }

    fn resolve_uncached(&mut self, disk: &Dir, depth: usize) -> Resolved {
        let name = disk.name();
        if depth > MAX_DEPTH {
            return Err(format!("{name}: device stack deeper than {MAX_DEPTH}"));
        }
        // Stacked devices (dm, nested md): follow slaves even if an mq/ is shown.
        if let Ok(Some(slaves)) = disk.sub("slaves") {
            let lower = slaves.list().unwrap_or_default();
            if !lower.is_empty() {
                return self.resolve_all(&name, &slaves, &lower, depth);
            }
        }
        // One numbered mq/<N> per hardware queue.
        let (entries, queues) = disk.count_sub("mq", |d| d.parse::<u32>().is_ok());
        if entries > 0 {
            return Ok(vec![Leaf {
                name,
                hw_queues: queues,
            }]);
        }
        // NVMe native multipath: the head nvmeXnY has no mq/; its paths are nvmeXcZnY.
        if let Some((subsys, ns)) = nvme_head(&name) {
            let paths: Vec<String> = self
                .block_names
                .iter()
                .filter(|p| nvme_path_of(p) == Some((subsys, ns)))
                .cloned()
                .collect();
            if !paths.is_empty() {
                let block = self.block;
                return self.resolve_all(&name, block, &paths, depth);
            }
        }
        Err(format!("{name} has no mq/, no slaves/ and no NVMe paths"))
    }

    /// Resolves every lower device (links `lower` in `from`); the result is all their leaves,
    /// or the first problem.
    fn resolve_all(&mut self, name: &str, from: &Dir, lower: &[String], depth: usize) -> Resolved {
        let mut leaves = Vec::new();
        for link in lower {
            let Ok(dir) = from.follow(link, self.sys) else {
                return Err(format!(
                    "{name}: {} does not resolve inside sys/",
                    from.path().join(link).display()
                ));
            };
            leaves.extend(self.resolve(&dir, depth + 1)?);
        }
        Ok(leaves)
    }
}

/// Orders `md2` before `md126`: the name without its trailing number, then the number.
fn natural_key(name: &str) -> (&str, u64) {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    (stem, name[stem.len()..].parse().unwrap_or(0))
}

/// `nvme<S>n<N>` -> (S, N).
fn nvme_head(name: &str) -> Option<(u32, u32)> {
    let (s, n) = name.strip_prefix("nvme")?.split_once('n')?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

/// `nvme<S>c<C>n<N>` -> (S, N).
fn nvme_path_of(name: &str) -> Option<(u32, u32)> {
    let (s, rest) = name.strip_prefix("nvme")?.split_once('c')?;
    let (c, n) = rest.split_once('n')?;
    c.parse::<u32>().ok()?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_sort_by_number_not_by_text() {
        let mut names = vec!["md126", "md2", "md_d0", "md10", "md1"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["md1", "md2", "md10", "md126", "md_d0"]);
    }

    #[test]
    fn nvme_names_split_into_subsystem_and_namespace() {
        assert_eq!(nvme_head("nvme0n1"), Some((0, 1)));
        assert_eq!(nvme_head("nvme0c1n1"), None);
        assert_eq!(nvme_head("nvme0n1p1"), None);
        assert_eq!(nvme_path_of("nvme3c12n2"), Some((3, 2)));
        assert_eq!(nvme_path_of("nvme3n2"), None);
    }
}
