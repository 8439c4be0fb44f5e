//! Writing in a directory opened beneath the root: the files the floor writes atomically
//! (`super::atomic`), the lock, the log. Names are one component, and a link in place of one is
//! never followed.

use rustix::fs::{mkdirat, renameat, unlinkat, AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use super::dir::Dir;
use super::resolve::open_at;

impl Dir {
    /// Creates `name` for writing with `mode`; it must not exist, not even as a link (EEXIST).
    pub(crate) fn create_new(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        open_at(self.fd(), name, flags, Mode::from_raw_mode(mode)).map(File::from)
    }

    /// Opens `name` for writing, created empty with `mode` when missing, never truncated.
    pub(crate) fn create_or_open(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW;
        open_at(self.fd(), name, flags, Mode::from_raw_mode(mode)).map(File::from)
    }

    /// Opens `name` to append a log line to: `O_WRONLY | O_APPEND | O_NONBLOCK | O_NOFOLLOW`,
    /// never created, so that neither a link nor a FIFO without a reader can hold the caller.
    pub(crate) fn open_log(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NONBLOCK | OFlags::NOFOLLOW;
        open_at(self.fd(), name, flags, Mode::empty()).map(File::from)
    }

    /// `name` in this directory, pinned: opened `O_PATH | O_NOFOLLOW` (nothing of it is read, a
    /// link is not followed), and the path of that descriptor (`/proc/self/fd/N`), for calls
    /// that take only a path (a socket's address). While the file lives, the path names the
    /// file that was opened, whatever is renamed onto `name` meanwhile.
    pub(crate) fn pin(&self, name: &str) -> io::Result<(File, PathBuf)> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW;
        let file = File::from(open_at(self.fd(), name, flags, Mode::empty())?);
        let path = format!("/proc/self/fd/{}", file.as_raw_fd()).into();
        Ok((file, path))
    }

    /// Renames `from` to `to`, both in this directory (a link at `to` is replaced).
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(renameat(self.fd(), from, self.fd(), to)?)
    }

    /// Removes the file `name` (a link is removed, not followed).
    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        Ok(unlinkat(self.fd(), name, AtFlags::empty())?)
    }

    /// Creates the subdirectory `name` (mode 0755) unless something of that name is there.
    pub(crate) fn make_sub(&self, name: &str) -> io::Result<()> {
        match mkdirat(self.fd(), name, Mode::from_raw_mode(0o755)) {
            Err(e) if e != Errno::EXIST => Err(e.into()),
            _ => Ok(()),
        }
    }
}
