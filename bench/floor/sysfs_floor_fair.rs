//! The fair floor (`sysfs_floor --fair ROOT ATTR...`): the same facts as the bare floor, read
//! with the kernel-safe shortcuts mdtune takes and under the same confinement, so that what is
//! left between it and mdtune is mdtune's own code (parsing, planning, the JSON answer), not
//! work the floor skips or work mdtune skips. What it does that the bare floor does not, each as
//! `src/sys/` and `src/host/` do it (docs/performance.md, *How mdtune reads sysfs*):
//!
//! - **One descriptor per root, every open beneath it.** The root is opened once; `sys/` and
//!   `dev/md` are opened beneath it, and every other path beneath `sys/` or a directory opened
//!   there, by `openat2`: paths through the kernel's links (`block/md0/md`, a member's device
//!   `block/md0/md/dev-nvme0n1/block`, `.../device/scsi_disk`) with `RESOLVE_BENEATH |
//!   RESOLVE_NO_MAGICLINKS`, paths of plain components (`dev-nvme0n1/state`, `queue/io_poll`,
//!   `slaves`) with `RESOLVE_NO_SYMLINKS` (and a file with `O_NOFOLLOW`). A walk that races with a
//!   rename (EAGAIN) is made again. Whether the kernel has `openat2` is asked once, by one
//!   `openat2` of `/` that opens nothing; without it (ENOSYS, or EPERM from a seccomp filter), and
//!   with `--walk`, every path is walked from the same descriptor instead: one
//!   `openat(O_NOFOLLOW)` per component and a `readlinkat` per link, `..` never above the start.
//! - **A member's device is opened once** and read relative to that descriptor (the bare floor
//!   walks the member's link again for every file).
//! - **`mq/` is counted from its link count** by one `statx` relative to the device (no `stat` of
//!   the whole path); `partition` is looked for, by one more `statx`, only where `mq/` is missing.
//! - **`device/scsi_disk/` only under `sd*` names** (only the sd driver's disks have it).
//! - **A listing under `sys/` ends at a short batch** where `sys/` is sysfs, tmpfs or ramfs, told
//!   by one `fstatfs` of `sys/`; `dev/md` (outside `sys/`) is read until getdents64 returns 0.
//!
//! It still parses, plans and prints nothing beyond what the benchmark checks.

use super::{array_line, close, cpus_in, entries_until, read, readlinkat, syscall, AT_FDCWD};
use super::{O_CLOEXEC, O_DIRECTORY};
use std::ffi::{c_int, c_long, CString};
use std::io::Write;

const SYS_FSTAT: c_long = 5;
const SYS_FSTATFS: c_long = 138;
const SYS_OPENAT: c_long = 257;
const SYS_STATX: c_long = 332;
const SYS_OPENAT2: c_long = 437;

const O_NOFOLLOW: c_int = 0o400000;
const O_PATH: c_int = 0o10000000;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;
const AT_SYMLINK_NOFOLLOW: c_int = 0x100;
const STATX_TYPE: u32 = 0x1;
const STATX_NLINK: u32 = 0x4;
const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;

const EPERM: c_int = 1;
const EAGAIN: c_int = 11;
const EXDEV: c_int = 18;
const ENOTDIR: c_int = 20;
const EINVAL: c_int = 22;
const ENOSYS: c_int = 38;
const ELOOP: c_int = 40;

/// `statfs`'s `f_type` of sysfs, tmpfs and ramfs: where a listing ends at a short batch.
const FILLS_WHOLE_BATCHES: [i64; 3] = [0x6265_6572, 0x0102_1994, 0x8584_58f6];

/// How many times an `openat2` that raced with a rename elsewhere is made again, as mdtune.
const OPENAT2_ATTEMPTS: u32 = 1000;

/// The most links one walk follows (the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// What a path may pass through on its way.
#[derive(Clone, Copy, PartialEq)]
enum Links {
    /// Relative links, while they stay beneath the start (`RESOLVE_BENEATH`).
    Beneath,
    /// None (`RESOLVE_NO_SYMLINKS`).
    None,
}

/// `struct open_how` of openat2(2).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn close_fd(fd: c_int) {
    unsafe { close(fd) };
}

/// `openat(dir, name, flags | O_CLOEXEC)`: one component.
fn openat(dir: c_int, name: &str, flags: c_int) -> Result<c_int, c_int> {
    let c = CString::new(name).map_err(|_| EINVAL)?;
    let fd = unsafe {
        syscall(
            SYS_OPENAT,
            c_long::from(dir),
            c.as_ptr(),
            c_long::from(flags | O_CLOEXEC),
            0 as c_long,
        )
    };
    if fd >= 0 {
        Ok(fd as c_int)
    } else {
        Err(errno())
    }
}

/// `openat2(dir, path, flags | O_CLOEXEC, resolve)`, made again while it races (EAGAIN).
fn openat2(dir: c_int, path: &str, flags: c_int, resolve: u64) -> Result<c_int, c_int> {
    let c = CString::new(path).map_err(|_| EINVAL)?;
    let how = OpenHow {
        flags: (flags | O_CLOEXEC) as u64,
        mode: 0,
        resolve,
    };
    let mut attempts = 0;
    loop {
        let fd = unsafe {
            syscall(
                SYS_OPENAT2,
                c_long::from(dir),
                c.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            return Ok(fd as c_int);
        }
        match errno() {
            EAGAIN if attempts < OPENAT2_ATTEMPTS => attempts += 1,
            e => return Err(e),
        }
    }
}

/// The text of link `name` in `dir`.
fn read_link(dir: c_int, name: &str) -> Option<String> {
    let c = CString::new(name).ok()?;
    let mut target = [0u8; 4096];
    let len = unsafe { readlinkat(dir, c.as_ptr(), target.as_mut_ptr(), target.len()) };
    let len = usize::try_from(len).ok()?;
    Some(String::from_utf8_lossy(&target[..len]).into_owned())
}

/// The components of `path` still to walk, last first (a stack), without empty ones and `.`.
fn parts(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .rev()
        .map(str::to_string)
        .collect()
}

/// How the fair floor opens and lists: the way chosen once for the run, and how listings under
/// `sys/` end.
struct Fair {
    /// `openat2`, or the walk (a kernel before 5.6, or `--walk`).
    openat2: bool,
    /// Whether a listing under `sys/` ends at a short batch (`sys/` on sysfs, tmpfs or ramfs).
    short: bool,
    buf: Vec<u8>,
}

impl Fair {
    /// Opens `path` beneath `dir` with `flags`, passing only the links `links` allows: EXDEV when
    /// resolving it would leave `dir`.
    fn resolve(&self, dir: c_int, path: &str, flags: c_int, links: Links) -> Result<c_int, c_int> {
        if self.openat2 {
            let resolve = match links {
                Links::Beneath => RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
                Links::None => RESOLVE_NO_SYMLINKS,
            };
            openat2(dir, path, flags, resolve)
        } else {
            walk(dir, path, flags, links)
        }
    }

    /// The trimmed text of the file `path` (plain components) below `dir`: one open, one read,
    /// one close.
    fn read(&self, dir: c_int, path: &str) -> Option<String> {
        let fd = self.resolve(dir, path, O_NOFOLLOW, Links::None).ok()?;
        let mut buf = [0u8; 4096];
        let n = unsafe { read(fd, buf.as_mut_ptr(), buf.len()) };
        close_fd(fd);
        let n = usize::try_from(n).ok()?;
        Some(String::from_utf8_lossy(&buf[..n]).trim().to_string())
    }

    /// Calls `f` with every entry of the open directory `fd`, which is under `sys/`.
    fn entries(&mut self, fd: c_int, f: &mut dyn FnMut(&str)) {
        entries_until(fd, &mut self.buf, self.short, f);
    }

    /// Calls `f` with every entry of the directory `path` below `dir`, opened as `links` says.
    fn list(&mut self, dir: c_int, path: &str, links: Links, mut f: impl FnMut(&str)) {
        if let Ok(fd) = self.resolve(dir, path, O_DIRECTORY, links) {
            self.entries(fd, &mut f);
            close_fd(fd);
        }
    }

    /// Whether `name` in `dir` (not followed) is a directory, and its link count, by one
    /// `statx`; where the kernel has none (before 4.11), an `O_PATH` open and an `fstat`.
    /// `None` when it is not there.
    fn stat(&self, dir: c_int, name: &str) -> Option<(bool, u64)> {
        let c = CString::new(name).ok()?;
        let mut stx = [0u8; 256];
        let r = unsafe {
            syscall(
                SYS_STATX,
                c_long::from(dir),
                c.as_ptr(),
                c_long::from(AT_SYMLINK_NOFOLLOW),
                c_long::from(STATX_TYPE | STATX_NLINK),
                stx.as_mut_ptr(),
            )
        };
        if r == 0 {
            // struct statx: stx_nlink (u32) at 16, stx_mode (u16) at 28.
            let nlink = u32::from_ne_bytes(stx[16..20].try_into().unwrap());
            let mode = u16::from_ne_bytes(stx[28..30].try_into().unwrap());
            return Some((u32::from(mode) & S_IFMT == S_IFDIR, u64::from(nlink)));
        }
        if !matches!(errno(), ENOSYS | EPERM) {
            return None;
        }
        let fd = openat(dir, name, O_PATH | O_NOFOLLOW).ok()?;
        let mut st = [0u8; 144];
        let r = unsafe { syscall(SYS_FSTAT, c_long::from(fd), st.as_mut_ptr()) };
        close_fd(fd);
        // struct stat (x86_64): st_nlink (u64) at 16, st_mode (u32) at 24.
        (r == 0).then(|| {
            let nlink = u64::from_ne_bytes(st[16..24].try_into().unwrap());
            let mode = u32::from_ne_bytes(st[24..28].try_into().unwrap());
            (mode & S_IFMT == S_IFDIR, nlink)
        })
    }

    /// The subdirectories of `name` in `dir` (a disk's `mq/`, a queue's `cpu<K>`), from its link
    /// count where that tells (more than 2), else by listing it for the entries `pick` accepts.
    fn count_sub(&mut self, dir: c_int, name: &str, pick: fn(&str) -> bool) -> u32 {
        match self.stat(dir, name) {
            Some((true, links)) if links > 2 => (links - 2) as u32,
            Some((true, _)) => {
                let mut n = 0;
                self.list(dir, name, Links::None, |e| n += u32::from(pick(e)));
                n
            }
            _ => 0,
        }
    }
}

/// [`Fair::resolve`] without `openat2`, as mdtune's `src/sys/resolve.rs` walks: every directory
/// opened with `O_NOFOLLOW | O_DIRECTORY` relative to the one before; a link is read and its text
/// walked in its place (`Links::Beneath`; absolute: EXDEV) or refused (ELOOP); a `..` goes back
/// to the directory held before, never above `dir` (EXDEV).
fn walk(dir: c_int, path: &str, flags: c_int, links: Links) -> Result<c_int, c_int> {
    let mut todo = parts(path);
    let mut held: Vec<c_int> = Vec::new();
    let mut followed = 0;
    let result = loop {
        let at = held.last().copied().unwrap_or(dir);
        let Some(part) = todo.pop() else {
            break openat(at, ".", flags);
        };
        if part == ".." {
            match held.pop() {
                Some(fd) => close_fd(fd),
                None => break Err(EXDEV),
            }
            continue;
        }
        let last = todo.is_empty();
        let want = if last {
            flags | O_NOFOLLOW
        } else {
            O_DIRECTORY | O_NOFOLLOW
        };
        let may_follow = links == Links::Beneath && !(last && flags & O_NOFOLLOW != 0);
        match openat(at, &part, want) {
            Ok(fd) if last => break Ok(fd),
            Ok(fd) => held.push(fd),
            Err(e @ (ELOOP | ENOTDIR)) => {
                let Some(target) = read_link(at, &part) else {
                    break Err(e);
                };
                followed += 1;
                if !may_follow || followed > MAX_LINKS {
                    break Err(ELOOP);
                }
                if target.starts_with('/') {
                    break Err(EXDEV);
                }
                todo.extend(parts(&target));
            }
            Err(e) => break Err(e),
        }
    };
    held.into_iter().for_each(close_fd);
    result
}

/// Whether this kernel has `openat2`: one `openat2` of `/` beneath the current directory, which
/// a kernel that has the call refuses (EXDEV) without opening anything.
fn has_openat2() -> bool {
    match openat2(AT_FDCWD, "/", O_PATH, RESOLVE_BENEATH) {
        Ok(fd) => {
            close_fd(fd);
            true
        }
        Err(e) => !matches!(e, ENOSYS | EPERM),
    }
}

/// `sysfs_floor --fair [--walk] ROOT ATTR...` (`args` after `--fair`); `--walk` takes the walk
/// of a kernel without openat2 (before 5.6).
pub(super) fn main(args: &[String]) {
    let walk = args.first().is_some_and(|a| a == "--walk");
    let args = if walk { &args[1..] } else { args };
    let (root, attrs) = args
        .split_first()
        .expect("usage: sysfs_floor --fair [--walk] ROOT ATTR...");
    let out = run(root, attrs, walk);
    std::io::stdout().write_all(out.as_bytes()).unwrap();
}

/// Reads what the bare floor reads, the fair way, and returns what it prints.
fn run(root: &str, attrs: &[String], walk: bool) -> String {
    let mut fs = Fair {
        openat2: !walk && has_openat2(),
        short: false,
        buf: vec![0u8; 32 * 1024],
    };
    let root_fd = openat(AT_FDCWD, root, O_DIRECTORY).expect("the root");
    let sys = fs
        .resolve(root_fd, "sys", O_DIRECTORY, Links::Beneath)
        .expect("sys/");
    let mut st = [0u8; 120];
    if unsafe { syscall(SYS_FSTATFS, c_long::from(sys), st.as_mut_ptr()) } == 0 {
        // struct statfs (x86_64): f_type (i64) first.
        let f_type = i64::from_ne_bytes(st[..8].try_into().unwrap());
        fs.short = FILLS_WHOLE_BATCHES.contains(&f_type);
    }

    let mut arrays = Vec::new();
    fs.list(sys, "block", Links::Beneath, |n| {
        if n.starts_with("md") {
            arrays.push(n.to_string());
        }
    });
    arrays.sort_by_key(|n| n[2..].parse::<u64>().unwrap_or(u64::MAX));

    // udev's names: dev/md/NAME -> ../mdX, outside sys/: listed until 0.
    let mut devnames = Vec::new();
    if let Ok(dev_md) = fs.resolve(root_fd, "dev/md", O_DIRECTORY, Links::Beneath) {
        let mut names = Vec::new();
        entries_until(dev_md, &mut fs.buf, false, &mut |n| {
            names.push(n.to_string())
        });
        for n in names {
            if let Some(t) = read_link(dev_md, &n) {
                devnames.push((t.rsplit('/').next().unwrap_or("").to_string(), n));
            }
        }
        close_fd(dev_md);
    }

    let mut out = String::new();
    let mut possible: Option<u32> = None;
    for md in &arrays {
        let Ok(md_fd) = fs.resolve(sys, &format!("block/{md}/md"), O_DIRECTORY, Links::Beneath)
        else {
            continue;
        };
        let file = |fs: &Fair, name: &str| fs.read(md_fd, name).unwrap_or_default();
        let level = file(&fs, "level");
        let state = file(&fs, "array_state");
        let metadata = file(&fs, "metadata_version");
        let uuid = file(&fs, "uuid");
        let values: Vec<String> = attrs
            .iter()
            .map(|a| format!("{a}={}", file(&fs, a)))
            .collect();
        let sync = [
            file(&fs, "sync_action"),
            file(&fs, "sync_completed"),
            file(&fs, "sync_speed"),
        ];
        let reshape = file(&fs, "reshape_position");
        let mut members = Vec::new();
        fs.entries(md_fd, &mut |e| {
            if let Some(m) = e.strip_prefix("dev-") {
                members.push(m.to_string());
            }
        });
        let queues: Vec<String> = members
            .iter()
            .map(|m| member(&mut fs, sys, md_fd, md, m, &mut possible))
            .collect();
        close_fd(md_fd);
        out.push_str(&array_line(
            md,
            &devnames,
            [&uuid, &level, &state, &metadata, &reshape],
            &values,
            &sync,
            &queues,
        ));
    }
    close_fd(sys);
    close_fd(root_fd);
    out
}

/// What the floor prints of member `m` of array `md` (whose `md/` is open as `md_fd`):
/// `NAME:QUEUES:STATE/SLOT:SCSI[:stacked]`. `possible` is `cpu/possible`'s count once read.
fn member(
    fs: &mut Fair,
    sys: c_int,
    md_fd: c_int,
    md: &str,
    m: &str,
    possible: &mut Option<u32>,
) -> String {
    let role = format!(
        "{}/{}",
        fs.read(md_fd, &format!("dev-{m}/state"))
            .unwrap_or_default(),
        fs.read(md_fd, &format!("dev-{m}/slot")).unwrap_or_default()
    );
    // The member's device, opened once beneath sys/ through the kernel's links.
    let mut path = format!("block/{md}/md/dev-{m}/block");
    let Ok(dev) = fs.resolve(sys, &path, O_DIRECTORY, Links::Beneath) else {
        return format!("{m}:0:{role}:0");
    };
    // A device with mq/ is a disk; only without one is `partition` looked for.
    let numbered = |q: &str| q.parse::<u32>().is_ok();
    let mut mq = fs.count_sub(dev, "mq", numbered);
    let mut disk = dev;
    if mq == 0 && fs.stat(dev, "partition").is_some() {
        path.push_str("/..");
        if let Ok(parent) = fs.resolve(sys, &path, O_DIRECTORY, Links::Beneath) {
            disk = parent;
            mq = fs.count_sub(disk, "mq", numbered);
        }
    }
    let mut stacked = 0;
    fs.list(disk, "slaves", Links::None, |_| stacked += 1);
    // Only the sd driver's disks have scsi_disk/, and it names them (and their partitions)
    // sd<letters>.
    let mut scsi = 0;
    if m.starts_with("sd") {
        let scsi_disk = format!("{path}/device/scsi_disk");
        fs.list(sys, &scsi_disk, Links::Beneath, |_| scsi = 1);
    }
    if scsi == 0 && mq > 1 && fs.read(disk, "queue/io_poll").as_deref() == Some("1") {
        let possible = *possible.get_or_insert_with(|| {
            let list = fs.read(sys, "devices/system/cpu/possible");
            cpus_in(&list.unwrap_or_default())
        });
        mq -= poll_queues(fs, disk, possible);
    }
    if disk != dev {
        close_fd(disk);
    }
    close_fd(dev);
    format!(
        "{m}:{mq}:{role}:{scsi}{}",
        if stacked > 0 { ":stacked" } else { "" }
    )
}

/// The poll queues of the open disk `disk`: the last `mq/` entries whose `cpu<K>` subdirectories
/// (by link count, one `statx` each relative to `mq/`) add up to the `possible` CPUs; 0 when
/// they do not.
fn poll_queues(fs: &mut Fair, disk: c_int, possible: u32) -> u32 {
    let Ok(mq) = fs.resolve(disk, "mq", O_DIRECTORY, Links::None) else {
        return 0;
    };
    let mut numbered = Vec::new();
    fs.entries(mq, &mut |q| numbered.extend(q.parse::<u32>().ok()));
    numbered.sort_unstable_by(|a, b| b.cmp(a));
    let cpu = |e: &str| {
        e.strip_prefix("cpu")
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    };
    let (mut cpus, mut polled) = (0, 0);
    for n in numbered {
        cpus += fs.count_sub(mq, &n.to_string(), cpu);
        polled += 1;
        if cpus >= possible {
            break;
        }
    }
    close_fd(mq);
    if cpus == possible {
        polled
    } else {
        0
    }
}
