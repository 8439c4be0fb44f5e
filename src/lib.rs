//! mdtune: idempotent tuning of Linux md RAID for configuration tools.
//!
//! A run flows one way, one folder per step (`ls src/` reads the flow):
//!
//! ```text
//! input JSON --> spec    (validated desired state)
//! sysfs root --> host    (arrays, members, hardware queues; read only)
//! spec + host --> plan   (pure: every setting's before, after and why)
//! plan --> apply         (writes, read-back, rollback; not in check mode or query)
//!          persist       (the state that survives a reboot; the saved originals)
//! all --> report         (pure: the one JSON object)
//! boost                  (a sync boost's record, its start and its end with the sync)
//! health                 (the checks --tick saw end, kept across reboots; what the metrics say)
//! trail                  (the system log line of each run that changed or failed; the last run)
//! run                    (one run start to end, --udev, --show, --verify, --metrics, the lock,
//!                         the exit status)
//! view                   (pure: the report and the host as text for a person, --text, --show,
//!                         --verify; and for Prometheus, --metrics)
//! ```
//!
//! Under every step: [`md`], the md vocabulary (attributes, values, the kernel facts table), and
//! `sys`, the floor that alone owns descriptors, system calls and confinement to the root. The
//! interface is docs/reference.md; code comments cite its sections as §N.
//!
//! Every system call goes through rustix and the binary uses the system allocator, so the crate
//! forbids code the compiler cannot check (the attribute below).
//!
//! The modules are public only as far as the fuzz crate and the integration tests need: each
//! folder's face names what it exports.

#![forbid(unsafe_code)]

pub mod apply;
pub mod boost;
pub mod health;
pub mod host;
pub mod md;
pub mod measure;
pub mod persist;
pub mod plan;
pub mod report;
pub mod run;
pub mod spec;
pub mod sys;
#[cfg(test)]
mod testing;
pub mod trail;
pub mod view;
