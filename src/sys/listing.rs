//! Directory listings: every entry name of an open directory, from `getdents64` (rustix's
//! [`RawDir`]) into one buffer reused for the whole run and parsed in place, and the count of a
//! directory's subdirectories from its link count where the file system keeps one (a disk's
//! `mq/`), so that counting queues lists nothing. `super::dir` lists through these.

use rustix::fs::{fstat, RawDir};
use std::cell::RefCell;
use std::io;
use std::os::fd::OwnedFd;

/// Big enough for `sys/block` of a host with about 1,000 block devices in one call.
const DENTS_BUFFER: usize = 32 * 1024;

thread_local! {
    /// The one buffer every directory listing reuses (only its spare capacity is used).
    static DENTS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// How many entries the open directory `fd` has, and how many of them `pick` accepts. When its
/// link count tells how many subdirectories it has, that is both numbers and nothing is listed:
/// sysfs (kernfs) gives a directory 2 + its subdirectories (`kernfs_refresh_inode`), as tmpfs
/// and ext4 do, and the kernel's `mq/` holds only its numbered queue directories, so counting a
/// disk's queues costs one `fstat` (or, from its parent, one `statx`: `Dir::count_sub`) instead
/// of a listing. A count of 2 or less (no subdirectory, or a file system that does not count
/// them: btrfs gives 1) lists the directory instead, allocating nothing.
pub(super) fn count_in(fd: OwnedFd, pick: fn(&str) -> bool) -> io::Result<(u64, u64)> {
    // `st_nlink` is a u64 on x86_64, aarch64 and ppc64le, a u32 on i386 and armhf.
    #[allow(clippy::useless_conversion)]
    let nlink = u64::from(fstat(&fd)?.st_nlink);
    if nlink > 2 {
        return Ok((nlink - 2, nlink - 2));
    }
    let (mut all, mut picked) = (0, 0);
    for_each_in(&fd, &mut |entry| {
        all += 1;
        picked += u64::from(pick(entry));
    })?;
    Ok((all, picked))
}

/// The entry names of the open directory `fd`, sorted.
pub(super) fn names_in(fd: &OwnedFd) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for_each_in(fd, &mut |name| names.push(name.to_string()))?;
    names.sort();
    Ok(names)
}

/// Calls `f` with each entry name of the open directory `fd` (read from its start), skipping
/// `.`, `..` and names that are not UTF-8 (no kernel device or attribute has one).
pub(super) fn for_each_in(fd: &OwnedFd, f: &mut dyn FnMut(&str)) -> io::Result<()> {
    DENTS.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        buf.reserve(DENTS_BUFFER);
        let mut entries = RawDir::new(fd, buf.spare_capacity_mut());
        while let Some(entry) = entries.next() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                if let Ok(name) = std::str::from_utf8(name) {
                    f(name);
                }
            }
        }
        Ok(())
    })
}
