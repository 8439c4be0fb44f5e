//! What a hostile input cannot make mdtune do (docs/reference.md §2 and §4,
//! docs/reliability.md): accept a selector, a uuid or a udev name that could walk out of
//! `sys/block`, or write an attribute outside the fixed list. Each is refused with exit 2 before
//! anything is written. All through the real binary on fake roots; what a hostile root cannot
//! make it do: `security.rs`.

use crate::common::{bin, persisted_root, run, scratch};
use crate::security::{changed, tree, FIXED};
use mdtune_fakeroot::demo_host;
use serde_json::json;
use std::process::{Command, Stdio};

#[test]
fn selectors_that_could_leave_sys_are_refused_before_anything_is_read_or_written() {
    let dir = scratch("selectors");
    demo_host(&dir);
    let before = tree(&dir);
    for bad in [
        "../md0",
        "md0/../../etc",
        "..",
        ".",
        "/dev/md0",
        "/etc/passwd",
        "md0/md/stripe_cache_size",
        "/dev/md/../md0",
        "/dev/md/a/b",
        "/dev/md/",
        "/sys/block/md0",
        "md\n0",
        "md0\t",
        "md\u{0}0",
        "md\u{1b}[0m",
        "md\u{7f}",
        "",
    ] {
        let out = run(
            &dir,
            json!({"arrays": [{"name": bad, "stripe_cache_size": 4096}]}),
        );
        assert_eq!(out.code, 2, "{bad:?}: {}", out.stdout);
        assert_eq!(out.json["failed"], true);
        assert!(
            out.msg().starts_with("arrays[0].name:"),
            "{bad:?}: {}",
            out.msg()
        );
    }
    for bad in ["../../etc/passwd", "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90/.."] {
        let out = run(&dir, json!({"arrays": [{"uuid": bad}]}));
        assert_eq!(out.code, 2, "{bad:?}: {}", out.stdout);
        assert!(out.msg().starts_with("arrays[0].uuid:"), "{}", out.msg());
    }
    assert_eq!(changed(&before, &tree(&dir)), Vec::<String>::new());
}

#[test]
fn udev_names_that_could_leave_sys_are_refused() {
    // After a reboot the kernel default is back; only a valid --udev name may restore it.
    let (dir, r) = persisted_root("udev-names");
    let before = tree(&dir);
    let root = dir.display().to_string();
    for bad in [
        "../md0",
        "md0/../md0",
        "/sys/block/md0",
        "md0\n",
        "",
        "..",
        "md*",
    ] {
        let out = Command::new(bin())
            .args(["--udev", bad, "--root", &root])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--udev {bad:?}");
        assert_eq!(
            changed(&before, &tree(&dir)),
            Vec::<String>::new(),
            "{bad:?}"
        );
    }
    let ok = Command::new(bin())
        .args(["--udev", "md0", "--root", &root])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
}

#[test]
fn attribute_names_come_only_from_the_fixed_list() {
    let dir = scratch("fixed-list");
    let r = demo_host(&dir);
    // Files the kernel has and mdtune must never write, and one a hostile root added.
    r.set_md("md0", "evil", "0");
    let before = tree(&dir);
    for key in [
        "array_state",
        "sync_action",
        "level",
        "rmw_level",
        "evil",
        "../../../etc/passwd",
        "md/stripe_cache_size",
        "stripe_cache_size/",
        "STRIPE_CACHE_SIZE",
    ] {
        let out = run(&dir, json!({"arrays": [{"name": "md0", key: "0"}]}));
        assert_eq!(out.code, 2, "{key:?}: {}", out.stdout);
        assert!(
            out.msg().contains(&format!("unknown key arrays[0].{key}")),
            "{}",
            out.msg()
        );
    }
    assert_eq!(changed(&before, &tree(&dir)), Vec::<String>::new());
    // A run that sets everything writes only files of the fixed list under md/.
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md*", "stripe_cache_size": 4096, "preread_bypass_threshold": 2,
            "skip_copy": true, "sync_speed_min": 5000, "sync_speed_max": 50000,
            "sync_force_parallel": true}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let written = changed(&before, &tree(&dir));
    assert!(written
        .iter()
        .any(|p| p.ends_with("md/sync_force_parallel")));
    let wrong: Vec<&String> = written
        .iter()
        .filter(|p| {
            p.starts_with("sys/") && !FIXED.iter().any(|a| p.ends_with(&format!("/md/{a}")))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:?}");
}
