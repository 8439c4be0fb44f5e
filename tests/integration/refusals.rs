//! Unusable input (docs/reference.md §1 exit status, §2): a clear error that names the key, the
//! value and what is allowed, exit 2, and nothing written, not even the lock. Bad values, bad
//! JSON, a missing args file, unusable roots in every state, a non-UTF-8 argument, refusals that
//! only planning finds, and numbers beyond 64 bits echoed as given.

use crate::common::{kernel_snapshot, run, run_args, run_unpackaged, scratch};
use mdtune_fakeroot::demo_host;
use serde_json::json;
use std::fs;

#[test]
fn unusable_input_exits_2_with_a_message_naming_key_value_and_range() {
    let dir = scratch("badinput");
    demo_host(&dir);
    let before = kernel_snapshot(&dir);
    let cases = [
        (json!({"thread_polcy": "auto"}), "unknown key thread_polcy"),
        (
            json!({"arrays": [{"name": "md0", "stripe_cache_size": 16}]}),
            "arrays[0].stripe_cache_size: 16 is not allowed; expected an integer 17..32768",
        ),
        (
            json!({"arrays": [{"name": "md0", "group_thread_cnt": 9000}]}),
            "arrays[0].group_thread_cnt: 9000",
        ),
        (
            json!({"arrays": [{"name": "md0", "sync_speed_max": -5}]}),
            "arrays[0].sync_speed_max: -5",
        ),
        (json!({"speed_limit_max": 0}), "speed_limit_max: 0"),
        (json!({"state": "absent"}), "state: \"absent\""),
        (
            json!({"arrays": [{"name": "../../etc"}]}),
            "arrays[0].name: \"../../etc\"",
        ),
        (json!({"arrays": [{"name": "/etc/md0"}]}), "arrays[0].name"),
        (
            json!({"arrays": [{"name": "md9"}]}),
            "arrays[0].name: \"md9\" matches no md array",
        ),
        (
            json!({"arrays": [{"uuid": "00000000:00000000:00000000:00000000"}]}),
            "arrays[0].uuid:",
        ),
        (
            json!({"arrays": [{"name": "md1", "stripe_cache_size": 512}]}),
            "arrays[0].stripe_cache_size: stripe_cache_size is not available: md1 is raid10",
        ),
        (
            json!({"arrays": [{"name": "md0", "preread_bypass_threshold": 1000}]}),
            "exceeds md0's stripe_cache_size",
        ),
    ];
    for (input, want) in cases {
        let out = run(&dir, input.clone());
        assert_eq!(out.code, 2, "{input}: {}", out.stdout);
        assert_eq!(out.json["failed"], true);
        assert!(
            out.msg().contains(want),
            "{input}: {:?} lacks {want:?}",
            out.msg()
        );
    }
    assert_eq!(kernel_snapshot(&dir), before);
    assert!(!dir.join("run/mdtune").exists());
}

#[test]
fn invalid_json_and_missing_args_file_exit_2_with_json() {
    let out = run_args(&["-"], "{\"arrays\": [", &[]);
    assert_eq!(out.code, 2);
    assert!(out.msg().contains("not a JSON object"), "{}", out.stdout);
    let out = run_args(&["/nonexistent/args"], "", &[]);
    assert_eq!(out.code, 2);
    assert!(out.msg().contains("/nonexistent/args"), "{}", out.stdout);
    let out = run_args(&["--frobnicate", "x"], "", &[]);
    assert_eq!(out.code, 2);
    assert_eq!(out.json["failed"], true);
}

#[test]
fn unusable_roots_exit_2_naming_the_path_and_what_is_wrong_in_every_state() {
    let base = scratch("bad-roots");
    let file = base.join("a-file");
    fs::write(&file, "").unwrap();
    let missing = base.join("missing");
    // A FIFO is told apart without waiting for a writer; a path below a file cannot be used.
    fs::write(base.join("a-fifo"), "").unwrap();
    let fifo = crate::kernel_fifo::make_fifo(&base.join("a-fifo"));
    let below = file.join("below");
    for (root, why) in [
        (&file, "is a regular file"),
        (&missing, "does not exist"),
        (&fifo, "is not a directory"),
        (&below, "cannot be used: Not a directory"),
    ] {
        for extra in [
            json!({}),
            json!({"state": "query"}),
            json!({"check_mode": true}),
            json!({"state": "reverted"}),
            json!({"persist": true}),
        ] {
            let out = run_unpackaged(root, extra.clone());
            assert_eq!(out.code, 2, "{extra}: {}", out.stdout);
            let want = format!("root: {} {why}", root.display());
            assert!(
                out.msg().contains(&want),
                "{extra}: {:?} lacks {want:?}",
                out.msg()
            );
        }
        let out = run_args(
            &["--udev", "md0", "--root", root.to_str().unwrap()],
            "",
            &[],
        );
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(
            out.msg().contains(&root.display().to_string()),
            "{}",
            out.msg()
        );
        assert!(out.msg().contains(why), "{}", out.msg());
    }
    assert!(!missing.exists());
    assert_eq!(fs::read(&file).unwrap(), b"");
}

#[test]
fn a_non_utf8_argument_exits_2_without_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let out = std::process::Command::new(crate::common::bin())
        .arg(std::ffi::OsStr::from_bytes(b"/tmp/args-\xff"))
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{json}");
    assert!(
        json["msg"].as_str().unwrap().contains("not valid UTF-8"),
        "{json}"
    );
}

#[test]
fn a_refusal_at_plan_time_writes_nothing_not_even_the_lock() {
    let dir = scratch("refusal-no-lock");
    demo_host(&dir);
    fs::remove_dir_all(dir.join("run")).unwrap();
    for input in [
        json!({"arrays": [{"name": "md9", "stripe_cache_size": 4096}]}),
        json!({"persist": true, "arrays": [{"name": "md1", "stripe_cache_size": 4096}]}),
    ] {
        let out = run(&dir, input);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(!dir.join("run").exists(), "an exit-2 run created run/");
        assert!(!dir.join("etc/mdtune").exists());
    }
}

#[test]
fn numbers_beyond_64_bits_are_echoed_as_given() {
    let dir = scratch("huge-number");
    demo_host(&dir);
    let text = format!(
        r#"{{"root": "{}", "arrays": [{{"name": "md0", "stripe_cache_size": 100000000000000000000000000}}]}}"#,
        dir.display()
    );
    let out = run_args(&["-"], &text, &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.msg()
            .contains("stripe_cache_size: 100000000000000000000000000 is not allowed"),
        "{}",
        out.msg()
    );
}
