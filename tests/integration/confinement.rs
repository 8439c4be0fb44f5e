//! The top-level directories of the root (docs/reference.md §4, Applying): every one a run
//! uses (`sys`, `proc`, `dev`, `etc`, `run`, `usr`) must resolve inside the root. A link that
//! leads out of it (or nowhere) is refused with exit 2, naming it, and nothing is written, inside
//! the root or out; a link that stays inside the root is followed. All through the real binary on
//! fake roots.

use crate::common::{bin, run, run_args, run_unpackaged, scratch, snapshot};
use mdtune_fakeroot::demo_host;
use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

/// A run that would write everywhere it may: md values, a system limit, the lock, the saved
/// originals and the persisted files.
fn writing_input() -> serde_json::Value {
    json!({
        "persist": true,
        "speed_limit_max": 300000,
        "arrays": [{"name": "md0", "stripe_cache_size": 4096, "group_thread_cnt": 4}]
    })
}

/// Moves `root/<name>` (created empty when absent) to `outside/<name>` and links it back.
fn link_out(root: &Path, outside: &Path, name: &str) {
    let inside = root.join(name);
    let target = outside.join(name);
    fs::create_dir_all(outside).unwrap();
    if inside.exists() {
        fs::rename(&inside, &target).unwrap();
    } else {
        fs::create_dir_all(&target).unwrap();
    }
    // Something to overwrite out there, as a host's own files would be.
    fs::write(target.join("kmsg"), "").unwrap();
    symlink(&target, &inside).unwrap();
}

#[test]
fn a_top_level_directory_linked_out_of_the_root_is_refused_with_exit_2_naming_it() {
    for name in ["sys", "proc", "dev", "etc", "run", "usr"] {
        let top = scratch(&format!("top-{name}"));
        let root = top.join("root");
        let outside = top.join("outside");
        demo_host(&root);
        link_out(&root, &outside, name);
        let (inside_before, outside_before) = (snapshot(&root), snapshot(&outside));
        let out = run_unpackaged(&root, writing_input());
        assert_eq!(out.code, 2, "{name}: {}", out.stdout);
        let real_root = fs::canonicalize(&root).unwrap();
        assert!(
            out.msg().contains(&format!(
                "{}/{name} is a link that leads out of the root",
                real_root.display()
            )),
            "{name}: {}",
            out.msg()
        );
        assert!(
            snapshot(&outside) == outside_before,
            "{name}: a file outside the root changed"
        );
        assert!(
            snapshot(&root) == inside_before,
            "{name}: exit 2 but a file in the root changed"
        );
        assert!(
            !root.join("run/mdtune.lock").exists(),
            "{name}: the lock was taken"
        );
    }
}

#[test]
fn a_query_is_refused_too_when_sys_leads_out_of_the_root() {
    let top = scratch("top-query");
    let root = top.join("root");
    demo_host(&root);
    link_out(&root, &top.join("outside"), "sys");
    let out = run(
        &root,
        json!({"state": "query", "arrays": [{"name": "md*"}]}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.msg()
            .contains("/sys is a link that leads out of the root"),
        "{}",
        out.msg()
    );
}

#[test]
fn a_top_level_link_that_leads_nowhere_is_refused() {
    let top = scratch("top-dangling");
    let root = top.join("root");
    demo_host(&root);
    fs::remove_dir_all(root.join("run")).unwrap();
    symlink(top.join("gone"), root.join("run")).unwrap();
    let out = run(&root, writing_input());
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.msg().contains("/run is a link that leads nowhere"),
        "{}",
        out.msg()
    );
    assert!(!top.join("gone").exists(), "created the link's target");
}

#[test]
fn a_top_level_link_that_stays_inside_the_root_is_followed() {
    let top = scratch("top-inside");
    let root = top.join("root");
    let r = demo_host(&root);
    fs::rename(root.join("sys"), root.join("sysfs")).unwrap();
    symlink("sysfs", root.join("sys")).unwrap();
    let out = run(
        &root,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["changed"], true, "{}", out.stdout);
    let written = root.join(
        r.md_attr("md0", "stripe_cache_size")
            .strip_prefix(root.join("sys"))
            .map(|rel| Path::new("sysfs").join(rel))
            .unwrap(),
    );
    assert_eq!(fs::read_to_string(written).unwrap().trim(), "4096");
}

#[test]
fn a_udev_run_never_logs_through_a_dev_link_out_of_the_root() {
    let top = scratch("top-udev");
    let root = top.join("root");
    let outside = top.join("outside");
    demo_host(&root);
    let first = run(&root, writing_input());
    assert_eq!(first.code, 0, "{}", first.stdout);
    link_out(&root, &outside, "dev");
    let before = snapshot(&outside);
    let root_arg = root.display().to_string();
    let out = run_args(&["--udev", "md0", "--root", &root_arg], "", &[]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("leads out of the root"),
        "{}",
        out.stdout
    );
    assert!(
        snapshot(&outside) == before,
        "the udev run wrote its log outside the root ({})",
        bin()
    );
}

#[test]
fn a_root_given_through_a_link_is_resolved_once_and_the_answer_names_the_directory_used() {
    // The root's path is resolved by one open; everything after is opened beneath that
    // descriptor. A root given through a link (its last component, here) is the directory the
    // link led to at that open, and the answer says so: the JSON's warnings, --text and --show.
    let top = scratch("root-link");
    let real = top.join("real");
    let r = demo_host(&real);
    let link = top.join("link");
    symlink(&real, &link).unwrap();
    let said = format!(
        "root: {} leads through a link to {}; this run used that directory",
        link.display(),
        fs::canonicalize(&real).unwrap().display()
    );
    let out = run(
        &link,
        json!({"arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json["warnings"][0], said, "{}", out.stdout);
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    let link_arg = link.display().to_string();
    let shown = run_args(&["--show", "--root", &link_arg], "", &[]);
    assert_eq!(shown.code, 0, "{}", shown.stdout);
    assert!(shown.stdout.contains(&said), "{}", shown.stdout);
    // The same directory by its own path: nothing to say.
    let plain = run(&real, json!({"state": "query"}));
    assert_eq!(plain.json["warnings"], json!([]), "{}", plain.stdout);
}
