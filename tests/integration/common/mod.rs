//! Shared support for the integration tests: scratch roots and running the real binary. The
//! fake hosts in the roots are built by `mdtune_fakeroot` (tests/fakeroot).
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty directory for one test. It stays after the run, to be looked at when the test
/// failed, until a later run of the tests starts ([`sweep_ended_runs`]).
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(|| {
        let tmp = std::env::temp_dir();
        std::thread::spawn(move || sweep_ended_runs(&tmp));
    });
    let dir = std::env::temp_dir().join(format!(
        "mdtune-test-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Removes the scratch directories of earlier runs of the tests whose process has ended; those
/// of a run still going (another `cargo test` beside this one) stay. Without it every run would
/// leave about 2 GB behind: each root that `persist` touches holds a copy of the 20 MB debug
/// binary. A directory that cannot be removed (a file a failed test left immutable) stays too.
/// It runs in a thread of its own, beside the tests (removing 2 GB takes tens of seconds), and
/// what it has not removed when the run ends is removed by the next.
fn sweep_ended_runs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("mdtune-test-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        match pid {
            Some(pid) if !Path::new(&format!("/proc/{pid}")).exists() => {
                let _ = std::fs::remove_dir_all(entry.path());
            }
            _ => {}
        }
    }
}

/// The result of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub json: Value,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn msg(&self) -> &str {
        self.json["msg"].as_str().unwrap_or("")
    }

    /// `arrays[<name>].settings.<attr>`.
    pub fn setting(&self, array: &str, attr: &str) -> &Value {
        let a = self.array(array);
        &a["settings"][attr]
    }

    /// `rolled_back` as `"<target> <setting>"`, in report order.
    pub fn rolled_back(&self) -> Vec<String> {
        self.json["rolled_back"]
            .as_array()
            .unwrap_or_else(|| panic!("no rolled_back in {}", self.stdout))
            .iter()
            .map(|w| {
                format!(
                    "{} {}",
                    w["target"].as_str().unwrap_or(""),
                    w["setting"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    pub fn array(&self, name: &str) -> &Value {
        self.json["arrays"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == name))
            .unwrap_or_else(|| panic!("no array {name} in {}", self.stdout))
    }
}

/// Holds the host lock (`run/mdtune.lock`, created if missing), as another run would, until the
/// returned file is dropped.
pub fn hold_lock(dir: &Path) -> std::fs::File {
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("run/mdtune.lock"))
        .unwrap();
    held.lock().unwrap();
    held
}

/// Spawns `cmd`, whose program the test has just written, retrying while exec fails with
/// ETXTBSY. A test thread that forks while another still holds the copy open for writing hands
/// that descriptor to its child until the child's exec closes it; for that moment the kernel
/// refuses to run the copy. The retries end after two seconds, with the error.
pub fn spawn_fresh_copy(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match cmd.spawn() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mdtune")
}

/// Runs `mdtune ARGS` with `stdin`, and parses the one JSON object it must print.
pub fn run_args(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args).envs(env.iter().copied());
    run_command(cmd, stdin)
}

/// Runs `mdtune -` with `input` as user and group 65534 (nobody), through `setpriv`
/// (util-linux: `apt-get install util-linux`).
pub fn run_unprivileged(input: &Value) -> Run {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        bin(),
        "-",
    ]);
    run_command(cmd, &input.to_string())
}

/// Hands the whole root `dir` to the unprivileged user of [`run_unprivileged`], except `refused`,
/// which stays root's and read only: the run's write to it fails with EACCES.
pub fn give_to_nobody_except(dir: &Path, refused: &Path) {
    let ok = Command::new("chown")
        .args(["-R", "-h", "65534:65534"])
        .arg(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "chown failed: this test needs root");
    std::os::unix::fs::chown(refused, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(refused, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
}

/// Runs `cmd` with `stdin`, and parses the one JSON object it must print.
/// The pids whose parent is `parent`.
pub fn children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.to_string();
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// Fails the test, saying how to install it, when strace cannot run (the fault-injection and
/// race tests drive it).
pub fn require_strace() {
    if let Err(e) = Command::new("strace").arg("-V").output() {
        panic!("cannot run strace ({e}): this test needs it: apt-get install strace");
    }
}

pub fn run_command(mut cmd: Command, stdin: &str) -> Run {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    Run {
        json,
        code: out.status.code().unwrap_or(-1),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `mdtune -` with `input` (its `root` set to `root`) and checks the output contract:
/// exactly one JSON object, nothing on stderr, exit status agreeing with `failed`.
pub fn run(root: &Path, mut input: Value) -> Run {
    input["root"] = Value::String(root.display().to_string());
    let r = run_args(&["-"], &input.to_string(), &[]);
    assert!(
        r.json.is_object(),
        "stdout is not one JSON object: {:?}",
        r.stdout
    );
    assert_eq!(r.stdout.lines().count(), 1, "more than one line on stdout");
    assert!(r.stderr.is_empty(), "stderr: {}", r.stderr);
    assert_eq!(
        r.json["failed"] == true,
        r.code != 0,
        "exit status {} disagrees with failed in {}",
        r.code,
        r.stdout
    );
    r
}

/// Every regular file under `dir` with its content and modification time.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                out.push((
                    p.clone(),
                    std::fs::read(&p).unwrap(),
                    meta.modified().unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Snapshots only the `sys/` and `proc/` parts of a root (kernel values).
pub fn kernel_snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut s = snapshot(&root.join("sys"));
    s.extend(snapshot(&root.join("proc")));
    s
}

/// Asserts two snapshots hold the same kernel values, naming only the files that differ. A test
/// root cannot turn a written `system` into the kernel's `N (system)`, so those compare equal.
pub fn assert_same_values(
    before: &[(PathBuf, Vec<u8>, std::time::SystemTime)],
    after: &[(PathBuf, Vec<u8>, std::time::SystemTime)],
) {
    let norm = |c: &[u8]| {
        let s = String::from_utf8_lossy(c).trim().to_string();
        if s == "system" || s.ends_with("(system)") {
            "(system)".to_string()
        } else {
            s
        }
    };
    let map = |s: &[(PathBuf, Vec<u8>, std::time::SystemTime)]| {
        s.iter()
            .map(|(p, c, _)| (p.clone(), norm(c)))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (b, a) = (map(before), map(after));
    let diffs: Vec<String> = b
        .keys()
        .chain(a.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|p| b.get(*p) != a.get(*p))
        .map(|p| format!("{}: {:?} -> {:?}", p.display(), b.get(p), a.get(p)))
        .collect();
    assert!(
        diffs.is_empty(),
        "kernel values differ:\n{}",
        diffs.join("\n")
    );
}
