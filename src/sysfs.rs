//! Every path mdtune reads or writes, built from one root; the fixed list of md attributes it may
//! touch; and the parsing and formatting of the values the kernel prints and accepts.
//!
//! Nothing else in the crate joins path components onto the root. That is what keeps a selector or
//! a symlink from steering a write outside `sys/` (see [`Root::confine`]), and what lets tests and
//! chroots run against a fake root. This module does no policy: it does not decide what to write.

use serde::{Serialize, Serializer};
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The system root every path is built from (`/` on a real host).
#[derive(Clone, Debug)]
pub struct Root {
    base: PathBuf,
    /// `base/sys`, canonicalized once: writes to md attributes must resolve below it.
    sys: PathBuf,
}

impl Root {
    /// Opens a root. Fails when the directory does not exist.
    pub fn new(base: &Path) -> io::Result<Root> {
        let base = fs::canonicalize(base)?;
        let sys = fs::canonicalize(base.join("sys")).unwrap_or_else(|_| base.join("sys"));
        Ok(Root { base, sys })
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `sys/block`: one entry (a symlink into `../devices/...`) per block device.
    pub fn block_dir(&self) -> PathBuf {
        self.sys.join("block")
    }

    /// `sys/block/<name>`, the device directory of a kernel block device name.
    pub fn block(&self, name: &str) -> PathBuf {
        self.block_dir().join(name)
    }

    /// `sys/block/<name>/md/<attr>`: the one place an md attribute path is made.
    pub fn md_attr(&self, name: &str, attr: &str) -> PathBuf {
        self.block(name).join("md").join(attr)
    }

    /// `proc/sys/dev/raid/<limit>`.
    pub fn speed_limit(&self, limit: SpeedLimit) -> PathBuf {
        self.base.join("proc/sys/dev/raid").join(limit.name())
    }

    pub fn cpus_online(&self) -> PathBuf {
        self.sys.join("devices/system/cpu/online")
    }

    /// `sys/devices/system/node/possible`: the NUMA nodes the kernel sizes its groups for.
    pub fn nodes_possible(&self) -> PathBuf {
        self.sys.join("devices/system/node/possible")
    }

    /// `run/mdadm/<container>.pid`: the pid file of the mdmon that manages an external-metadata
    /// container (mdadm's `MDMON_DIR`). `container` is a kernel name (no `/`).
    pub fn mdmon_pid(&self, container: &str) -> PathBuf {
        self.base.join("run/mdadm").join(format!("{container}.pid"))
    }

    /// `proc/<pid>/comm`: the command name of a running process.
    pub fn proc_comm(&self, pid: u32) -> PathBuf {
        self.base.join("proc").join(pid.to_string()).join("comm")
    }

    /// `dev/md`: udev's `NAME -> ../mdX` links.
    pub fn dev_md(&self) -> PathBuf {
        self.base.join("dev/md")
    }

    /// `dev/disk/by-id`: udev's `md-uuid-<mdadm uuid> -> ../../mdX` links.
    pub fn dev_by_id(&self) -> PathBuf {
        self.base.join("dev/disk/by-id")
    }

    /// `run/`, where the lock lives.
    pub fn run(&self) -> PathBuf {
        self.base.join("run")
    }

    /// `run/mdtune/`: originals saved before the first change, for `state: reverted`.
    pub fn saved_state(&self) -> PathBuf {
        self.base.join("run/mdtune")
    }

    /// `etc/mdtune/`: the persisted desired state.
    pub fn etc(&self) -> PathBuf {
        self.base.join("etc/mdtune")
    }

    /// `etc/udev/rules.d/<file>`.
    pub fn udev_rule(&self, file: &str) -> PathBuf {
        self.base.join("etc/udev/rules.d").join(file)
    }

    /// `usr/local/sbin/mdtune`.
    pub fn installed_binary(&self) -> PathBuf {
        self.base.join("usr/local/sbin/mdtune")
    }

    /// Resolves every link in `path` and returns the result only when it stays inside `sys/`.
    /// Returns `None` for a path that does not exist or that escapes the root's `sys/`.
    pub fn confine(&self, path: &Path) -> Option<PathBuf> {
        let real = fs::canonicalize(path).ok()?;
        real.starts_with(&self.sys).then_some(real)
    }

    /// Like [`Root::confine`], for paths that must stay inside the root as a whole.
    pub fn confine_to_root(&self, path: &Path) -> Option<PathBuf> {
        let real = fs::canonicalize(path).ok()?;
        real.starts_with(&self.base).then_some(real)
    }

    /// The real path of a file whose directory must be inside the root: `Ok(None)` when the
    /// directory does not exist, an error when it leads out of the root. The file itself is not
    /// resolved: open it with `O_NOFOLLOW` (or replace it with a rename).
    pub fn real_file(&self, path: &Path) -> io::Result<Option<PathBuf>> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(outside(path));
        };
        if !dir.exists() {
            return Ok(None);
        }
        match self.confine_to_root(dir) {
            Some(real) => Ok(Some(real.join(name))),
            None => Err(outside(path)),
        }
    }

    /// Creates `dir` and its missing parents inside the root and returns its real path; refused
    /// when an existing part of it leads out of the root.
    pub fn make_dir(&self, dir: &Path) -> io::Result<PathBuf> {
        let mut existing = dir;
        while !existing.exists() {
            existing = existing.parent().ok_or_else(|| outside(dir))?;
        }
        if self.confine_to_root(existing).is_none() {
            return Err(outside(dir));
        }
        fs::create_dir_all(dir)?;
        self.confine_to_root(dir).ok_or_else(|| outside(dir))
    }
}

fn outside(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{} leads out of the root", path.display()),
    )
}

/// The system-wide resync limits in `/proc/sys/dev/raid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpeedLimit {
    Min,
    Max,
}

impl SpeedLimit {
    pub const ALL: [SpeedLimit; 2] = [SpeedLimit::Min, SpeedLimit::Max];

    pub fn name(self) -> &'static str {
        match self {
            SpeedLimit::Min => "speed_limit_min",
            SpeedLimit::Max => "speed_limit_max",
        }
    }
}

/// Which arrays have an attribute: the kernel creates the files only for these levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// raid4/5/6 only (the raid456 personality).
    Raid456,
    /// Every redundant level: raid1/4/5/6/10.
    Redundant,
}

/// How an attribute's value is printed and parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An unsigned number (`%d` of a value the kernel keeps non-negative).
    Int,
    /// A C int that can read negative: `/proc/sys/dev/raid/speed_limit_*`.
    CInt,
    Bool,
    /// `sync_speed_*`: a number with a `(system)` or `(local)` suffix.
    SyncSpeed,
}

/// The md attributes mdtune may write. Nothing outside this list is ever opened for writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attr {
    GroupThreadCnt,
    StripeCacheSize,
    PrereadBypassThreshold,
    SkipCopy,
    SyncSpeedMin,
    SyncSpeedMax,
    SyncForceParallel,
}

impl Attr {
    /// Every attribute, in the order writes happen: `stripe_cache_size` before
    /// `preread_bypass_threshold`, which the kernel caps at the stripe cache size.
    pub const ALL: [Attr; 7] = [
        Attr::GroupThreadCnt,
        Attr::StripeCacheSize,
        Attr::PrereadBypassThreshold,
        Attr::SkipCopy,
        Attr::SyncSpeedMin,
        Attr::SyncSpeedMax,
        Attr::SyncForceParallel,
    ];

    /// The file name under `md/`, which is also the input and output key.
    pub fn name(self) -> &'static str {
        match self {
            Attr::GroupThreadCnt => "group_thread_cnt",
            Attr::StripeCacheSize => "stripe_cache_size",
            Attr::PrereadBypassThreshold => "preread_bypass_threshold",
            Attr::SkipCopy => "skip_copy",
            Attr::SyncSpeedMin => "sync_speed_min",
            Attr::SyncSpeedMax => "sync_speed_max",
            Attr::SyncForceParallel => "sync_force_parallel",
        }
    }

    pub fn from_name(name: &str) -> Option<Attr> {
        Attr::ALL.into_iter().find(|a| a.name() == name)
    }

    pub fn family(self) -> Family {
        match self {
            Attr::GroupThreadCnt
            | Attr::StripeCacheSize
            | Attr::PrereadBypassThreshold
            | Attr::SkipCopy => Family::Raid456,
            Attr::SyncSpeedMin | Attr::SyncSpeedMax | Attr::SyncForceParallel => Family::Redundant,
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Attr::SkipCopy | Attr::SyncForceParallel => Kind::Bool,
            Attr::SyncSpeedMin | Attr::SyncSpeedMax => Kind::SyncSpeed,
            _ => Kind::Int,
        }
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A typed attribute value, as read from or written to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Int(u64),
    /// A C int the kernel printed negative (`sync_speed_*`, `speed_limit_*`; see
    /// [`crate::kernel::sync_speed_store`]). Always below zero: zero and up are [`Value::Int`].
    Negative(i64),
    Bool(bool),
    /// `sync_speed_*` following the system-wide limit (the kernel prints `N (system)`).
    System,
}

impl Value {
    /// A signed number as a value: [`Value::Negative`] below zero, [`Value::Int`] otherwise.
    pub fn signed(n: i64) -> Value {
        u64::try_from(n).map_or(Value::Negative(n), Value::Int)
    }

    /// The text written to the kernel.
    pub fn to_kernel(self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Negative(n) => n.to_string(),
            Value::Bool(b) => u8::from(b).to_string(),
            Value::System => "system".to_string(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Negative(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::System => f.write_str("system"),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(n) => s.serialize_u64(*n),
            Value::Negative(n) => s.serialize_i64(*n),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::System => s.serialize_str("system"),
        }
    }
}

/// Parses what the kernel prints for an attribute of `kind`. Returns `None` for text the kernel
/// would not print (garbage, an empty file, a number beyond 64 bits).
pub fn parse_value(kind: Kind, text: &str) -> Option<Value> {
    let text = text.trim();
    match kind {
        Kind::Int => text.parse().ok().map(Value::Int),
        Kind::CInt => c_int(text),
        // skip_copy and sync_force_parallel print 0 or 1; any other unsigned means "on".
        Kind::Bool => text.parse::<u64>().ok().map(|n| Value::Bool(n != 0)),
        // sync_speed_* prints "200000 (system)" or "50000 (local)". A bare number (as a test
        // root holds it) is the array's own value; a bare "system" (what a test root holds
        // after mdtune wrote it) follows the system value.
        Kind::SyncSpeed if text == "system" => Some(Value::System),
        Kind::SyncSpeed => {
            let (number, suffix) = match text.split_once(' ') {
                Some((n, s)) => (n, s.trim()),
                None => (text, "(local)"),
            };
            let n = c_int(number)?;
            match suffix {
                "(system)" => Some(Value::System),
                "(local)" => Some(n),
                _ => None,
            }
        }
    }
}

/// A number the kernel printed with `%d` from an int: negative values are kept, and an
/// unsigned number in 2^31..2^32 (what a test root holds after mdtune wrote a negative
/// `sync_speed_*` back, see [`crate::kernel::sync_speed_store`]) reads as the kernel shows it.
fn c_int(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<u64>() {
        if (1 << 31..1 << 32).contains(&n) {
            return Some(Value::signed(i64::from(n as u32 as i32)));
        }
        return Some(Value::Int(n));
    }
    text.parse::<i64>().ok().map(Value::signed)
}

/// The text to write for `value` as an attribute of `kind`: what [`Value::to_kernel`] gives,
/// except that a negative `sync_speed_*` is written as the unsigned number the kernel stores.
pub fn kernel_text(kind: Kind, value: Value) -> String {
    match (kind, value) {
        (Kind::SyncSpeed, Value::Negative(n)) => crate::kernel::sync_speed_store(n).to_string(),
        _ => value.to_kernel(),
    }
}

/// Parses the kernel's `N / M` progress in `sync_completed`; `none` and `delayed` give `None`.
pub fn parse_progress(text: &str) -> Option<[u64; 2]> {
    let (done, total) = text.trim().split_once('/')?;
    Some([done.trim().parse().ok()?, total.trim().parse().ok()?])
}

/// Counts the CPUs in a kernel CPU list such as `0-3,8-11` (`/sys/devices/system/cpu/online`).
pub fn parse_cpu_list(text: &str) -> Option<u64> {
    let mut count = 0u64;
    for part in text.trim().split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u64>().ok()?, hi.parse::<u64>().ok()?),
            None => {
                let n = part.parse::<u64>().ok()?;
                (n, n)
            }
        };
        count = count.checked_add(hi.checked_sub(lo)?.checked_add(1)?)?;
    }
    Some(count)
}

/// Reads a small kernel file as text.
///
/// The last component is never followed when it is a symlink (`O_NOFOLLOW`: ELOOP): callers
/// resolve the directory once with [`Root::confine`], so a file in it cannot lead out of the root.
pub fn read(path: &Path) -> io::Result<String> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads a whole file without following a symlink in its last component.
pub fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    OpenOptions::new()
        .read(true)
        .custom_flags(O_NOFOLLOW)
        .open(path)?
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `O_NOFOLLOW` from the kernel's uapi headers (not exported by std): arm, arm64 and powerpc use
/// their own value, every other Linux architecture the generic one.
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
))]
pub const O_NOFOLLOW: i32 = 0o100000;
#[cfg(not(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "powerpc",
    target_arch = "powerpc64"
)))]
pub const O_NOFOLLOW: i32 = 0o400000;

/// Opens an existing attribute file for writing: `O_WRONLY|O_TRUNC` and never `O_CREAT`. On
/// sysfs a missing file must fail with ENOENT (a create gives EACCES), and a test root made of
/// regular files needs the truncate (sysfs ignores it). Nothing is written yet.
pub fn open_for_write(path: &Path) -> io::Result<fs::File> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(O_NOFOLLOW)
        .open(path)
}

/// Writes `text` and a newline in one `write(2)`, as `echo` does.
pub fn write_value(file: &mut fs::File, text: &str) -> io::Result<()> {
    file.write_all(format!("{text}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_speed_suffixes_say_whose_value_it_is() {
        let p = |t| parse_value(Kind::SyncSpeed, t);
        assert_eq!(p("200000 (system)\n"), Some(Value::System));
        assert_eq!(p("50000 (local)\n"), Some(Value::Int(50000)));
        assert_eq!(p("50000\n"), Some(Value::Int(50000)));
        assert_eq!(p("system\n"), Some(Value::System));
        assert_eq!(p("50000 (other)"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("abc (local)"), None);
    }

    #[test]
    fn c_ints_read_negative_as_the_kernel_prints_them() {
        let p = |k, t| parse_value(k, t);
        assert_eq!(
            p(Kind::SyncSpeed, "-1 (local)\n"),
            Some(Value::Negative(-1))
        );
        assert_eq!(p(Kind::SyncSpeed, "-1 (system)\n"), Some(Value::System));
        assert_eq!(p(Kind::SyncSpeed, "4294967295"), Some(Value::Negative(-1)));
        assert_eq!(p(Kind::CInt, "-1\n"), Some(Value::Negative(-1)));
        assert_eq!(p(Kind::CInt, "200000\n"), Some(Value::Int(200000)));
        assert_eq!(p(Kind::CInt, ""), None);
        assert_eq!(
            kernel_text(Kind::SyncSpeed, Value::Negative(-1)),
            "4294967295"
        );
        assert_eq!(kernel_text(Kind::CInt, Value::Negative(-1)), "-1");
        let back = parse_value(
            Kind::SyncSpeed,
            &kernel_text(Kind::SyncSpeed, Value::Negative(-7)),
        );
        assert_eq!(back, Some(Value::Negative(-7)));
    }

    #[test]
    fn garbage_and_huge_numbers_do_not_parse() {
        assert_eq!(parse_value(Kind::Int, "99999999999999999999999"), None);
        assert_eq!(parse_value(Kind::Int, "-1"), None);
        assert_eq!(parse_value(Kind::Int, " 256\n"), Some(Value::Int(256)));
        assert_eq!(parse_value(Kind::Bool, "1"), Some(Value::Bool(true)));
        assert_eq!(parse_value(Kind::Bool, "x"), None);
    }

    #[test]
    fn cpu_lists_count_every_range() {
        assert_eq!(parse_cpu_list("0\n"), Some(1));
        assert_eq!(parse_cpu_list("0-3,8-11\n"), Some(8));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(
            parse_progress("1048576 / 4194304\n"),
            Some([1048576, 4194304])
        );
        assert_eq!(parse_progress("delayed"), None);
    }
}
