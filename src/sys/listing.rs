//! Directory listings: every entry name of an open directory, from `getdents64` (rustix's
//! [`RawDir`]) into one buffer reused for the whole run and parsed in place, and the count of a
//! directory's subdirectories from its link count where the file system keeps one (a disk's
//! `mq/`), so that counting queues lists nothing. On sysfs and tmpfs a listing ends at the first
//! batch that left room in the buffer ([`ListEnd`]): one `getdents64` for a directory that fits.
//! `super::dir` lists through these.

use rustix::fs::{fstat, fstatfs, RawDir};
use std::cell::RefCell;
use std::io;
use std::os::fd::OwnedFd;

/// Big enough for `sys/block` of a host with about 1,000 block devices in one call.
const DENTS_BUFFER: usize = 32 * 1024;

/// Room a batch must leave in the buffer for [`ListEnd::Short`] to take it as the last: more
/// than any entry the kernel could have held back (a name of `PATH_MAX` bytes, 19 bytes of
/// header, alignment), and the 8 bytes `RawDir` may skip to align the buffer.
const ROOM_FOR_ANY_ENTRY: usize = 4096 + 32 + 8;

/// How a listing knows it has every entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListEnd {
    /// When `getdents64` returns 0: on any file system.
    Zero,
    /// At a batch that left room for another entry. sysfs (`kernfs_fop_readdir`) and tmpfs and
    /// ramfs (`dcache_readdir`, `offset_readdir`) fill the buffer until an entry does not fit or
    /// the directory ends, so a batch that left room for any entry ended the directory, and
    /// the call that would return 0 is not made. A file system that may return a short batch
    /// early (FUSE returns one server reply per call) lists with [`ListEnd::Zero`].
    Short,
}

/// `statfs`'s `f_type` of sysfs, tmpfs and ramfs (`include/uapi/linux/magic.h`).
const FILLS_WHOLE_BATCHES: [u64; 3] = [0x6265_6572, 0x0102_1994, 0x8584_58f6];

/// How listings of the directory `fd` and of everything opened beneath it end: by the file
/// system `fd` is on (one `fstatfs`). [`ListEnd::Zero`] when that cannot be told.
pub(super) fn list_end_of(fd: &OwnedFd) -> ListEnd {
    // `f_type` is an i64 on x86_64, aarch64 and ppc64le, a u32 on i386 and armhf.
    #[allow(clippy::useless_conversion, clippy::unnecessary_fallible_conversions)]
    let fs = fstatfs(fd).map(|st| u64::try_from(st.f_type).unwrap_or(0));
    fs.map_or(ListEnd::Zero, list_end_on)
}

/// How a listing ends on the file system whose `statfs` type is `fs`.
fn list_end_on(fs: u64) -> ListEnd {
    if FILLS_WHOLE_BATCHES.contains(&fs) {
        ListEnd::Short
    } else {
        ListEnd::Zero
    }
}

/// The bytes `getdents64` gives the entry named by `len` bytes: its 19-byte header, the name and
/// its NUL, aligned to 8 (`filldir64`).
fn record_len(len: usize) -> usize {
    (19 + len + 1).div_ceil(8) * 8
}

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
pub(super) fn count_in(
    fd: OwnedFd,
    end: ListEnd,
    pick: fn(&str) -> bool,
) -> io::Result<(u64, u64)> {
    // `st_nlink` is a u64 on x86_64, aarch64 and ppc64le, a u32 on i386 and armhf.
    #[allow(clippy::useless_conversion)]
    let nlink = u64::from(fstat(&fd)?.st_nlink);
    if nlink > 2 {
        return Ok((nlink - 2, nlink - 2));
    }
    let (mut all, mut picked) = (0, 0);
    for_each_in(&fd, end, &mut |entry| {
        all += 1;
        picked += u64::from(pick(entry));
    })?;
    Ok((all, picked))
}

/// The entry names of the open directory `fd`, sorted.
pub(super) fn names_in(fd: &OwnedFd, end: ListEnd) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for_each_in(fd, end, &mut |name| names.push(name.to_string()))?;
    names.sort();
    Ok(names)
}

/// Calls `f` with each entry name of the open directory `fd` (read from its start), skipping
/// `.`, `..` and names that are not UTF-8 (no kernel device or attribute has one); the listing
/// ends as `end` says.
pub(super) fn for_each_in(fd: &OwnedFd, end: ListEnd, f: &mut dyn FnMut(&str)) -> io::Result<()> {
    DENTS.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        buf.reserve(DENTS_BUFFER);
        let room = buf.capacity();
        let mut entries = RawDir::new(fd, buf.spare_capacity_mut());
        // The bytes of the batch being read, entry by entry.
        let mut batch = 0;
        while let Some(entry) = entries.next() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            batch += record_len(name.len());
            if name != b"." && name != b".." {
                if let Ok(name) = std::str::from_utf8(name) {
                    f(name);
                }
            }
            if entries.is_buffer_empty() {
                if end == ListEnd::Short && batch + ROOM_FOR_ANY_ENTRY <= room {
                    break;
                }
                batch = 0;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, File};

    /// A directory of `n` entries with 40-byte names under `dir`, and their names, sorted.
    fn crowd(dir: &std::path::Path, n: usize) -> Vec<String> {
        fs::create_dir_all(dir).unwrap();
        let mut names: Vec<String> = (0..n).map(|i| format!("entry-{i:034}")).collect();
        for name in &names {
            File::create(dir.join(name)).unwrap();
        }
        names.sort();
        names
    }

    #[test]
    fn sysfs_tmpfs_and_ramfs_end_a_listing_at_a_short_batch_and_others_at_zero() {
        // The types of include/uapi/linux/magic.h. Which one a directory is on is the kernel's
        // answer to fstatfs: the integration test listing_ends.rs and the VM suite (real sysfs)
        // see it; a package build's chroot may have no sysfs to ask about.
        for (fs, end) in [
            (0x6265_6572, ListEnd::Short), // sysfs
            (0x0102_1994, ListEnd::Short), // tmpfs
            (0x8584_58f6, ListEnd::Short), // ramfs
            (0x9fa0, ListEnd::Zero),       // procfs
            (0xef53, ListEnd::Zero),       // ext4
            (0x6573_5546, ListEnd::Zero),  // FUSE
        ] {
            assert_eq!(list_end_on(fs), end, "{fs:#x}");
        }
    }

    #[test]
    fn a_listing_of_many_batches_finds_every_entry_either_way() {
        // 3,000 entries of 64 bytes each: six buffers full, then a short one; on /dev/shm (a
        // tmpfs on a host, where the short batch ends the listing) and in the test's temporary
        // directory, each as its file system allows and read until 0.
        let shm = std::path::Path::new("/dev/shm");
        let mut dirs = vec![crate::testing::scratch("crowd").join("d")];
        if shm.is_dir() {
            dirs.push(shm.join(format!("mdtune-unit-{}", std::process::id())));
        }
        for dir in dirs {
            let names = crowd(&dir, 3000);
            // A listing reads from where the descriptor is: each opens its own.
            let open = || -> OwnedFd { File::open(&dir).unwrap().into() };
            for end in [list_end_of(&open()), ListEnd::Zero] {
                let listed = names_in(&open(), end).unwrap();
                // Not compared whole: a failure would print 6,000 names.
                let first_wrong = listed.iter().zip(&names).position(|(a, b)| a != b);
                assert_eq!(
                    (listed.len(), first_wrong),
                    (3000, None),
                    "{} {end:?}",
                    dir.display()
                );
            }
            let end = list_end_of(&open());
            assert_eq!(count_in(open(), end, |_| true).unwrap(), (3000, 3000));
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn a_record_is_as_long_as_the_kernel_makes_it() {
        // filldir64: 19 bytes of header, the name, its NUL, aligned to 8.
        assert_eq!(record_len(1), 24);
        assert_eq!(record_len(4), 24);
        assert_eq!(record_len(5), 32);
        assert_eq!(record_len(255), 280);
    }
}
