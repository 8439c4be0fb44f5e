//! The live host, read only: every md array under the root with its level, state, members (their
//! roles and hardware queues come from [`super::topology`]), the tunable values in force, the
//! sync progress, whether it reshapes, and for external-metadata arrays whether mdmon runs for
//! the container. Also the system facts `auto` needs, read once per run ([`super::cpus`]): the
//! CPUs open to the raid5 workqueue and the NUMA nodes with CPUs.
//!
//! An array that cannot be read as the kernel prints it (an empty read, EBUSY from an array being
//! stopped, a value the kernel would not print) is kept with [`Array::unreadable`] saying why, so
//! the plan skips that array with a warning instead of failing the run. What an array holds is
//! in `super::array`. This module reads; it never decides what should change.

use super::array::{Array, External, Raid10, Sync};
use super::cpus::Cpus;
use super::device::Devices;
use super::topology::Topology;
use crate::md::{kernel, Attr, Kind, SpeedLimit, Value};
use crate::sys::{self, KernelFile, Root};
use crate::sys::{trimmed, Dir};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{array}: cannot parse md/{attr}: {text:?} is not a value the kernel prints")]
    Parse {
        array: String,
        attr: String,
        text: String,
    },
    #[error("{array}: md/{attr} read empty (as it does while the array is being stopped)")]
    Empty { array: String, attr: String },
    #[error("{path}: {text:?} is not a number")]
    Number { path: String, text: String },
}

impl InventoryError {
    /// True when the error is about one array and says it should be skipped, not the run
    /// failed: a value the kernel would not print, an empty read, or EBUSY/ENODEV from an array
    /// being stopped.
    fn skips_array(&self) -> bool {
        match self {
            InventoryError::Parse { .. } | InventoryError::Empty { .. } => true,
            InventoryError::Read { source, .. } => {
                matches!(source.raw_os_error(), Some(sys::EBUSY | sys::ENODEV))
            }
            InventoryError::Number { .. } => false,
        }
    }
}

/// Everything a plan needs from the host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inventory {
    pub arrays: Vec<Array>,
    /// The system speed limits that were asked to be read (C ints: they may be negative).
    pub speed_limits: BTreeMap<SpeedLimit, Value>,
    /// The CPUs and nodes `auto`'s default ceiling comes from.
    pub cpus: Cpus,
    /// The kernel's page size in bytes (each stripe of the stripe cache holds a page per disk);
    /// 0 when unknown.
    pub page_size: u64,
}

/// What to read beyond the arrays themselves.
#[derive(Clone, Debug)]
pub struct Scope {
    /// Read only this array (the udev path); `None` reads them all.
    pub(crate) only: Option<String>,
    pub(crate) speed_limits: Vec<SpeedLimit>,
    /// The tunable attributes to read on every array (three system calls each): a run reads
    /// those it may plan, not all seven.
    pub(crate) attrs: Vec<Attr>,
    /// Whether to read a raid4/5/6 array's `md/raid_disks`: only `auto`'s `why` uses it (what
    /// the stripe cache costs), so a run in which no array can get `auto` does not.
    pub(crate) stripe_disks: bool,
    /// Whether to read a redundant array's health files (`super::health`): what `--show`,
    /// `--metrics` and `--tick` report, never needed by a `query` or `present` run.
    pub(crate) health: bool,
}

impl Default for Scope {
    /// Every array, no system limit, every tunable attribute, the health files.
    fn default() -> Scope {
        Scope {
            only: None,
            speed_limits: Vec::new(),
            attrs: Attr::ALL.to_vec(),
            stripe_disks: true,
            health: true,
        }
    }
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

/// `f` of the trimmed text of file `name` of `dir`, read onto the stack and not kept; of `""`
/// when it does not exist.
fn look<R>(dir: &Dir, name: &str, f: impl Fn(&str) -> R) -> Result<R, InventoryError> {
    match dir.read_with(name, &f) {
        Ok(r) => Ok(r.unwrap_or_else(|| f(""))),
        Err(e) => Err(read_err(&dir.path().join(name), e)),
    }
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
        let text = match root.read_kernel(KernelFile::Limit(limit)) {
            // A kernel before 6.16 has no sync_io_depth, a host without md loaded no limits at
            // all: left out, and the plan says so when the input asks for one.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            read => read.map_err(|e| read_err(&path, e))?,
        };
        let n =
            crate::md::parse_value(Kind::CInt, &text).ok_or_else(|| InventoryError::Number {
                path: path.display().to_string(),
                text: text.trim().to_string(),
            })?;
        inv.speed_limits.insert(limit, n);
    }
    // No sys/ (or no sys/block) is a host without arrays.
    let Ok(sys) = root.sys_dir() else {
        return Ok(inv);
    };
    inv.cpus = super::cpus::read(sys);
    inv.page_size = sys::page_size();
    let Ok(Some(block)) = sys.dir_under(&["block"]) else {
        return Ok(inv);
    };
    // Only the names looked up: the arrays, and NVMe path devices (`super::topology`).
    let block_names = block
        .list_if(|n| md_name(n) || super::topology::nvme_path(n))
        .unwrap_or_default();
    let mut md_names: Vec<&String> = block_names
        .iter()
        .filter(|n| md_name(n))
        .filter(|n| scope.only.as_ref().is_none_or(|only| only == *n))
        .collect();
    md_names.sort_by_key(|n| natural_key(n));
    if md_names.is_empty() {
        return Ok(inv);
    }
    let devnames = links_by_target(root, sys::DEV_MD, "");
    let mut topology = Topology::new(Devices::new(sys), &block_names, inv.cpus.possible);
    for name in md_names {
        // An md device whose directory resolves outside sys/ is not ours to read; one without
        // md/ is not an md device.
        let Some((dir, md)) = topology.array(name) else {
            continue;
        };
        let mut names = devnames.get(name).cloned().unwrap_or_default();
        names.sort();
        let mut array = Array {
            name: name.to_string(),
            devnames: names,
            ..Array::default()
        };
        match read_array(&mut array, &md, scope) {
            Ok(()) => array.members = topology.members(&dir, &md),
            // This array is going away or prints what the kernel would not: skip it, not the run.
            Err(e) if e.skips_array() => array.unreadable = Some(e.to_string()),
            Err(e) => return Err(e),
        }
        if let Some(container) = container_of(&array.metadata_version) {
            array.external = Some(External {
                mdmon: mdmon(root, &container),
                container,
            });
        }
        inv.arrays.push(array);
    }
    // A frozen sync is named with who froze it: mdtune's pauses are recorded under run/mdtune/.
    let frozen = |a: &&mut Array| a.sync.as_ref().is_some_and(|s| s.action == "frozen");
    if inv.arrays.iter_mut().any(|a| frozen(&a)) {
        let recorded: Vec<_> = super::pauses::records(root).into_iter().flatten().collect();
        for a in inv.arrays.iter_mut().filter(frozen) {
            let by = super::pauses::frozen_by(root, &a.name, &recorded);
            if let Some(s) = a.sync.as_mut() {
                s.frozen_by = Some(by);
            }
        }
    }
    // A boost in force is named with what it wrote and what comes back after it.
    attach_boosts(root, &mut inv.arrays);
    // Whether a paused repair resumes as a resync depends on the kernel: read its release under
    // the root, and only while a repair runs.
    let repairing = |a: &&mut Array| a.sync.as_ref().is_some_and(|s| s.action == "repair");
    if inv.arrays.iter_mut().any(|a| repairing(&a)) {
        let release = root
            .read_text(&root.base().join(sys::OSRELEASE))
            .ok()
            .map(trimmed);
        for a in inv.arrays.iter_mut().filter(repairing) {
            if let Some(s) = a.sync.as_mut() {
                s.release.clone_from(&release);
            }
        }
    }
    // udev's by-id links tell the uuid on kernels without md/uuid (before about 5.9) and for
    // external metadata (an all-zero md/uuid): read them only when an array needs them.
    if inv.arrays.iter().any(|a| a.uuid.is_none()) {
        let by_id = links_by_target(root, sys::DEV_BY_ID, "md-uuid-");
        for a in inv.arrays.iter_mut().filter(|a| a.uuid.is_none()) {
            a.uuid = by_id
                .get(&a.name)
                .and_then(|ids| ids.iter().find_map(|u| crate::md::uuid_hex(u)));
        }
    }
    // While udev re-creates a link (a change event), mdadm's map still names the uuid: one
    // originals key, always (docs/reference.md §6).
    if inv.arrays.iter().any(|a| a.uuid.is_none()) {
        let text = root.read_text(&root.mdadm_map()).unwrap_or_default();
        let map = map_uuids(&text);
        for a in inv.arrays.iter_mut().filter(|a| a.uuid.is_none()) {
            a.uuid = map.get(&a.name).cloned();
        }
    }
    Ok(inv)
}

/// mdadm's map of the arrays it assembled (`run/mdadm/map`, one line each: kernel name,
/// metadata, uuid in mdadm's form, path), as kernel name -> uuid digits. All-zero uuids are
/// unknown.
fn map_uuids(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next()?;
            let _metadata = fields.next()?;
            let uuid = crate::md::uuid_hex(fields.next()?)?;
            uuid.bytes()
                .any(|b| b != b'0')
                .then(|| (name.to_string(), uuid))
        })
        .collect()
}

/// Fills in what `md/` says about the array, of the tunables only `scope.attrs`.
fn read_array(a: &mut Array, md: &Dir, scope: &Scope) -> Result<(), InventoryError> {
    let text = |f: &str| -> Result<String, InventoryError> {
        Ok(trimmed(read_opt(md, f)?.unwrap_or_default()))
    };
    // An all-zero md/uuid (external metadata) is unknown: udev's link has the real one.
    a.uuid = look(md, "uuid", crate::md::uuid_hex)?.filter(|u| u.bytes().any(|b| b != b'0'));
    a.level = text("level")?;
    a.array_state = text("array_state")?;
    a.metadata_version = text("metadata_version")?;
    // The disks of a raid4/5/6 stripe: the stripe cache holds a page of each per stripe.
    if scope.stripe_disks && matches!(a.level.as_str(), "raid4" | "raid5" | "raid6") {
        a.raid_disks = look(md, "raid_disks", |t| t.parse().ok())?;
    }
    // A raid10 resync, check or repair counts the array's sectors: the report says what that
    // is per member.
    if a.level == "raid10" {
        let layout = text("layout")?.parse().ok();
        a.raid10 = match (
            layout.and_then(kernel::raid10_copies),
            text("raid_disks")?.parse(),
        ) {
            (Some(copies), Ok(raid_disks)) => Some(Raid10 { copies, raid_disks }),
            _ => None,
        };
    }
    for &attr in &scope.attrs {
        let parse = |t: &str| {
            crate::md::parse_value(attr.kind(), t).ok_or_else(|| {
                let (array, attr) = (a.name.clone(), attr.name().to_string());
                match t {
                    "" => InventoryError::Empty { array, attr },
                    text => InventoryError::Parse {
                        array,
                        attr,
                        text: text.to_string(),
                    },
                }
            })
        };
        // Absent files are how the kernel says the level lacks the attribute (ENOENT).
        let read = md.read_with(attr.name(), parse);
        let Some(v) = read.map_err(|e| read_err(&md.path().join(attr.name()), e))? else {
            continue;
        };
        a.values.insert(attr, v?);
    }
    if let Some(action) = read_opt(md, "sync_action")? {
        let action = trimmed(action);
        if action == "reshape" {
            a.reshape = Some("sync_action is reshape".into());
        }
        a.sync = Some(Sync {
            action,
            completed: look(md, "sync_completed", crate::md::parse_progress)?,
            speed_kib_s: look(md, "sync_speed", |t| t.parse().ok())?,
            release: None,
            frozen_by: None,
            boost: None,
        });
        if scope.health {
            a.health = Some(super::health::read(md));
        }
    }
    let position = look(md, "reshape_position", |p| {
        (!matches!(p, "" | "none")).then(|| format!("reshape_position is {p}"))
    })?;
    if a.reshape.is_none() {
        a.reshape = position;
    }
    Ok(())
}

/// The container of an external-metadata member array: `md127` from `external:/md127/0` (a
/// `-` in place of the `/` marks it read-only to mdmon); `None` for native metadata and for the
/// container itself (`external:imsm`).
pub(crate) fn container_of(metadata_version: &str) -> Option<String> {
    let rest = metadata_version.strip_prefix("external:")?;
    let rest = rest.strip_prefix(['/', '-'])?;
    let (container, _subarray) = rest.split_once('/')?;
    let tame = !container.is_empty()
        && container != ".."
        && container
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    tame.then(|| container.to_string())
}

/// The pid of the mdmon that manages `container`: its pid file `run/mdadm/<container>.pid`
/// names a live process whose `comm` is `mdmon`. Otherwise why not. Reads only, never waits.
fn mdmon(root: &Root, container: &str) -> Result<u32, String> {
    let pid_file = root.mdmon_pid(container);
    let text = root
        .read_text(&pid_file)
        .ok()
        .ok_or_else(|| format!("no mdmon pid file /run/mdadm/{container}.pid"))?;
    let pid: u32 = text.trim().parse().map_err(|_| {
        format!(
            "/run/mdadm/{container}.pid holds {:?}, not a pid",
            text.trim()
        )
    })?;
    let comm = root
        .read_text(&root.proc_comm(pid))
        .ok()
        .ok_or_else(|| format!("mdmon pid {pid} from /run/mdadm/{container}.pid is not running"))?;
    if comm.trim() != "mdmon" {
        return Err(format!(
            "pid {pid} from /run/mdadm/{container}.pid is {:?}, not mdmon",
            comm.trim()
        ));
    }
    Ok(pid)
}

/// Orders `md2` before `md126`: the name without its trailing number, then the number.
fn natural_key(name: &str) -> (&str, u64) {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    (stem, name[stem.len()..].parse().unwrap_or(0))
}

/// Gives each array with a sync boost recorded its record (`Sync::boost`).
fn attach_boosts(root: &Root, arrays: &mut [Array]) {
    for rec in super::boosts::records(root).into_iter().flatten() {
        let array = arrays.iter_mut().find(|a| a.name == rec.array);
        if let Some(s) = array.and_then(|a| a.sync.as_mut()) {
            s.boost = Some(rec);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mdadm_map_names_the_uuid_of_each_assembled_array() {
        let map = map_uuids(
            "md127 imsm 4b7e1f2a:00000000:00000000:00000001 /dev/md/imsm0\n\
             md126 /md127/0 00000126:e5f60718:293a4b5c:6d7e8f90 /dev/md/vol0\n\
             md5 1.2 00000000:00000000:00000000:00000000 /dev/md/zero\n\
             garbage\n",
        );
        assert_eq!(map["md126"], "00000126e5f60718293a4b5c6d7e8f90");
        assert_eq!(map.len(), 2, "{map:?}");
    }

    #[test]
    fn external_member_arrays_name_their_container() {
        assert_eq!(container_of("external:/md127/0").as_deref(), Some("md127"));
        assert_eq!(container_of("external:-md127/1").as_deref(), Some("md127"));
        assert_eq!(container_of("external:imsm"), None);
        assert_eq!(container_of("1.2"), None);
        assert_eq!(container_of("external:/../0"), None);
    }

    #[test]
    fn busy_or_vanished_arrays_and_unprintable_values_skip_the_array_not_the_run() {
        let read = |errno| InventoryError::Read {
            path: "md0/md/level".into(),
            source: io::Error::from_raw_os_error(errno),
        };
        assert!(read(sys::EBUSY).skips_array());
        assert!(read(sys::ENODEV).skips_array());
        assert!(
            !read(13).skips_array(),
            "EACCES: the run cannot see the host"
        );
        let parse = InventoryError::Parse {
            array: "md0".into(),
            attr: "stripe_cache_size".into(),
            text: String::new(),
        };
        assert!(parse.skips_array());
    }

    #[test]
    fn arrays_sort_by_number_not_by_text() {
        let mut names = vec!["md126", "md2", "md_d0", "md10", "md1"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["md1", "md2", "md10", "md126", "md_d0"]);
    }
}
