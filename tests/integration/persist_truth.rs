//! Whether the next boot replays the persisted state (docs/reference.md §3, §6), through the real
//! binary on fake roots: `--verify`, `--show`, `--metrics` and `{"state": "query"}` agree that a
//! rule udevd would not run as `persist` wrote it (gone, commented out, another action, another
//! command, another match, masked by a link, its binary gone or not root's) is not in force; the
//! files root replays are refused unless root owns them and only root may write them; and a
//! garbage state or manifest gets the exit status the reference promises and blocks no revert.

use crate::common::{needs, Requirement};
use crate::common::{run, run_unpackaged, scratch};
use crate::oncall::{mdtune, MANIFEST};
use crate::persistence::{BINARY, RULE, STATE};
use mdtune_fakeroot::{demo_host, FakeRoot};
use serde_json::json;
use std::fs;
use std::os::unix::fs::{chown, symlink, PermissionsExt};
use std::path::{Path, PathBuf};

fn persisted_with_copy(name: &str) -> (PathBuf, FakeRoot) {
    let dir = scratch(name);
    let r = demo_host(&dir);
    let input = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let out = run_unpackaged(&dir, input);
    assert_eq!(out.code, 0, "{}", out.stdout);
    (dir, r)
}

/// `--verify`'s exit status and what it and `--show` print, `--metrics`' rule gauge, and the
/// JSON query's `compliant`.
fn looked(dir: &Path) -> (i32, String, String, String, bool) {
    let (code, out, err) = mdtune(&["--verify"], dir);
    let (_, show, _) = mdtune(&["--show"], dir);
    let (_, metrics, _) = mdtune(&["--metrics"], dir);
    let gauge = metrics
        .lines()
        .find(|l| l.starts_with("mdtune_persist_rule_in_force "))
        .unwrap_or("")
        .to_string();
    let query = run(dir, json!({"state": "query"}));
    (
        code,
        format!("{out}{err}"),
        show,
        gauge,
        query.json["compliant"] == true,
    )
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_rule_that_would_not_replay_at_the_next_boot_is_not_in_force_for_verify_show_metrics_and_query()
{
    let (dir, _r) = persisted_with_copy("truth-rule");
    let (rule, binary) = (dir.join(RULE), dir.join(BINARY));
    let text = fs::read_to_string(&rule).unwrap();
    let (code, out, _, gauge, compliant) = looked(&dir);
    assert_eq!(
        (code, gauge.as_str(), compliant),
        (0, "mdtune_persist_rule_in_force 1", true),
        "{out}"
    );
    let active = text
        .lines()
        .find(|l| l.starts_with("SUBSYSTEM"))
        .unwrap()
        .to_string();
    // The rule's one line continued over two, as udevd joins it: still in force.
    let continued = active.replacen(", KERNEL", ", \\\n  KERNEL", 1);
    fs::write(&rule, text.replace(&active, &continued)).unwrap();
    let (code, out, _, gauge, _) = looked(&dir);
    assert_eq!(
        (code, gauge.as_str()),
        (0, "mdtune_persist_rule_in_force 1"),
        "{out}"
    );
    let edits: [(&str, String); 6] = [
        (
            "commented out",
            text.replace(&active, &format!("# {active}")),
        ),
        ("ACTION remove", text.replace("add|change", "remove")),
        (
            "RUN elsewhere",
            text.replace("/usr/local/sbin/mdtune --udev", "/usr/bin/true --udev"),
        ),
        (
            "KERNEL sd*",
            text.replace("KERNEL==\"md*\"", "KERNEL==\"sd*\""),
        ),
        (
            "SUBSYSTEM net",
            text.replace("SUBSYSTEM==\"block\"", "SUBSYSTEM==\"net\""),
        ),
        ("emptied", String::new()),
    ];
    for (what, edited) in edits {
        fs::write(&rule, edited).unwrap();
        let (code, out, show, gauge, compliant) = looked(&dir);
        assert_eq!(code, 3, "{what}: {out}");
        assert_eq!(gauge, "mdtune_persist_rule_in_force 0", "{what}");
        assert!(!compliant, "{what}: the query says compliant");
        for said in [out.as_str(), show.as_str()] {
            assert!(said.contains("persist: true"), "{what}: no fix in:\n{said}");
            assert!(
                said.contains("90-mdtune.rules"),
                "{what}: no rule named in:\n{said}"
            );
        }
    }
    fs::write(&rule, &text).unwrap();
    // The binary it runs: not executable, writable by others, gone.
    type Spoil = fn(&Path);
    let binary_cases: [(&str, Spoil); 3] = [
        ("not executable", |b| set_mode(b, 0o644)),
        ("writable by others", |b| set_mode(b, 0o757)),
        ("gone", |b| fs::remove_file(b).unwrap()),
    ];
    let copy = fs::read(&binary).unwrap();
    for (what, spoil) in binary_cases {
        spoil(&binary);
        let (code, out, show, gauge, compliant) = looked(&dir);
        assert_eq!(
            (code, gauge.as_str(), compliant),
            (3, "mdtune_persist_rule_in_force 0", false),
            "{what}: {out}"
        );
        assert!(
            out.contains("/usr/local/sbin/mdtune") && show.contains("persist: true"),
            "{what}: {out}\n{show}"
        );
        fs::write(&binary, &copy).unwrap();
        set_mode(&binary, 0o755);
    }
    // Masked: a link to /dev/null in its place.
    fs::remove_file(&rule).unwrap();
    symlink("/dev/null", &rule).unwrap();
    let (code, out, _, gauge, _) = looked(&dir);
    assert_eq!(
        (code, gauge.as_str()),
        (3, "mdtune_persist_rule_in_force 0"),
        "{out}"
    );
    // Gone.
    fs::remove_file(&rule).unwrap();
    let (code, out, _, gauge, _) = looked(&dir);
    assert_eq!(
        (code, gauge.as_str()),
        (3, "mdtune_persist_rule_in_force 0"),
        "{out}"
    );
    // persist: true again puts it back.
    let again = run_unpackaged(
        &dir,
        json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert_eq!(looked(&dir).0, 0);
}

/// Gives `path` to user 65534 with mode 0666.
fn give_away(path: &Path) {
    chown(path, Some(65534), Some(65534)).unwrap();
    set_mode(path, 0o666);
}

#[test]
fn files_root_replays_are_used_only_when_root_owns_them_and_only_root_may_write_them() {
    if !needs(Requirement::Root) {
        return;
    }
    let (dir, r) = persisted_with_copy("truth-owner");
    r.set_md("md0", "stripe_cache_size", "256");
    give_away(&dir.join(STATE));
    let (code, changed) = crate::persistence::udev(&dir, "md0");
    assert_eq!((code, changed), (1, false));
    assert_eq!(
        r.read_md("md0", "stripe_cache_size"),
        "256",
        "--udev applied it"
    );
    let (code, out, err) = mdtune(&["--udev", "md0"], &dir);
    let said = format!("{out}{err}");
    for word in [
        "/etc/mdtune/mdtune.json",
        "65534",
        "0666",
        "chown root:root",
        "persist: true",
    ] {
        assert!(said.contains(word), "no {word:?} in {said}");
    }
    assert_eq!(code, 1);
    let (code, out, _) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("/etc/mdtune/mdtune.json") && out.contains("65534"),
        "{out}"
    );
    // A run that loads the state does not use it: not compliant, and says why.
    let q = run(&dir, json!({"state": "query"}));
    assert_eq!(q.json["compliant"], false, "{}", q.stdout);
    assert!(q.stdout.contains("0666"), "{}", q.stdout);
    // persist: true again makes it root's and 0644.
    let input = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    assert_eq!(run_unpackaged(&dir, input.clone()).code, 0);
    let m = fs::metadata(dir.join(STATE)).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o644);
    // The rule, the manifest and the binary: each not root's is not in force.
    for file in [RULE, MANIFEST, BINARY] {
        let path = dir.join(file);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        give_away(&path);
        let (code, out, _) = mdtune(&["--verify"], &dir);
        assert_eq!(code, 3, "{file}: {out}");
        assert!(
            out.contains(&format!("/{file}")) && out.contains("65534"),
            "{file}: {out}"
        );
        chown(&path, Some(0), Some(0)).unwrap();
        set_mode(&path, mode);
        assert_eq!(mdtune(&["--verify"], &dir).0, 0, "{file}");
    }
}

#[test]
fn a_garbage_state_file_gets_the_exit_statuses_the_reference_promises() {
    let (dir, r) = persisted_with_copy("truth-garbage-state");
    r.set_md("md0", "stripe_cache_size", "256");
    for garbage in [
        "{\"arrays\": [{\"name\": \"md0\", \"stripe_ca",
        "\u{0}\u{1}garbage",
    ] {
        fs::write(dir.join(STATE), garbage).unwrap();
        // --verify: the persisted state cannot be read: it could not check.
        let (code, out, err) = mdtune(&["--verify"], &dir);
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains("/etc/mdtune/mdtune.json"), "{err}");
        // --udev: a persisted state that cannot be used is exit 1, nothing written.
        let (code, _) = crate::persistence::udev(&dir, "md0");
        assert_eq!(code, 1);
        assert_eq!(r.read_md("md0", "stripe_cache_size"), "256");
        // A run with persist unset: a warning, not compliant, exit 0.
        let q = run(
            &dir,
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 256}]}),
        );
        assert_eq!(
            (q.code, &q.json["compliant"]),
            (0, &json!(false)),
            "{}",
            q.stdout
        );
    }
}

#[test]
fn a_garbage_manifest_fails_persist_and_verify_as_promised() {
    let (dir, _r) = persisted_with_copy("truth-garbage-manifest");
    fs::write(dir.join(MANIFEST), "[\"/etc/mdt").unwrap();
    let (code, out, err) = mdtune(&["--verify"], &dir);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("/etc/mdtune/installed.json"), "{err}");
    let input = json!({"persist": true, "arrays": [{"name": "md0", "stripe_cache_size": 4096}]});
    let out = run_unpackaged(&dir, input);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("/etc/mdtune/installed.json"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_revert_removes_the_rule_and_files_and_restores_originals_when_the_state_or_manifest_is_garbage(
) {
    for garbage in [STATE, MANIFEST] {
        let label = format!("truth-revert-{}", garbage.rsplit('/').next().unwrap());
        let (dir, r) = persisted_with_copy(&label);
        assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
        fs::write(dir.join(garbage), "{\"trunc").unwrap();
        let out = run(&dir, json!({"state": "reverted"}));
        assert_eq!(out.code, 0, "{garbage}: {}", out.stdout);
        assert_eq!(r.read_md("md0", "stripe_cache_size"), "256", "{garbage}");
        if garbage == MANIFEST {
            // Without the manifest it is not known that persist installed the binary: kept, said.
            assert!(dir.join(BINARY).exists());
            let w = out.json["warnings"].to_string();
            assert!(w.contains("/usr/local/sbin/mdtune is kept"), "{w}");
        }
        for file in [RULE, STATE, MANIFEST] {
            assert!(!dir.join(file).exists(), "{garbage}: {file} is still there");
        }
        assert!(
            !dir.join("run/mdtune")
                .read_dir()
                .unwrap()
                .any(|e| { e.unwrap().file_name().to_string_lossy().ends_with(".json") }),
            "{garbage}: saved originals left"
        );
    }
}
