//! The floor of reading sysfs: what answering mdtune's benchmark `query` costs at the least.
//!
//! `sysfs_floor ROOT ATTR...` reads exactly the files and lists exactly the directories that
//! mdtune's answer on the benchmark host (`mkroot bench`, built by the tests' fake-root builder,
//! tests/fakeroot) needs, and nothing else: for every md array in `ROOT/sys/block`, its `level`,
//! `array_state`, `metadata_version` (external metadata), `uuid`, the asked-for attributes ATTR...,
//! `sync_action`, `sync_completed`, `sync_speed` and `reshape_position` (the answer prints or
//! decides on each); its `md/` (the members are its `dev-*` entries); for every member its `state`
//! and `slot` (its role), whether its device is a partition (`partition`), whether it is stacked
//! (its `slaves/`), its `mq/` (the queues), whether it is a SCSI disk (`device/scsi_disk/`: then
//! one queue) and, for any other disk with more than one queue, `queue/io_poll` (and, where it
//! reads 1, the `cpu<K>` entries of its last `mq/<N>` until they add up to `cpu/possible`: those
//! are poll queues, not counted); and udev's `dev/md` links (the array's name). It prints what it
//! found, one line per array, so the benchmark can check it against mdtune's answer: each member
//! as `NAME:QUEUES:STATE/SLOT:SCSI[:stacked]`, QUEUES its `mq/` entries without poll queues.
//!
//! What it leaves out, and mdtune must do: confinement (it follows every link without checking
//! where it leads), parsing and checking values, planning, the report's JSON. Each file is one
//! openat + read + close, each listing an openat + getdents64 until it returns 0 + close, each
//! udev link one readlinkat; paths go through the links in one openat (`md0/md`,
//! `dev-nvme0n1/block/mq`) rather than opening every directory on the way. System calls come from
//! the C library (openat, readlinkat) and `syscall` (getdents64); mdtune makes the same calls
//! through rustix.
//!
//! `sysfs_floor --mq-links ROOT ATTR...` counts each `mq/` from its link count (one `stat` of the
//! directory: sysfs gives a directory 2 + its subdirectories) instead of listing it, as mdtune
//! does; that variant is the floor of mdtune's own way of counting queues.
//!
//! `sysfs_floor --fair [--walk] ROOT ATTR...` is the fair floor (bench/floor/sysfs_floor_fair.rs):
//! the same facts, read with the kernel-safe shortcuts mdtune takes (a listing under `sys/` ends
//! at a short batch on sysfs, tmpfs and ramfs; `device/scsi_disk/` only under `sd*` names; `mq/`
//! by link count, `partition` only where `mq/` is missing, a member's device opened once) and
//! under mdtune's confinement (one descriptor per root, every open an `openat2` beneath it, or
//! the walk mdtune falls back to without `openat2`, which `--walk` forces). The two are reported
//! side by side: the bare floor is the least work, the fair floor the least work mdtune's rules
//! allow.
//!
//! Built by bench/bench_direct.py: `rustc --edition 2021 -C opt-level=3 -C panic=abort
//! --target x86_64-unknown-linux-musl bench/floor/sysfs_floor.rs` (static, like the mdtune binary
//! it is compared with).

use std::ffi::{c_char, c_int, c_long, CString};
use std::io::Write;

extern "C" {
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn read(fd: c_int, buf: *mut u8, count: usize) -> isize;
    fn close(fd: c_int) -> c_int;
    fn readlinkat(dirfd: c_int, path: *const c_char, buf: *mut u8, size: usize) -> isize;
    fn syscall(number: c_long, ...) -> c_long;
}

const SYS_GETDENTS64: c_long = 217;
const O_DIRECTORY: c_int = 0o200000;
const O_CLOEXEC: c_int = 0o2000000;
const AT_FDCWD: c_int = -100;

fn open(dir: c_int, path: &str, flags: c_int) -> Option<c_int> {
    let c = CString::new(path).ok()?;
    let fd = unsafe { openat(dir, c.as_ptr(), flags | O_CLOEXEC) };
    (fd >= 0).then_some(fd)
}

/// One file's text: openat, one read, close.
fn read_file(dir: c_int, name: &str) -> Option<String> {
    let fd = open(dir, name, 0)?;
    let mut buf = [0u8; 4096];
    let n = unsafe { read(fd, buf.as_mut_ptr(), buf.len()) };
    unsafe { close(fd) };
    let n = usize::try_from(n).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).trim().to_string())
}

/// Calls `f` with every entry of the open directory `fd` (getdents64 until it returns 0).
fn entries(fd: c_int, buf: &mut [u8], f: &mut dyn FnMut(&str)) {
    entries_until(fd, buf, false, f);
}

/// Room a batch must leave in the buffer to be taken as the last one (`short`): more than any
/// entry the kernel could have held back (a name of `PATH_MAX` bytes, its 19-byte header,
/// alignment), as mdtune's `src/sys/listing.rs` has it, with its 8 bytes of alignment slack.
const ROOM_FOR_ANY_ENTRY: usize = 4096 + 32 + 8;

/// [`entries`], ending at a batch that left room for any entry when `short` (sysfs, tmpfs and
/// ramfs fill each batch until an entry does not fit or the directory ends), or else when
/// getdents64 returns 0.
fn entries_until(fd: c_int, buf: &mut [u8], short: bool, f: &mut dyn FnMut(&str)) {
    loop {
        let n = unsafe {
            syscall(
                SYS_GETDENTS64,
                c_long::from(fd),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n <= 0 {
            return;
        }
        let mut rec = &buf[..n as usize];
        while rec.len() >= 19 {
            let len = usize::from(u16::from_ne_bytes([rec[16], rec[17]]));
            let name = &rec[19..len];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if name != b"." && name != b".." {
                f(std::str::from_utf8(name).unwrap_or(""));
            }
            rec = &rec[len..];
        }
        if short && n as usize + ROOM_FOR_ANY_ENTRY <= buf.len() {
            return;
        }
    }
}

/// Calls `f` with every entry of the directory `dir`/`path`: openat, getdents64, close.
fn list(dir: c_int, path: &str, buf: &mut [u8], mut f: impl FnMut(&str)) {
    if let Some(fd) = open(dir, path, O_DIRECTORY) {
        entries(fd, buf, &mut f);
        unsafe { close(fd) };
    }
}

/// The link count of the directory at `path` less 2: its subdirectories (one `stat`).
fn links(path: &str) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map_or(0, |m| m.nlink().saturating_sub(2) as u32)
}

/// How many CPUs a kernel list (`0-3,8`) names.
fn cpus_in(list: &str) -> u32 {
    list.split(',')
        .filter_map(|p| match p.split_once('-') {
            Some((a, b)) => Some(b.parse::<u32>().ok()? - a.parse::<u32>().ok()? + 1),
            None => p.parse::<u32>().ok().map(|_| 1),
        })
        .sum()
}

/// The poll queues of the disk whose `mq/` is `mq` under `dir`: its last entries whose `cpu<K>`
/// subdirectories add up to the `possible` CPUs (by link count under `root` when given, else
/// listing each). 0 when they do not.
fn poll_queues(
    dir: c_int,
    mq: &str,
    possible: u32,
    root: Option<&str>,
    buf: &mut [u8],
    md: &str,
) -> u32 {
    let mut numbered = Vec::new();
    list(dir, mq, buf, |q| numbered.extend(q.parse::<u32>().ok()));
    numbered.sort_unstable_by(|a, b| b.cmp(a));
    let (mut cpus, mut polled) = (0, 0);
    for n in numbered {
        cpus += match root {
            Some(root) => links(&format!("{root}/sys/block/{md}/md/{mq}/{n}")),
            None => {
                let mut c = 0;
                list(dir, &format!("{mq}/{n}"), buf, |e| {
                    c += u32::from(
                        e.strip_prefix("cpu")
                            .is_some_and(|k| k.parse::<u32>().is_ok()),
                    );
                });
                c
            }
        };
        polled += 1;
        if cpus >= possible {
            break;
        }
    }
    if cpus == possible {
        polled
    } else {
        0
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--fair") {
        return fair::main(&args[1..]);
    }
    let mq_links = args.first().is_some_and(|a| a == "--mq-links");
    if mq_links {
        args.remove(0);
    }
    let (root, attrs) = args
        .split_first()
        .expect("usage: sysfs_floor [--mq-links | --fair [--walk]] ROOT ATTR...");
    let mut buf = vec![0u8; 32 * 1024];
    let mut out = String::new();

    let block = open(AT_FDCWD, &format!("{root}/sys/block"), O_DIRECTORY).expect("sys/block");
    let mut arrays = Vec::new();
    entries(block, &mut buf, &mut |n| {
        if n.starts_with("md") {
            arrays.push(n.to_string());
        }
    });
    arrays.sort_by_key(|n| n[2..].parse::<u64>().unwrap_or(u64::MAX));

    // udev's names: dev/md/NAME -> ../mdX.
    let mut devnames = Vec::new();
    if let Some(dev_md) = open(AT_FDCWD, &format!("{root}/dev/md"), O_DIRECTORY) {
        let mut names = Vec::new();
        entries(dev_md, &mut buf, &mut |n| names.push(n.to_string()));
        for n in names {
            let c = CString::new(n.as_str()).unwrap();
            let mut target = [0u8; 256];
            let len = unsafe { readlinkat(dev_md, c.as_ptr(), target.as_mut_ptr(), target.len()) };
            if len > 0 {
                let t = String::from_utf8_lossy(&target[..len as usize]);
                devnames.push((t.rsplit('/').next().unwrap_or("").to_string(), n));
            }
        }
        unsafe { close(dev_md) };
    }

    let mut possible: Option<u32> = None;
    for md in &arrays {
        let Some(mdfd) = open(block, &format!("{md}/md"), O_DIRECTORY) else {
            continue;
        };
        let file = |name: &str| read_file(mdfd, name).unwrap_or_default();
        let level = file("level");
        let state = file("array_state");
        let metadata = file("metadata_version");
        let uuid = file("uuid");
        let values: Vec<String> = attrs.iter().map(|a| format!("{a}={}", file(a))).collect();
        let sync = [
            file("sync_action"),
            file("sync_completed"),
            file("sync_speed"),
        ];
        let reshape = file("reshape_position");
        // The members: md/dev-*, each with its role and the device behind dev-*/block.
        let mut members = Vec::new();
        entries(mdfd, &mut buf, &mut |e| {
            if let Some(m) = e.strip_prefix("dev-") {
                members.push(m.to_string());
            }
        });
        let mut queues = Vec::new();
        for m in &members {
            let role = format!(
                "{}/{}",
                file(&format!("dev-{m}/state")),
                file(&format!("dev-{m}/slot"))
            );
            let block = format!("dev-{m}/block");
            let partition =
                open(mdfd, &format!("{block}/partition"), 0).map(|fd| unsafe { close(fd) });
            let disk = if partition.is_some() {
                format!("{block}/..")
            } else {
                block
            };
            let mut stacked = 0;
            list(mdfd, &format!("{disk}/slaves"), &mut buf, |_| stacked += 1);
            let mut mq = 0;
            if mq_links {
                let path = format!("{root}/sys/block/{md}/md/{disk}/mq");
                mq = links(&path);
            } else {
                list(mdfd, &format!("{disk}/mq"), &mut buf, |q| {
                    mq += u32::from(q.parse::<u32>().is_ok())
                });
            }
            let mut scsi = 0;
            list(mdfd, &format!("{disk}/device/scsi_disk"), &mut buf, |_| {
                scsi = 1
            });
            if scsi == 0 && mq > 1 && file(&format!("{disk}/queue/io_poll")) == "1" {
                let possible = *possible.get_or_insert_with(|| {
                    let list =
                        read_file(AT_FDCWD, &format!("{root}/sys/devices/system/cpu/possible"));
                    cpus_in(&list.unwrap_or_default())
                });
                mq -= poll_queues(
                    mdfd,
                    &format!("{disk}/mq"),
                    possible,
                    mq_links.then_some(root),
                    &mut buf,
                    md,
                );
            }
            queues.push(format!(
                "{m}:{mq}:{role}:{scsi}{}",
                if stacked > 0 { ":stacked" } else { "" }
            ));
        }
        unsafe { close(mdfd) };
        out.push_str(&array_line(
            md,
            &devnames,
            [&uuid, &level, &state, &metadata, &reshape],
            &values,
            &sync,
            &queues,
        ));
    }
    std::io::stdout().write_all(out.as_bytes()).unwrap();
}

/// The line printed for array `md`: its udev names (from `devnames`, (target, name) pairs), its
/// `uuid`, `level`, `array_state`, `metadata_version` and `reshape_position` (`facts`), the
/// asked-for values (`ATTR=value`), its sync action, progress and speed, and its members.
fn array_line(
    md: &str,
    devnames: &[(String, String)],
    facts: [&str; 5],
    values: &[String],
    sync: &[String; 3],
    queues: &[String],
) -> String {
    let [uuid, level, state, metadata, reshape] = facts;
    let devname: Vec<&str> = devnames
        .iter()
        .filter(|(t, _)| t == md)
        .map(|(_, n)| n.as_str())
        .collect();
    format!(
        "{md}\tdevname={}\tuuid={uuid}\tlevel={level}\tstate={state}\tmetadata={metadata}\t{}\tsync={}\treshape={reshape}\tmembers={}\n",
        devname.join(","),
        values.join("\t"),
        sync.join("/"),
        queues.join(",")
    )
}

/// `--fair`: the same facts, read with mdtune's shortcuts and confinement.
#[path = "sysfs_floor_fair.rs"]
mod fair;
