//! Closing many read descriptors at once: a host read opens thousands of small files one after
//! the other, and closes them in a few `close_range` calls instead of one `close` each.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::calls::close_run;

thread_local! {
    /// Descriptors given up by [`close_later`] inside a [`Batch`], not yet closed.
    static SPENT: RefCell<Vec<OwnedFd>> = const { RefCell::new(Vec::new()) };
    /// Whether a [`Batch`] is open on this thread.
    static BATCH: Cell<bool> = const { Cell::new(false) };
}

/// How many given-up descriptors wait at most before they are closed: well under the usual
/// limit of 1,024 open files, so that a batch never makes an open fail.
const SPENT_MAX: usize = 256;

/// Set once `close_range` turns out to be missing (before 5.9) or refused.
static NO_CLOSE_RANGE: AtomicBool = AtomicBool::new(false);

/// While it lives, the files and directories the floor reads to the end on this thread are
/// closed together: when it drops (or once `SPENT_MAX` wait), with one `close_range` per run of
/// consecutive descriptor numbers instead of one `close` each. A host read opens thousands of
/// small files one after the other, so their numbers run on. Outside a batch each is closed at
/// once: a write's read-back and everything after it see every earlier file closed.
pub(crate) struct Batch(());

impl Batch {
    pub(crate) fn open() -> Batch {
        BATCH.with(|b| b.set(true));
        Batch(())
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        BATCH.with(|b| b.set(false));
        close_spent();
    }
}

/// Gives up `fd`, a file or directory read to the end: closed now, or with the others of the
/// open [`Batch`]. Only for descriptors nothing depends on being closed: no lock, nothing
/// written.
pub(crate) fn close_later(fd: OwnedFd) {
    if !BATCH.with(Cell::get) {
        return drop(fd);
    }
    let full = SPENT.with(|spent| {
        let mut spent = spent.borrow_mut();
        spent.push(fd);
        spent.len() >= SPENT_MAX
    });
    if full {
        close_spent();
    }
}

/// Closes every descriptor given up by [`close_later`]: one `close_range` per run of consecutive
/// numbers, or one `close` each on a kernel without `close_range` (before 5.9) or where it is
/// refused.
fn close_spent() {
    let mut spent = SPENT.with(|spent| std::mem::take(&mut *spent.borrow_mut()));
    spent.sort_unstable_by_key(AsRawFd::as_raw_fd);
    let mut spent = spent.into_iter().peekable();
    while let Some(first) = spent.next() {
        let mut run = vec![first];
        while let Some(next) =
            spent.next_if(|fd| fd.as_raw_fd() == run[run.len() - 1].as_raw_fd() + 1)
        {
            run.push(next);
        }
        if NO_CLOSE_RANGE.load(Ordering::Relaxed) {
            drop(run);
        } else if let Err(run) = close_run(run) {
            NO_CLOSE_RANGE.store(true, Ordering::Relaxed);
            drop(run);
        }
    }
}
