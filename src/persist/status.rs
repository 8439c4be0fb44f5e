//! Whether the desired state is persisted and in force after a reboot, as `mdtune --show` and
//! `--metrics` report it: the persisted input and when and by which version it was written (the
//! manifest), the udev rule (installed, which binary it runs, whether that binary is there,
//! whether the rule is the one `persist` writes), and the originals saved before the first
//! change. Read only; a file that cannot be read is said in `problems`, never a failure. Built
//! as the JSON `--show` renders, field by field (no serializer of its own).

use super::error::display;
use super::originals::Originals;
use super::replay::replay;
use super::state::{read_opt, written, STATE_FILE};
use crate::sys::Root;
use serde_json::{Map, Value as Json};

/// Reads the persistence status of the host under `root`: `persisted`, `state_file`,
/// `written` (RFC 3339), `written_unix`, `by` (the caller that wrote it), `version` (null when
/// the manifest does not say),
/// `reason` (the persisted input's top-level one), `rule` ([`rule`]), `originals` (the values a revert puts back, by array (its kernel name, or
/// its uuid when the name was not saved) or `system`), and `problems`.
pub(crate) fn status(root: &Root) -> Json {
    let mut m = Map::new();
    let mut problems: Vec<Json> = Vec::new();
    let state = root.etc().join(STATE_FILE);
    m.insert("state_file".into(), display(root, &state).into());
    let persisted = match read_opt(root, &state) {
        Ok(s) => s,
        Err(e) => {
            problems.push(e.to_string().into());
            None
        }
    };
    // The input's top-level `reason`: why the values no entry's own reason covers.
    let reason = persisted
        .as_deref()
        .and_then(|b| serde_json::from_slice::<Json>(b).ok())
        .and_then(|j| j.get("reason").filter(|r| r.is_string()).cloned());
    m.insert("persisted".into(), persisted.is_some().into());
    m.insert("reason".into(), reason.unwrap_or(Json::Null));
    let w = written(root).unwrap_or_else(|e| {
        problems.push(e.to_string().into());
        None
    });
    m.insert("written".into(), w.as_ref().map(|w| w.time.clone()).into());
    m.insert("written_unix".into(), w.as_ref().map(|w| w.unix).into());
    m.insert("by".into(), w.as_ref().and_then(|w| w.by.clone()).into());
    m.insert("version".into(), w.map(|w| w.version).into());
    m.insert("rule".into(), rule(root));
    let mut originals = Map::new();
    match Originals::load(root) {
        Ok(o) => {
            for (key, saved) in o.saved() {
                let name = saved.array.clone().unwrap_or_else(|| key.clone());
                let entry = originals
                    .entry(name)
                    .or_insert_with(|| Json::Object(Map::new()));
                for (k, v) in &saved.values {
                    entry[k.as_str()] = v.to_json();
                }
            }
        }
        Err(e) => problems.push(e.to_string().into()),
    }
    m.insert("originals".into(), Json::Object(originals));
    m.insert("problems".into(), Json::Array(problems));
    Json::Object(m)
}

/// The udev rule that replays the persisted state (`super::replay`): `file`, `installed`,
/// `runs` (the binary its replaying line runs), `binary_present` (that binary is a file under
/// the root), `as_written` (the rule is exactly what `persist` writes for that binary, not
/// edited by hand), `in_force` (the next boot replays the persisted state) and `not_in_force`
/// (why not, each with its fix).
fn rule(root: &Root) -> Json {
    let r = replay(root);
    let mut m = Map::new();
    m.insert("file".into(), r.file.clone().into());
    m.insert("installed".into(), r.installed.into());
    m.insert("runs".into(), r.runs.clone().into());
    m.insert("binary_present".into(), r.binary_present.into());
    m.insert("as_written".into(), r.as_written.into());
    m.insert("in_force".into(), r.in_force().into());
    m.insert("not_in_force".into(), r.problems.into());
    Json::Object(m)
}
