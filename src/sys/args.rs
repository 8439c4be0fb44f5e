//! The args file Ansible passes (`mdtune ARGS_FILE`): opened without blocking and only when it is
//! a regular file, so that a FIFO or a device given by mistake is refused at once, before any
//! read, instead of holding the run (a FIFO without a writer blocks `open`; `/dev/zero` never
//! ends).

use rustix::fs::{fstat, FileType, Mode, OFlags, CWD};
use std::fs::File;
use std::io;
use std::path::Path;

use super::resolve::open_at;

/// Why an args file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ArgsFileError {
    #[error("it is {0}, not a regular file (pipe JSON to `mdtune -` instead)")]
    NotAFile(&'static str),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Opens the args file `path` to read: `O_NONBLOCK` (a FIFO opens at once), then it must be a
/// regular file.
pub fn open_args_file(path: &Path) -> Result<File, ArgsFileError> {
    let fd = open_at(CWD, path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
    match FileType::from_raw_mode(fstat(&fd).map_err(io::Error::from)?.st_mode) {
        FileType::RegularFile => Ok(File::from(fd)),
        FileType::Fifo => Err(ArgsFileError::NotAFile("a FIFO")),
        FileType::Socket => Err(ArgsFileError::NotAFile("a socket")),
        FileType::CharacterDevice | FileType::BlockDevice => {
            Err(ArgsFileError::NotAFile("a device"))
        }
        FileType::Directory => Err(ArgsFileError::NotAFile("a directory")),
        _ => Err(ArgsFileError::NotAFile("not a regular file")),
    }
}
