//! The udev rule `persist` installs, and telling udevd that it changed.
//!
//! The rule runs `mdtune --udev %k` on md `change` events, which md sends when an array starts
//! running, and on `add` events, which is all the real root's coldplug (`udevadm trigger
//! --action=add`) sends for an array the initramfs assembled before `/etc` was there. A brand-new
//! array's own `add` comes while it is inactive, when `--udev` does nothing. udevd re-reads its
//! rules by itself only when it checks their timestamps, at most every 3 s and at its next event,
//! so an array assembled right after `persist` could miss a new rule: after installing, changing or
//! removing it, mdtune runs `udevadm control --reload` on the host itself (root `/`, udevd
//! running), and with any other root reports what it would run.

use crate::sys::{self, Keep, NoAnswer, Root};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// The udev rule, under `etc/udev/rules.d/`.
pub(crate) const RULE_FILE: &str = "90-mdtune.rules";
/// What tells udevd to re-read its rules. udevd checks rule timestamps at most every 3 s, at its
/// next event, so an array assembled right after `persist` could otherwise miss the new rule.
pub(crate) const RELOAD_COMMAND: &str = "udevadm control --reload";
/// udevd's control socket: it exists while udevd runs.
const UDEV_CONTROL: &str = "/run/udev/control";
/// How long `udevadm control --reload` may take before it is killed: it waits for udevd's
/// answer, and a udevd that is hung or stopped would otherwise hold the run.
const RELOAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of what `udevadm` says on stderr that is kept: a pipe's worth (64 KiB), as much as
/// it could write before it would wait for a reader. Its complaint is a line.
const MAX_STDERR: usize = 64 * 1024;

/// The udev rule that runs `binary` (an absolute path on the target system): md devices only, on
/// `change` (an array starts running) and `add` (coldplug of an array the initramfs assembled;
/// a fresh array's own `add` finds it inactive). mdtune reads before it writes, so the repeated
/// events from mdadm's `watch` option cost reads only.
pub(crate) fn udev_rule(binary: &str) -> String {
    format!(
        "\
# Installed by mdtune (persist: true); removed by state: reverted.
# Re-applies the desired state saved in /etc/mdtune/mdtune.json to an md array whenever it
# changes (assembly, re-assembly, reshape) and at boot's coldplug (add), which is the only event
# the real root sees for an array the initramfs assembled. mdtune compares before it writes, so
# the repeated change events caused by mdadm's udev watch option cost reads only, never a write.
SUBSYSTEM==\"block\", ACTION==\"add|change\", KERNEL==\"md*\", ENV{{DEVTYPE}}==\"disk\", TEST==\"md/level\", RUN+=\"{binary} --udev %k\"
"
    )
}

/// Tells udevd that the rule changed ([`RELOAD_COMMAND`]), when that makes sense: a real run
/// (`run`), on the host itself (root `/`), with udevd running. Otherwise says what would be run
/// and why it was not. Besides `journalctl` (`super::journal`, for `--show`), this is the only
/// program mdtune starts.
pub(crate) fn reload_udev(root: &Root, run: bool) -> Reload {
    let not_run = |why: String| Reload {
        command: RELOAD_COMMAND,
        ran: false,
        result: format!("not run: {why}"),
    };
    if !run {
        return not_run("check mode".into());
    }
    if root.base() != Path::new("/") {
        return not_run(format!(
            "the root is {}, not /; run it on the host that boots from this root",
            root.base().display()
        ));
    }
    if !Path::new(UDEV_CONTROL).exists() {
        return not_run(format!("udevd is not running ({UDEV_CONTROL} is missing)"));
    }
    let Some(udevadm) = [
        "/usr/bin/udevadm",
        "/bin/udevadm",
        "/sbin/udevadm",
        "/usr/sbin/udevadm",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists()) else {
        return not_run("udevadm is not installed".into());
    };
    let result = ask(udevadm, &["control", "--reload"], RELOAD_TIMEOUT);
    Reload {
        command: RELOAD_COMMAND,
        ran: true,
        result,
    }
}

/// Runs `program` with `args` (`crate::sys::run_bounded`) and says how it ended: `reloaded`,
/// `failed (STATUS): STDERR`, or `failed: ...` when it could not be started or had not ended
/// within `timeout`, when it is killed.
fn ask(program: &str, args: &[&str], timeout: Duration) -> String {
    let ended = match sys::run_bounded(Path::new(program), args, Keep::Stderr, timeout, MAX_STDERR)
    {
        Ok(ended) => ended,
        Err(NoAnswer::Start(e)) => return format!("failed: cannot run {program}: {e}"),
        Err(NoAnswer::Wait(e)) => return format!("failed: cannot wait for {program}: {e}"),
        Err(NoAnswer::Read(e)) => return format!("failed: cannot read {program}'s errors: {e}"),
        Err(NoAnswer::TooLong) => {
            return format!("failed: {program} printed more than {MAX_STDERR} bytes; killed")
        }
        Err(NoAnswer::TimedOut) => {
            // In ms: formatting a float would add its printer to the binary.
            let ms = timeout.as_millis();
            return format!("failed: {program} did not answer within {ms} ms; killed");
        }
    };
    if ended.status.success() {
        return "reloaded".to_string();
    }
    format!(
        "failed ({}): {}",
        ended.status,
        String::from_utf8_lossy(&ended.output).trim()
    )
}

/// Telling udevd that its rules changed.
#[derive(Clone, Debug, Serialize)]
pub struct Reload {
    /// The command (`udevadm control --reload`).
    pub(crate) command: &'static str,
    /// Whether it was run: only on the host itself (root `/`) with udevd running.
    pub(crate) ran: bool,
    /// `reloaded`, `failed (...): ...`, or `not run: <why>`.
    pub(crate) result: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn the_rule_runs_the_binary_it_is_given() {
        let rule = udev_rule("/usr/sbin/mdtune");
        assert!(
            rule.contains("RUN+=\"/usr/sbin/mdtune --udev %k\""),
            "{rule}"
        );
        assert!(rule.contains("ENV{DEVTYPE}==\"disk\""), "{rule}");
    }

    #[test]
    fn a_reload_that_does_not_answer_in_time_is_killed_and_said() {
        assert_eq!(
            ask("/bin/sh", &["-c", "exit 0"], RELOAD_TIMEOUT),
            "reloaded"
        );
        let started = Instant::now();
        let slow = ask(
            "/bin/sh",
            &["-c", "exec sleep 30"],
            Duration::from_millis(200),
        );
        assert_eq!(slow, "failed: /bin/sh did not answer within 200 ms; killed");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a hung udevadm holds the run"
        );
        let failed = ask(
            "/bin/sh",
            &["-c", "echo no udevd >&2; exit 3"],
            RELOAD_TIMEOUT,
        );
        assert_eq!(failed, "failed (exit status: 3): no udevd");
        let missing = ask("/nonexistent/udevadm", &[], RELOAD_TIMEOUT);
        assert!(
            missing.starts_with("failed: cannot run /nonexistent/udevadm: "),
            "{missing}"
        );
    }
}
