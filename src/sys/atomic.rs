//! Files written atomically and durably inside the root, for the persisted state, the saved
//! originals and the installed binary: a temp file beside the target, synced, then a rename,
//! which replaces a link in place of the target rather than following it, then the directory
//! synced. What a run reports as written is on the disk when the run ends: a power cut after it
//! leaves the new file whole, never an empty or old one (ext4 and XFS may otherwise write the
//! rename before the data). A removal syncs its directory too. Temp files an interrupted run
//! left are removed by the next run that writes or removes in that directory. Every directory
//! used is opened beneath the root's descriptor ([`Root::make_dir`], [`Root::real_file`]) and
//! every file is reached relative to it.

use super::dir::Dir;
use super::error::NotSynced;
use super::owner::{self, Owner};
use super::root::Root;
use std::fs;
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Reads a file inside the root, `None` when it does not exist. Its directory is opened beneath
/// the root, and the file in it with `O_NOFOLLOW`.
pub(crate) fn read_file(root: &Root, path: &Path) -> io::Result<Option<Vec<u8>>> {
    let Some((dir, name)) = root.real_file(path)? else {
        return Ok(None);
    };
    match dir.read_bytes(&name) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A file inside the root opened for reading (its directory beneath the root, the file with
/// `O_NOFOLLOW`), `None` when it does not exist.
fn root_file(root: &Root, path: &Path) -> io::Result<Option<fs::File>> {
    let Some((dir, name)) = root.real_file(path)? else {
        return Ok(None);
    };
    match dir.open_file(&name) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads a file inside the root as [`super::read_file`] does (its directory beneath the root,
/// the file with `O_NOFOLLOW`), with its owner and mode from the same descriptor: `None` when
/// it does not exist.
pub(crate) fn read_file_owned(root: &Root, path: &Path) -> io::Result<Option<(Vec<u8>, Owner)>> {
    let Some(mut file) = root_file(root, path)? else {
        return Ok(None);
    };
    let owner = owner::of(&file)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some((bytes, owner)))
}

/// The suffix of a temp file: `.<name>.mdtune-<pid>`.
const TEMP_MARK: &str = ".mdtune-";

/// True if and only if `name` is a temp file [`write_atomic`] makes.
fn is_temp(name: &str) -> bool {
    name.starts_with('.')
        && name
            .rsplit_once(TEMP_MARK)
            .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes the temp files an interrupted run left in `dir` (opened beneath the root). Every
/// writer holds the host lock, so no other run is using them.
fn remove_stale_temps(dir: &Dir) {
    for name in dir.list().unwrap_or_default() {
        if is_temp(&name) {
            let _ = dir.unlink(&name);
        }
    }
}

/// Writes `bytes` to `path` atomically: a new temp file beside it, synced, then a rename (which
/// replaces a link in place of `path` rather than following it), then the directory synced, all
/// relative to the directory opened (and made, when missing) beneath the root. An error of kind
/// [`NotSynced`] when only the last sync failed: the file is in place then.
pub(crate) fn write_atomic(root: &Root, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = root.make_dir(path.parent().unwrap_or(Path::new(".")))?;
    remove_stale_temps(&dir);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = format!(".{name}{TEMP_MARK}{}", std::process::id());
    let result = dir
        .create_new(&tmp, mode)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.set_permissions(fs::Permissions::from_mode(mode))?;
            f.sync_all()
        })
        .and_then(|()| dir.rename(&tmp, &name));
    if result.is_err() {
        let _ = dir.unlink(&tmp);
    }
    result?;
    dir.sync()
        .map_err(|e| io::Error::new(e.kind(), NotSynced(e)))
}

/// Removes a file inside the root (a link in its place is removed, not followed); `Ok(false)`
/// when it does not exist.
pub(crate) fn remove_file(root: &Root, path: &Path) -> io::Result<bool> {
    let Some((dir, name)) = root.real_file(path)? else {
        return Ok(false);
    };
    remove_stale_temps(&dir);
    match dir.unlink(&name) {
        Ok(()) => dir.sync().map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_temp_files_this_module_makes_count_as_stale() {
        assert!(is_temp(".mdtune.json.mdtune-1234"));
        assert!(is_temp(".mdtune.mdtune-7"));
        assert!(!is_temp("mdtune.json"));
        assert!(!is_temp(".mdtune.json.mdtune-"));
        assert!(!is_temp(".mdtune.json.mdtune-12a"));
        assert!(!is_temp("x.mdtune-12"));
    }
}
