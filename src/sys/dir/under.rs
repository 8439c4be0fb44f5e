//! Paths below a directory through links: `sys/` reaches a member's queues as
//! `block/md0/md/dev-nvme0n1/block/mq` without opening a directory on the way. A path is given in
//! parts, joined with `/` (`["block/md0/md/dev-sda/block", "mq"]`), and resolved beneath the
//! directory (`super::super::resolve`): links are followed only while they stay inside it, and
//! one that would leave it is an error of kind `LeadsOut`. Plain reads, where no link may be on
//! the way, are `super`'s.

use super::super::error::{errno, leads_out_error};
use super::super::listing::{count_in, names_in};
use super::super::resolve::{resolve, Links};
use super::{read_all, utf8, Dir};
use rustix::fs::{readlinkat, Mode, OFlags};
use rustix::io::Errno;
use std::cell::RefCell;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

thread_local! {
    /// The one buffer a path given in parts is joined in (not kept: only while it is opened).
    static JOINED: RefCell<String> = const { RefCell::new(String::new()) };
}

/// `base.join(path.join("/"))`, built in one allocation.
fn joined(base: &Path, path: &[&str]) -> PathBuf {
    let len = path.iter().map(|p| p.len() + 1).sum::<usize>();
    let mut joined = OsString::with_capacity(base.as_os_str().len() + len);
    // As `Path::join`: an absolute path replaces the base, a separator goes between.
    let absolute = match path {
        [first, rest @ ..] => first.starts_with('/') || (first.is_empty() && !rest.is_empty()),
        [] => false,
    };
    if !absolute {
        let base = base.as_os_str();
        joined.push(base);
        if !base.is_empty() && !base.as_bytes().ends_with(b"/") {
            joined.push("/");
        }
    }
    for (i, part) in path.iter().enumerate() {
        if i > 0 {
            joined.push("/");
        }
        joined.push(part);
    }
    PathBuf::from(joined)
}

impl Dir {
    /// Opens `path` below this directory with `flags`: `Ok(None)` when it is absent, an error of
    /// kind [`LeadsOut`](super::error::LeadsOut) when resolving it would leave this directory.
    fn open_under(&self, path: &[&str], flags: OFlags) -> io::Result<Option<OwnedFd>> {
        let opened = match path {
            [one] => resolve(self.fd(), one, flags, Mode::empty(), Links::Beneath),
            _ => JOINED.with(|joined| {
                let mut joined = joined.borrow_mut();
                joined.clear();
                for (i, part) in path.iter().enumerate() {
                    if i > 0 {
                        joined.push('/');
                    }
                    joined.push_str(part);
                }
                resolve(self.fd(), &joined, flags, Mode::empty(), Links::Beneath)
            }),
        };
        match opened {
            Ok(fd) => Ok(Some(fd)),
            Err(e) if matches!(errno(&e), Some(Errno::NOENT | Errno::NOTDIR)) => Ok(None),
            Err(e) if errno(&e) == Some(Errno::XDEV) => Err(leads_out_error(format!(
                "{} leads out of {}",
                joined(&self.path, path).display(),
                self.path.display()
            ))),
            Err(e) => Err(e),
        }
    }

    /// The text of the file at `path` below this directory; `Ok(None)` when it is absent.
    pub(crate) fn read_under(&self, path: &[&str]) -> io::Result<Option<String>> {
        match self.open_under(path, OFlags::empty())? {
            Some(fd) => utf8(read_all(File::from(fd))?).map(Some),
            None => Ok(None),
        }
    }

    /// Whether `path` below this directory exists (opened `O_PATH`: nothing is read).
    pub(crate) fn exists_under(&self, path: &[&str]) -> io::Result<bool> {
        Ok(self.open_under(path, OFlags::PATH)?.is_some())
    }

    /// The directory at `path` below this one, open; its path is this one's joined with `path`
    /// (the links in it are not resolved).
    pub(crate) fn dir_under(&self, path: &[&str]) -> io::Result<Option<Dir>> {
        Ok(self.open_under(path, OFlags::DIRECTORY)?.map(|fd| Dir {
            fd,
            path: joined(&self.path, path),
            end: self.end,
        }))
    }

    /// The directory at `path` below this one, named by its real path: the kernel's name for
    /// what was opened (`/proc/self/fd`), such as a partition's disk reached by
    /// `.../dev-nvme0n1p1/block/..`. Without /proc (a bare chroot) the name is resolved from the
    /// path instead; either way the directory itself was opened beneath this one.
    pub(crate) fn real_under(&self, path: &[&str]) -> io::Result<Option<Dir>> {
        let Some(fd) = self.open_under(path, OFlags::DIRECTORY)? else {
            return Ok(None);
        };
        let via = joined(&self.path, path);
        let real = readlinkat(
            rustix::fs::CWD,
            format!("/proc/self/fd/{}", fd.as_raw_fd()),
            Vec::new(),
        )
        .map(|t| PathBuf::from(t.to_string_lossy().into_owned()))
        .or_else(|_| std::fs::canonicalize(&via))?;
        Ok(Some(Dir {
            fd,
            path: real,
            end: self.end,
        }))
    }

    /// The entry names of the directory at `path` below this one, sorted; empty when absent.
    pub(crate) fn list_under(&self, path: &[&str]) -> io::Result<Vec<String>> {
        match self.open_under(path, OFlags::DIRECTORY)? {
            Some(fd) => names_in(&fd, self.end),
            None => Ok(Vec::new()),
        }
    }

    /// As [`Dir::count_sub`], for the directory at `path` below this one.
    pub(crate) fn count_under(
        &self,
        path: &[&str],
        pick: fn(&str) -> bool,
    ) -> io::Result<(u64, u64)> {
        match self.open_under(path, OFlags::DIRECTORY)? {
            Some(fd) => count_in(fd, self.end, pick),
            None => Ok((0, 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::error::leads_out;
    use crate::testing::{scratch, tree};
    use std::fs;

    #[test]
    fn paths_in_parts_are_joined_as_path_join_joins_them() {
        for base in ["/sys", "/sys/", "", "rel"] {
            for parts in [
                &["block"][..],
                &["block/md0", "md"],
                &["block", "md0", "md"],
                &["a", ""],
                &["", "b"],
                &[""],
                &[],
                &["", ""],
                &["/abs", "x"],
            ] {
                let base = Path::new(base);
                assert_eq!(
                    joined(base, parts),
                    base.join(parts.join("/")),
                    "{base:?} {parts:?}"
                );
            }
        }
    }

    #[test]
    fn a_followed_link_must_stay_inside_the_directory_it_is_resolved_beneath() {
        let dir = scratch("follow");
        let sys = dir.join("sys");
        tree(
            &dir,
            &[
                "sys/devices/disk0/mq/0/",
                "elsewhere/",
                "sys/block/disk0->../devices/disk0",
                "sys/block/out->../../elsewhere",
            ],
        );
        let sys_dir = Dir::open(&sys).unwrap();
        let disk = sys_dir.real_under(&["block/disk0"]).unwrap().unwrap();
        assert_eq!(disk.path(), sys.join("devices/disk0"));
        assert_eq!(disk.name(), "disk0");
        assert_eq!(disk.count_sub("mq", |_| true), (1, 1));
        let out = sys_dir.dir_under(&["block/out"]).unwrap_err();
        assert!(leads_out(&out), "{out}");
        assert!(sys_dir.dir_under(&["block/none"]).unwrap().is_none());
        let block = sys_dir.sub("block").unwrap().unwrap();
        assert!(
            block.sub("disk0").unwrap().is_none(),
            "sub() never follows a link"
        );
        let devices = sys_dir.real_under(&["block/disk0/.."]).unwrap().unwrap();
        assert_eq!(devices.path(), sys.join("devices"));
        let above = sys_dir.real_under(&["block/disk0/../../.."]).unwrap_err();
        assert!(leads_out(&above), "{above}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_under_a_directory_follow_links_only_while_they_stay_inside_it() {
        let dir = scratch("under");
        let sys = dir.join("sys");
        let absolute = format!(
            "sys/block/absolute->{}",
            sys.join("devices/disk0").display()
        );
        tree(
            &dir,
            &[
                "sys/devices/disk0/mq/0/",
                "sys/devices/disk0/mq/1/",
                "sys/devices/disk0/size=8\n",
                "elsewhere/mq/0/",
                "sys/block/disk0->../devices/disk0",
                "sys/block/out->../../elsewhere",
                &absolute,
            ],
        );
        let sys_dir = Dir::open(&sys).unwrap();
        // With openat2 (Linux 5.6+) or the walk, whichever this kernel gives; the walk's own
        // answers are checked against openat2's in `super::super::resolve`.
        assert_eq!(
            sys_dir
                .read_under(&["block/disk0/size"])
                .unwrap()
                .as_deref(),
            Some("8\n")
        );
        assert_eq!(sys_dir.read_under(&["block/disk0", "none"]).unwrap(), None);
        assert_eq!(
            sys_dir
                .count_under(&["block/disk0", "mq"], |_| true)
                .unwrap(),
            (2, 2)
        );
        assert_eq!(sys_dir.list_under(&["block/disk0/mq"]).unwrap(), ["0", "1"]);
        assert!(sys_dir
            .exists_under(&["block", "disk0", "mq", "1"])
            .unwrap());
        let real = sys_dir.real_under(&["block/disk0/mq/.."]).unwrap().unwrap();
        assert_eq!(real.path(), sys.join("devices/disk0"));
        for out in [
            "block/out/mq",
            "block/absolute/size",
            "block/disk0/../../../elsewhere",
        ] {
            let e = sys_dir.exists_under(&[out]).unwrap_err();
            assert!(leads_out(&e), "{out}: {e}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
