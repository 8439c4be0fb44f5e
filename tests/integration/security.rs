//! What a hostile root cannot make mdtune do (docs/reference.md §4, docs/reliability.md): write
//! through a link out of `sys/` or read through one, treat a device outside `sys/` as an array,
//! create or rewrite the lock or a persisted file through a link out of the root, or hang or
//! leave `sys/` on a device stack that loops; and the comparison of a root's tree that tells
//! whether a run wrote anywhere but the paths the contract names. All through the real binary on
//! fake roots. What a hostile input cannot make it do: `hostile_input.rs`; start another program
//! or write outside the contract's paths, read from the system calls: `traced_runs.rs`.

use crate::common::{run, run_args, run_unpackaged, scratch};
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The md attributes mdtune may write (docs/reference.md §4: a fixed list).
pub(crate) const FIXED: &[&str] = &[
    "group_thread_cnt",
    "stripe_cache_size",
    "preread_bypass_threshold",
    "skip_copy",
    "sync_speed_min",
    "sync_speed_max",
    "sync_io_depth",
    "sync_force_parallel",
];

/// One entry of a directory tree, links not followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Dir(SystemTime, u32),
    File(Vec<u8>, SystemTime, u32),
    Link(PathBuf),
    Other(SystemTime, u32),
}

/// Every entry under `dir` (relative path -> what it is), without following links.
pub(crate) fn tree(dir: &Path) -> BTreeMap<String, Node> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = fs::symlink_metadata(&d).unwrap();
        let rel = d.strip_prefix(dir).unwrap().display().to_string();
        out.insert(
            rel.clone(),
            Node::Dir(meta.modified().unwrap(), meta.mode()),
        );
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if m.is_dir() {
                stack.push(p);
            } else if m.file_type().is_symlink() {
                out.insert(rel, Node::Link(fs::read_link(&p).unwrap()));
            } else if m.is_file() {
                out.insert(
                    rel,
                    Node::File(fs::read(&p).unwrap(), m.modified().unwrap(), m.mode()),
                );
            } else {
                out.insert(rel, Node::Other(m.modified().unwrap(), m.mode()));
            }
        }
    }
    out
}

/// Paths (relative) that were added, removed or changed between two trees.
pub(crate) fn changed(
    before: &BTreeMap<String, Node>,
    after: &BTreeMap<String, Node>,
) -> Vec<String> {
    before
        .keys()
        .chain(after.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}

/// True if and only if the contract names `rel` (relative to the root) as a path mdtune may
/// write: md attributes from the fixed list, the system speed limits, the lock, the saved
/// originals, the persisted state, the udev rule and the installed binary (and the directories
/// that hold them, whose modification time changes when an entry is added).
fn contract_path(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    let md_attr = parts.first() == Some(&"sys")
        && parts.len() >= 3
        && parts[parts.len() - 2] == "md"
        && FIXED.contains(&parts[parts.len() - 1]);
    let under = |dir: &str| rel.strip_prefix(dir).is_some_and(|r| !r.contains('/'));
    md_attr
        || matches!(
            rel,
            "proc/sys/dev/raid/speed_limit_min"
                | "proc/sys/dev/raid/speed_limit_max"
                | "proc/sys/dev/raid/sync_io_depth"
                | "run/mdtune.lock"
                | "etc/udev/rules.d/90-mdtune.rules"
                | "usr/local/sbin/mdtune"
                // Directories that gain an entry.
                | ""
                | "run"
                | "run/mdtune"
                | "etc"
                | "etc/mdtune"
                | "etc/udev"
                | "etc/udev/rules.d"
                | "usr"
                | "usr/local"
                | "usr/local/sbin"
        )
        || under("run/mdtune/")
        || under("etc/mdtune/")
}

pub(crate) fn assert_only_contract_paths(what: &str, before: &BTreeMap<String, Node>, dir: &Path) {
    let after = tree(dir);
    let outside: Vec<String> = changed(before, &after)
        .into_iter()
        .filter(|p| !contract_path(p))
        .collect();
    assert!(
        outside.is_empty(),
        "{what} wrote outside the contract's paths: {outside:?}"
    );
}

/// An outside directory next to the root, with one file whose content and mtime are watched.
fn outside_file(dir: &Path, name: &str, content: &str) -> PathBuf {
    let out = dir.join("outside");
    fs::create_dir_all(&out).unwrap();
    let f = out.join(name);
    fs::write(&f, content).unwrap();
    f
}

#[test]
fn a_link_out_of_sys_is_never_followed_for_writing() {
    let top = scratch("link-out");
    let dir = top.join("root");
    let r = demo_host(&dir);
    let target = outside_file(&top, "stripe_cache_size", "256\n");
    let attr = r.md_attr("md0", "stripe_cache_size");
    fs::remove_file(&attr).unwrap();
    symlink(&target, &attr).unwrap();
    let outside = tree(&top.join("outside"));
    let before = tree(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md0", "group_thread_cnt": 4, "stripe_cache_size": 4096}]}),
    );
    // The link is refused before anything is written: reads do not follow it (O_NOFOLLOW).
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.msg().contains("md0/md/stripe_cache_size") && out.msg().contains("symbolic links"),
        "{}",
        out.msg()
    );
    assert_eq!(out.json["changed"], false);
    assert_eq!(
        tree(&top.join("outside")),
        outside,
        "the outside file was touched"
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0", "rolled back");
    assert_only_contract_paths("a refused run", &before, &dir);
}

#[test]
fn an_md_device_linked_from_outside_sys_is_not_an_array() {
    let top = scratch("device-out");
    let dir = top.join("root");
    demo_host(&dir);
    // A complete raid5 md9 in another tree, linked into the root's sys/block.
    let mut other = FakeRoot::new(&top.join("outside"), 4);
    let d = other.nvme(40, 8);
    other.md("md9", &MdSpec::level("raid5", 9), &[&d]);
    symlink(other.device_dir("md9"), dir.join("sys/block/md9")).unwrap();
    let outside = tree(&top.join("outside"));

    let out = run(
        &dir,
        json!({"arrays": [{"name": "md*", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let names = out.array_names();
    assert!(!names.contains(&"md9"), "{names:?}");
    let out = run(
        &dir,
        json!({"arrays": [{"name": "md9", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.msg().contains("matches no md array"), "{}", out.msg());
    assert_eq!(
        tree(&top.join("outside")),
        outside,
        "the outside tree was touched"
    );
}

/// BUG (src/host/inventory.rs, `read_array`, and src/sys/root.rs, `read`): the md/ files of an
/// array are read through any symlink, also one leading out of the root, and their text is copied
/// into the report (`level`, `array_state`) or into the error message (a value that does not
/// parse). Whoever can write the root (a container's or chroot's owner, see docs/reliability.md)
/// can make a root-run mdtune print any file of the host, e.g. /etc/shadow. docs/reference.md §4,
/// "Confined to the root": every top-level directory used must resolve inside the root, and md
/// files are read with `O_NOFOLLOW`. Expected: such a file is refused (or treated as absent) and
/// its content never appears in the output.
#[test]
fn files_read_under_sys_are_never_read_through_a_link_out_of_the_root() {
    let top = scratch("read-out");
    let dir = top.join("root");
    let r = demo_host(&dir);
    let secret = outside_file(&top, "shadow", "root:SECRET-HASH:19000:0:99999:7:::\n");
    for attr in ["level", "stripe_cache_size"] {
        let path = r.md_attr("md0", attr);
        let keep = fs::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        symlink(&secret, &path).unwrap();
        let out = run_args(
            &["-"],
            &json!({"root": dir, "check_mode": true, "arrays": [{"name": "md0"}]}).to_string(),
            &[],
        );
        assert!(
            !out.stdout.contains("SECRET-HASH"),
            "md0/md/{attr} linked to a file outside the root: its content is in the output: {}",
            out.stdout
        );
        fs::remove_file(&path).unwrap();
        fs::write(&path, keep).unwrap();
    }
}

/// The lock, the saved originals and the persisted files are never created, rewritten or
/// removed through links in `run/`, `etc/` or `usr/local/sbin/` that lead out of the root.
#[test]
fn persisted_files_and_the_lock_are_never_written_through_a_link_out_of_the_root() {
    let top = scratch("persist-out");
    let dir = top.join("root");
    demo_host(&dir);
    let outside = top.join("outside");
    for (link, name) in [
        ("run", "run"),
        ("etc/mdtune", "etc-mdtune"),
        ("etc/udev", "etc-udev"),
        ("usr", "usr"),
    ] {
        let target = outside.join(name);
        fs::create_dir_all(&target).unwrap();
        let path = dir.join(link);
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(&target, &path).unwrap();
    }
    let before = tree(&outside);
    let out = run_unpackaged(
        &dir,
        json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    let written = changed(&before, &tree(&outside));
    assert!(
        written.is_empty(),
        "written outside the root (run exited {}): {written:?}",
        out.code
    );
    // run/ and usr/ are top-level: refused before anything is read (tests/integration/confinement.rs).
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.msg().contains("leads out of the root"), "{}", out.msg());
    // With run/ and usr/ inside the root, the persisted files still refuse the linked etc/mdtune
    // and etc/udev.
    for top in ["run", "usr"] {
        fs::remove_file(dir.join(top)).unwrap();
        fs::create_dir(dir.join(top)).unwrap();
    }
    let out = run_unpackaged(
        &dir,
        json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.msg().contains("leads out of the root"), "{}", out.msg());
    assert!(changed(&before, &tree(&outside)).is_empty());
}

#[test]
fn a_device_stack_that_loops_or_leaves_sys_does_not_hang_or_escape_the_run() {
    let top = scratch("loops");
    let dir = top.join("root");
    let mut r = FakeRoot::new(&dir, 8);
    // dm-0 and dm-1 each list the other (and themselves) in slaves/: a hostile or broken tree.
    let a = r.dm_linear(0, &[]);
    let b = r.dm_linear(1, &[]);
    let (da, db) = (r.device_dir(&a), r.device_dir(&b));
    for (from, to, name) in [
        (&da, &db, &b),
        (&db, &da, &a),
        (&da, &da, &a),
        (&db, &db, &b),
    ] {
        // Relative, as the kernel makes every sysfs link.
        mdtune_fakeroot::link(&from.join("slaves").join(name), to);
    }
    // dm-2 has one lower device outside the root.
    let c = r.dm_linear(2, &[]);
    let mut other = FakeRoot::new(&top.join("outside"), 4);
    let far = other.nvme(9, 64);
    symlink(
        other.device_dir(&far),
        r.device_dir(&c).join("slaves").join(&far),
    )
    .unwrap();
    r.md("md0", &MdSpec::level("raid5", 1), &[&a, &b]);
    r.md("md1", &MdSpec::level("raid5", 2), &[&c]);
    let start = std::time::Instant::now();
    let out = run(&dir, json!({}));
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Neither array's queues are known, so auto leaves both unchanged, with a warning each.
    assert_eq!(out.json["changed"], false, "{}", out.stdout);
    assert_eq!(out.array("md0")["hw_queues"], Value::Null);
    assert_eq!(out.array("md1")["hw_queues"], Value::Null);
    let warnings = out.json["warnings"].to_string();
    assert!(warnings.contains("deeper than"), "{warnings}");
    assert!(
        warnings.contains("does not resolve inside sys/"),
        "{warnings}"
    );
    assert_eq!(r.read_md("md0", "group_thread_cnt"), "0");
    assert_eq!(r.read_md("md1", "group_thread_cnt"), "0");
}
