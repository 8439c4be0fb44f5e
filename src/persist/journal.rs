//! What this boot's udev replays did, from the journal (`mdtune --show`): the trail's lines of
//! the current boot that udev's runs wrote (`journalctl -b 0 -t mdtune`). Replays that found
//! nothing to change write no line, so an empty list says none changed or failed. Only on the
//! host itself (root `/`) with `journalctl` installed; otherwise whether the persisted state was
//! replayed is unknown, and the answer says why. `journalctl` reads the journal's files itself
//! (no daemon to wait for), and at most the last 200 lines ([`ARGS`]).

use crate::sys::Root;
use serde_json::{Map, Value as Json};
use std::path::Path;
use std::process::{Command, Stdio};

/// Where `journalctl` is looked for.
const JOURNALCTL: [&str; 2] = ["/usr/bin/journalctl", "/bin/journalctl"];
/// What `journalctl` is asked: the trail's lines of this boot (at most the latest 200), with
/// their times.
const ARGS: [&str; 10] = [
    "-b",
    "0",
    "-t",
    "mdtune",
    "-n",
    "200",
    "-o",
    "short-iso",
    "--no-pager",
    "-q",
];
/// At most this many of the boot's replay lines are shown, the latest.
const MAX_LINES: usize = 20;
/// What the trail's line of a udev run starts with (`crate::trail::Caller::udev`).
const UDEV_CALLER: &str = ": udev --udev ";

/// Asks the journal what this boot's replays did: `lines` (the replays' lines, oldest first),
/// or `unknown` (why they are unknown).
pub(crate) fn this_boot(root: &Root) -> Json {
    let found = JOURNALCTL.into_iter().find(|p| Path::new(p).exists());
    let answer = match found {
        _ if root.base() != Path::new("/") => Err(format!(
            "the root is {}, not /: the journal is the running host's",
            root.base().display()
        )),
        None => Err("journalctl is not installed".into()),
        Some(journalctl) => Command::new(journalctl)
            .args(ARGS)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {journalctl}: {e}"))
            .and_then(|out| match out.status.success() {
                true => Ok(replays(&String::from_utf8_lossy(&out.stdout))),
                false => Err(format!("{journalctl} failed ({})", out.status)),
            }),
    };
    let mut m = Map::new();
    match answer {
        Ok(lines) => m.insert("lines".into(), lines.into()),
        Err(why) => m.insert("unknown".into(), why.into()),
    };
    Json::Object(m)
}

/// The trail's lines of udev runs in `journalctl`'s output, the latest [`MAX_LINES`].
fn replays(output: &str) -> Vec<String> {
    let lines: Vec<String> = output
        .lines()
        .filter(|l| l.contains(UDEV_CALLER))
        .map(String::from)
        .collect();
    lines[lines.len().saturating_sub(MAX_LINES)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_replays_lines_count_and_the_latest_are_kept() {
        let out = "2025-06-01T10:00:00+0000 h mdtune[7]: udev --udev md0, uid 0: changed md0: \
                   group_thread_cnt 0 -> 8\n\
                   2025-06-01T10:05:00+0000 h mdtune[9]: ansible mdtune, user root: changed x\n";
        let r = replays(out);
        assert_eq!(r.len(), 1);
        assert!(r[0].ends_with("group_thread_cnt 0 -> 8"), "{r:?}");
        let many: String = (0..30)
            .map(|i| format!("t h mdtune[{i}]: udev --udev md{i}, uid 0: changed\n"))
            .collect();
        let r = replays(&many);
        assert_eq!(r.len(), MAX_LINES);
        assert!(r[MAX_LINES - 1].contains("md29"));
    }

    #[test]
    fn another_root_has_no_journal_of_its_own() {
        let dir = std::env::temp_dir();
        let b = this_boot(&Root::new(&dir).unwrap());
        assert!(b["lines"].is_null(), "{b}");
        assert!(b["unknown"].as_str().unwrap().contains("not /"), "{b}");
    }
}
