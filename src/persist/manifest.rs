//! The manifest, `etc/mdtune/installed.json` (docs/reference.md §6): which persisted files mdtune
//! created, so that a revert removes those and never a packaged binary or an admin's own rule;
//! and when, by which mdtune version and by whom (the run's caller) the persisted state was
//! last written.
//!
//! The time is kept here, not in the persisted input `etc/mdtune/mdtune.json`: that file stays
//! exactly the input, so that a `query` of the same input still compares equal with it. The
//! manifest is rewritten only when the persisted input is written or its list of files changes, so
//! an unchanged persist (or one that only puts back a removed rule or binary) leaves it, and its
//! time, alone; a `query` with `persist: true` of a persisted host still compares equal. A manifest
//! written before the time was kept (a bare JSON list) is read as it is and gets the time at the
//! next change.

use super::stamp;
use serde_json::{json, Value as Json};

/// When and by which version the persisted state was last written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// RFC 3339, UTC.
    pub time: String,
    pub unix: u64,
    pub version: String,
    /// Who ran the run that wrote it (`crate::trail::Caller::describe`: the tool and the
    /// person), as it said of itself, escaped; `None` in a manifest from before it was kept.
    pub by: Option<String>,
}

impl Written {
    /// Now, by this binary, for the run of `by`.
    pub(crate) fn now(by: Option<&str>) -> Written {
        let unix = stamp::now();
        Written {
            time: stamp::rfc3339(unix),
            unix,
            version: stamp::VERSION.to_string(),
            by: by.map(String::from),
        }
    }
}

/// What a manifest says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// The files `persist` created (on the target system: `/etc/...`), sorted.
    pub(crate) created: Vec<String>,
    /// Unknown for a manifest from before the time was kept.
    pub(crate) written: Option<Written>,
}

impl Manifest {
    /// Parses a manifest: the object mdtune writes, or the bare list of files of earlier
    /// versions. Anything else is not a manifest mdtune wrote: treating it as empty would lose
    /// track of what `persist` installed.
    pub(crate) fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let json: Json = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let strings = |v: &Json| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(String::from))
                .collect()
        };
        if json.is_array() {
            let created = strings(&json).ok_or("a list of files, but not all are names")?;
            return Ok(Manifest {
                created,
                written: None,
            });
        }
        let created = json
            .get("created")
            .and_then(strings)
            .ok_or("no \"created\" list of files")?;
        let text = |k: &str| json.get(k).and_then(Json::as_str).map(String::from);
        let written = match (
            text("written"),
            json.get("written_unix").and_then(Json::as_u64),
        ) {
            (Some(time), Some(unix)) => Some(Written {
                time,
                unix,
                version: text("version").unwrap_or_default(),
                by: text("by"),
            }),
            _ => None,
        };
        Ok(Manifest { created, written })
    }

    /// The file's content.
    pub(crate) fn render(&self) -> Vec<u8> {
        let mut v = json!({"created": self.created});
        if let Some(w) = &self.written {
            v["written"] = json!(w.time);
            v["written_unix"] = json!(w.unix);
            v["version"] = json!(w.version);
            if let Some(by) = &w.by {
                v["by"] = json!(by);
            }
        }
        let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
        text.push('\n');
        text.into_bytes()
    }
}

/// The manifest's new content: `old` unchanged when it already lists `created` and nothing else
/// is written (`others_due` false), so that its time stays that of the last real change;
/// otherwise `created` with the time now and `by`, the run's caller.
pub(crate) fn next(
    old: Option<&[u8]>,
    old_created: &[String],
    created: Vec<String>,
    others_due: bool,
    by: Option<&str>,
) -> Vec<u8> {
    match old {
        Some(bytes) if !others_due && old_created == created.as_slice() => bytes.to_vec(),
        _ => Manifest {
            created,
            written: Some(Written::now(by)),
        }
        .render(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_in_both_forms_and_keeps_its_time() {
        let old = Manifest::parse(b"[\"/etc/mdtune/mdtune.json\"]\n").unwrap();
        assert_eq!(old.created, ["/etc/mdtune/mdtune.json"]);
        assert_eq!(old.written, None);
        let new = Manifest {
            created: old.created.clone(),
            written: Some(Written {
                time: "2025-06-01T10:00:00Z".into(),
                unix: 1_748_772_000,
                version: "0.1.0".into(),
                by: Some("ansible mdtune (ansible 2.19.0), user alice via sudo".into()),
            }),
        };
        assert_eq!(Manifest::parse(&new.render()).unwrap(), new);
        assert!(Manifest::parse(b"{\"files\": 3}").is_err());
        assert!(Manifest::parse(b"not json").is_err());
    }

    #[test]
    fn the_manifest_is_rewritten_only_with_another_file_or_a_new_list() {
        let list = vec!["/etc/mdtune/mdtune.json".to_string()];
        let old = b"[\"/etc/mdtune/mdtune.json\"]\n".as_slice();
        assert_eq!(next(Some(old), &list, list.clone(), false, None), old);
        for (state_due, created) in [(true, list.clone()), (false, Vec::new())] {
            let by = Some("command line, user bob");
            let new =
                Manifest::parse(&next(Some(old), &list, created.clone(), state_due, by)).unwrap();
            assert_eq!(new.created, created);
            let w = new.written.expect("the time of the change");
            assert_eq!(w.version, stamp::VERSION);
            assert_eq!(w.by.as_deref(), by, "the caller that persisted it");
            assert!(w.unix >= 1_700_000_000 && w.time.ends_with('Z'), "{w:?}");
        }
    }
}
