//! Writing node_exporter's textfile (`mdtune --tick --textfile DIR`, docs/reference.md §1, §4)
//! through no planted name. The directory is not under the run's root and is usually writable by
//! another user (`prometheus` owns `/var/lib/prometheus`), who may replace any of its names, or
//! the directory itself, with a link, a FIFO or anything else at any time. So: every component of
//! DIR is opened relative to the one before with `O_DIRECTORY | O_NOFOLLOW` (a link anywhere in
//! the path fails, it is never followed; a missing component is made, mode 0755, then opened the
//! same way); the new file is created exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`) under a
//! random name, its mode set on the descriptor, written and synced, renamed into place relative
//! to the directory's descriptor (which replaces whatever is at the name, a link included, and
//! follows nothing), and the directory synced. On any failure the temporary file is removed and
//! the old file stays. No other file's content or mode is ever changed. It is not for files
//! under the root (`super::atomic` writes those).

use rustix::fs::{
    fchmod, fsync, mkdirat, openat, renameat, statat, unlinkat, AtFlags, FileType, Mode, OFlags,
    CWD,
};
use rustix::io::Errno;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Why the textfile could not be written: the path concerned (the directory, one of its
/// components, or the temporary file) and what went wrong there.
#[derive(Debug)]
pub struct TextfileError {
    pub path: PathBuf,
    pub problem: String,
}

impl std::fmt::Display for TextfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for TextfileError {}

fn failed(path: &Path, problem: impl Into<String>) -> TextfileError {
    TextfileError {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// The prefix of the temporary files: a dot (node_exporter reads only `*.prom`, and the name
/// does not end so), then 16 random hex digits.
const TEMP_PREFIX: &str = ".mdtune.prom.";

/// A temporary file older than this is one a killed tick left: the next tick removes it. A
/// tick takes well under a second; an hour leaves a concurrent one alone.
const STALE: Duration = Duration::from_secs(3600);

/// Writes `bytes` to `dir/name` (`dir` absolute), as the module paragraph says, with mode 0644.
pub fn write_textfile(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), TextfileError> {
    let fd = open_dir(dir)?;
    remove_stale_temps(&fd);
    let (tmp, file) = create_temp(&fd, dir)?;
    let tmp_path = dir.join(&tmp);
    let written = fill(file, bytes)
        .map_err(|e| failed(&tmp_path, format!("cannot write it: {e}")))
        .and_then(|()| {
            renameat(&fd, tmp.as_str(), &fd, name).map_err(|e| {
                failed(
                    &dir.join(name),
                    format!("cannot rename {tmp} onto it: {}", io::Error::from(e)),
                )
            })
        });
    if let Err(e) = written {
        let _ = unlinkat(&fd, tmp.as_str(), AtFlags::empty());
        return Err(e);
    }
    fsync(&fd).map_err(|e| {
        failed(
            dir,
            format!(
                "{name} was written, but the directory could not be synced: {}",
                io::Error::from(e)
            ),
        )
    })
}

/// Writes `bytes` through `file`, sets its mode to 0644 on the descriptor and syncs it.
fn fill(mut file: File, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)?;
    fchmod(&file, Mode::from_raw_mode(0o644))?;
    file.sync_all()
}

/// Opens `dir` (absolute) component by component from `/`, each relative to the one before with
/// `O_DIRECTORY | O_NOFOLLOW`, making a missing one (mode 0755). A link, or anything but a
/// directory, anywhere on the way fails, naming that component.
fn open_dir(dir: &Path) -> Result<OwnedFd, TextfileError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = openat(CWD, "/", flags, Mode::empty())
        .map_err(|e| failed(Path::new("/"), io::Error::from(e).to_string()))?;
    let mut at = PathBuf::from("/");
    for part in dir.components() {
        let name = match part {
            Component::RootDir | Component::CurDir => continue,
            Component::Normal(name) => name,
            Component::ParentDir | Component::Prefix(_) => {
                return Err(failed(dir, "the path has a `..`: give it without"))
            }
        };
        at.push(name);
        let next = match openat(&fd, name, flags, Mode::empty()) {
            Err(Errno::NOENT) => match mkdirat(&fd, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => openat(&fd, name, flags, Mode::empty()),
                Err(e) => Err(e),
            },
            other => other,
        };
        fd = next.map_err(|e| failed(&at, why_not_a_dir(&fd, name, e)))?;
    }
    Ok(fd)
}

/// What `name` in `parent` is, when opening it as a directory without following links failed
/// with `e`: a link (not followed), something else than a directory, or the system's error.
fn why_not_a_dir(parent: &OwnedFd, name: &std::ffi::OsStr, e: Errno) -> String {
    if matches!(e, Errno::LOOP | Errno::NOTDIR) {
        if let Ok(st) = statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            return match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink => "it is a symbolic link, and mdtune follows no link in the \
                                      textfile directory's path (make it a real directory, or \
                                      give the directory the link leads to)"
                    .into(),
                _ => "it is not a directory".into(),
            };
        }
    }
    io::Error::from(e).to_string()
}

/// Creates a new temporary file in `fd` (`dir`), exclusively, under a random name: a name
/// someone planted is never opened (EEXIST, and another name is drawn).
fn create_temp(fd: &OwnedFd, dir: &Path) -> Result<(String, File), TextfileError> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last = Errno::EXIST;
    for _ in 0..4 {
        let tmp = format!("{TEMP_PREFIX}{}", random_hex()?);
        match openat(fd, tmp.as_str(), flags, Mode::from_raw_mode(0o600)) {
            Ok(file) => return Ok((tmp, File::from(file))),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => {
                last = e;
                break;
            }
        }
    }
    let why = io::Error::from(last);
    Err(failed(dir, format!("cannot create a file in it: {why}")))
}

/// 16 hex digits from the kernel's random source (`getrandom`).
fn random_hex() -> Result<String, TextfileError> {
    let mut buf = [0u8; 8];
    let mut filled = 0;
    while filled < buf.len() {
        let flags = rustix::rand::GetRandomFlags::empty();
        filled += rustix::rand::getrandom(&mut buf[filled..], flags)
            .map_err(|e| failed(Path::new("getrandom"), io::Error::from(e).to_string()))?;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// True if and only if `name` is a temporary file [`write_textfile`] makes.
fn is_temp(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .is_some_and(|r| r.len() == 16 && r.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Removes the temporary files a killed tick left in the directory: regular files of that name
/// (seen without following a link) older than [`STALE`]. Removing a name follows nothing.
fn remove_stale_temps(fd: &OwnedFd) {
    let Ok(names) = temp_names(fd) else {
        return;
    };
    let now = SystemTime::now();
    for name in names {
        let Ok(st) = statat(fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(st.st_mtime.max(0) as u64);
        let old = now.duration_since(modified).is_ok_and(|age| age > STALE);
        if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile && old {
            let _ = unlinkat(fd, name.as_str(), AtFlags::empty());
        }
    }
}

/// The names in the directory that are temporary files of [`write_textfile`].
fn temp_names(fd: &OwnedFd) -> io::Result<Vec<String>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dup = openat(fd, ".", flags, Mode::empty())?;
    let mut names = Vec::new();
    let mut dir = rustix::fs::Dir::new(dup)?;
    while let Some(entry) = dir.read() {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if is_temp(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::scratch;
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn only_temp_files_this_module_makes_count_as_its_own() {
        assert!(is_temp(".mdtune.prom.0123456789abcdef"));
        assert!(!is_temp(".mdtune.prom.tmp"));
        assert!(!is_temp("mdtune.prom"));
        assert!(!is_temp(".mdtune.prom.0123456789abcdeg"));
        assert!(!is_temp(".mdtune.prom.0123456789abcdef0"));
    }

    #[test]
    fn the_textfile_is_written_0644_and_a_missing_directory_is_made() {
        let top = scratch("textfile");
        let dir = top.join("a/b");
        write_textfile(&dir, "mdtune.prom", b"x 1\n").unwrap();
        let path = dir.join("mdtune.prom");
        assert_eq!(fs::read(&path).unwrap(), b"x 1\n");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o644
        );
        write_textfile(&dir, "mdtune.prom", b"x 2\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"x 2\n");
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, ["mdtune.prom"], "no temporary file is left");
        fs::remove_dir_all(&top).unwrap();
    }

    #[test]
    fn a_link_in_the_directorys_path_is_not_followed_and_named() {
        let top = scratch("textfile-link");
        fs::create_dir_all(top.join("real")).unwrap();
        symlink(top.join("real"), top.join("link")).unwrap();
        let e = write_textfile(&top.join("link/sub"), "mdtune.prom", b"x\n").unwrap_err();
        assert_eq!(e.path, top.join("link"));
        assert!(e.problem.contains("symbolic link"), "{e}");
        assert!(fs::read_dir(top.join("real")).unwrap().next().is_none());
        fs::remove_dir_all(&top).unwrap();
    }
}
