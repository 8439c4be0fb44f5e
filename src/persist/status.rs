//! Whether the desired state is persisted and in force after a reboot, as `mdtune --show` and
//! `--metrics` report it: the persisted input and when and by which version it was written (the
//! manifest), the udev rule (installed, which binary it runs, whether that binary is there,
//! whether the rule is the one `persist` writes), and the originals saved before the first
//! change. Read only; a file that cannot be read is said in `problems`, never a failure. Built
//! as the JSON `--show` renders, field by field (no serializer of its own).

use super::originals::Originals;
use super::rule::{udev_rule, RULE_FILE};
use super::state::{display, read_opt, written, STATE_FILE};
use crate::sys::Root;
use serde_json::{Map, Value as Json};

/// Reads the persistence status of the host under `root`: `persisted`, `state_file`,
/// `written` (RFC 3339), `written_unix`, `version` (null when the manifest does not say),
/// `rule` ([`rule`]), `originals` (the values a revert puts back, by array (its kernel name, or
/// its uuid when the name was not saved) or `system`), and `problems`.
pub(crate) fn status(root: &Root) -> Json {
    let mut m = Map::new();
    let mut problems: Vec<Json> = Vec::new();
    let state = root.etc().join(STATE_FILE);
    m.insert("state_file".into(), display(root, &state).into());
    let persisted = match read_opt(root, &state) {
        Ok(s) => s.is_some(),
        Err(e) => {
            problems.push(e.to_string().into());
            false
        }
    };
    m.insert("persisted".into(), persisted.into());
    let w = written(root).unwrap_or_else(|e| {
        problems.push(e.to_string().into());
        None
    });
    m.insert("written".into(), w.as_ref().map(|w| w.time.clone()).into());
    m.insert("written_unix".into(), w.as_ref().map(|w| w.unix).into());
    m.insert("version".into(), w.map(|w| w.version).into());
    m.insert("rule".into(), rule(root, &mut problems));
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

/// The udev rule that replays the persisted state: `file`, `installed`, `runs` (the binary it
/// runs), `binary_present` (that binary is a file under the root) and `as_written` (the rule
/// is exactly what `persist` writes for that binary, not edited by hand).
fn rule(root: &Root, problems: &mut Vec<Json>) -> Json {
    let path = root.udev_rule(RULE_FILE);
    let mut r = Map::new();
    r.insert("file".into(), display(root, &path).into());
    let text = match read_opt(root, &path) {
        Ok(b) => b.map(|b| String::from_utf8_lossy(&b).into_owned()),
        Err(e) => {
            problems.push(e.to_string().into());
            None
        }
    };
    let runs = text.as_deref().and_then(runs);
    let present = runs
        .as_ref()
        .is_some_and(|b| root.is_file(&root.base().join(b.trim_start_matches('/'))));
    let as_written = matches!((&text, &runs), (Some(t), Some(b)) if *t == udev_rule(b));
    r.insert("installed".into(), text.is_some().into());
    r.insert("runs".into(), runs.into());
    r.insert("binary_present".into(), present.into());
    r.insert("as_written".into(), as_written.into());
    Json::Object(r)
}

/// The binary a rule runs: what stands before ` --udev %k` in its `RUN+="..."`.
fn runs(rule: &str) -> Option<String> {
    let run = rule.split("RUN+=\"").nth(1)?;
    let command = run.split('"').next()?;
    Some(command.strip_suffix(" --udev %k")?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_names_the_binary_it_runs() {
        assert_eq!(
            runs(&udev_rule("/usr/sbin/mdtune")).as_deref(),
            Some("/usr/sbin/mdtune")
        );
        assert_eq!(runs("RUN+=\"/bin/true\""), None);
        assert_eq!(runs("# nothing"), None);
    }
}
