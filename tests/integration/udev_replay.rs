//! The udev replay (docs/reference.md §1 `--udev NAME`, §6; docs/persistence.md), through the real
//! binary on fake roots: after a reboot the rule's run puts the persisted state back on the one
//! array named, does nothing without persisted state or for a name md would not give, takes the
//! lock before it reads the state, never logs through a `dev/kmsg` link, accepts every kernel
//! name md allows, and leaves an inactive array alone.

use crate::common::{bin, hold_lock, kernel_snapshot, logged, run, scratch, snapshot, syslog};
use crate::persistence::{desired, reboot, udev, STATE};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::json;
use std::fs;
use std::process::Command;
use std::time::Duration;

#[test]
fn udev_replays_the_persisted_state_for_one_array_after_a_reboot() {
    let dir = scratch("udev");
    let r = demo_host(&dir);
    let input = json!({"persist": true, "thread_policy": "auto",
        "arrays": [{"name": "md*", "sync_speed_max": 600000}, {"name": "hana_data", "stripe_cache_size": 4096}]});
    assert_eq!(run(&dir, input).code, 0);
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    reboot(&r);
    let log = syslog(&dir);

    assert_eq!(udev(&dir, "md0"), (0, true));
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "8");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert_eq!(r.read_md("md0", "sync_speed_max"), "600000");
    // Other arrays wait for their own event.
    assert_eq!(r.read_md("md2", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md2", "sync_speed_max"), "200000 (system)");
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("<30>mdtune["), "{}", lines[0]);
    assert!(
        lines[0].contains("md0: group_thread_cnt 0 -> 8"),
        "{}",
        lines[0]
    );

    // mdadm's watch option repeats change events: they cost reads only, and log nothing.
    let before = kernel_snapshot(&dir);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(udev(&dir, "md0"), (0, false));
    assert_eq!(kernel_snapshot(&dir), before);
    assert!(logged(&log).is_empty());

    assert_eq!(udev(&dir, "md2").0, 0);
    assert_eq!(r.read_md("md2", "group_thread_cnt"), "16");
}

#[test]
fn udev_without_persisted_state_or_with_a_bad_name_does_nothing() {
    let dir = scratch("udevnothing");
    demo_host(&dir);
    let before = kernel_snapshot(&dir);
    assert_eq!(udev(&dir, "md0"), (0, false));
    assert_eq!(run(&dir, desired()).code, 0);
    let before_bad = kernel_snapshot(&dir);
    assert_eq!(udev(&dir, "../md0").0, 2);
    assert_eq!(
        udev(&dir, "md9").0,
        0,
        "an array not in the state: nothing to do"
    );
    assert_eq!(kernel_snapshot(&dir), before_bad);
    assert_ne!(before, before_bad);
}

#[test]
fn udev_takes_the_lock_before_it_reads_the_persisted_state() {
    let dir = scratch("udev-lock-first");
    let r = demo_host(&dir);
    let input = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    assert_eq!(run(&dir, input).code, 0);
    reboot(&r);
    // A newer persist run holds the lock while the udev event arrives, and saves another state.
    let held = hold_lock(&dir);
    let root = dir.display().to_string();
    let child = Command::new(bin())
        .args(["--udev", "md0", "--root", &root])
        .env("MDTUNE_LOCK_WAIT", "30")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    fs::write(
        dir.join(STATE),
        r#"{"arrays": [{"name": "md0", "stripe_cache_size": 8192}]}"#,
    )
    .unwrap();
    drop(held);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", out);
    assert_eq!(
        r.read_md("md0", "stripe_cache_size"),
        "8192",
        "the replay applied the state it read before it waited for the lock"
    );
}

#[test]
fn udev_never_writes_its_log_through_a_kmsg_link() {
    let dir = scratch("kmsg-link");
    demo_host(&dir);
    fs::create_dir_all(dir.join("etc/mdtune")).unwrap();
    // A failing replay logs an error; there is no dev/log socket, so kmsg is the fallback.
    fs::write(dir.join(STATE), "{not json").unwrap();
    let outside = scratch("kmsg-outside").join("precious");
    fs::write(&outside, "keep me\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("dev/kmsg")).unwrap();
    assert_eq!(udev(&dir, "md0").0, 1);
    assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me\n");

    // dev/ itself leading out of the root is not followed either.
    let other = scratch("kmsg-dev-outside");
    fs::write(other.join("kmsg"), "keep me too\n").unwrap();
    fs::remove_file(dir.join("dev/kmsg")).unwrap();
    let real_dev = dir.join("dev.real");
    fs::rename(dir.join("dev"), &real_dev).unwrap();
    std::os::unix::fs::symlink(&other, dir.join("dev")).unwrap();
    // A top-level directory outside the root makes the root unusable (docs/reference.md §4):
    // exit 2.
    assert_eq!(udev(&dir, "md0").0, 2);
    assert_eq!(
        fs::read_to_string(other.join("kmsg")).unwrap(),
        "keep me too\n"
    );

    // A kmsg inside the root is never created, and a regular file there is not the kernel's
    // log: only a character device gets the line (docs/reference.md §6;
    // tests/integration/input_limits.rs logs to one).
    fs::remove_file(dir.join("dev")).unwrap();
    fs::rename(&real_dev, dir.join("dev")).unwrap();
    assert_eq!(udev(&dir, "md0").0, 1);
    assert!(!dir.join("dev/kmsg").exists(), "kmsg was created");
    fs::write(dir.join("dev/kmsg"), "earlier line\n").unwrap();
    assert_eq!(udev(&dir, "md0").0, 1);
    let kmsg = fs::read_to_string(dir.join("dev/kmsg")).unwrap();
    assert_eq!(
        kmsg, "earlier line\n",
        "a regular file as dev/kmsg was written"
    );
}

#[test]
fn udev_accepts_every_kernel_name_md_allows() {
    let dir = scratch("udev-names");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    r.md("md_hana-data", &MdSpec::default(), &[&d[0], &d[1], &d[2]]);
    let input = json!({"persist": true, "arrays": [{"name": "md*", "stripe_cache_size": 4096}]});
    assert_eq!(run(&dir, input).code, 0);
    r.set_md("md_hana-data", "stripe_cache_size", "256");
    assert_eq!(udev(&dir, "md_hana-data"), (0, true));
    assert_eq!(r.read_md("md_hana-data", "stripe_cache_size"), "4096");
    // The kernel keeps at most 31 bytes of a disk name.
    assert_eq!(udev(&dir, &format!("md_{}", "a".repeat(28))).0, 0);
    assert_eq!(udev(&dir, &format!("md_{}", "a".repeat(29))).0, 2);
}

#[test]
fn a_change_event_for_an_inactive_array_does_nothing_quietly() {
    let dir = scratch("udev-inactive");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..1).map(|c| r.nvme(c, 4)).collect();
    // mdadm -I of one member: the array exists, inactive, without its raid456 files.
    let spec = MdSpec {
        array_state: "inactive".into(),
        ..MdSpec::default()
    };
    r.md("md0", &spec, &[&d[0]]);
    fs::create_dir_all(dir.join("etc/mdtune")).unwrap();
    fs::write(
        dir.join(STATE),
        r#"{"arrays": [{"name": "md0", "stripe_cache_size": 4096, "skip_copy": true}]}"#,
    )
    .unwrap();
    let log = syslog(&dir);
    let before = snapshot(&dir.join("sys"));
    assert_eq!(udev(&dir, "md0"), (0, false));
    assert!(
        logged(&log).is_empty(),
        "an inactive array logged something"
    );
    assert_eq!(snapshot(&dir.join("sys")), before);
}
