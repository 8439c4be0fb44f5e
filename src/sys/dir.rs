//! Directory handles: how mdtune reads the tree under the root, confined and cheaply.
//!
//! A [`Dir`] is an open directory, reached beneath the root's descriptor. Everything in it is
//! reached relative to its descriptor, through `super::resolve`: files and subdirectories one or
//! two components below it are opened with no link on the way (a file cannot be a link out of
//! the root) and read with one `read` into one reused page; subdirectories are only looked at
//! with one `statx` when their link count or their being there is all that is asked; directories
//! are listed with `getdents64` into one reused buffer (`super::listing`), ending at a short
//! batch where `sys/`'s file system fills each batch (sysfs, tmpfs). Paths through links below a
//! directory (a member's disk, `block/md0/md/dev-nvme0n1/block` from `sys/`, for `crate::host`'s
//! device walks) are resolved beneath it, links followed only while they stay inside it: `under`.
//! Whether `openat2` or the walk does it was chosen once for the run, in `super::resolve`; a
//! caller cannot tell.

use rustix::fs::{readlinkat, statx, AtFlags, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;
use std::cell::RefCell;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::error::absent;
use super::listing::{count_in, for_each_in, names_in, ListEnd};
use super::resolve::{open_at, resolve, Links};

mod under;

thread_local! {
    /// The one page every file read goes into first (zeroed once, not per read).
    static PAGE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Reads what is left of `file` with one `read` for anything under 4 KiB (every sysfs and procfs
/// attribute): no `fstat`, no `lseek`. A longer file takes more reads.
pub(super) fn read_all(mut file: File) -> io::Result<Vec<u8>> {
    let (n, mut bytes) = PAGE.with(|page| -> io::Result<_> {
        let mut page = page.borrow_mut();
        page.resize(4096, 0);
        let n = file.read(&mut page)?;
        Ok((n, page[..n].to_vec()))
    })?;
    if n == 4096 {
        file.read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// Bytes of a file read onto the stack by [`with_text`] before it takes the heap: every value
/// of md's and a queue's attributes but a long `state` fits.
const SHORT: usize = 128;

/// Calls `f` with the text of `file` without its leading and trailing whitespace, read with one
/// `read` onto the stack when it is shorter than [`SHORT`] bytes (nothing allocated), else read
/// whole; the text must be UTF-8.
fn with_text<R>(mut file: File, f: impl FnOnce(&str) -> R) -> io::Result<R> {
    let mut short = [0u8; SHORT];
    let n = file.read(&mut short)?;
    let text = |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map(|t| f(t.trim()))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    };
    if n < SHORT {
        return text(&short[..n]);
    }
    let mut bytes = short.to_vec();
    file.read_to_end(&mut bytes)?;
    text(&bytes)
}

pub(super) fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// `text` without its leading and trailing whitespace (a sysfs value's newline), reusing its
/// allocation when nothing leads.
pub(crate) fn trimmed(mut text: String) -> String {
    text.truncate(text.trim_end().len());
    match text.len() - text.trim_start().len() {
        0 => text,
        lead => text.split_off(lead),
    }
}

/// An open directory and the path it was reached by (for messages; it may pass through links
/// inside the directory that confines it).
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    /// How its listings end, and those of every directory opened beneath it: by the file
    /// system of the directory the walk started from (`sys/`).
    end: ListEnd,
}

impl Dir {
    /// Opens the directory at `real`, a path already resolved (canonical): for tests; runs
    /// open directories beneath the root.
    #[cfg(test)]
    pub(crate) fn open(real: &Path) -> io::Result<Dir> {
        let fd: OwnedFd = File::open(real)?.into();
        Ok(Dir {
            end: super::listing::list_end_of(&fd),
            fd,
            path: real.to_path_buf(),
        })
    }

    /// A directory opened elsewhere in the floor (beneath the root), named `path`: the path it
    /// was opened by, which may pass through links inside the root. Its listings, and those of
    /// the directories opened beneath it, end as `end` says.
    pub(super) fn from_fd(fd: OwnedFd, path: PathBuf, end: ListEnd) -> Dir {
        Dir { fd, path, end }
    }

    /// The descriptor, for the floor's calls relative to it.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The path this directory was reached by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The last component of the path (`nvme0n1` for `.../nvme/nvme0/nvme0n1`).
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Opens `path` (one component, or a path such as `queue/rotational` or `dev-sda/state`)
    /// below this directory with no link on the way (ELOOP or ENOTDIR for one).
    fn open_plain(&self, path: &str, flags: OFlags) -> io::Result<OwnedFd> {
        resolve(self.fd(), path, flags, Mode::empty(), Links::None)
    }

    /// The subdirectory `name`, which must be a directory and not a link: then it is inside
    /// whatever this directory is inside. A path of several components (`queue/x`) is opened as
    /// [`Dir::read_bytes`] opens one: no component may be a link. `Ok(None)` when it is absent,
    /// a file or a link.
    pub(crate) fn sub(&self, name: &str) -> io::Result<Option<Dir>> {
        match self.open_plain(name, OFlags::DIRECTORY) {
            Ok(fd) => Ok(Some(Dir {
                fd,
                path: self.path.join(name),
                end: self.end,
            })),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The bytes of file `name`: one component, or a path such as `queue/rotational` or
    /// `dev-sda/state`; no component may be a link (ELOOP).
    pub(crate) fn read_bytes(&self, name: &str) -> io::Result<Vec<u8>> {
        read_all(File::from(self.open_plain(name, OFlags::NOFOLLOW)?))
    }

    /// File `name` opened for reading, as [`Dir::read_bytes`] opens it: for a caller that asks
    /// the descriptor who owns it before it reads (`super::owner`).
    pub(super) fn open_file(&self, name: &str) -> io::Result<File> {
        Ok(File::from(self.open_plain(name, OFlags::NOFOLLOW)?))
    }

    /// The text of file `name` (as for [`Dir::read_bytes`]); `Ok(None)` when it does not exist
    /// (the kernel's ENOENT for an attribute the level lacks).
    pub(crate) fn read(&self, name: &str) -> io::Result<Option<String>> {
        match self.read_bytes(name) {
            Ok(bytes) => utf8(bytes).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `f` of the text of file `name` (as for [`Dir::read`]), trimmed as by [`trimmed`], for a
    /// value that is looked at and not kept: a short file is read onto the stack and nothing is
    /// allocated. `Ok(None)` when it does not exist.
    pub(crate) fn read_with<R>(
        &self,
        name: &str,
        f: impl FnOnce(&str) -> R,
    ) -> io::Result<Option<R>> {
        match self.open_plain(name, OFlags::NOFOLLOW) {
            Ok(fd) => with_text(File::from(fd), f).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What `statx(name, AT_SYMLINK_NOFOLLOW)` says of `name` (one component, not followed):
    /// whether it is a directory, and its link count. `Ok(None)` where the kernel has no `statx`
    /// (before 4.11) or a seccomp filter refuses it: the caller then opens it instead.
    fn stat(&self, name: &str) -> io::Result<Option<(bool, u64)>> {
        let mask = StatxFlags::TYPE | StatxFlags::NLINK;
        match statx(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW, mask) {
            Ok(st) => {
                let kind = FileType::from_raw_mode(u32::from(st.stx_mode));
                Ok(Some((kind == FileType::Directory, u64::from(st.stx_nlink))))
            }
            Err(Errno::NOSYS | Errno::PERM) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `name` exists here (a partition's `partition` file): one `statx`, nothing
    /// opened, and a link of that name is not followed (`O_PATH | O_NOFOLLOW` without `statx`).
    pub(crate) fn has(&self, name: &str) -> bool {
        match self.stat(name) {
            Ok(Some(_)) => true,
            Ok(None) => open_at(
                self.fd(),
                name,
                OFlags::PATH | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .is_ok(),
            Err(_) => false,
        }
    }

    /// Whether `name` here is a directory, by one `statx` (not followed): `false` for anything
    /// else, a link included, and where the kernel has no `statx`.
    pub(crate) fn is_dir(&self, name: &str) -> bool {
        matches!(self.stat(name), Ok(Some((true, _))))
    }

    /// The text of link `name`, not followed (udev's `dev/md/NAME -> ../md0`).
    pub(crate) fn read_link(&self, name: &str) -> io::Result<PathBuf> {
        let text = readlinkat(self.fd(), name, Vec::new())?;
        Ok(PathBuf::from(OsString::from_vec(text.into_bytes())))
    }

    /// This directory's entry names, sorted.
    pub(crate) fn list(&self) -> io::Result<Vec<String>> {
        names_in(&self.fd, self.end)
    }

    /// This directory's entry names that start with `prefix`, sorted: the others are not
    /// copied (an array's `md/` holds about 40 attributes beside its `dev-*` members).
    pub(crate) fn list_with(&self, prefix: &str) -> io::Result<Vec<String>> {
        self.list_if(|name| name.starts_with(prefix))
    }

    /// This directory's entry names that `pick` accepts, sorted: the others are not copied
    /// (`sys/block` holds every disk and partition beside the md arrays).
    pub(crate) fn list_if(&self, pick: impl Fn(&str) -> bool) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for_each_in(&self.fd, self.end, &mut |name| {
            if pick(name) {
                names.push(name.to_string());
            }
        })?;
        names.sort();
        Ok(names)
    }

    /// The entry names of subdirectory `name` (not a link), sorted; empty when it is absent.
    pub(crate) fn list_sub(&self, name: &str) -> Vec<String> {
        // Only listed: no `Dir`, so no path is built for it.
        match self.open_plain(name, OFlags::DIRECTORY) {
            Ok(fd) => names_in(&fd, self.end).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// How many entries subdirectory `name` (not a link) has, and how many of them `pick`
    /// accepts (see [`count_in`]): (0, 0) when it is absent. A directory whose link count tells
    /// is counted from one `statx`, without being opened.
    pub(crate) fn count_sub(&self, name: &str, pick: fn(&str) -> bool) -> (u64, u64) {
        match self.stat(name) {
            Ok(Some((true, links))) if links > 2 => return (links - 2, links - 2),
            // A file, a link (not followed) or nothing of that name.
            Ok(Some((false, _))) | Err(_) => return (0, 0),
            Ok(Some((true, _))) | Ok(None) => {}
        }
        match self.open_plain(name, OFlags::DIRECTORY) {
            Ok(fd) => count_in(fd, self.end, pick).unwrap_or_default(),
            Err(_) => (0, 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{scratch, tree};
    use std::fs;

    #[test]
    fn files_are_read_relative_to_the_directory_and_links_are_not_followed() {
        let dir = scratch("read");
        let secret = dir.join("secret").display().to_string();
        let link = format!("sys/md/uuid->{secret}");
        tree(&dir, &["sys/md/level=raid5\n", "secret=outside\n", &link]);
        let md = Dir::open(&dir.join("sys"))
            .unwrap()
            .sub("md")
            .unwrap()
            .unwrap();
        assert_eq!(md.read("level").unwrap().as_deref(), Some("raid5\n"));
        assert_eq!(md.read("missing").unwrap(), None);
        assert!(
            md.read("uuid").is_err(),
            "a link in place of a file is refused"
        );
        assert_eq!(md.list().unwrap(), ["level", "uuid"]);
        assert_eq!(md.path(), dir.join("sys/md"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_under_a_directory_are_read_with_or_without_openat2_and_never_through_a_link() {
        let dir = scratch("beneath");
        tree(
            &dir,
            &[
                "dev/queue/rotational=1\n",
                "elsewhere/rotational=0\n",
                "dev/linked->../elsewhere",
                "dev/queue/link->../elsewhere/rotational",
            ],
        );
        let dev = Dir::open(&dir.join("dev")).unwrap();
        assert_eq!(
            dev.read("queue/rotational").unwrap().as_deref(),
            Some("1\n")
        );
        assert_eq!(dev.read("queue/missing").unwrap(), None);
        assert!(dev.read("linked/rotational").is_err(), "a linked directory");
        assert!(dev.read("queue/link").is_err(), "a linked file");
        tree(&dir, &["elsewhere/sub/", "dev/queue/sub/"]);
        assert!(dev.sub("queue/sub").unwrap().is_some());
        assert!(
            dev.sub("linked/sub").unwrap().is_none(),
            "sub() never passes a link"
        );
        // The same without openat2: openat(O_NOFOLLOW) one component at a time.
        let walk = |p: &str| {
            let how = super::super::resolve::How {
                flags: OFlags::empty(),
                mode: Mode::empty(),
                links: Links::None,
            };
            super::super::resolve::walk(dev.fd(), p, how)
        };
        assert!(walk("queue/rotational").is_ok());
        assert_eq!(
            walk("queue/missing").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(
            walk("linked/rotational").is_err(),
            "walk: a linked directory"
        );
        assert!(walk("queue/link").is_err(), "walk: a linked file");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn values_looked_at_are_read_short_or_long_and_trimmed() {
        let dir = scratch("with");
        let long = format!(" {}\n", "x".repeat(5000));
        tree(
            &dir,
            &["short= in_sync \n", "empty=", "exact=0123456789abcdef"],
        );
        fs::write(dir.join("long"), &long).unwrap();
        fs::write(dir.join("edge"), "y".repeat(SHORT)).unwrap();
        fs::write(dir.join("binary"), [0xff, 0xfe]).unwrap();
        let d = Dir::open(&dir).unwrap();
        let len = |name: &str| d.read_with(name, |t| (t.len(), t.to_string())).unwrap();
        assert_eq!(len("short"), Some((7, "in_sync".into())));
        assert_eq!(len("empty"), Some((0, String::new())));
        assert_eq!(len("exact").unwrap().1, "0123456789abcdef");
        assert_eq!(len("long").unwrap().0, 5000);
        assert_eq!(len("edge").unwrap().0, SHORT);
        assert_eq!(len("missing"), None);
        assert!(d.read_with("binary", |_| ()).is_err(), "not UTF-8");
        for name in ["short", "long", "edge", "exact"] {
            let read = d.read(name).unwrap().map(trimmed);
            assert_eq!(read, len(name).map(|(_, t)| t), "{name}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn values_are_trimmed_in_place() {
        assert_eq!(trimmed("4096\n".into()), "4096");
        assert_eq!(trimmed(" 500000 (local)\n".into()), "500000 (local)");
        assert_eq!(trimmed("\n".into()), "");
        assert_eq!(trimmed(String::new()), "");
    }

    #[test]
    fn long_listings_and_long_files_are_read_whole() {
        let dir = scratch("long");
        for i in 0..3000 {
            fs::write(dir.join(format!("entry-with-a-long-name-{i:05}")), "").unwrap();
        }
        fs::write(dir.join("big"), "x".repeat(10_000)).unwrap();
        let d = Dir::open(&dir).unwrap();
        assert_eq!(d.list().unwrap().len(), 3001);
        assert_eq!(d.read("big").unwrap().unwrap().len(), 10_000);
        fs::remove_dir_all(&dir).unwrap();
    }
}
