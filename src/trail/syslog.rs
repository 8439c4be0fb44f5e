//! The system log, as mdtune reaches it: the `dev/log` datagram socket (journald's or
//! rsyslog's), else `dev/kmsg`. Best effort: a log that cannot be written must not fail the run.
//! Both are confined to the root: `dev/` is opened beneath it, `dev/log` must be a socket in it
//! (pinned: the socket checked is the one sent to), and `dev/kmsg` is opened without blocking or
//! following a link, never created, and written only when it is a character device: udev kills
//! a worker that hangs (docs/reference.md §1).

use crate::sys::Root;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// The tag every line carries (`journalctl -t mdtune`).
pub const TAG: &str = "mdtune";

/// Sends `msg` with `priority` (facility and severity, as syslog numbers them) to the log of the
/// host under `root`.
pub(crate) fn log(root: &Path, priority: u8, msg: &str) {
    // An unusable root has no log of its own to write to.
    let Ok(root) = Root::new(root) else { return };
    let Ok(Some(dev)) = root.dir_beneath(&root.base().join("dev")) else {
        return;
    };
    // Pinned in the open directory: the socket checked is the socket sent to, even if
    // another is renamed onto `dev/log` in between.
    if let Ok((sock, path)) = dev.pin("log") {
        let is_socket = sock.metadata().is_ok_and(|m| m.file_type().is_socket());
        let line = format!("<{priority}>{TAG}[{}]: {msg}", std::process::id());
        if is_socket
            && UnixDatagram::unbound()
                .and_then(|s| s.send_to(line.as_bytes(), &path))
                .is_ok()
        {
            return;
        }
    }
    let Ok(mut kmsg) = dev.open_log("kmsg") else {
        return;
    };
    if kmsg
        .metadata()
        .is_ok_and(|m| m.file_type().is_char_device())
    {
        let _ = kmsg.write_all(format!("<{priority}>{TAG}: {msg}\n").as_bytes());
    }
}
