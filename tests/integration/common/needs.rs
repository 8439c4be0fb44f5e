//! What a test needs from the machine beyond a normal user's `cargo test`: root, strace, files
//! that can be made immutable. The one place that finds out, so that plain `cargo test` passes
//! as a normal user and says what it left out, and CI runs everything.
//!
//! A test asks first and returns when told no: `if !needs(Requirement::Root) { return; }`.
//! When the machine lacks it, [`needs`]:
//! - in CI (`CI` set, as `.ci/run` runs) or with `MDTUNE_TEST_ALL=1`: fails the test, saying how
//!   to get what is missing (the project's rule: a test whose tool is missing fails and says how
//!   to install it);
//! - otherwise: prints one line `SKIPPED <test>: needs ...` and counts it; the last test of the
//!   run (`zz_skipped.rs`) prints how many were skipped and why.
//!
//! Both lines are written to the process's stderr directly, not through `eprintln!`, which the
//! test harness captures for passing tests: so they show in plain `cargo test` output.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Something a test needs that a normal user's machine may not give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// Effective uid 0: `chown` to another user, `setpriv` to drop to it, `mknod`, logs that
    /// name uid 0.
    Root,
    /// strace that can trace a child of this process.
    Strace,
    /// `chattr +i` works on a file under `$TMPDIR` (root, e2fsprogs, and a filesystem with
    /// immutable files: ext4, xfs, btrfs).
    ImmutableFiles,
}

impl Requirement {
    /// What the test needs, as the skip line and the failure say it.
    fn what(self) -> &'static str {
        match self {
            Requirement::Root => "root",
            Requirement::Strace => "strace",
            Requirement::ImmutableFiles => "immutable files (chattr +i)",
        }
    }

    /// How to get it, for the skip line and the failure.
    fn how(self) -> &'static str {
        match self {
            Requirement::Root => "run as root: sudo cargo test, or tests/run-all.sh as root",
            Requirement::Strace => "apt-get install strace, where ptrace is allowed",
            Requirement::ImmutableFiles => {
                "run as root, with e2fsprogs (apt-get install e2fsprogs) and a $TMPDIR on ext4 or xfs"
            }
        }
    }

    /// Whether this machine has it; asked once per run.
    fn present(self) -> bool {
        static ROOT: OnceLock<bool> = OnceLock::new();
        static STRACE: OnceLock<bool> = OnceLock::new();
        static IMMUTABLE: OnceLock<bool> = OnceLock::new();
        match self {
            Requirement::Root => *ROOT.get_or_init(|| rustix::process::geteuid().is_root()),
            Requirement::Strace => *STRACE.get_or_init(strace_works),
            Requirement::ImmutableFiles => *IMMUTABLE.get_or_init(immutable_files_work),
        }
    }
}

/// Whether a test may go on: true when the machine has `what`. When it does not, fails the test
/// in CI (or with `MDTUNE_TEST_ALL=1`), else prints `SKIPPED <test>: needs <what> (<how>)`,
/// counts the skip for the run's summary and returns false: the test then returns.
pub fn needs(what: Requirement) -> bool {
    if what.present() {
        return true;
    }
    // Without root no file can be made immutable: say the first thing that is missing.
    let what = match what {
        Requirement::ImmutableFiles if !Requirement::Root.present() => Requirement::Root,
        other => other,
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    if strict() {
        panic!(
            "{test} needs {}, which this run lacks: {}",
            what.what(),
            what.how()
        );
    }
    let line = format!("SKIPPED {test}: needs {} ({})\n", what.what(), what.how());
    let _ = std::io::stderr().write_all(line.as_bytes());
    skipped().lock().unwrap().push((test, what));
    false
}

/// Whether a missing prerequisite fails the test: `CI` set (and not `false` or `0`), or
/// `MDTUNE_TEST_ALL=1`.
pub fn strict() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    ci || std::env::var("MDTUNE_TEST_ALL").is_ok_and(|v| v == "1")
}

/// The tests skipped so far in this run, with what each lacked.
pub fn skipped() -> &'static Mutex<Vec<(String, Requirement)>> {
    static SKIPPED: OnceLock<Mutex<Vec<(String, Requirement)>>> = OnceLock::new();
    SKIPPED.get_or_init(|| Mutex::new(Vec::new()))
}

/// The closing line of a run that skipped tests: how many, for want of what, and how to run
/// them; `None` when none was skipped.
pub fn summary() -> Option<String> {
    let skipped = skipped().lock().unwrap();
    if skipped.is_empty() {
        return None;
    }
    let all = [
        Requirement::Root,
        Requirement::ImmutableFiles,
        Requirement::Strace,
    ];
    let why: Vec<String> = all
        .iter()
        .filter_map(|r| {
            let n = skipped.iter().filter(|(_, w)| w == r).count();
            (n > 0).then(|| format!("{n} need {}", r.what()))
        })
        .collect();
    Some(format!(
        "{} tests skipped ({}): run as root with strace installed (sudo cargo test, or \
         tests/run-all.sh as root) to include them; CI=true or MDTUNE_TEST_ALL=1 fails them instead",
        skipped.len(),
        why.join(", ")
    ))
}

/// Writes `text` and a newline to the process's stderr, past the harness's capture.
pub fn say(text: &str) {
    let _ = std::io::stderr().write_all(format!("{text}\n").as_bytes());
}

/// strace runs and can trace a child (a container may forbid ptrace).
fn strace_works() -> bool {
    Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A file under `$TMPDIR` can be made immutable and back.
fn immutable_files_work() -> bool {
    if !Requirement::Root.present() {
        return false;
    }
    let dir = std::env::temp_dir().join(format!("mdtune-chattr-probe-{}", std::process::id()));
    let file = dir.join("probe");
    if std::fs::create_dir_all(&dir).is_err() || std::fs::write(&file, "").is_err() {
        return false;
    }
    let chattr = |flag: &str, path: &Path| {
        Command::new("chattr")
            .arg(flag)
            .arg(path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let works = chattr("+i", &file) && chattr("-i", &file);
    let _ = std::fs::remove_dir_all(&dir);
    works
}
