//! The host-wide lock (docs/reference.md §4): one run at a time per host, on `run/mdtune.lock`
//! under the root. A run that writes takes it before it reads the host for the last time; a
//! second run waits a bounded time (`MDTUNE_LOCK_WAIT` seconds, for tests), then fails. The
//! wait for a paused sync to stop is set here too (`MDTUNE_SYNC_STOP_WAIT`). The lock file holds
//! the record of the last run that changed or failed to change something (`Lock::record`).

use crate::sys::{LockFile, Root};
use std::io;
use std::thread::sleep;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    #[error("cannot take the lock {path}: {source}")]
    Open { path: String, source: io::Error },
    #[error("cannot take the lock {path}: it is {what}, not a regular file; remove it (mdtune makes it again)")]
    NotAFile { path: String, what: &'static str },
    #[error("another mdtune run holds {path}; gave up after waiting {} s", seconds(*waited_ms))]
    Timeout { path: String, waited_ms: u64 },
}

/// Milliseconds as seconds with one decimal (`300` -> `0.3`), without floating point.
fn seconds(ms: u64) -> String {
    format!("{}.{}", ms / 1000, ms % 1000 / 100)
}

pub(crate) const LOCK_WAIT_MS: u64 = 30_000;
/// How long a udev-triggered run waits: udev must not be held up for long.
pub(crate) const UDEV_LOCK_WAIT_MS: u64 = 10_000;

/// `MDTUNE_LOCK_WAIT` (seconds, such as `5` or `0.3`) overrides the default wait, for tests and
/// slow hosts; at most an hour.
pub(crate) fn lock_wait(default_ms: u64) -> Duration {
    env_wait("MDTUNE_LOCK_WAIT", default_ms)
}

/// How long a paused sync may take to stop (docs/reference.md §4): `MDTUNE_SYNC_STOP_WAIT`
/// (seconds) overrides the default, for tests and slow hosts; at most an hour.
pub(crate) fn sync_stop_wait() -> Duration {
    env_wait(
        "MDTUNE_SYNC_STOP_WAIT",
        crate::md::kernel::SYNC_STOP_WAIT_MS,
    )
}

/// The wait the environment variable `var` gives in seconds, else `default_ms`.
fn env_wait(var: &str, default_ms: u64) -> Duration {
    let ms = std::env::var(var)
        .ok()
        .and_then(|s| parse_millis(s.trim()))
        .unwrap_or(default_ms);
    Duration::from_millis(ms.min(3_600_000))
}

/// Decimal seconds (`5`, `0.3`, `2.25`) as milliseconds, without floating point (which would
/// cost the binary about 30 KiB of parsing and formatting code).
fn parse_millis(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(frac.is_empty() || digits(frac)) {
        return None;
    }
    let mut ms = whole.parse::<u64>().ok()?.checked_mul(1000)?;
    for (i, d) in frac.bytes().take(3).enumerate() {
        ms += u64::from(d - b'0') * [100, 10, 1][i];
    }
    Some(ms)
}

/// The host-wide lock: one run at a time. Released when dropped.
#[derive(Debug)]
pub(crate) struct Lock {
    file: LockFile,
}

impl Lock {
    /// Replaces what the lock file holds with `record`, through the descriptor that holds the
    /// lock: the last run that changed or failed to change something (`crate::trail::record`).
    /// Best effort: a record that cannot be written must not fail the run.
    pub(crate) fn record(&self, record: &[u8]) {
        let _ = self.file.replace(record);
    }
}

/// Takes an exclusive lock on `run/mdtune.lock`, waiting at most `wait`. Opening it never
/// blocks (a FIFO there fails at once), and it must be a regular file; the wait is spent only
/// on the lock itself, in steps of 20 ms.
pub(crate) fn lock(root: &Root, wait: Duration) -> Result<Lock, LockError> {
    let path = root.lock_file();
    let err = |source| LockError::Open {
        path: path.display().to_string(),
        source,
    };
    // Neither run/ nor the lock file may lead out of the root.
    let run = root.make_dir(&root.run()).map_err(err)?;
    let file = run
        .open_lock(crate::sys::LOCK_FILE, 0o644)
        .map_err(|e| match e {
            crate::sys::OpenLock::NotAFile(what) => LockError::NotAFile {
                path: path.display().to_string(),
                what,
            },
            crate::sys::OpenLock::Io(e) => err(e),
        })?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(true) => return Ok(Lock { file }),
            Ok(false) if start.elapsed() < wait => sleep(Duration::from_millis(20)),
            Ok(false) => {
                return Err(LockError::Timeout {
                    path: path.display().to_string(),
                    waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                })
            }
            Err(e) => return Err(err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_millis;

    #[test]
    fn lock_wait_seconds_parse_without_floating_point() {
        assert_eq!(parse_millis("5"), Some(5000));
        assert_eq!(parse_millis("0.3"), Some(300));
        assert_eq!(parse_millis("2.25"), Some(2250));
        assert_eq!(parse_millis("1.23456"), Some(1234));
        assert_eq!(parse_millis("5."), Some(5000));
        for bad in ["", ".5", "-1", "1e3", "abc", "1.2.3"] {
            assert_eq!(parse_millis(bad), None, "{bad:?}");
        }
    }
}
