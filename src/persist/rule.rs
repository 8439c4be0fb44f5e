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

use crate::sys::Root;
use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};

/// The udev rule, under `etc/udev/rules.d/`.
pub(crate) const RULE_FILE: &str = "90-mdtune.rules";
/// What tells udevd to re-read its rules. udevd checks rule timestamps at most every 3 s, at its
/// next event, so an array assembled right after `persist` could otherwise miss the new rule.
pub(crate) const RELOAD_COMMAND: &str = "udevadm control --reload";
/// udevd's control socket: it exists while udevd runs.
const UDEV_CONTROL: &str = "/run/udev/control";

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
/// and why it was not. This is the only program mdtune ever starts.
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
    let result = match Command::new(udevadm)
        .args(["control", "--reload"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => "reloaded".to_string(),
        Ok(out) => format!(
            "failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => format!("failed: cannot run {udevadm}: {e}"),
    };
    Reload {
        command: RELOAD_COMMAND,
        ran: true,
        result,
    }
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

    #[test]
    fn the_rule_runs_the_binary_it_is_given() {
        let rule = udev_rule("/usr/sbin/mdtune");
        assert!(
            rule.contains("RUN+=\"/usr/sbin/mdtune --udev %k\""),
            "{rule}"
        );
        assert!(rule.contains("ENV{DEVTYPE}==\"disk\""), "{rule}");
    }
}
