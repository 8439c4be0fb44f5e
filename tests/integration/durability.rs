//! What a run reports as written is on the disk when it ends (docs/reference.md §6,
//! docs/reliability.md): every persisted file is synced before its rename and its directory
//! after it, every removal and every directory mdtune creates is followed by a sync of the
//! directory it changed, and so is the undo of a failed `persist`. Seen through strace (`-y`
//! names the file behind each descriptor), on a fresh `persist`, a revert, and a `persist` whose
//! last rename fails so that the files written before it are put back. The power cut itself is
//! the VM suite's (docs/vm-tests.md): this is the order of the calls that makes it survivable.

use crate::common::{bin, require_strace, run_command, scratch, Run};
use crate::common::{needs, Requirement};
use mdtune_fakeroot::demo_host;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::Command;

/// One system call strace saw: its name, its first argument's path (`-y`), the name argument
/// of a `*at` call, and whether it succeeded.
#[derive(Debug)]
struct Call {
    name: String,
    fd_path: String,
    arg: String,
    ok: bool,
}

/// The calls of `trace` (strace -y output) that create, write, sync, rename or remove.
fn calls(trace: &str) -> Vec<Call> {
    trace
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once('(')?;
            let name = name.rsplit(' ').next()?.to_string();
            let fd_path = rest.split_once('<')?.1.split_once('>')?.0.to_string();
            let arg = rest.split('"').nth(1).unwrap_or_default().to_string();
            let ok = l
                .rsplit_once(" = ")
                .is_some_and(|(_, r)| !r.starts_with('-'));
            Some(Call {
                name,
                fd_path,
                arg,
                ok,
            })
        })
        .collect()
}

/// Whether `name` is one of the temp files `write_atomic` makes (`.<name>.mdtune-<pid>`).
fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.contains(".mdtune-")
}

/// Checks every change to a directory of the root in `trace`: a file renamed into place was
/// synced after its last write and before the rename; the directory is synced after each rename,
/// removal (of anything but a temp file) and `mkdirat`, before the next such change. Returns how
/// many changes it checked.
fn assert_durable(trace: &str, root: &Path, what: &str) -> usize {
    let calls = calls(trace);
    let root = root.display().to_string();
    let mut checked = 0;
    for (i, c) in calls.iter().enumerate() {
        let changes_dir = match c.name.as_str() {
            "renameat" | "renameat2" => true,
            "unlinkat" => !is_temp(&c.arg),
            "mkdirat" => true,
            _ => false,
        };
        if !c.ok || !changes_dir || !c.fd_path.starts_with(&root) {
            continue;
        }
        checked += 1;
        if c.name.starts_with("renameat") {
            let file = format!("{}/{}", c.fd_path, c.arg);
            let last_write = calls[..i]
                .iter()
                .rposition(|w| w.name == "write" && w.fd_path == file)
                .unwrap_or_else(|| panic!("{what}: {file} renamed but never written"));
            assert!(
                calls[last_write..i]
                    .iter()
                    .any(|s| s.name == "fsync" && s.fd_path == file && s.ok),
                "{what}: {file} was renamed into place without a sync after its last write"
            );
        }
        let next_change = calls[i + 1..]
            .iter()
            .position(|n| matches!(n.name.as_str(), "renameat" | "renameat2" | "mkdirat"))
            .map_or(calls.len(), |p| i + 1 + p);
        assert!(
            calls[i + 1..next_change]
                .iter()
                .any(|s| s.name == "fsync" && s.fd_path == c.fd_path && s.ok),
            "{what}: {} {}/{} was not followed by a sync of {} before the next change",
            c.name,
            c.fd_path,
            c.arg,
            c.fd_path
        );
    }
    checked
}

/// Runs the build's binary (so that `persist` installs a copy of it too) on `input` with `root`,
/// under strace with `inject` (strace options), and returns the run and what strace saw.
fn traced(root: &Path, mut input: Value, inject: &[&str]) -> (Run, String) {
    require_strace();
    input["root"] = json!(root.display().to_string());
    let log = root.with_extension("strace");
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-y", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=write,fsync,fdatasync,renameat,renameat2,unlinkat,mkdirat",
        ])
        .args(inject)
        .args([bin(), "-"]);
    let out = run_command(cmd, &input.to_string());
    let trace = fs::read_to_string(&log).expect("strace wrote no log");
    (out, trace)
}

#[test]
fn every_persisted_file_and_directory_change_is_synced_in_order_persist_revert_and_undo() {
    if !needs(Requirement::Strace) {
        return;
    }
    let dir = scratch("durable");
    let root = dir.join("root");
    demo_host(&root);
    let input = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let (out, trace) = traced(&root, input.clone(), &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Four files renamed into place, three of them in directories it made (etc/mdtune,
    // usr/local/sbin, etc/udev/rules.d): at least 4 renames and 5 mkdirs checked.
    let checked = assert_durable(&trace, &root, "persist");
    assert!(
        checked >= 9,
        "persist: only {checked} changes seen:\n{trace}"
    );

    let (out, trace) = traced(&root, json!({"state": "reverted"}), &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let checked = assert_durable(&trace, &root, "revert");
    assert!(
        checked >= 4,
        "revert: only {checked} removals seen:\n{trace}"
    );

    // Persisted again, then a new input whose second rename (the binary's, after the state's;
    // the manifest is unchanged) fails: the state written before it is put back, synced too.
    let (out, _) = traced(&root, input, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let changed = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 8192}]});
    fs::remove_file(root.join("usr/local/sbin/mdtune")).unwrap();
    let fail = ["-e", "inject=/^renameat:error=EIO:when=2"];
    let (out, trace) = traced(&root, changed, &fail);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let undone = calls(&trace)
        .iter()
        .filter(|c| c.name.starts_with("renameat") && c.ok)
        .count();
    assert!(undone >= 2, "the undo renamed nothing back:\n{trace}");
    assert_durable(&trace, &root, "undo");
}

#[test]
fn a_persisted_file_whose_directory_sync_fails_is_put_back_with_the_others() {
    if !needs(Requirement::Strace) {
        return;
    }
    // The state file is renamed into place, then the sync of etc/mdtune/ fails (EIO, injected
    // on that directory's second fsync; its first follows the manifest's rename): the new state
    // is there but not durable, so the run fails and puts it back, the manifest too, and no
    // value is written.
    require_strace();
    let dir = scratch("sync-fails");
    let root = dir.join("root");
    let r = demo_host(&root);
    let etc = root.join("etc/mdtune");
    fs::create_dir_all(&etc).unwrap();
    let etc_arg = fs::canonicalize(&etc).unwrap();
    let etc_arg = etc_arg.display().to_string();
    let input = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let inject = ["-P", &etc_arg, "-e", "inject=fsync:error=EIO:when=2"];
    let (out, trace) = traced(&root, input, &inject);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let msg = out.json["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("mdtune.json") && msg.contains("could not be synced"),
        "{msg}"
    );
    assert!(
        trace.contains("fsync(") && trace.contains("(INJECTED)"),
        "no sync failed:\n{trace}"
    );
    for file in ["mdtune.json", "installed.json"] {
        assert!(!etc.join(file).exists(), "{file} was left in place: {msg}");
    }
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "256", "{msg}");
}
