//! Who owns a file and who may write it, asked of the opened descriptor (`fstat`), never of a
//! path that could be swapped between the look and the read: the persisted files that root
//! replays at boot are used only when the owner and mode say nobody but root could have
//! written them (`crate::persist`'s trust rule decides; this module only reports). The effective
//! user of the run, which that rule allows as an owner too, is `super::process`'s.

use rustix::fs::fstat;
use std::io;
use std::os::fd::AsFd;

/// `st_mode`'s file-type bits and those of a regular file.
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;

/// What `fstat` says of an open file: its owner, its permission bits and whether it is a
/// regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// The permission bits (`st_mode & 0o7777`).
    pub(crate) mode: u32,
    pub(crate) regular: bool,
}

/// What `fstat` says of `fd`.
pub(super) fn of(fd: impl AsFd) -> io::Result<Owner> {
    let st = fstat(fd)?;
    #[allow(clippy::useless_conversion)] // their types differ by architecture
    let mode = u32::from(st.st_mode);
    Ok(Owner {
        uid: st.st_uid,
        gid: st.st_gid,
        mode: mode & 0o7777,
        regular: mode & S_IFMT == S_IFREG,
    })
}
