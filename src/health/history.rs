//! The checks' record (docs/reference.md §1, `--tick` (c)): every check or repair `mdtune --tick`
//! saw end, the last [`PER_ARRAY`] of each array, in `var/lib/mdtune/checks.json` under the root.
//! It outlives a reboot (the "no whole check in 35 days" alert needs months), is written
//! atomically and durably (`crate::sys::write_atomic`: a temporary file synced, renamed, the
//! directory synced), mode 0644, and only when something was recorded or an array was first
//! watched: a tick that sees nothing new does not write it. It is never replayed, so it is read
//! whatever its owner; a file that is not a record reads as empty (and is replaced by the next
//! one written).

use crate::sys::{read_file, write_atomic, Root};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

/// How many checks are kept per array: the oldest go first.
pub const PER_ARRAY: usize = 20;

/// The record's file name under `var/lib/mdtune/`.
const FILE: &str = "checks.json";

/// One check or repair seen to end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// The array's kernel name when it ended.
    pub array: String,
    /// Its uuid (32 hex digits), when known: the record follows the array across names.
    pub uuid: Option<String>,
    /// `check` or `repair`.
    pub action: String,
    /// When the tick saw it end (seconds since the epoch): at most a tick's period late.
    pub end_unix: u64,
    /// When a tick first saw it run, if one did.
    pub started_unix: Option<u64>,
    /// `md/mismatch_cnt` after it ended (sectors); `None` when another sync ran before the end
    /// was seen.
    pub mismatch_cnt: Option<u64>,
    /// True only for a check that covered the whole array: seen running from sector 0 with no
    /// end set (`sync_max` = `max`), and ended complete (md resets `sync_min` to 0 then; an
    /// interrupted one keeps its place there).
    pub whole: bool,
    /// Why it is not whole, when it is not.
    pub why_not_whole: Option<String>,
    /// The sectors it covered, `[from, to]`; `from` is `None` when its start was not seen,
    /// `to` when its end is unknown.
    pub range: [Option<u64>; 2],
    /// The array's sectors, as `sync_completed` counted them.
    pub total: Option<u64>,
}

impl Check {
    /// The key the record keeps an array's checks under: its uuid, else `md-<name>`.
    pub(crate) fn key(&self) -> String {
        key(&self.array, self.uuid.as_deref())
    }
}

/// The key of an array: its uuid, else `md-<name>`.
pub(crate) fn key(array: &str, uuid: Option<&str>) -> String {
    uuid.map_or_else(|| format!("md-{array}"), String::from)
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Per array key: when a tick first watched it (the start of "no whole check since").
    #[serde(default)]
    pub watched_since: BTreeMap<String, u64>,
    /// The checks, oldest first.
    #[serde(default)]
    pub checks: Vec<Check>,
}

impl History {
    /// Adds `check`, dropping its array's oldest beyond [`PER_ARRAY`].
    pub(crate) fn add(&mut self, check: Check) {
        let k = check.key();
        self.checks.push(check);
        let mine = self.checks.iter().filter(|c| c.key() == k).count();
        let mut drop = mine.saturating_sub(PER_ARRAY);
        self.checks.retain(|c| {
            let gone = drop > 0 && c.key() == k;
            drop -= usize::from(gone);
            !gone
        });
    }

    /// The checks of the array `name` (uuid `uuid`), oldest first.
    pub(crate) fn of<'a>(
        &'a self,
        name: &'a str,
        uuid: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Check> + 'a {
        let k = key(name, uuid);
        self.checks.iter().filter(move |c| c.key() == k)
    }
}

/// `var/lib/mdtune/checks.json`.
pub(crate) fn path(root: &Root) -> PathBuf {
    root.var_lib().join(FILE)
}

/// Reads the record: empty when there is none or it is not one.
pub(crate) fn load(root: &Root) -> History {
    read_file(root, &path(root))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Writes the record, atomically and durably, mode 0644.
pub(crate) fn save(root: &Root, history: &History) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(history).map_err(io::Error::other)?;
    text.push('\n');
    write_atomic(root, &path(root), text.as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(array: &str, end: u64) -> Check {
        Check {
            array: array.into(),
            action: "check".into(),
            end_unix: end,
            ..Check::default()
        }
    }

    #[test]
    fn the_record_keeps_the_last_twenty_of_each_array() {
        let mut h = History::default();
        for end in 0..25 {
            h.add(check("md0", end));
            h.add(check("md1", end));
        }
        let md0: Vec<u64> = h.of("md0", None).map(|c| c.end_unix).collect();
        assert_eq!(md0, (5..25).collect::<Vec<_>>());
        assert_eq!(h.of("md1", None).count(), PER_ARRAY);
        assert_eq!(h.checks.len(), 2 * PER_ARRAY);
    }

    #[test]
    fn an_array_is_known_by_its_uuid_across_names() {
        let mut h = History::default();
        let mut c = check("md127", 1);
        c.uuid = Some("ab".repeat(16));
        h.add(c);
        assert_eq!(h.of("md0", Some(&"ab".repeat(16))).count(), 1);
        assert_eq!(h.of("md127", None).count(), 0);
    }
}
