//! Directory listings: every entry name of an open directory, from `getdents64` into one
//! buffer reused for the whole run and parsed in place, and the count of a directory's
//! subdirectories from its link count where the file system keeps one (a disk's `mq/`), so that
//! counting queues lists nothing. `super::dir` lists through these.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

use super::batch::close_later;
use super::calls::getdents;

/// Big enough for `sys/block` of a host with about 1,000 block devices in one call.
const DENTS_BUFFER: usize = 32 * 1024;

thread_local! {
    /// The one buffer every directory listing reuses.
    static DENTS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with each entry name in one `getdents64` buffer (`struct linux_dirent64`: inode
/// u64, offset i64, record length u16, type u8, then the NUL-terminated name), skipping `.`,
/// `..` and names that are not UTF-8 (no kernel device or attribute has one).
fn parse_dents(mut records: &[u8], f: &mut dyn FnMut(&str)) {
    while records.len() >= 19 {
        let reclen = usize::from(u16::from_ne_bytes([records[16], records[17]]));
        if reclen < 19 || reclen > records.len() {
            return;
        }
        let name = &records[19..reclen];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        if name != b"." && name != b".." {
            if let Ok(name) = std::str::from_utf8(name) {
                f(name);
            }
        }
        records = &records[reclen..];
    }
}

/// How many entries the open directory `fd` has, and how many of them `pick` accepts. When its
/// link count tells how many subdirectories it has, that is both numbers and nothing is listed:
/// sysfs (kernfs) gives a directory 2 + its subdirectories (`kernfs_refresh_inode`), as tmpfs
/// and ext4 do, and the kernel's `mq/` holds only its numbered queue directories, so counting a
/// disk's queues costs one `fstat` (or, from its parent, one `statx`: `Dir::count_sub`) instead
/// of a listing. A count of 2 or less (no subdirectory, or a file system that does not count
/// them: btrfs gives 1) lists the directory instead, allocating nothing.
pub(super) fn count_in(fd: OwnedFd, pick: fn(&str) -> bool) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let dir = File::from(fd);
    let nlink = dir.metadata()?.nlink();
    let fd = OwnedFd::from(dir);
    if nlink > 2 {
        close_later(fd);
        return Ok((nlink - 2, nlink - 2));
    }
    let (mut all, mut picked) = (0, 0);
    for_each_in(&fd, &mut |entry| {
        all += 1;
        picked += u64::from(pick(entry));
    })?;
    close_later(fd);
    Ok((all, picked))
}

/// The entry names of the open directory `fd`, sorted.
pub(super) fn names_in(fd: &OwnedFd) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for_each_in(fd, &mut |name| names.push(name.to_string()))?;
    names.sort();
    Ok(names)
}

/// Calls `f` with each entry name of the open directory `fd` (`getdents64` into the one
/// reused buffer until it returns 0).
pub(super) fn for_each_in(fd: &OwnedFd, f: &mut dyn FnMut(&str)) -> io::Result<()> {
    DENTS.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.resize(DENTS_BUFFER, 0);
        loop {
            let n = getdents(fd.as_fd(), &mut buf)?;
            if n == 0 {
                return Ok(());
            }
            parse_dents(&buf[..n], f);
        }
    })
}
