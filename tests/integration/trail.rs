//! When and by whom (docs/reference.md §6, the trail; docs/operations.md), through the real
//! binary on fake roots: every run that changes or fails to change something leaves one line in
//! the system log (read here from a real datagram socket at `<root>/dev/log`) naming the caller
//! and each change, and a record of itself in the lock file that `--show` and `--metrics` read;
//! the persisted state says when and by which version it was written.

use crate::common::{bin, finish_with_input, hold_lock, logged, run, run_command, scratch, syslog};
use crate::common::{needs, Requirement};
use crate::oncall::{mdtune, rolled_out, MANIFEST};
use crate::people::refs;
use mdtune_fakeroot::{demo_host, FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `mdtune -` with `input` (its root set) and only the environment given.
fn run_as(root: &Path, mut input: Value, env: &[(&str, &str)]) -> Value {
    input["root"] = json!(root);
    let mut cmd = Command::new(bin());
    cmd.arg("-").env_clear().envs(env.iter().copied());
    let r = run_command(cmd, &input.to_string());
    assert!(r.json.is_object(), "{}", r.stdout);
    r.json
}

#[test]
fn every_run_that_changes_or_fails_logs_one_line_naming_the_caller_and_the_change() {
    if !needs(Requirement::Root) {
        return;
    }
    let dir = scratch("oncall-trail");
    let r = demo_host(&dir);
    let log = syslog(&dir);
    let ansible = json!({"_ansible_module_name": "mdtune.mdraid.mdtune",
        "_ansible_version": "2.19.0", "arrays": [{"name": "hana_data", "stripe_cache_size": 4096}]});
    run_as(
        &dir,
        ansible.clone(),
        &[("SUDO_USER", "alice"), ("LOGNAME", "root")],
    );
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("<30>mdtune["), "{}", lines[0]);
    assert!(
        lines[0].ends_with(
            "]: ansible mdtune.mdraid.mdtune (ansible 2.19.0), user alice via \
                            sudo: changed md0: group_thread_cnt 0 -> 8, stripe_cache_size 256 -> \
                            4096"
        ),
        "{}",
        lines[0]
    );
    // Converged, a query, check mode and unusable input change nothing: no line.
    run_as(&dir, ansible, &[]);
    run_as(&dir, json!({"state": "query"}), &[]);
    r.set_md("md0", "stripe_cache_size", "1024");
    run_as(&dir, json!({"check_mode": true}), &[]);
    run_as(&dir, json!({"arrays": [{"name": "md9"}]}), &[]);
    assert_eq!(logged(&log), Vec::<String>::new());
    // Salt names itself through MDTUNE_CALLER; persisting names the files.
    run_as(
        &dir,
        json!({"persist": true, "arrays": rolled_out()}),
        &[("MDTUNE_CALLER", "salt mdtune.apply"), ("LOGNAME", "root")],
    );
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("]: salt mdtune.apply, user root: changed md0: stripe_cache_size 1024 -> 4096; md2: group_thread_cnt 0 -> 16; persisted /etc/mdtune/installed.json, /etc/mdtune/mdtune.json, "),
        "{}",
        lines[0]
    );
    // A run that fails to change something: the lock is held, the run gives up.
    r.set_md("md0", "stripe_cache_size", "2048");
    let held = hold_lock(&dir);
    let out = run_as(
        &dir,
        json!({"arrays": rolled_out()}),
        &[("MDTUNE_LOCK_WAIT", "0.1")],
    );
    drop(held);
    assert_eq!(out["failed"], true);
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("<27>mdtune["), "{}", lines[0]);
    assert!(
        lines[0].contains("]: command line, uid 0: FAILED: another mdtune run holds"),
        "{}",
        lines[0]
    );
    // A revert says what it put back and removed.
    run_as(&dir, json!({"state": "reverted"}), &[("USER", "bob")]);
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("]: command line, user bob: reverted md0: "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("stripe_cache_size 2048 -> 256")
            && lines[0].contains("; removed /etc/udev/rules.d/90-mdtune.rules"),
        "{}",
        lines[0]
    );
}

#[test]
fn the_persisted_state_records_when_and_by_which_version_it_was_written() {
    let dir = scratch("oncall-written");
    demo_host(&dir);
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    run(&dir, json!({"persist": true, "arrays": rolled_out()}));
    let manifest = || -> Value {
        serde_json::from_str(&fs::read_to_string(dir.join(MANIFEST)).unwrap()).unwrap()
    };
    let m = manifest();
    let unix = m["written_unix"].as_u64().unwrap();
    assert!(unix >= t0 && unix <= t0 + 60, "{m}");
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    assert!(m["written"].as_str().unwrap().ends_with('Z'), "{m}");
    // The persisted input is the input alone, so a query of it compares equal.
    let state: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("etc/mdtune/mdtune.json")).unwrap())
            .unwrap();
    assert_eq!(state, json!({"arrays": rolled_out()}));
    // The same persist again writes nothing: the time stays that of the change.
    let bytes = fs::read(dir.join(MANIFEST)).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let again = run(&dir, json!({"persist": true, "arrays": rolled_out()}));
    assert_eq!(
        again.json["persist"]["files"],
        json!([]),
        "{}",
        again.stdout
    );
    assert_eq!(fs::read(dir.join(MANIFEST)).unwrap(), bytes);
    let q = run(
        &dir,
        json!({"state": "query", "persist": true, "arrays": rolled_out()}),
    );
    assert_eq!(q.json["compliant"], true, "{}", q.stdout);
    // A manifest of an earlier version (a bare list) is read and kept until the next change.
    fs::write(
        dir.join(MANIFEST),
        "[\"/etc/mdtune/mdtune.json\", \"/etc/udev/rules.d/90-mdtune.rules\"]\n",
    )
    .unwrap();
    let q = run(&dir, json!({"state": "query", "persist": true}));
    assert_eq!(q.json["compliant"], true, "{}", q.stdout);
    assert!(
        q.json["persist"]["compared_with"]
            .get("written")
            .is_some_and(Value::is_null),
        "{}",
        q.stdout
    );
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(
        show.contains("persisted: yes, since an unknown time"),
        "{show}"
    );
    run(&dir, json!({"persist": true, "arrays": [{"name": "*"}]}));
    assert!(
        manifest()["written_unix"].as_u64().unwrap() > unix,
        "{}",
        manifest()
    );
    let (_, show, _) = mdtune(&["--show"], &dir);
    let since = format!(
        "persisted: yes, since {} by mdtune {}",
        manifest()["written"].as_str().unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    assert!(show.contains(&since), "{show}");
}

#[test]
fn the_last_run_is_recorded_in_the_lock_file_and_shown_and_exported() {
    let dir = scratch("oncall-last");
    let r = demo_host(&dir);
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(show.contains("  last run: none since boot"), "{show}");
    run_as(
        &dir,
        json!({"arrays": rolled_out()}),
        &[("SUDO_USER", "alice")],
    );
    let record: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("run/mdtune.lock")).unwrap()).unwrap();
    assert_eq!(
        (
            &record["by"],
            &record["state"],
            &record["changed"],
            &record["failed"]
        ),
        (
            &json!("command line, user alice via sudo"),
            &json!("present"),
            &json!(true),
            &json!(false)
        ),
        "{record}"
    );
    // A query takes no lock, and a converged run writes nothing: the record stays.
    let before = fs::read(dir.join("run/mdtune.lock")).unwrap();
    run(&dir, json!({"state": "query"}));
    run(&dir, json!({"arrays": rolled_out()}));
    assert_eq!(fs::read(dir.join("run/mdtune.lock")).unwrap(), before);
    let (_, show, _) = mdtune(&["--show"], &dir);
    assert!(
        show.contains(&format!(
            "  last run: {} by command line, user alice via sudo, present, changed",
            record["time"].as_str().unwrap()
        )),
        "{show}"
    );
    let (_, metrics, _) = mdtune(&["--metrics"], &dir);
    assert!(
        metrics.contains(&format!(
            "mdtune_last_run_timestamp_seconds{{state=\"present\"}} {}\n",
            record["unix"]
        )),
        "{metrics}"
    );
    assert!(metrics.contains("mdtune_last_run_changed 1\n"), "{metrics}");
    drop(r);
}

/// Fills the queue of the datagram socket at `path`, which nobody reads, until a fresh sender's
/// first datagram would wait: a run's send would wait there too (blocking) for ever.
fn fill(path: &Path) {
    for _ in 0..10_000 {
        let s = UnixDatagram::unbound().unwrap();
        s.set_nonblocking(true).unwrap();
        let mut first = true;
        loop {
            match s.send_to(b"filler", path) {
                Ok(_) => first = false,
                Err(e) if e.kind() == ErrorKind::WouldBlock && first => return,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("cannot fill {}: {e}", path.display()),
            }
        }
    }
    panic!("{} never filled", path.display());
}

/// A changing run on the demo host at `dir`, which must end within 10 s whatever its system log
/// does: its JSON, and its stderr.
fn changing_run(dir: &Path) -> (Value, String) {
    let input = json!({"root": dir, "arrays": [{"name": "hana_data", "stripe_cache_size": 4096}]});
    let child = Command::new(bin())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish_with_input(
        child,
        &input,
        Duration::from_secs(10),
        "a run whose system log does not take its line never ended",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (json, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_full_system_log_never_holds_up_the_answer() {
    if !needs(Requirement::Root) {
        return;
    }
    let dir = scratch("trail-full");
    let r = demo_host(&dir);
    // A logger that never reads (journald hung): its socket's queue is full.
    let log = syslog(&dir);
    fill(&dir.join("dev/log"));
    let (json, stderr) = changing_run(&dir);
    assert_eq!(json["changed"], true, "{json}\n{stderr}");
    assert_eq!(json["failed"], false, "{json}\n{stderr}");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    let said = format!(
        "mdtune: the system log at {} did not take the trail line (Resource temporarily \
         unavailable (os error 11)); the line is dropped\n",
        dir.join("dev/log").display()
    );
    assert_eq!(stderr, said);
    // With a character device at dev/kmsg (/dev/null's numbers), the line goes there instead.
    let kmsg = dir.join("dev/kmsg");
    let made = Command::new("mknod")
        .arg(&kmsg)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(made.success(), "mknod {} failed", kmsg.display());
    r.set_md("md0", "stripe_cache_size", "256");
    let (json, stderr) = changing_run(&dir);
    assert_eq!(json["changed"], true, "{json}\n{stderr}");
    assert!(
        stderr.ends_with(&format!(
            "(os error 11)); it went to the kernel log at {} instead\n",
            kmsg.display()
        )) && stderr.lines().count() == 1,
        "{stderr}"
    );
    // A logger that is gone (its socket left behind) refuses at once, and is said the same way.
    drop(log);
    fs::remove_file(&kmsg).unwrap();
    r.set_md("md0", "stripe_cache_size", "256");
    let (json, stderr) = changing_run(&dir);
    assert_eq!(json["changed"], true, "{json}\n{stderr}");
    assert!(
        stderr.contains("did not take the trail line (Connection refused")
            && stderr.ends_with("; the line is dropped\n"),
        "{stderr}"
    );
}

/// A process, killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_stopped_system_log_never_holds_up_the_answer() {
    // A real logger process (python3 reading a datagram socket), stopped with SIGSTOP, as an
    // rsyslog stopped by a debugger or a job-control accident: its queue fills and stays full.
    let dir = scratch("trail-stopped");
    let r = demo_host(&dir);
    let path = dir.join("dev/log");
    let logger = Killed(
        Command::new("python3")
            .args([
                "-c",
                "import socket, sys\n\
                 s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n\
                 s.bind(sys.argv[1])\n\
                 while True: s.recv(65536)\n",
            ])
            .arg(&path)
            .spawn()
            .expect("python3 is needed: apt-get install python3"),
    );
    let start = std::time::Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "python3 never bound {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = logger.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    // kill(2) returns before the process has stopped: until it has, it may still drain the
    // queue that fill() fills.
    let stat = format!("/proc/{pid}/stat");
    let stopped = || {
        std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')))
            .unwrap_or(false)
    };
    let start = std::time::Instant::now();
    while !stopped() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "python3 never stopped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    fill(&path);
    let (json, stderr) = changing_run(&dir);
    assert_eq!(json["changed"], true, "{json}\n{stderr}");
    assert_eq!(r.read_md("md0", "stripe_cache_size"), "4096");
    assert!(
        stderr.contains("did not take the trail line (Resource temporarily unavailable")
            && stderr.ends_with("; the line is dropped\n"),
        "{stderr}"
    );
    drop(logger);
}

#[test]
fn the_trail_escapes_every_field_from_the_host_as_it_escapes_the_caller() {
    // An array whose kernel name (sys/block/<name>, sys/devices/virtual/block/<name>) holds an
    // escape sequence, a carriage return, a newline and a direction override: raw in the system
    // log, journald would show the line as [blob data], or the newline would fake a second line.
    let dir = scratch("trail-hostile-name");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    let name = "md_a\u{1b}[2J\r\n\u{202e}b";
    r.md(name, &MdSpec::level("raid5", 1), &refs(&d));
    let log = syslog(&dir);
    let out = run(
        &dir,
        json!({"arrays": [{"name": "*", "stripe_cache_size": 4096}]}),
    );
    assert_eq!(out.json["changed"], true, "{}", out.stdout);
    let lines = logged(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        !lines[0].chars().any(|c| c.is_control() || c == '\u{202e}'),
        "a raw control character reached the system log: {}",
        lines[0].escape_debug()
    );
    assert!(
        lines[0]
            .contains(": changed md_a\\x1b[2J\\x0d\\x0a\\u{202e}b: group_thread_cnt 0 -> 4, stripe_cache_size 256 -> 4096"),
        "{}",
        lines[0].escape_debug()
    );
}

#[test]
fn the_trail_reaches_journald_through_the_dev_log_link_systemd_makes() {
    // systemd's /dev/log is a link to /run/systemd/journal/dev-log: the line must reach that
    // socket (under the root), not fall back to the kernel log.
    let dir = scratch("trail-systemd-link");
    demo_host(&dir);
    let journal = dir.join("run/systemd/journal");
    fs::create_dir_all(&journal).unwrap();
    let sock = UnixDatagram::bind(journal.join("dev-log")).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let _ = fs::remove_file(dir.join("dev/log"));
    std::os::unix::fs::symlink("/run/systemd/journal/dev-log", dir.join("dev/log")).unwrap();
    let (json, stderr) = changing_run(&dir);
    assert_eq!(json["changed"], true, "{json}");
    assert!(stderr.is_empty(), "{stderr}");
    let lines = logged(&sock);
    assert!(
        lines.len() == 1 && lines[0].contains("stripe_cache_size 256 -> 4096"),
        "{lines:?}"
    );
}
