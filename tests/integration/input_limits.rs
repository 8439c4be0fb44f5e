//! Input that cannot hang the run or exhaust the host (docs/reference.md §1 and §2,
//! docs/reliability.md): input over 1 MiB is refused before it is parsed, from a file or stdin;
//! an args file that is not a regular file (a FIFO, `/dev/zero`) is refused before any read, and
//! a FIFO in place of the lock file fails the run at once; `--udev` takes only md kernel names;
//! an object that repeats a key, at any depth, is refused naming the key; a `--udev` run never
//! blocks on a `dev/kmsg` that is not a character device, and still logs to one that is. All
//! through the real binary on fake roots; every refusal of input is exit 2 with one JSON object
//! and nothing written.

use crate::common::{bin, persisted_root, run_args, scratch};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The input limit (docs/reference.md §1).
const LIMIT: usize = 1024 * 1024;

/// What a bounded run printed.
struct Out {
    json: Value,
    code: i32,
    stdout: String,
    took: Duration,
}

impl Out {
    fn msg(&self) -> &str {
        self.json["msg"].as_str().unwrap_or("")
    }
}

/// Runs `cmd` with `stdin` fed from another thread (the binary may stop reading and exit before
/// it is all written), killing it after `limit`: a run that hangs fails the test instead of
/// hanging it.
fn bounded(mut cmd: Command, stdin: Vec<u8>, limit: Duration) -> Out {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut pipe = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        // EPIPE once the binary has read what it reads and gone: expected.
        let _ = pipe.write_all(&stdin);
    });
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{cmd:?} did not end within {limit:?} (killed); stdout: {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Out {
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        code: out.status.code().unwrap_or(-1),
        stdout,
        took,
    }
}

/// `mdtune ARGS` under a 512 MiB address-space limit (util-linux `prlimit`: apt-get install
/// util-linux), so that a binary that reads without bound fails fast instead of taking the
/// host's memory.
fn mdtune(args: &[&str], stdin: Vec<u8>) -> Out {
    if Command::new("prlimit").arg("--version").output().is_err() {
        panic!("prlimit is missing: this test needs it: apt-get install util-linux");
    }
    let mut cmd = Command::new("prlimit");
    cmd.arg(format!("--as={}", 512 * 1024 * 1024))
        .arg(bin())
        .args(args);
    bounded(cmd, stdin, Duration::from_secs(20))
}

/// A query of `root`, padded with spaces after the object to exactly `len` bytes.
fn padded_query(root: &Path, len: usize) -> Vec<u8> {
    let mut text = json!({"state": "query", "root": root.display().to_string()})
        .to_string()
        .into_bytes();
    assert!(text.len() <= len);
    text.resize(len, b' ');
    text
}

fn assert_too_large(out: &Out, what: &str) {
    assert_eq!(out.code, 2, "{what}: {}", out.stdout);
    assert_eq!(out.json["failed"], true, "{what}: {}", out.stdout);
    assert!(
        out.msg().contains("1 MiB") || out.msg().contains("1048576"),
        "{what}: the refusal does not say the limit: {}",
        out.msg()
    );
}

#[test]
fn input_over_1_mib_is_refused_from_a_file_and_from_stdin_and_exactly_1_mib_parses() {
    let dir = scratch("too-large");
    let root = dir.join("root");
    demo_host(&root);
    let file = dir.join("args");
    fs::write(&file, padded_query(&root, LIMIT + 1)).unwrap();
    let file_arg = file.display().to_string();
    assert_too_large(&mdtune(&[&file_arg], Vec::new()), "file");
    assert_too_large(&mdtune(&["-"], padded_query(&root, LIMIT + 1)), "stdin");
    // 25 MB (the size that aborted under a memory limit): the same refusal.
    assert_too_large(&mdtune(&["-"], padded_query(&root, 25_000_000)), "25 MB");
    fs::write(&file, padded_query(&root, LIMIT)).unwrap();
    for (what, out) in [
        ("file", mdtune(&[&file_arg], Vec::new())),
        ("stdin", mdtune(&["-"], padded_query(&root, LIMIT))),
    ] {
        assert_eq!(out.code, 0, "exactly 1 MiB from {what}: {}", out.stdout);
        assert_eq!(out.json["state"], "query", "{what}: {}", out.stdout);
    }
}

#[test]
fn an_args_file_that_is_not_a_regular_file_is_refused_at_once_with_exit_2_naming_it() {
    // A FIFO without a writer would block open() forever; /dev/zero would never end; a
    // directory cannot be read. Each is refused before any read, naming the path and what it is.
    require("mkfifo", "coreutils");
    let dir = scratch("args-odd");
    let fifo = dir.join("args.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {} failed", fifo.display());
    let fifo_arg = fifo.display().to_string();
    let dir_arg = dir.display().to_string();
    for (arg, what) in [
        (fifo_arg.as_str(), "a FIFO"),
        ("/dev/zero", "a device"),
        (dir_arg.as_str(), "a directory"),
    ] {
        let out = mdtune(&[arg], Vec::new());
        assert_eq!(out.code, 2, "{arg}: {}", out.stdout);
        assert_eq!(out.json["failed"], true, "{arg}: {}", out.stdout);
        assert!(
            out.msg().contains(&format!(
                "cannot read the args file {arg}: it is {what}, not a regular file"
            )),
            "{arg}: {}",
            out.msg()
        );
        assert!(
            out.took < Duration::from_secs(5),
            "{arg} took {:?}",
            out.took
        );
    }
}

#[test]
fn a_fifo_as_the_lock_file_fails_the_run_at_once_with_exit_1_and_writes_nothing() {
    // With no reader the FIFO's non-blocking open fails at once; with a reader it opens, and
    // is refused as not a regular file. Neither waits out MDTUNE_LOCK_WAIT, for a module run
    // or a udev replay, and no value is written.
    require("mkfifo", "coreutils");
    for reader in [false, true] {
        let (root, r) = persisted_root(&format!("lock-fifo-{reader}"));
        let lock = root.join("run/mdtune.lock");
        let _ = fs::remove_file(&lock);
        let made = Command::new("mkfifo").arg(&lock).status().unwrap();
        assert!(made.success(), "mkfifo {} failed", lock.display());
        // A reader that holds the FIFO open (O_RDONLY | O_NONBLOCK does not block).
        let _held = reader.then(|| {
            use std::os::unix::fs::OpenOptionsExt;
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(0o4000)
                .open(&lock)
                .unwrap()
        });
        let root_arg = root.display().to_string();
        let input =
            json!({"root": root_arg, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
        let mut module = Command::new(bin());
        module.arg("-").env("MDTUNE_LOCK_WAIT", "60");
        let mut replay = Command::new(bin());
        replay
            .args(["--udev", "md0", "--root", &root_arg])
            .env("MDTUNE_LOCK_WAIT", "60");
        for (what, cmd, stdin) in [
            ("module", module, input.to_string().into_bytes()),
            ("--udev", replay, Vec::new()),
        ] {
            let out = bounded(cmd, stdin, Duration::from_secs(20));
            assert_eq!(out.code, 1, "{what}, reader {reader}: {}", out.stdout);
            assert!(
                out.msg().contains(&format!(
                    "cannot take the lock {}: it is a FIFO, not a regular file",
                    fs::canonicalize(&lock).unwrap().display()
                )),
                "{what}, reader {reader}: {}",
                out.msg()
            );
            assert!(
                out.took < Duration::from_secs(5),
                "{what} took {:?}",
                out.took
            );
            assert_eq!(
                r.read_md("md0", "stripe_cache_size"),
                "256",
                "{what}: a value was written"
            );
        }
    }
}

#[test]
fn udev_takes_only_md_kernel_names() {
    let root = scratch("udev-names").join("root");
    demo_host(&root);
    let root_arg = root.display().to_string();
    for bad in ["md..", "md.", "mdx", "md_", "md-0", "md0/../x", "sda"] {
        let out = run_args(&["--udev", bad, "--root", &root_arg], "", &[]);
        assert_eq!(out.code, 2, "{bad}: {}", out.stdout);
        assert!(
            out.msg().contains("not an md kernel name"),
            "{bad}: {}",
            out.msg()
        );
    }
}

/// Runs `text` (raw JSON, so that a key can repeat) and checks it is refused with exit 2, the
/// message naming `key`, and nothing written: not even the lock.
fn assert_duplicate_refused(root: &Path, text: &str, key: &str) {
    let out = run_args(&["-"], text, &[]);
    assert_eq!(out.code, 2, "{text}: {}", out.stdout);
    assert!(
        out.msg().contains("duplicate key") && out.msg().contains(key),
        "{text}: the refusal does not name the duplicate key {key}: {}",
        out.msg()
    );
    assert!(
        !root.join("run/mdtune.lock").exists(),
        "{text}: exit 2 but the lock was created"
    );
    assert!(!root.join("run/mdtune").exists(), "{text}: originals saved");
}

#[test]
fn an_object_that_repeats_a_key_is_refused_at_every_depth() {
    let dir = scratch("duplicates");
    let root = dir.join("root");
    let r = demo_host(&root);
    let real = root.display().to_string();
    let write = r#""arrays": [{"name": "md0", "stripe_cache_size": 4096}]"#;
    // Top level: the first root is missing, the last one a usable root that would be written.
    assert_duplicate_refused(
        &root,
        &format!(r#"{{"root": "{real}/missing", "root": "{real}", {write}}}"#),
        "root",
    );
    // Inside an arrays entry.
    assert_duplicate_refused(
        &root,
        &format!(
            r#"{{"root": "{real}", "arrays": [{{"name": "md0", "stripe_cache_size": 512, "stripe_cache_size": 4096}}]}}"#
        ),
        "stripe_cache_size",
    );
    // Inside the thread_policy object.
    assert_duplicate_refused(
        &root,
        &format!(
            r#"{{"root": "{real}", "thread_policy": {{"mode": "auto", "max": 2, "max": 16}}, {write}}}"#
        ),
        "max",
    );
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    // The same keys once each are accepted.
    let out = run_args(
        &["-"],
        &format!(
            r#"{{"root": "{real}", "thread_policy": {{"mode": "auto", "max": 16}}, {write}}}"#
        ),
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
}

fn require(tool: &str, package: &str) {
    if Command::new(tool).arg("--version").output().is_err() {
        panic!("{tool} is missing: this test needs it: apt-get install {package}");
    }
}

#[test]
fn a_udev_run_does_not_hang_on_a_fifo_dev_kmsg_and_still_tunes_the_array() {
    require("mkfifo", "coreutils");
    let (root, r) = persisted_root("kmsg-fifo");
    let kmsg = root.join("dev/kmsg");
    let _ = fs::remove_file(&kmsg);
    let made = Command::new("mkfifo").arg(&kmsg).status().unwrap();
    assert!(made.success(), "mkfifo {} failed", kmsg.display());
    let root_arg = root.display().to_string();
    let mut cmd = Command::new(bin());
    cmd.args(["--udev", "md0", "--root", &root_arg]);
    let out = bounded(cmd, Vec::new(), Duration::from_secs(10));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["changed"], true, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
}

#[test]
fn a_udev_run_logs_to_a_character_device_dev_kmsg() {
    if !needs(Requirement::Root) {
        return;
    }
    if !needs(Requirement::Strace) {
        return;
    }
    // dev/kmsg as a character device (1,3: /dev/null's numbers), seen through strace: the
    // line must be written to it.
    require("mknod", "coreutils");
    crate::common::require_strace();
    let (root, r) = persisted_root("kmsg-chr");
    let kmsg = root.join("dev/kmsg");
    let _ = fs::remove_file(&kmsg);
    let made = Command::new("mknod")
        .arg(&kmsg)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(
        made.success(),
        "mknod {} c 1 3 failed (needs root)",
        kmsg.display()
    );
    let log = root.join("../strace.log");
    let root_arg = root.display().to_string();
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-s", "200", "-o"])
        .arg(&log)
        .args(["-e", "trace=write,writev", "-P"])
        .arg(fs::canonicalize(&kmsg).unwrap())
        .args([bin(), "--udev", "md0", "--root", &root_arg]);
    let out = bounded(cmd, Vec::new(), Duration::from_secs(20));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    let trace = fs::read_to_string(&log).unwrap();
    assert!(
        trace.contains("mdtune: udev --udev md0, ") && trace.contains(": changed md0: "),
        "no log line written to {}: strace saw\n{trace}",
        kmsg.display()
    );
}
