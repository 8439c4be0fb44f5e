//! The closing line of a run that skipped tests for want of root, strace or immutable files
//! (`common::needs`): how many, why, and how to include them. Its module's name puts it last:
//! the test harness starts tests in the order of their names, so this one starts when every
//! other test has started; it waits until they have ended, then writes the line to the
//! process's stderr, past the harness's capture. A run filtered to some tests leaves it out,
//! and their `SKIPPED` lines still show.

use crate::common::needs;
use std::time::{Duration, Instant};

/// The threads of this process other than the harness's main thread and the calling one: the
/// tests still running and the threads they started.
fn other_threads() -> usize {
    let pid = std::process::id().to_string();
    let me = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    std::fs::read_dir("/proc/self/task").map_or(0, |tasks| {
        tasks
            .flatten()
            .map(|t| t.file_name().to_string_lossy().into_owned())
            .filter(|tid| *tid != pid && Some(tid) != me.as_ref())
            .count()
    })
}

#[test]
fn the_tests_skipped_for_want_of_root_strace_or_immutable_files_are_counted() {
    // Until no other thread has been seen for half a second, or ten minutes have passed.
    let start = Instant::now();
    let mut quiet_since = None;
    while start.elapsed() < Duration::from_secs(600) {
        if other_threads() > 0 {
            quiet_since = None;
        } else if quiet_since.get_or_insert_with(Instant::now).elapsed()
            > Duration::from_millis(500)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Some(line) = needs::summary() {
        needs::say(&line);
    }
}
