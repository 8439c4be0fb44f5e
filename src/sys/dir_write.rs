//! Writing in a directory opened beneath the root: the files the floor writes atomically
//! (`super::atomic`), the lock, the log. Names are one component, and a link in place of one is
//! never followed.

use rustix::fs::{
    flock, fstat, fsync, mkdirat, renameat, unlinkat, AtFlags, FileType, FlockOperation, Mode,
    OFlags,
};
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;

use super::dir::Dir;
use super::error::errno;
use super::resolve::open_at;

/// The host-wide lock's file, open; the lock (`flock`) goes with the descriptor.
#[derive(Debug)]
pub(crate) struct LockFile(File);

/// Why the lock file could not be opened.
#[derive(Debug)]
pub(crate) enum OpenLock {
    /// Something other than a regular file is there (what it is).
    NotAFile(&'static str),
    Io(io::Error),
}

impl LockFile {
    /// Replaces the file's content with `bytes` (truncated, then written from its start),
    /// through the descriptor that holds the lock.
    pub(crate) fn replace(&self, bytes: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.0.set_len(0)?;
        self.0.write_all_at(bytes, 0)
    }

    /// Takes the exclusive lock without waiting: `Ok(false)` when another process holds it.
    pub(crate) fn try_lock(&self) -> io::Result<bool> {
        match flock(&self.0, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(true),
            Err(Errno::WOULDBLOCK) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl Dir {
    /// Creates `name` for writing with `mode`; it must not exist, not even as a link (EEXIST).
    pub(crate) fn create_new(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        open_at(self.fd(), name, flags, Mode::from_raw_mode(mode)).map(File::from)
    }

    /// Opens the lock file `name` for writing, created empty with `mode` when missing, never
    /// truncated, without blocking: `O_NONBLOCK`, so that a FIFO in its place fails at once
    /// (ENXIO without a reader) instead of holding the run before its bounded wait; and whatever
    /// opens must be a regular file.
    pub(crate) fn open_lock(&self, name: &str, mode: u32) -> Result<LockFile, OpenLock> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        let fd = match open_at(self.fd(), name, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => fd,
            Err(e) if errno(&e) == Some(Errno::NXIO) => return Err(OpenLock::NotAFile("a FIFO")),
            Err(e) => return Err(OpenLock::Io(e)),
        };
        match FileType::from_raw_mode(fstat(&fd).map_err(|e| OpenLock::Io(e.into()))?.st_mode) {
            FileType::RegularFile => Ok(LockFile(File::from(fd))),
            FileType::Fifo => Err(OpenLock::NotAFile("a FIFO")),
            FileType::Socket => Err(OpenLock::NotAFile("a socket")),
            FileType::CharacterDevice | FileType::BlockDevice => {
                Err(OpenLock::NotAFile("a device"))
            }
            _ => Err(OpenLock::NotAFile("not a regular file")),
        }
    }

    /// Opens `name` to append a log line to: `O_WRONLY | O_APPEND | O_NONBLOCK | O_NOFOLLOW`,
    /// never created, so that neither a link nor a FIFO without a reader can hold the caller.
    pub(crate) fn open_log(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NONBLOCK | OFlags::NOFOLLOW;
        open_at(self.fd(), name, flags, Mode::empty()).map(File::from)
    }

    /// Sends `bytes` as one datagram to the socket `name` in this directory, without waiting:
    /// `Ok(false)` when nothing of that name is a socket, an error when the socket did not take
    /// it (its reader stopped or hung: `EAGAIN`; gone: `ECONNREFUSED`). The socket is pinned:
    /// opened `O_PATH | O_NOFOLLOW` (a link is not followed) and sent to by the path of that
    /// descriptor (`/proc/self/fd/N`), so the socket checked is the socket sent to, even if
    /// another is renamed onto `name` in between.
    pub(crate) fn send_datagram(&self, name: &str, bytes: &[u8]) -> io::Result<bool> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW;
        let Ok(sock) = open_at(self.fd(), name, flags, Mode::empty()).map(File::from) else {
            return Ok(false);
        };
        if !sock.metadata().is_ok_and(|m| m.file_type().is_socket()) {
            return Ok(false);
        }
        let path = format!("/proc/self/fd/{}", sock.as_raw_fd());
        let s = UnixDatagram::unbound()?;
        s.set_nonblocking(true)?;
        s.send_to(bytes, path)?;
        Ok(true)
    }

    /// Renames `from` to `to`, both in this directory (a link at `to` is replaced).
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(renameat(self.fd(), from, self.fd(), to)?)
    }

    /// Removes the file `name` (a link is removed, not followed).
    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        Ok(unlinkat(self.fd(), name, AtFlags::empty())?)
    }

    /// Syncs this directory (`fsync`): the names created, renamed or removed in it are on the
    /// disk when it returns.
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(fsync(self.fd())?)
    }

    /// Creates the subdirectory `name` (mode 0755) unless something of that name is there.
    pub(crate) fn make_sub(&self, name: &str) -> io::Result<()> {
        match mkdirat(self.fd(), name, Mode::from_raw_mode(0o755)) {
            Err(e) if e != Errno::EXIST => Err(e.into()),
            _ => Ok(()),
        }
    }
}
