//! Writing and removing the record of a sync boost (`crate::host::BoostRecord`, under
//! `run/mdtune/`): written durably, mode 0600, before the boost's values; removed once the values
//! before it are back.

use crate::host::{boost_path, BoostRecord};
use crate::sys::{self, Root};
use std::io;

/// Writes (or rewrites) the record, durably, before the values it records are written.
pub(super) fn write(root: &Root, record: &BoostRecord) -> io::Result<()> {
    let bytes = serde_json::to_vec(record).map_err(io::Error::other)?;
    sys::write_atomic(root, &boost_path(root, &record.array), &bytes, 0o600)
}

/// Removes the record of `array`'s boost once it has ended.
pub(super) fn remove(root: &Root, array: &str) -> io::Result<()> {
    sys::remove_file(root, &boost_path(root, array)).map(|_| ())
}
