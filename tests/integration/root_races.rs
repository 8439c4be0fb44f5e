//! Confinement of the root itself under a race (docs/reliability.md, threat model): someone who
//! controls a directory above the root, or the root's top-level directories, swaps one for a link
//! while mdtune runs. The root's path is resolved by one open; every top-level directory is opened
//! beneath that descriptor, and everything else beneath those (docs/reference.md §4). So:
//!
//! - the root swapped while its one open is held: the run uses the directory the path then led
//!   to, all of it there and nothing in the other, and the answer names it;
//! - the root swapped after its open: everything still happens in the directory that was opened;
//! - a top-level directory swapped for a link out while its open is held: refused, naming it,
//!   and nothing outside the root changes; also for one the run creates (`etc/` on a first
//!   `persist`), swapped between its creation and its open.
//!
//! Each with and without `openat2` (kernels before 5.6: it fails ENOSYS, the probe included).
//! The races are made certain with strace as in `races.rs`.

use crate::common::{needs, Requirement};
use crate::common::{require_strace, scratch, snapshot};
use crate::races::{copy_files, held_at_open, race_when, swap_for_link, Traced};
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

/// The top-level directories a run uses (docs/reference.md §4).
const TOP_LEVEL: [&str; 6] = ["sys", "proc", "dev", "etc", "run", "usr"];

/// A run that writes everywhere it may: md values, a system limit, the lock, the saved
/// originals and the persisted files.
fn writing_input(root: &Path) -> Value {
    json!({
        "root": root.display().to_string(),
        "persist": true,
        "speed_limit_max": 300000,
        "arrays": [{"name": "md0", "stripe_cache_size": 4096}]
    })
}

/// strace options that make every watched `openat2` fail ENOSYS, as on a kernel before 5.6, or
/// none; `watch` gets "/", the path of mdtune's probe, either way, so that which way it chose
/// can be checked ([`Traced::assert_resolved_by`]).
fn without_openat2(no_openat2: bool, watch: &mut Vec<String>) -> &'static [&'static str] {
    watch.push("/".into());
    if no_openat2 {
        &["-e", "inject=openat2:error=ENOSYS"]
    } else {
        &[]
    }
}

/// md0's stripe cache in the demo host at `root` (or wherever that host was moved).
fn md0_stripe_cache(root: &Path) -> String {
    let file = root.join("sys/block/md0/md/stripe_cache_size");
    fs::read_to_string(file)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The root swapped for a link to a stand-in host while the one open of its path is held.
fn root_swapped_during_its_open(no_openat2: bool) {
    require_strace();
    let top = scratch(&format!("race-root-open-{no_openat2}"));
    let (root, standin, stash) = (top.join("root"), top.join("standin"), top.join("stash"));
    demo_host(&root);
    demo_host(&standin);
    let given = root.display().to_string();
    let mut watch = vec![given.clone()];
    let extra = without_openat2(no_openat2, &mut watch);
    let original = relative(&root);
    let out = race_when(
        &writing_input(&root),
        &watch,
        &|pid| held_at_open(pid, &given, false).filter(|(p, _)| *p == given),
        extra,
        swap_for_link(root.clone(), stash.clone(), standin.clone()),
    );
    assert!(
        out.held.is_some(),
        "the root's open was never held: {}",
        out.stdout
    );
    out.assert_resolved_by(no_openat2);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        relative(&stash) == original,
        "the directory that was the root before the swap changed"
    );
    assert_eq!(md0_stripe_cache(&standin), "4096", "{}", out.stdout);
    assert!(standin.join("etc/mdtune/mdtune.json").is_file());
    assert_eq!(
        out.json["warnings"][0],
        format!(
            "root: {given} leads through a link to {}; this run used that directory",
            fs::canonicalize(&standin).unwrap().display()
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_root_swapped_for_a_link_during_its_one_open_is_used_whole_and_named() {
    if !needs(Requirement::Strace) {
        return;
    }
    root_swapped_during_its_open(false);
}

#[test]
fn a_root_swapped_for_a_link_during_its_one_open_is_used_whole_and_named_without_openat2() {
    if !needs(Requirement::Strace) {
        return;
    }
    root_swapped_during_its_open(true);
}

/// The root swapped for a link to a stand-in host after its open, while the open of `sys`
/// beneath it is held: everything happens in the directory that was opened.
fn root_swapped_after_its_open(no_openat2: bool) {
    require_strace();
    let top = scratch(&format!("race-root-after-{no_openat2}"));
    let (root, standin, stash) = (top.join("root"), top.join("standin"), top.join("stash"));
    demo_host(&root);
    demo_host(&standin);
    let untouched = relative(&standin);
    let mut watch = vec!["sys".to_string()];
    let extra = without_openat2(no_openat2, &mut watch);
    let out = race_when(
        &writing_input(&root),
        &watch,
        &|pid| held_at_open(pid, "sys", false).filter(|(p, _)| p == "sys"),
        extra,
        swap_for_link(root.clone(), stash.clone(), standin.clone()),
    );
    assert!(
        out.held.is_some(),
        "the open of sys was never held: {}",
        out.stdout
    );
    out.assert_resolved_by(no_openat2);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(relative(&standin) == untouched, "the stand-in changed");
    assert_eq!(md0_stripe_cache(&stash), "4096", "{}", out.stdout);
    assert!(stash.join("etc/mdtune/mdtune.json").is_file());
}

#[test]
fn a_root_swapped_for_a_link_after_its_open_changes_nothing_but_the_directory_opened() {
    if !needs(Requirement::Strace) {
        return;
    }
    root_swapped_after_its_open(false);
}

#[test]
fn a_root_swapped_for_a_link_after_its_open_changes_nothing_but_the_directory_opened_without_openat2(
) {
    if !needs(Requirement::Strace) {
        return;
    }
    root_swapped_after_its_open(true);
}

/// Checks a run in which a top-level directory was swapped for a link out of the root: the open
/// was held and the swap made, nothing outside changed, and the run was refused naming the
/// directory (exit 2 when the root was being opened, 1 when the run created it under the lock).
fn assert_refused(out: &Traced, name: &str, root: &Path, decoy: &Path, decoy_before: &[Snap]) {
    assert!(
        out.held.is_some(),
        "{name}: the open was never held: {}",
        out.stdout
    );
    assert!(
        snapshot(decoy) == decoy_before,
        "{name}: a file outside the root changed: {}",
        out.stdout
    );
    assert!(matches!(out.code, 1 | 2), "{name}: {}", out.stdout);
    let msg = out.json["msg"].as_str().unwrap_or_default();
    let real = fs::canonicalize(root).unwrap();
    assert!(
        msg.contains(&format!("{}/{name}", real.display()))
            && msg.contains("leads out of the root"),
        "{name}: {msg}"
    );
}

type Snap = (std::path::PathBuf, Vec<u8>, std::time::SystemTime);

/// [`snapshot`] with paths relative to `dir`: the same tree compares equal wherever it was moved.
fn relative(dir: &Path) -> Vec<Snap> {
    let mut files = snapshot(dir);
    for (path, _, _) in &mut files {
        *path = path.strip_prefix(dir).unwrap().to_path_buf();
    }
    files
}

/// Each top-level directory, present when the run starts, swapped for a link out while the open
/// beneath the root is held: one race per directory, all at once (each mostly waits on strace).
fn top_level_swapped_during_its_open(no_openat2: bool) {
    require_strace();
    std::thread::scope(|s| {
        for name in TOP_LEVEL {
            s.spawn(move || one_top_level_swapped_during_its_open(name, no_openat2));
        }
    });
}

fn one_top_level_swapped_during_its_open(name: &str, no_openat2: bool) {
    let top = scratch(&format!("race-top-{name}-{no_openat2}"));
    let (root, decoy) = (top.join("root"), top.join("outside").join(name));
    demo_host(&root);
    fs::create_dir_all(root.join(name)).unwrap();
    copy_files(&root.join(name), &decoy);
    fs::write(decoy.join("mdtune.json"), "{}\n").unwrap();
    let decoy_before = snapshot(&decoy);
    let mut watch = vec![name.to_string()];
    let extra = without_openat2(no_openat2, &mut watch);
    let out = race_when(
        &writing_input(&root),
        &watch,
        &|pid| held_at_open(pid, name, false).filter(|(p, _)| p == name),
        extra,
        swap_for_link(
            root.join(name),
            top.join(format!("stash-{name}")),
            decoy.clone(),
        ),
    );
    assert_refused(&out, name, &root, &decoy, &decoy_before);
    out.assert_resolved_by(no_openat2);
}

#[test]
fn each_top_level_directory_swapped_for_a_link_out_during_its_open_is_refused() {
    if !needs(Requirement::Strace) {
        return;
    }
    top_level_swapped_during_its_open(false);
}

#[test]
fn each_top_level_directory_swapped_for_a_link_out_during_its_open_is_refused_without_openat2() {
    if !needs(Requirement::Strace) {
        return;
    }
    top_level_swapped_during_its_open(true);
}

/// `etc/`, `run/` and `usr/`, absent when the run starts: the run creates each beneath the
/// root, and the directory is swapped for a link out between its creation and the open that
/// follows it. One race per directory, all at once.
fn created_top_level_swapped_before_its_open(no_openat2: bool) {
    require_strace();
    std::thread::scope(|s| {
        for name in ["etc", "run", "usr"] {
            s.spawn(move || one_created_top_level_swapped(name, no_openat2));
        }
    });
}

fn one_created_top_level_swapped(name: &str, no_openat2: bool) {
    let top = scratch(&format!("race-made-{name}-{no_openat2}"));
    let (root, decoy) = (top.join("root"), top.join("outside").join(name));
    demo_host(&root);
    let _ = fs::remove_dir_all(root.join(name));
    fs::create_dir_all(&decoy).unwrap();
    fs::write(decoy.join("mdtune.lock"), "").unwrap();
    let decoy_before = snapshot(&decoy);
    let mut watch = vec![name.to_string()];
    let extra = without_openat2(no_openat2, &mut watch);
    let made = root.join(name);
    let out = race_when(
        &writing_input(&root),
        &watch,
        // Only the open after mdtune made the directory: the first finds nothing.
        &|pid| held_at_open(pid, name, false).filter(|(p, _)| p == name && made.is_dir()),
        extra,
        swap_for_link(
            made.clone(),
            top.join(format!("stash-{name}")),
            decoy.clone(),
        ),
    );
    assert_refused(&out, name, &root, &decoy, &decoy_before);
    out.assert_resolved_by(no_openat2);
    assert_eq!(md0_stripe_cache(&root), "256", "{name}: {}", out.stdout);
}

#[test]
fn a_top_level_directory_the_run_creates_swapped_for_a_link_out_before_its_open_is_refused() {
    if !needs(Requirement::Strace) {
        return;
    }
    created_top_level_swapped_before_its_open(false);
}

#[test]
fn a_top_level_directory_the_run_creates_swapped_for_a_link_out_before_its_open_is_refused_without_openat2(
) {
    if !needs(Requirement::Strace) {
        return;
    }
    created_top_level_swapped_before_its_open(true);
}
