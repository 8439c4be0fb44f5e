//! Which persisted files root may act on (docs/reference.md §6): the persisted state, the udev
//! rule, the manifest and the binary the rule runs are used only when their owner is root (or
//! the user running mdtune, which is root in production: a test or a chroot run by another user
//! owns what it made) and neither group nor others may write them. Anyone else who could write
//! one could make root's next boot run their input, or remove files a revert trusts. The owner
//! and mode come from the opened descriptor (`crate::sys::read_file_owned`), not a second look
//! at the path.

use super::error::{display, PersistError};
use crate::sys::{self, Owner, Root};
use std::path::Path;

/// Why `owner` may not be trusted with a file root replays, `None` when it may.
pub(crate) fn distrust(owner: &Owner) -> Option<&'static str> {
    if owner.uid != 0 && owner.uid != sys::effective_uid() {
        Some("is not owned by root")
    } else if owner.mode & 0o022 != 0 {
        Some("is writable by group or others")
    } else {
        None
    }
}

/// The refusal of `path` (under the root) for `owner`, naming the file, its owner and mode, and
/// the fix.
pub(crate) fn refusal(root: &Root, path: &Path, owner: &Owner, why: &str) -> PersistError {
    PersistError::Untrusted {
        path: display(root, path),
        uid: owner.uid,
        gid: owner.gid,
        mode: owner.mode,
        why: why.to_string(),
    }
}

/// Reads a file root replays, `None` when it does not exist; one that is not root's alone is
/// refused ([`PersistError::Untrusted`]).
pub(crate) fn read_trusted(root: &Root, path: &Path) -> Result<Option<Vec<u8>>, PersistError> {
    let read = sys::read_file_owned(root, path).map_err(|source| PersistError::Read {
        path: path.display().to_string(),
        source,
    })?;
    match read {
        None => Ok(None),
        Some((bytes, owner)) => match distrust(&owner) {
            None => Ok(Some(bytes)),
            Some(why) => Err(refusal(root, path, &owner, why)),
        },
    }
}

/// True if and only if `path` exists, is not a link, and is not root's alone: `persist` then
/// writes it again (a new file, root's, with its mode), even when its content is what it wants.
/// Only its owner is asked (`fstat`), nothing read.
pub(crate) fn untrusted(root: &Root, path: &Path) -> bool {
    !root.is_link(path) && root.owner(path).is_ok_and(|o| distrust(&o).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_root_alone_may_write_are_trusted() {
        let owner = |uid, mode| Owner {
            uid,
            gid: 0,
            mode,
            regular: true,
        };
        assert_eq!(distrust(&owner(0, 0o644)), None);
        assert_eq!(distrust(&owner(0, 0o755)), None);
        assert!(distrust(&owner(0, 0o664)).is_some());
        assert!(distrust(&owner(0, 0o646)).is_some());
        if sys::effective_uid() != 65534 {
            assert!(distrust(&owner(65534, 0o644)).is_some());
        }
    }
}
