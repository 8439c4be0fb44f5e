//! What this boot's udev replays did, from the journal (`mdtune --show`): the trail's lines of
//! the current boot that udev's runs wrote (`journalctl -b 0 -t mdtune`). Replays that found
//! nothing to change write no line, so an empty list says none changed or failed. Only on the
//! host itself (root `/`) with `journalctl` installed, and within a few seconds; otherwise
//! whether the persisted state was replayed is unknown, and the answer says why.

use crate::sys::Root;
use serde::Serialize;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where `journalctl` is looked for.
const JOURNALCTL: [&str; 2] = ["/usr/bin/journalctl", "/bin/journalctl"];
/// How long `--show` waits for it.
const WAIT: Duration = Duration::from_secs(5);
/// At most this many of the boot's lines are shown, the latest.
const MAX_LINES: usize = 20;
/// What the trail's line of a udev run starts with (`crate::trail::Caller::udev`).
const UDEV_CALLER: &str = ": udev --udev ";

/// This boot's replays, as the journal tells them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Boot {
    /// The command that was asked, when it was.
    pub command: Option<String>,
    /// The replays' lines, oldest first; `None` when they are unknown.
    pub lines: Option<Vec<String>>,
    /// Why they are unknown.
    pub unknown: Option<String>,
}

/// Asks the journal what this boot's replays did.
pub(crate) fn this_boot(root: &Root) -> Boot {
    let unknown = |why: String| Boot {
        unknown: Some(why),
        ..Boot::default()
    };
    if root.base() != Path::new("/") {
        return unknown(format!(
            "the root is {}, not /: the journal is the running host's",
            root.base().display()
        ));
    }
    let Some(journalctl) = JOURNALCTL.into_iter().find(|p| Path::new(p).exists()) else {
        return unknown("journalctl is not installed".into());
    };
    let args = [
        "-b",
        "0",
        "-t",
        "mdtune",
        "-o",
        "short-iso",
        "--no-pager",
        "-q",
    ];
    let command = format!("journalctl {}", args.join(" "));
    match run(journalctl, &args) {
        Ok(out) => Boot {
            command: Some(command),
            lines: Some(replays(&out)),
            unknown: None,
        },
        Err(why) => Boot {
            command: Some(command),
            ..unknown(why)
        },
    }
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

/// Runs `program` and returns its output, or why not, within [`WAIT`].
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no output")?;
    // Read beside the wait, so that a full pipe never holds the child.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < WAIT => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not answer within {} s",
                    WAIT.as_secs()
                ));
            }
        }
    };
    let text = reader.join().unwrap_or_default();
    if status.success() {
        Ok(text)
    } else {
        Err(format!("{program} failed ({status})"))
    }
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
        assert!(b.lines.is_none() && b.command.is_none(), "{b:?}");
        assert!(b.unknown.unwrap().contains("not /"));
    }
}
