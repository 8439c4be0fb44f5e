//! What the floor's errors say beyond the kernel's error number: a path that leads out of the
//! directory it must stay in ([`LeadsOut`]), and the few error numbers the steps above tell
//! apart. The numbers come from rustix's [`Errno`], not from hand-kept tables.

use rustix::io::Errno;
use std::io;

/// What an md array that is being stopped answers to a read of any `md/` file (`md_attr_show`:
/// EBUSY once `mddev_get` fails).
pub(crate) const EBUSY: i32 = Errno::BUSY.raw_os_error();
/// What the raid456 attributes answer once the personality is gone (`raid5_show_*` with no
/// `conf`).
pub(crate) const ENODEV: i32 = Errno::NODEV.raw_os_error();

/// The error of a path that leads out of the directory it must stay in (a `..` too many, a link
/// out of the root): its own kind of error, so that no "permission denied" from the kernel is
/// ever taken for it, nor it for one.
#[derive(Debug)]
pub(crate) struct LeadsOut(pub(crate) String);

impl std::fmt::Display for LeadsOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LeadsOut {}

/// An [`io::Error`] carrying [`LeadsOut`] with `msg`.
pub(crate) fn leads_out_error(msg: String) -> io::Error {
    io::Error::other(LeadsOut(msg))
}

/// Whether `e` says that a path leads out of where it must stay (see [`LeadsOut`]).
pub(crate) fn leads_out(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LeadsOut>())
}

/// The kernel's error number in `e`, when it carries one.
pub(super) fn errno(e: &io::Error) -> Option<Errno> {
    e.raw_os_error().map(Errno::from_raw_os_error)
}

/// Whether an open failed because nothing usable is there: absent, a file where a directory was
/// asked for, or a link (ELOOP under `O_NOFOLLOW`).
pub(crate) fn absent(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || matches!(errno(e), Some(Errno::NOTDIR | Errno::LOOP))
}

/// The error of a file written and renamed into place whose directory could not be synced: the
/// new content is there, but may not survive a power cut. Its own kind, so that the caller puts
/// the old content back as it does for the files written before it.
#[derive(Debug)]
pub(crate) struct NotSynced(pub(crate) io::Error);

impl std::fmt::Display for NotSynced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "written, but its directory could not be synced: {}",
            self.0
        )
    }
}

impl std::error::Error for NotSynced {}

/// Whether `e` says that a file was put in place but not synced (see [`NotSynced`]).
pub(crate) fn in_place(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotSynced>())
}
