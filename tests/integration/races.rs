//! Confinement under a race (docs/reliability.md, threat model): a root that someone else can
//! change while mdtune runs. Between the moment mdtune learns where an md attribute or a system
//! speed limit is and the moment it opens it for writing, the directory on that path is swapped
//! for a link to a directory outside the root that holds the same file names. No file outside
//! the root may change, and the report must be true: the run fails naming the attribute, or
//! reports the write it really made inside the root.
//!
//! The race is made certain, not lucky: the binary runs under `strace` with a delay injected on
//! entry to every `openat`/`openat2` of the attribute's path (`-P`, in every form mdtune could
//! name it). The test watches the traced process through `/proc/PID/syscall` and `/proc/PID/mem`
//! until it is held at the entry of an open *for writing* of that attribute (the kernel has not
//! looked at the path yet), swaps the directory, checks the process is still held there, and
//! lets it go. strace is required: without it the tests fail and say how to install it.

use crate::common::{bin, children, require_strace, scratch, snapshot};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{symlink, FileExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// `openat`'s number: x86_64 has its own table, arm64, riscv64 and loongarch64 the generic one.
#[cfg(target_arch = "x86_64")]
const SYS_OPENAT: u64 = 257;
#[cfg(not(target_arch = "x86_64"))]
const SYS_OPENAT: u64 = 56;
/// `openat2`'s number, the same on every architecture.
const SYS_OPENAT2: u64 = 437;
/// How long each open of the watched paths is held at its entry, in microseconds: far longer
/// than the swap takes (two renames and a symlink).
const DELAY_US: u64 = 1_000_000;

/// What one traced run saw.
pub(crate) struct Traced {
    pub(crate) json: Value,
    pub(crate) code: i32,
    pub(crate) stdout: String,
    /// The path the write's open named when it was held, if it ever was.
    pub(crate) held: Option<String>,
    /// What strace saw of the watched opens.
    pub(crate) trace: String,
}

impl Traced {
    /// Checks which way mdtune resolved paths in this run, from its probe (`openat2` of "/",
    /// which must be among the watched paths): the walk when strace made it fail ENOSYS.
    pub(crate) fn assert_resolved_by(&self, walk: bool) {
        let probe = self
            .trace
            .lines()
            .find(|l| l.contains("openat2(AT_FDCWD, \"/\""))
            .unwrap_or_else(|| panic!("strace saw no probe of openat2:\n{}", self.trace));
        let expected = if walk { "ENOSYS" } else { "EXDEV" };
        assert!(
            probe.contains(expected),
            "the probe was not {expected}: {probe}"
        );
    }
}

/// Whether a process is held by strace at the entry of an open for writing whose path ends with
/// `/<name>` (or is `name`): then the path it names and the `/proc/PID/syscall` line.
pub(crate) fn held_at_write_open(pid: u32, name: &str) -> Option<(String, String)> {
    held_at_open(pid, name, true)
}

/// Whether a process is held by strace at the entry of an open (for writing only, when `write`)
/// whose path ends with `/<name>` (or is `name`): then the path it names and the
/// `/proc/PID/syscall` line.
pub(crate) fn held_at_open(pid: u32, name: &str, write: bool) -> Option<(String, String)> {
    let line = fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let nr: u64 = fields.first()?.parse().ok()?;
    let arg = |i: usize| -> Option<u64> {
        u64::from_str_radix(fields.get(1 + i)?.trim_start_matches("0x"), 16).ok()
    };
    let mem = fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let flags = match nr {
        SYS_OPENAT => arg(2)?,
        SYS_OPENAT2 => {
            // struct open_how { u64 flags; u64 mode; u64 resolve; }
            let mut how = [0u8; 8];
            mem.read_exact_at(&mut how, arg(2)?).ok()?;
            u64::from_ne_bytes(how)
        }
        _ => return None,
    };
    // O_ACCMODE: O_WRONLY 1, O_RDWR 2.
    if write && flags & 3 == 0 {
        return None;
    }
    let path = read_c_string(&mem, arg(1)?)?;
    (path == name || path.ends_with(&format!("/{name}"))).then_some((path, line))
}

/// The NUL-terminated string at `addr` in a process's memory, read a page at a time.
fn read_c_string(mem: &fs::File, mut addr: u64) -> Option<String> {
    let mut out = Vec::new();
    while out.len() < 8192 {
        let mut page = vec![0u8; (4096 - addr % 4096) as usize];
        let n = mem.read_at(&mut page, addr).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = page[..n].iter().position(|&b| b == 0) {
            out.extend_from_slice(&page[..end]);
            return String::from_utf8(out).ok();
        }
        out.extend_from_slice(&page[..n]);
        addr += n as u64;
    }
    None
}

/// The state letter of `/proc/PID/stat` (`t`: stopped by its tracer).
fn state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Runs `mdtune -` on `input` under strace, holding every open of `watch` (paths in each form
/// mdtune could give them) for [`DELAY_US`]. The first time the process is held at an open for
/// writing of a file named `name`, `swap` runs; then the process is checked to be still held
/// there. `extra` is more strace options (a fault to inject).
fn race(
    input: &Value,
    watch: &[String],
    name: &str,
    extra: &[&str],
    swap: impl FnOnce(),
) -> Traced {
    race_when(
        input,
        watch,
        &|pid| held_at_write_open(pid, name),
        extra,
        swap,
    )
}

/// [`race`] with the moment of the swap given by `held`: the first time it finds the traced
/// process held where it wants it (the path it names and its `/proc/PID/syscall` line).
pub(crate) fn race_when(
    input: &Value,
    watch: &[String],
    held_at: &dyn Fn(u32) -> Option<(String, String)>,
    extra: &[&str],
    swap: impl FnOnce(),
) -> Traced {
    require_strace();
    let log = scratch("race-strace").join("log");
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o"])
        .arg(&log)
        .args(["-e", "trace=openat,openat2"])
        .arg("-e")
        .arg(format!("inject=openat,openat2:delay_enter={DELAY_US}"))
        .args(extra);
    for p in watch {
        cmd.arg("-P").arg(p);
    }
    cmd.args([bin(), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child: Child = cmd.spawn().expect("cannot run strace");
    crate::common::send_input(&mut child, input);
    let strace_pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut swap = Some(swap);
    let mut held = None;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the traced run did not end");
        if swap.is_some() {
            for pid in children(strace_pid) {
                let Some((path, line)) = held_at(pid) else {
                    continue;
                };
                (swap.take().unwrap())();
                assert_eq!(
                    (
                        state(pid),
                        fs::read_to_string(format!("/proc/{pid}/syscall")).ok()
                    ),
                    (Some('t'), Some(line)),
                    "the swap outlasted the injected delay: the open was not held during it"
                );
                held = Some(path);
                break;
            }
        }
        sleep(Duration::from_millis(1));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let trace = fs::read_to_string(&log).unwrap_or_default();
    let _ = fs::remove_file(&log);
    Traced {
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        code: out.status.code().unwrap_or(-1),
        stdout,
        held,
        trace,
    }
}

/// Copies the regular files of `from` into a new directory `to` (the decoy outside the root).
pub(crate) fn copy_files(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The swap: `dir` is moved to `stash` (inside the root) and a link to `decoy` (outside it,
/// holding the same file names) put in its place.
pub(crate) fn swap_for_link(dir: PathBuf, stash: PathBuf, decoy: PathBuf) -> impl FnOnce() {
    move || {
        fs::rename(&dir, &stash).unwrap();
        symlink(&decoy, &dir).unwrap();
    }
}

/// The checks every race ends with: the open was held and the swap made; nothing outside the
/// root changed; the report is true: a failure names `name`, and every setting of the swapped
/// directory (`settings`, as the report gives them) holds, in the stash where that directory
/// now is inside the root, `after` when the report says it changed and `before` when it says it
/// did not.
fn assert_confined(
    out: &Traced,
    name: &str,
    settings: fn(&Value) -> &Value,
    decoy: &Path,
    decoy_before: &[(PathBuf, Vec<u8>, std::time::SystemTime)],
    stash: &Path,
) {
    assert!(
        out.held.is_some(),
        "the write's open of {name} was never held, so nothing was swapped: strace's -P list \
         does not name the path this binary opens it by; stdout: {}",
        out.stdout
    );
    assert!(out.json.is_object(), "no JSON on stdout: {:?}", out.stdout);
    assert!(
        snapshot(decoy) == decoy_before,
        "a file outside the root changed: {} holds {:?} (the write escaped through the swapped \
         directory; report: {})",
        decoy.join(name).display(),
        fs::read_to_string(decoy.join(name)).unwrap_or_default(),
        out.stdout
    );
    let settings = settings(&out.json).as_object().unwrap_or_else(|| {
        panic!(
            "no settings for the swapped directory in the report: {}",
            out.stdout
        )
    });
    assert!(
        settings.contains_key(name),
        "{name} not reported: {}",
        out.stdout
    );
    for (setting, s) in settings {
        let inside = fs::read_to_string(stash.join(setting)).unwrap_or_default();
        let said = if s["changed"] == true {
            &s["after"]
        } else {
            &s["before"]
        };
        assert_eq!(
            inside.trim(),
            said.to_string(),
            "the report says {setting} {} ({s}), but inside the root it holds {inside:?}: {}",
            if s["changed"] == true {
                "changed"
            } else {
                "did not change"
            },
            out.stdout
        );
    }
    if out.code == 0 {
        assert_eq!(settings[name]["changed"], true, "{}", out.stdout);
    } else {
        assert_eq!(out.code, 1, "{}", out.stdout);
        let msg = out.json["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains(name),
            "the failure does not name {name}: {msg}"
        );
    }
}

/// md0's settings in a report.
fn md0_settings(report: &Value) -> &Value {
    report["arrays"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "md0"))
        .map_or(&Value::Null, |a| &a["settings"])
}

/// The system settings in a report.
fn system_settings(report: &Value) -> &Value {
    &report["system"]
}

/// A race on `md0/md/stripe_cache_size`; `no_openat2` makes
/// every `openat2` fail ENOSYS, as on a kernel before 5.6.
fn md_attribute_race(label: &str, no_openat2: bool) {
    let extra: &[&str] = if no_openat2 {
        &["-e", "inject=openat2:error=ENOSYS"]
    } else {
        &[]
    };
    let top = scratch(label);
    let root = top.join("root");
    let r = demo_host(&root);
    let real = fs::canonicalize(&root).unwrap();
    let attr = "stripe_cache_size";
    let md_dir = r.md_attr("md0", attr).parent().unwrap().to_path_buf();
    let decoy = top.join("outside/md");
    copy_files(&md_dir, &decoy);
    let decoy_before = snapshot(&decoy);
    let stash = root.join("stash-md");
    let watch: Vec<String> = [
        format!("{}/sys/devices/virtual/block/md0/md/{attr}", real.display()),
        format!("{}/sys/block/md0/md/{attr}", real.display()),
        format!("sys/devices/virtual/block/md0/md/{attr}"),
        format!("sys/block/md0/md/{attr}"),
        format!("devices/virtual/block/md0/md/{attr}"),
        format!("block/md0/md/{attr}"),
        format!("md/{attr}"),
        attr.to_string(),
    ]
    .into_iter()
    // mdtune chooses openat2 or its walk once, by one openat2 of "/": without openat2, that
    // probe must fail too, as it does on a kernel that lacks the call; which way the run went
    // is checked from it.
    .chain(["/".to_string()])
    .collect();
    let input = json!({
        "root": root.display().to_string(),
        "arrays": [{"name": "md0", attr: 4096}]
    });
    let out = race(
        &input,
        &watch,
        attr,
        extra,
        swap_for_link(md_dir, stash.clone(), decoy.clone()),
    );
    assert_confined(&out, attr, md0_settings, &decoy, &decoy_before, &stash);
    out.assert_resolved_by(no_openat2);
}

#[test]
fn an_md_directory_swapped_for_a_link_out_between_check_and_open_carries_no_write_out() {
    if !needs(Requirement::Strace) {
        return;
    }
    md_attribute_race("race-md", false);
}

#[test]
fn the_same_race_is_refused_without_openat2() {
    if !needs(Requirement::Strace) {
        return;
    }
    // Kernels before 5.6: openat2 fails ENOSYS (injected for the watched paths and the probe),
    // and the write is opened by a walk from the root instead.
    md_attribute_race("race-md-no-openat2", true);
}

#[test]
fn a_raid_limits_directory_swapped_for_a_link_out_carries_no_write_out() {
    if !needs(Requirement::Strace) {
        return;
    }
    let top = scratch("race-limit");
    let root = top.join("root");
    demo_host(&root);
    let real = fs::canonicalize(&root).unwrap();
    let limit = "speed_limit_max";
    let raid = root.join("proc/sys/dev/raid");
    let decoy = top.join("outside/raid");
    copy_files(&raid, &decoy);
    let decoy_before = snapshot(&decoy);
    let stash = root.join("stash-raid");
    let watch: Vec<String> = [
        format!("{}/proc/sys/dev/raid/{limit}", real.display()),
        format!("proc/sys/dev/raid/{limit}"),
        format!("sys/dev/raid/{limit}"),
        format!("raid/{limit}"),
        limit.to_string(),
    ]
    .into();
    let input = json!({"root": root.display().to_string(), limit: 300000});
    let out = race(
        &input,
        &watch,
        limit,
        &[],
        swap_for_link(raid, stash.clone(), decoy.clone()),
    );
    assert_confined(&out, limit, system_settings, &decoy, &decoy_before, &stash);
}
