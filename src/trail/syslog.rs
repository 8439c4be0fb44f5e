//! The system log, as mdtune reaches it: the `dev/log` datagram socket (journald's or
//! rsyslog's), else `dev/kmsg`. Best effort, and never waited for: a log that cannot take the
//! line must neither fail the run nor hold it, since the line is sent after the values are
//! written and before the answer is printed. Both are confined to the root: `dev/` is opened
//! beneath it, `dev/log` must be a socket in it (pinned: the socket checked is the one sent to),
//! and `dev/kmsg` is opened without blocking or following a link, never created, and written only
//! when it is a character device: udev kills a worker that hangs (docs/reference.md §1).
//!
//! The socket is sent to without blocking: a logger that is stopped or hung (its queue full)
//! answers `EAGAIN` at once, and one that is gone `ECONNREFUSED`. Either way the line then goes
//! to `dev/kmsg`, whose writes never wait (journald and rsyslog's `imklog` read it, so the line
//! still reaches the journal once its reader catches up), and one line on stderr says that the
//! system log did not take it and where the line went, or that it is dropped. A root without a
//! socket at `dev/log` has no system log to miss: the line goes to `dev/kmsg` as before, quietly.

use crate::sys::{Dir, Root};
use std::io::{self, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// The tag every line carries (`journalctl -t mdtune`).
pub const TAG: &str = "mdtune";

/// Sends `msg` with `priority` (facility and severity, as syslog numbers them) to the log of the
/// host under `root`.
pub(crate) fn log(root: &Path, priority: u8, msg: &str) {
    // An unusable root has no log of its own to write to.
    let Ok(root) = Root::new(root) else { return };
    let base = root.base();
    let Ok(Some(dev)) = root.dir_beneath(&base.join("dev")) else {
        return;
    };
    let refused = match send(
        &root,
        &dev,
        &format!("<{priority}>{TAG}[{}]: {msg}", std::process::id()),
    ) {
        Sent::Taken => return,
        Sent::NoSocket => None,
        Sent::Refused(e) => Some(e),
    };
    let kmsg = to_kmsg(&dev, &format!("<{priority}>{TAG}: {msg}\n"));
    if let Some(e) = refused {
        let shown =
            |p: &str| crate::view::escaped(&base.join(p).display().to_string()).into_owned();
        let went = if kmsg {
            format!("it went to the kernel log at {} instead", shown("dev/kmsg"))
        } else {
            "the line is dropped".to_string()
        };
        eprintln!(
            "{TAG}: the system log at {} did not take the trail line ({e}); {went}",
            shown("dev/log")
        );
    }
}

/// What became of a line sent to `dev/log`.
enum Sent {
    Taken,
    /// Nothing there is a socket: the root has no system log.
    NoSocket,
    /// The socket did not take it: its reader is stopped or hung (`EAGAIN`), or gone.
    Refused(io::Error),
}

/// Sends `line` to the socket at `dev/log` without waiting (`crate::sys::Dir::send_datagram`:
/// the socket checked is the socket sent to). Where `dev/log` is a link, as systemd makes it
/// (`/dev/log -> /run/systemd/journal/dev-log`), the socket it names is looked for under the
/// root (an absolute target taken as from the root, a relative one from `dev/`), its directory
/// opened beneath the root, the socket itself not followed: one link, never out of the root.
fn send(root: &Root, dev: &Dir, line: &str) -> Sent {
    let sent = match dev.send_datagram("log", line.as_bytes()) {
        Ok(false) => match dev.read_link("log") {
            Ok(target) => {
                let at = match target.strip_prefix("/") {
                    Ok(rel) => root.base().join(rel),
                    Err(_) => root.base().join("dev").join(&target),
                };
                match root.real_file(&at) {
                    Ok(Some((dir, name))) => dir.send_datagram(&name, line.as_bytes()),
                    _ => Ok(false),
                }
            }
            Err(_) => Ok(false),
        },
        other => other,
    };
    match sent {
        Ok(true) => Sent::Taken,
        Ok(false) => Sent::NoSocket,
        Err(e) => Sent::Refused(e),
    }
}

/// Writes `line` to `dev/kmsg` when it is a character device; true if it took it.
fn to_kmsg(dev: &Dir, line: &str) -> bool {
    let Ok(mut kmsg) = dev.open_log("kmsg") else {
        return false;
    };
    kmsg.metadata()
        .is_ok_and(|m| m.file_type().is_char_device())
        && kmsg.write_all(line.as_bytes()).is_ok()
}
