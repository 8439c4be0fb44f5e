//! Whether the next boot replays the persisted state (docs/reference.md §3, §6): the one answer
//! that `{"state": "query"}`, `--verify`, `--show` and `--metrics` give. It reads the rule as
//! udevd reads it (`super::udev_rules`): one active line must match every md array's disk on
//! `add` and `change` and run `<binary> --udev %k`; the rule file itself must not be a link (a
//! link to `/dev/null` is how udev masks a rule); the binary must be a regular, executable file;
//! and the rule, the binary, the persisted state and the manifest must be root's alone
//! (`super::trust`). Read only; every reason it gives names the file and how to fix it.

use super::error::display;
use super::rule::{udev_rule, RULE_FILE};
use super::state::{MANIFEST_FILE, PACKAGED_BINARY, STATE_FILE};
use super::trust::{distrust, read_trusted, refusal};
use super::udev_rules::{active_lines, matches, tokens, Op, Token};
use crate::sys::{self, Root};

/// What puts a broken persistence right.
pub(crate) const FIX: &str = "run mdtune with persist: true again";

/// The rule that replays the persisted state, as udevd would read it at the next boot.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// The rule's path on the target system.
    pub(crate) file: String,
    pub(crate) installed: bool,
    /// The binary the rule's replaying line runs.
    pub(crate) runs: Option<String>,
    /// That binary is a regular file under the root.
    pub(crate) binary_present: bool,
    /// The rule is exactly what `persist` writes for that binary.
    pub(crate) as_written: bool,
    /// Why the next boot would not replay the persisted state; empty when it would.
    pub(crate) problems: Vec<String>,
}

impl Replay {
    /// True if and only if the next boot replays the persisted state.
    pub(crate) fn in_force(&self) -> bool {
        self.installed && self.problems.is_empty()
    }
}

/// Reads the rule, the binary it runs, and the persisted files under `root`.
pub(crate) fn replay(root: &Root) -> Replay {
    let path = root.udev_rule(RULE_FILE);
    let file = display(root, &path);
    let mut r = Replay {
        file: file.clone(),
        ..Replay::default()
    };
    match sys::read_file_owned(root, &path) {
        Ok(None) => r.problems.push(format!("the udev rule {file} is missing")),
        Err(_) if root.is_link(&path) => r.problems.push(format!(
            "the udev rule {file} is a link, which udevd does not run as mdtune's rule (a link \
             to /dev/null masks it)"
        )),
        Err(e) => r
            .problems
            .push(format!("the udev rule {file} cannot be read: {e}")),
        Ok(Some((bytes, owner))) => {
            r.installed = true;
            if let Some(why) = distrust(&owner) {
                r.problems
                    .push(refusal(root, &path, &owner, why).to_string());
            }
            let text = String::from_utf8_lossy(&bytes);
            match replaying_line(&text) {
                Ok(binary) => {
                    let ours = [
                        format!("/{PACKAGED_BINARY}"),
                        display(root, &root.installed_binary()),
                    ];
                    if !ours.contains(&binary) {
                        r.problems.push(format!(
                            "the udev rule {file} runs {binary}, not an mdtune that persist \
                             installs ({})",
                            ours.join(" or ")
                        ));
                    }
                    r.as_written = text == udev_rule(&binary);
                    r.binary_present = binary_problem(root, &binary, &mut r.problems);
                    r.runs = Some(binary);
                }
                Err(why) => r.problems.push(format!("the udev rule {file} {why}")),
            }
        }
    }
    for name in [STATE_FILE, MANIFEST_FILE] {
        let path = root.etc().join(name);
        match read_trusted(root, &path) {
            Ok(Some(_)) => {}
            Ok(None) if name == STATE_FILE => r.problems.push(format!(
                "nothing is persisted for the rule to replay: {} is missing",
                display(root, &path)
            )),
            Ok(None) => {}
            Err(e) => r.problems.push(e.to_string()),
        }
    }
    r
}

/// Says in `problems` what is wrong with the binary the rule runs; true when it is a regular
/// file.
fn binary_problem(root: &Root, binary: &str, problems: &mut Vec<String>) -> bool {
    let path = root.base().join(binary.trim_start_matches('/'));
    let owner = match root.owner(&path) {
        Ok(o) => o,
        Err(e) => {
            problems.push(format!(
                "the binary the rule runs, {binary}, is missing ({e})"
            ));
            return false;
        }
    };
    if !owner.regular {
        problems.push(format!(
            "the binary the rule runs, {binary}, is not a regular file"
        ));
        return false;
    }
    if owner.mode & 0o111 == 0 {
        problems.push(format!(
            "the binary the rule runs, {binary}, is not executable (mode {:04o})",
            owner.mode
        ));
    }
    if let Some(why) = distrust(&owner) {
        problems.push(refusal(root, &path, &owner, why).to_string());
    }
    true
}

/// The binary that the first active line replaying the persisted state runs, or why no line
/// does.
pub(crate) fn replaying_line(text: &str) -> Result<String, String> {
    let mut why = None;
    for line in active_lines(text) {
        let Ok(tokens) = tokens(&line) else { continue };
        let Some(binary) = tokens.iter().find_map(runs) else {
            continue;
        };
        match tokens.iter().find_map(unmet) {
            None => return Ok(binary),
            Some(u) => why = why.or(Some(format!("runs {binary} --udev %k only {u}"))),
        }
    }
    Err(why.unwrap_or_else(|| {
        "has no active line that runs mdtune --udev %k (commented out, emptied or pointed \
         elsewhere)"
            .into()
    }))
}

/// The binary a `RUN` assignment runs as `<binary> --udev %k`.
fn runs(t: &Token) -> Option<String> {
    if t.key != "RUN" || t.op != Op::Assign || t.attr.as_deref().is_some_and(|a| a != "program") {
        return None;
    }
    let words: Vec<&str> = t.value.split_whitespace().collect();
    match words.as_slice() {
        [binary, "--udev", "%k" | "$kernel"] if binary.starts_with('/') => Some(binary.to_string()),
        _ => None,
    }
}

/// Why a condition of the line does not hold for every md array's disk on `add` and `change`,
/// `None` when it does (an assignment is no condition).
fn unmet(t: &Token) -> Option<String> {
    let samples: &[&str] = match (t.key.as_str(), t.attr.as_deref()) {
        (_, _) if t.op == Op::Assign => return None,
        ("ACTION", None) => &["add", "change"],
        ("SUBSYSTEM" | "SUBSYSTEMS", None) => &["block"],
        ("KERNEL" | "KERNELS", None) => &["md0", "md127", "md_data"],
        ("ENV", Some("DEVTYPE")) => &["disk"],
        ("TEST", _) if t.value == "md/level" => &["md/level"],
        _ => {
            return Some(format!(
                "where {} holds, which mdtune cannot tell of every md array",
                shown(t)
            ))
        }
    };
    let want = t.op == Op::Match;
    (!samples.iter().all(|s| matches(&t.value, s) == want))
        .then(|| format!("where {} (md arrays: {})", shown(t), samples.join(", ")))
}

fn shown(t: &Token) -> String {
    let attr = t
        .attr
        .as_ref()
        .map(|a| format!("{{{a}}}"))
        .unwrap_or_default();
    let op = if t.op == Op::Match { "==" } else { "!=" };
    format!("{}{attr}{op}\"{}\"", t.key, t.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_line_that_matches_md_disks_on_add_and_change_and_runs_mdtune_replays() {
        let rule = udev_rule("/usr/sbin/mdtune");
        assert_eq!(replaying_line(&rule).as_deref(), Ok("/usr/sbin/mdtune"));
        let line = rule.lines().find(|l| l.starts_with("SUBSYSTEM")).unwrap();
        for (edit, said) in [
            (format!("# {line}"), "no active line"),
            (line.replace("add|change", "remove"), "ACTION==\"remove\""),
            (line.replace("add|change", "change"), "ACTION==\"change\""),
            (line.replace("md*", "sd*"), "KERNEL==\"sd*\""),
            (line.replace("md*", "md0"), "KERNEL==\"md0\""),
            (line.replace("\"block\"", "\"net\""), "SUBSYSTEM==\"net\""),
            (line.replace("--udev %k", "--show"), "no active line"),
            (
                format!("{line}, ATTR{{md/level}}==\"raid5\""),
                "ATTR{md/level}",
            ),
        ] {
            let got = replaying_line(&edit).unwrap_err();
            assert!(got.contains(said), "{edit}: {got}");
        }
        let continued = line.replacen(", KERNEL", ", \\\n   KERNEL", 1);
        assert_eq!(
            replaying_line(&continued).as_deref(),
            Ok("/usr/sbin/mdtune")
        );
    }
}
