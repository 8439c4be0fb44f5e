//! Shared support for the integration tests: scratch roots and running the real binary. The
//! fake hosts in the roots are built by `mdtune_fakeroot` (tests/fakeroot).
#![allow(dead_code)]

pub mod needs;
pub use needs::{needs, Requirement};

use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// This run's directory, `$TMPDIR/mdtune-test-<pid>`: every test's root ([`scratch`]) and the
/// one copy of the binary that the roots share ([`shared_binary`]). It is kept after the run, to
/// be looked at, until a later run removes it ([`remove_old_runs`]; docs/testing.md).
pub fn run_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = std::env::temp_dir();
        let dir = tmp.join(format!("mdtune-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        remove_old_runs(&tmp);
        dir
    })
}

/// Removes the directories that earlier runs left in `tmp` (about 2 GB each, the fake hosts'
/// many small files), but the newest, whose roots may still be looked at: only those of runs
/// whose process is gone. One `rm -rf` does it beside the tests, not waited for (it takes tens
/// of seconds on a disk), so that it finishes even when the tests end first.
fn remove_old_runs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let mut gone: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid: u32 = name.strip_prefix("mdtune-test-")?.parse().ok()?;
            let alive = Path::new(&format!("/proc/{pid}")).exists();
            (!alive).then_some((e.metadata().ok()?.modified().ok()?, e.path()))
        })
        .collect();
    gone.sort();
    gone.pop();
    if !gone.is_empty() {
        let _ = Command::new("rm")
            .arg("-rf")
            .args(gone.into_iter().map(|(_, dir)| dir))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
    }
}

/// A fresh, empty directory for one test, `<run dir>/<name>-<n>` ([`run_dir`]). A directory of
/// that name left by an earlier process with the same pid is removed first.
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = run_dir().join(format!("{name}-{}", N.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The one copy of the binary that this run's roots share, `<run dir>/mdtune`, made on first
/// use. Every root's packaged binary is a hard link to it ([`package`]), so a run's roots hold
/// 20 MB of binary, not 20 MB per root that `persist` touches. It is a copy, not a hard link to
/// the build's binary: `$TMPDIR` is often another filesystem than `target/` (a tmpfs), and what
/// tests do to their roots (chown, chattr) must not reach the build's output. `cp` makes it, not
/// this process: a descriptor open for writing here would be inherited by the children other
/// test threads fork, and until they exec, starting the copy would fail with ETXTBSY.
pub fn shared_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let path = run_dir().join("mdtune");
        let _ = std::fs::remove_file(&path);
        let copied = Command::new("cp").arg(bin()).arg(&path).status();
        assert!(
            copied.is_ok_and(|s| s.success()),
            "cannot copy {} to {}",
            bin(),
            path.display()
        );
        path
    })
}

/// Installs mdtune in `root` as a distribution package does, `usr/sbin/mdtune` (a hard link to
/// [`shared_binary`], not a symlink, which would lead out of the root), and returns that path.
/// A run started from there is the packaged binary (src/persist/state.rs, `is_packaged`):
/// `persist` writes a rule that runs it and installs no copy of its own. Does nothing when the
/// root has it already; panics when `usr/sbin/mdtune` is another file, which the test put there.
pub fn package(root: &Path) -> PathBuf {
    let packaged = root.join("usr/sbin/mdtune");
    let shared = std::fs::metadata(shared_binary()).unwrap();
    match std::fs::symlink_metadata(&packaged) {
        Ok(m) if (m.dev(), m.ino()) == (shared.dev(), shared.ino()) => {}
        Ok(_) => panic!(
            "{} is not this run's binary: start the run with run_unpackaged",
            packaged.display()
        ),
        Err(_) => {
            std::fs::create_dir_all(packaged.parent().unwrap()).unwrap();
            std::fs::hard_link(shared_binary(), &packaged).unwrap();
        }
    }
    packaged
}

/// The binary a test starts for `input` on `root`: the root's packaged one ([`package`]) when
/// the input persists (`persist: true`), so that no copy is installed, else the build's own.
pub fn binary_for(root: &Path, input: &Value) -> PathBuf {
    if input["persist"] == true {
        package(root)
    } else {
        PathBuf::from(bin())
    }
}

/// A demo root with md0's desired state persisted, then set back as after a reboot (the
/// kernel's default `stripe_cache_size`), so that `--udev md0` has a change to make and log.
pub fn persisted_root(label: &str) -> (PathBuf, mdtune_fakeroot::FakeRoot) {
    let root = scratch(label).join("root");
    let r = mdtune_fakeroot::demo_host(&root);
    let out = run(
        &root,
        serde_json::json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    r.set_md("md0", "stripe_cache_size", "256");
    (root, r)
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

    /// The names of the arrays the report lists, in its order.
    pub fn array_names(&self) -> Vec<&str> {
        let arrays = self.json["arrays"].as_array();
        arrays
            .into_iter()
            .flatten()
            .map(|a| a["name"].as_str().unwrap())
            .collect()
    }

    /// `persist.files` of the report.
    pub fn persist_files(&self) -> Vec<&str> {
        let files = self.json["persist"]["files"].as_array();
        files
            .into_iter()
            .flatten()
            .map(|f| f.as_str().unwrap())
            .collect()
    }

    pub fn array(&self, name: &str) -> &Value {
        self.json["arrays"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == name))
            .unwrap_or_else(|| panic!("no array {name} in {}", self.stdout))
    }
}

/// Makes `path` immutable (`chattr +i`: even root gets EPERM) for as long as the guard lives.
/// A test that uses it first asks `needs(Requirement::ImmutableFiles)`.
pub struct Immutable(std::path::PathBuf);

impl Immutable {
    pub fn set(path: &Path) -> Immutable {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .map(|s| s.success());
        assert!(
            matches!(ok, Ok(true)),
            "chattr +i {} failed: this test needs root, e2fsprogs (apt-get install e2fsprogs) and a filesystem with immutable files (ext4, xfs) under $TMPDIR",
            path.display()
        );
        Immutable(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
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
    // flock, as the binary takes it (std's File::lock needs Rust 1.89; rust-version is 1.85).
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    held
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
/// race tests drive it): the helpers' own check, behind the tests' `needs(Requirement::Strace)`,
/// which skips them on a machine without strace.
pub fn require_strace() {
    if let Err(e) = Command::new("strace").arg("-V").output() {
        panic!("cannot run strace ({e}): this test needs it: apt-get install strace");
    }
}

/// Runs `cmd` with `stdin`, and parses the one JSON object it must print.
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
/// exactly one JSON object, nothing on stderr, exit status agreeing with `failed`. A run whose
/// input persists starts the root's packaged binary ([`binary_for`]), as on a host where mdtune
/// came in a package, and installs no copy of itself; [`run_unpackaged`] is the other way.
pub fn run(root: &Path, input: Value) -> Run {
    let program = binary_for(root, &input);
    run_checked(&program, root, input)
}

/// [`run`], but always with the build's own binary, from outside the root, as on a host where
/// mdtune came without a package: a `persist` run installs its 20 MB copy at
/// `usr/local/sbin/mdtune`. For the tests of that copy, and for those whose root must stay as
/// the test made it (one whose `usr/` leads out of the root, or that holds its own
/// `usr/sbin/mdtune`).
pub fn run_unpackaged(root: &Path, input: Value) -> Run {
    run_checked(Path::new(bin()), root, input)
}

fn run_checked(program: &Path, root: &Path, mut input: Value) -> Run {
    input["root"] = Value::String(root.display().to_string());
    let mut cmd = Command::new(program);
    cmd.arg("-");
    let r = run_command(cmd, &input.to_string());
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

/// A syslog socket at `<root>/dev/log`, as journald or rsyslog provides it: what a run logs
/// there is read back with [`logged`].
pub fn syslog(root: &Path) -> UnixDatagram {
    let path = root.join("dev/log");
    let _ = std::fs::remove_file(&path);
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    sock
}

/// Every datagram sent to `sock` so far (it waits 200 ms for the last).
pub fn logged(sock: &UnixDatagram) -> Vec<String> {
    let mut buf = [0u8; 65536];
    let mut out = Vec::new();
    while let Ok(n) = sock.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    out
}

/// Writes `input` to the piped stdin of `child` and closes it.
pub fn send_input(child: &mut std::process::Child, input: &Value) {
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin.write_all(input.to_string().as_bytes()).unwrap();
}

/// Writes `input` to the stdin of `child` (started with stdin, stdout and stderr piped), then
/// waits for it at most `deadline`; past that, kills it and panics with `why`.
pub fn finish_with_input(
    mut child: std::process::Child,
    input: &Value,
    deadline: Duration,
    why: &str,
) -> std::process::Output {
    send_input(&mut child, input);
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > deadline {
            let _ = child.kill();
            panic!("{why} (after {deadline:?})");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}
