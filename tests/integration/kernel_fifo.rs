//! A FIFO standing in for a kernel attribute, fed by a thread: it answers mdtune's reads with
//! given texts and takes its writes, in a given order, so that a test can make a kernel that
//! keeps less than it was given, or change the host between two steps. Used by `faults` and
//! `fleet_failures`.

use crate::common::{bin, children, finish_with_input};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// One step of a FIFO standing in for a kernel attribute.
pub(crate) enum Step {
    /// Answer one read with this text.
    Serve(&'static str),
    /// Take one write and record it.
    Consume,
    /// Do something to the host between two steps, while mdtune waits for the FIFO.
    Then(Box<dyn FnOnce() + Send>),
}

/// True if `pid` has `path` open.
fn holds(pid: u32, path: &Path) -> bool {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|rd| {
            rd.flatten()
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t == path))
        })
        .unwrap_or(false)
}

fn wait_until(mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the FIFO's reader never came"
        );
        thread::sleep(Duration::from_micros(200));
    }
}

/// How many bytes wait in the pipe behind `f` (`ioctl(FIONREAD)`; std has no wrapper).
fn unread(f: &File) -> usize {
    use std::os::fd::AsRawFd;
    extern "C" {
        fn ioctl(fd: i32, request: std::ffi::c_ulong, ...) -> i32;
    }
    const FIONREAD: std::ffi::c_ulong = 0x541B;
    let mut n: i32 = 0;
    // SAFETY: FIONREAD writes one int to the pointer, which outlives the call.
    let rc = unsafe { ioctl(f.as_raw_fd(), FIONREAD, &mut n as *mut i32) };
    assert_eq!(
        rc,
        0,
        "ioctl(FIONREAD): {}",
        std::io::Error::last_os_error()
    );
    usize::try_from(n).unwrap_or(0)
}

/// Whether no child of this test process but mdtune (`pid`) holds the FIFO at `path` open. A
/// child that another test thread forks while the feeder holds the FIFO keeps a copy of that
/// descriptor until the child's exec. A copy of the writer lets mdtune's next open for reading
/// return at once, and mdtune could then read back its own write.
fn no_stray_copy(pid: u32, path: &Path) -> bool {
    children(std::process::id())
        .into_iter()
        .all(|child| child == pid || !holds(child, path))
}

/// One write of mdtune's to the FIFO at `path`: what it writes between its open and its close.
///
/// The reader is opened without blocking and kept open until something has been read and no
/// writer is left. An end of file with nothing read yet is not mdtune's write. A blocking open
/// would wait for a writer: it could pair with a stray copy of the feeder's own (see
/// [`no_stray_copy`]) and read an empty end of file, or wait forever when mdtune has already
/// written and closed (the pipe keeps what it wrote while mdtune still holds its earlier read).
fn take_one_write(path: &Path) -> String {
    use std::os::unix::fs::OpenOptionsExt;
    const O_NONBLOCK: i32 = 0o4000;
    let mut fifo = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .unwrap();
    let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
    let start = Instant::now();
    loop {
        match fifo.read(&mut buf) {
            Ok(0) if !got.is_empty() => return String::from_utf8(got).unwrap(),
            Ok(n) if n > 0 => {
                got.extend_from_slice(&buf[..n]);
                continue;
            }
            // Nothing yet (no writer, or a writer that has written nothing so far).
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading the FIFO: {e}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "mdtune never wrote the FIFO"
        );
        thread::sleep(Duration::from_micros(200));
    }
}

/// Plays `steps` on the FIFO at `path` for process `pid`; returns what was written to it.
///
/// mdtune reads an attribute with one `read` and closes it, so an answer needs no end of file.
/// The writer therefore stays open across consecutive answers: each answer is written only once
/// the previous one has been read out of the pipe (FIONREAD), and the pipe keeps it for the next
/// open. Closing the writer between two reads instead would race with a fast re-open, which
/// pairs with the writer still open and then reads an empty end of file. The writer is closed
/// before a write step (mdtune's open for writing cannot pair with it), and that step reads
/// until mdtune has written and closed ([`take_one_write`]).
pub(crate) fn feed(path: PathBuf, pid: u32, steps: Vec<Step>) -> thread::JoinHandle<Vec<String>> {
    thread::spawn(move || {
        let mut written = Vec::new();
        let mut writer: Option<File> = None;
        for step in steps {
            match step {
                Step::Serve(text) => {
                    // The first answer's open returns once mdtune is opening the FIFO to read.
                    let w = writer
                        .get_or_insert_with(|| OpenOptions::new().write(true).open(&path).unwrap());
                    wait_until(|| unread(w) == 0);
                    loop {
                        // No reader at this instant (closed, not yet open again): EPIPE; wait
                        // for the next open and write again.
                        wait_until(|| holds(pid, &path));
                        match w.write_all(text.as_bytes()) {
                            Ok(()) => break,
                            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => continue,
                            Err(e) => panic!("writing the FIFO: {e}"),
                        }
                    }
                }
                Step::Consume => {
                    if let Some(w) = writer.take() {
                        wait_until(|| unread(&w) == 0);
                    }
                    wait_until(|| no_stray_copy(pid, &path));
                    written.push(take_one_write(&path));
                }
                Step::Then(f) => f(),
            }
        }
        if let Some(w) = writer.take() {
            wait_until(|| unread(&w) == 0);
        }
        written
    })
}

/// Replaces the file at `path` with a FIFO (mkfifo, from coreutils) and returns its real path.
pub(crate) fn make_fifo(path: &Path) -> PathBuf {
    fs::remove_file(path).unwrap();
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(
        ok,
        "mkfifo {} failed (apt-get install coreutils)",
        path.display()
    );
    fs::canonicalize(path).unwrap()
}

/// Runs the binary on `input` while [`feed`] plays `steps` on the FIFO at `fifo` as the kernel;
/// returns the run's output and what it wrote to the FIFO. A run that disagrees with `steps` on
/// the order of reads and writes blocks on the FIFO: it is killed after 30 s and the test fails.
pub(crate) fn run_fed(input: &Value, fifo: PathBuf, steps: Vec<Step>) -> (Output, Vec<String>) {
    let child = Command::new(bin())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let feeder = feed(fifo, child.id(), steps);
    let why = "mdtune and the FIFO did not agree on the order of reads and writes";
    let out = finish_with_input(child, input, Duration::from_secs(30), why);
    (out, feeder.join().unwrap())
}
