//! Whether the desired state is persisted and in force after a reboot, as `mdtune --show` and
//! `--metrics` report it: the persisted input and when and by which version it was written (the
//! manifest), the udev rule (installed, which binary it runs, whether that binary is there,
//! whether the rule is the one `persist` writes), and the originals saved before the first
//! change. Read only; a file that cannot be read is said in `problems`, never a failure.

use super::manifest::Written;
use super::originals::Originals;
use super::rule::{udev_rule, RULE_FILE};
use super::state::{display, read_opt, written, STATE_FILE};
use crate::md::Value;
use crate::sys::Root;
use serde::Serialize;
use std::collections::BTreeMap;

/// The persistence status of a host.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Status {
    /// The persisted input exists.
    pub persisted: bool,
    /// `/etc/mdtune/mdtune.json`.
    pub state_file: String,
    /// When and by which version it was written, if the manifest says.
    pub written: Option<String>,
    pub written_unix: Option<u64>,
    pub version: Option<String>,
    pub rule: Rule,
    /// The originals a revert puts back, by array (kernel name, or uuid when the name was not
    /// saved) or `system`.
    pub originals: BTreeMap<String, BTreeMap<String, Value>>,
    /// What could not be read, and why.
    pub problems: Vec<String>,
}

/// The udev rule that replays the persisted state.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Rule {
    /// `/etc/udev/rules.d/90-mdtune.rules`.
    pub file: String,
    pub installed: bool,
    /// The binary the rule runs (`/usr/sbin/mdtune`, `/usr/local/sbin/mdtune`).
    pub runs: Option<String>,
    /// That binary is an executable file under the root.
    pub binary_present: bool,
    /// The rule is exactly what `persist` writes for that binary (not edited by hand).
    pub as_written: bool,
}

/// Reads the persistence status of the host under `root`.
pub(crate) fn status(root: &Root) -> Status {
    let mut st = Status::default();
    let state = root.etc().join(STATE_FILE);
    st.state_file = display(root, &state);
    match read_opt(root, &state) {
        Ok(s) => st.persisted = s.is_some(),
        Err(e) => st.problems.push(e.to_string()),
    }
    match written(root) {
        Ok(Some(Written {
            time,
            unix,
            version,
        })) => (st.written, st.written_unix, st.version) = (Some(time), Some(unix), Some(version)),
        Ok(None) => {}
        Err(e) => st.problems.push(e.to_string()),
    }
    st.rule = rule(root, &mut st.problems);
    match Originals::load(root) {
        Ok(o) => {
            for (key, saved) in o.saved() {
                let name = saved.array.clone().unwrap_or_else(|| key.clone());
                st.originals
                    .entry(name)
                    .or_default()
                    .extend(saved.values.iter().map(|(k, v)| (k.clone(), *v)));
            }
        }
        Err(e) => st.problems.push(e.to_string()),
    }
    st
}

/// The udev rule's status.
fn rule(root: &Root, problems: &mut Vec<String>) -> Rule {
    let path = root.udev_rule(RULE_FILE);
    let mut r = Rule {
        file: display(root, &path),
        ..Rule::default()
    };
    let text = match read_opt(root, &path) {
        Ok(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(None) => return r,
        Err(e) => {
            problems.push(e.to_string());
            return r;
        }
    };
    r.installed = true;
    r.runs = runs(&text);
    if let Some(binary) = &r.runs {
        r.as_written = text == udev_rule(binary);
        r.binary_present = root.base().join(binary.trim_start_matches('/')).is_file();
    }
    r
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
