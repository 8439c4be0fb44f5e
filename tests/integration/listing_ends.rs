//! How a directory listing ends (src/sys/listing.rs): on sysfs and tmpfs at the first
//! `getdents64` batch that left room in the buffer, elsewhere at the call that returns 0. The
//! host of every layout, built on a tmpfs (`/dev/shm`), reads the same either way: strace makes
//! `fstatfs` fail, which leaves the file system unknown and every listing reading until 0, and
//! shows which listings under `sys/` still made the call that returns 0. And `scsi_disk/`, which
//! tells a SCSI disk, is looked for under the sd driver's names only.

use crate::common::{needs, Requirement};
use crate::resolve_routes::every_layout_host;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory on the tmpfs at `/dev/shm`, for a root whose file system fills whole
/// batches; the test fails, saying what to mount, where there is none.
fn tmpfs_scratch(name: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let is_tmpfs = fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.split(' ').nth(2) == Some("tmpfs"));
    assert!(
        shm.is_dir() && is_tmpfs,
        "this test needs a tmpfs at /dev/shm: mount -t tmpfs tmpfs /dev/shm"
    );
    let dir = shm.join(format!("mdtune-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a query of `root` under strace (`-y`: each descriptor's path), tracing the calls
/// `trace` and failing `fstatfs` with ENOSYS when `blind`; returns the report and the trace.
fn traced_query(root: &Path, trace: &str, blind: bool) -> (Value, String) {
    crate::common::require_strace();
    let log = root.with_extension(format!("{blind}.strace"));
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-y", "-o"])
        .arg(&log)
        .args(["-e", &format!("trace={trace}")]);
    if blind {
        cmd.args(["-e", "inject=fstatfs:error=ENOSYS"]);
    }
    cmd.arg(crate::common::bin()).arg("-");
    let input = json!({"root": root, "state": "query"});
    let out = crate::common::run_command(cmd, &input.to_string());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let trace = fs::read_to_string(&log).expect("strace wrote no log");
    fs::remove_file(&log).unwrap();
    (out.json, trace)
}

/// The lines of `trace` that call `call` and contain `with`.
fn calls<'t>(trace: &'t str, call: &str, with: &str) -> Vec<&'t str> {
    let call = format!("{call}(");
    trace
        .lines()
        .filter(|l| l.contains(&call) && l.contains(with))
        .collect()
}

#[test]
fn every_layout_reads_the_same_whether_a_listing_ends_short_or_at_zero() {
    if !needs(Requirement::Strace) {
        return;
    }
    let dir = tmpfs_scratch("listing-ends");
    every_layout_host(&dir);
    let sys = format!("{}/sys/", dir.display());
    let (short, told) = traced_query(&dir, "getdents64,fstatfs", false);
    let (zero, blind) = traced_query(&dir, "getdents64,fstatfs", true);
    let read_to_zero = |trace: &str| {
        calls(trace, "getdents64", &sys)
            .iter()
            .filter(|l| l.ends_with("= 0"))
            .count()
    };
    assert!(
        !calls(&told, "fstatfs", "").is_empty() && blind.contains("(INJECTED)"),
        "strace saw no fstatfs, or injected no failure"
    );
    assert_eq!(
        short, zero,
        "the listings that end short disagree with those read to 0"
    );
    // Every listing under sys/ ends at its short batch; told nothing, each reads to 0.
    assert_eq!(
        read_to_zero(&told),
        0,
        "on tmpfs a listing under sys/ still read to 0"
    );
    let zeros = read_to_zero(&blind);
    assert!(
        zeros > 10,
        "without fstatfs only {zeros} listings read to 0"
    );
    assert_eq!(short["arrays"].as_array().map(Vec::len), Some(5), "{short}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scsi_disk_is_looked_for_only_under_the_sd_drivers_names() {
    if !needs(Requirement::Strace) {
        return;
    }
    // Only sd's disks have device/scsi_disk/, and sd names each sd<letters>: the NVMe, dm and
    // md devices of every layout cost no failed open, and the SCSI disks are still found.
    let dir = tmpfs_scratch("scsi-names");
    every_layout_host(&dir);
    let (report, trace) = traced_query(&dir, "openat2", false);
    let looked: Vec<&str> = calls(&trace, "openat2", "scsi_disk");
    assert!(!looked.is_empty(), "no scsi_disk/ was looked for");
    for line in &looked {
        // "block/md20/md/dev-sdz/block/device/scsi_disk" or ".../slaves/sdx/device/scsi_disk"
        let path = line.split('"').nth(1).unwrap_or_default();
        let device = path
            .trim_end_matches("/device/scsi_disk")
            .trim_end_matches("/block")
            .rsplit('/')
            .next()
            .unwrap_or_default();
        let name = device.strip_prefix("dev-").unwrap_or(device);
        assert!(
            name.starts_with("sd"),
            "scsi_disk/ looked for under {name}: {line}"
        );
    }
    let md20 = report["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "md20")
        .unwrap();
    let paths = md20["members"].to_string();
    assert!(paths.contains("\"scsi\":true"), "{paths}");
    fs::remove_dir_all(&dir).unwrap();
}
