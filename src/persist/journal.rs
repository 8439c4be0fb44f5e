//! What this boot's udev replays did, from the journal (`mdtune --show`): the trail's lines of
//! the current boot that udev's runs wrote (`journalctl -b 0 -t mdtune`). Replays that found
//! nothing to change write no line, so an empty list says none changed or failed. Only on the
//! host itself (root `/`) with `journalctl` installed; otherwise whether the persisted state was
//! replayed is unknown, and the answer says why. `journalctl` reads the journal's files itself
//! (no daemon to wait for), and at most the last 200 lines ([`ARGS`]); one that has not answered
//! within [`TIMEOUT`] (a journal on a hung disk) is killed, so that `--show` still answers.

use crate::sys::{self, Keep, NoAnswer, Root};
use serde_json::{Map, Value as Json};
use std::path::Path;
use std::time::Duration;

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
/// The most `journalctl` may print (200 lines of the trail are a few dozen KiB).
const MAX_OUTPUT: usize = 1 << 20;
/// How long `journalctl` may take before it is killed and the replays are unknown.
const TIMEOUT: Duration = Duration::from_secs(5);
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
        Some(journalctl) => ask(Path::new(journalctl), &ARGS, TIMEOUT).map(|out| replays(&out)),
    };
    let mut m = Map::new();
    match answer {
        Ok(lines) => m.insert("lines".into(), lines.into()),
        Err(why) => m.insert("unknown".into(), why.into()),
    };
    Json::Object(m)
}

/// What `program` with `args` printed (`crate::sys::run_bounded`), when it ended well within
/// `timeout`; else why not (it could not be started, failed, or was killed at `timeout`).
fn ask(program: &Path, args: &[&str], timeout: Duration) -> Result<String, String> {
    let name = program.display();
    let ended =
        sys::run_bounded(program, args, Keep::Stdout, timeout, MAX_OUTPUT).map_err(|e| {
            match e {
                NoAnswer::Start(e) => format!("cannot run {name}: {e}"),
                NoAnswer::Read(e) => format!("reading {name}'s output failed: {e}"),
                NoAnswer::Wait(e) => format!("cannot wait for {name}: {e}"),
                NoAnswer::TooLong => format!("{name} printed more than {MAX_OUTPUT} bytes"),
                // In ms: formatting a float would add its printer to the binary.
                NoAnswer::TimedOut => {
                    format!("{name} did not answer within {} ms", timeout.as_millis())
                }
            }
        })?;
    match ended.status.success() {
        true => Ok(String::from_utf8_lossy(&ended.output).into_owned()),
        false => Err(format!("{name} failed ({})", ended.status)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

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
    fn a_journal_that_does_not_answer_in_time_is_killed_and_said() {
        let quick = ask(Path::new("/bin/sh"), &["-c", "echo replay"], TIMEOUT);
        assert_eq!(quick.as_deref(), Ok("replay\n"));
        let started = Instant::now();
        let slow = ask(
            Path::new("/bin/sh"),
            &["-c", "exec sleep 30"],
            Duration::from_millis(200),
        );
        assert_eq!(
            slow.unwrap_err(),
            "/bin/sh did not answer within 200 ms",
            "a hung journalctl holds --show"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        // More than a pipe holds is read while it runs; more than MAX_OUTPUT is refused.
        let long = ask(
            Path::new("/bin/sh"),
            &["-c", "yes replay | head -c 300000"],
            TIMEOUT,
        );
        assert_eq!(long.map(|o| o.len()), Ok(300_000));
        let flood = ask(Path::new("/bin/sh"), &["-c", "exec yes replay"], TIMEOUT).unwrap_err();
        assert_eq!(
            flood,
            format!("/bin/sh printed more than {MAX_OUTPUT} bytes")
        );
        let failed = ask(Path::new("/bin/sh"), &["-c", "exit 3"], TIMEOUT).unwrap_err();
        assert!(
            failed.contains("failed") && failed.contains('3'),
            "{failed}"
        );
    }

    #[test]
    fn another_root_has_no_journal_of_its_own() {
        let dir = std::env::temp_dir();
        let b = this_boot(&Root::new(&dir).unwrap());
        assert!(b["lines"].is_null(), "{b}");
        assert!(b["unknown"].as_str().unwrap().contains("not /"), "{b}");
    }
}
