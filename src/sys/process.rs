//! This process and the programs it starts: the effective user, the running binary (read through
//! `/proc/self/exe`, the file the kernel runs), and one way to run another program: with a
//! bounded wait, its output captured, killed when it does not end in time ([`run_bounded`]).
//! The steps above say which program and what its answer means (`crate::persist`'s udev reload
//! and journal); nothing above this folder starts a process or reads `/proc/self`.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The file the kernel runs this process from.
const RUNNING: &str = "/proc/self/exe";

/// The effective user id of this process.
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The path of the running binary, as the kernel names it: for messages.
pub(crate) fn running_binary_path() -> io::Result<std::path::PathBuf> {
    std::env::current_exe()
}

/// The running binary's bytes, read once per process from `/proc/self/exe`: the file the kernel
/// runs, even when a package upgrade has replaced it on disk.
pub(crate) fn running_binary() -> io::Result<&'static [u8]> {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    if let Some(b) = BYTES.get() {
        return Ok(b);
    }
    let bytes = fs::read(RUNNING)?;
    Ok(BYTES.get_or_init(|| bytes))
}

/// The running binary's identity (device and inode), for comparing it with another file.
pub(crate) fn running_identity() -> io::Result<(u64, u64)> {
    fs::metadata(RUNNING).map(|m| (m.dev(), m.ino()))
}

/// Which of a program's output streams [`run_bounded`] keeps; the other goes nowhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    Stdout,
    Stderr,
}

/// How a program [`run_bounded`] started ended: its status and what it printed on the stream
/// kept.
#[derive(Debug)]
pub(crate) struct Ended {
    pub(crate) status: ExitStatus,
    pub(crate) output: Vec<u8>,
}

/// Why a program [`run_bounded`] ran gave no answer.
#[derive(Debug)]
pub(crate) enum NoAnswer {
    /// It could not be started.
    Start(io::Error),
    /// Its output could not be read.
    Read(io::Error),
    /// Waiting for it failed.
    Wait(io::Error),
    /// It printed more than the limit: killed.
    TooLong,
    /// It had not ended within the timeout: killed.
    TimedOut,
}

/// Runs `program` with `args`, stdin empty, and keeps what it prints on `keep` (read while it
/// runs, so that a long answer cannot fill the pipe and stall it). Returns how it ended, or why
/// there is no answer: it could not be started, printed more than `max_output` bytes, or had
/// not ended within `timeout`, when it is killed. It is not waited for after the kill (a process
/// stuck in the kernel can outlive its SIGKILL), so the caller answers all the same.
pub(crate) fn run_bounded(
    program: &Path,
    args: &[&str],
    keep: Keep,
    timeout: Duration,
    max_output: usize,
) -> Result<Ended, NoAnswer> {
    let (stdout, stderr) = match keep {
        Keep::Stdout => (Stdio::piped(), Stdio::null()),
        Keep::Stderr => (Stdio::null(), Stdio::piped()),
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(NoAnswer::Start)?;
    let pipe: OwnedFd = match keep {
        Keep::Stdout => child.stdout.take().expect("stdout is piped").into(),
        Keep::Stderr => child.stderr.take().expect("stderr is piped").into(),
    };
    let mut pipe = File::from(pipe);
    rustix::io::ioctl_fionbio(&pipe, true).map_err(|e| NoAnswer::Read(e.into()))?;
    let mut output = Vec::new();
    let start = Instant::now();
    let status = loop {
        drain(&mut pipe, &mut output).map_err(NoAnswer::Read)?;
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < timeout && output.len() <= max_output => {
                sleep(Duration::from_millis(10))
            }
            Ok(None) => {
                let _ = child.kill();
                return Err(if output.len() > max_output {
                    NoAnswer::TooLong
                } else {
                    NoAnswer::TimedOut
                });
            }
            Err(e) => return Err(NoAnswer::Wait(e)),
        }
    };
    // Whatever it printed last is in the pipe; a child of its own holding the pipe cannot hold
    // this, since the pipe is read without waiting.
    drain(&mut pipe, &mut output).map_err(NoAnswer::Read)?;
    Ok(Ended { status, output })
}

/// Appends what `r` (non-blocking) holds now to `out`, up to its end or until it would wait.
fn drain(r: &mut impl Read, out: &mut Vec<u8>) -> io::Result<()> {
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
