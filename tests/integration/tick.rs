//! `mdtune --tick` (docs/reference.md §1) through the real binary: its JSON object and exit
//! status, and the promise of §4 that `--textfile DIR` writes through no planted name. The
//! textfile's directory is usually owned by another user (`prometheus` owns
//! `/var/lib/prometheus`, and so `node-exporter/` in it), who may plant links and FIFOs there.
//! Each test plants one such thing in a directory owned by `nobody` (uid 65534; made by root
//! and handed over with `chown -h`, which is all that matters: what mdtune does with it), beside
//! a victim file (`/etc/shadow`'s stand-in, root's, mode 0600), runs a tick as root, and checks
//! that the victim's content and mode are unchanged and that either the textfile was written as
//! a regular file of mode 0644, or the tick failed (exit 1) naming the directory and why.
//!
//! The units these replace (`mdtune-metrics.service`) wrote the file with
//! [`OLD_UNIT`]: `mkdir -p "$d"` and `>"$d/.mdtune.prom.tmp"` follow links, and `chmod` follows
//! the planted name too, so a `.mdtune.prom.tmp -> /etc/shadow` had the metrics written into
//! the victim and its mode set to 0644, and a directory (or its parent) swapped for a link to
//! `/etc` had `mdtune.prom` written there. [`the_old_units_command_wrote_through_what_was_planted`]
//! runs that command on the same plants and shows the checks below catch it. A link or a FIFO
//! in `mdtune.prom`'s own place was harmless then too (`mv -f` replaces the name).
//! Needs root (chown).

use crate::common::{bin, run_args, scratch};
use crate::common::{needs, Requirement};
use std::fs;
use std::os::unix::fs::{chown, lchown, symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The removed `mdtune-metrics.service`'s command, as systemd ran it (`$$` unescaped).
const OLD_UNIT: &str = r#"d="${TEXTFILE_DIR}"; t="$d/.mdtune.prom.tmp"; mkdir -p "$d"; "${MDTUNE:-/usr/sbin/mdtune}" --metrics --root "${MDTUNE_ROOT:-/}" >"$t" || { rm -f "$t"; exit 1; }; chmod 0644 "$t"; mv -f "$t" "$d/mdtune.prom""#;

const NOBODY: u32 = 65534;
const SECRET: &[u8] = b"root:$6$secret:19000:0:99999:7:::\n";

/// One test's layout: `top/host` (a demo host), `top/var/lib/prometheus` (nobody's) with
/// `node-exporter` in it (the textfile directory, nobody's), `top/etc/shadow` (the victim) and
/// `top/etc` also holding a victim `mdtune.prom`, as a directory an attacker would aim at.
struct Site {
    top: PathBuf,
    host: PathBuf,
    parent: PathBuf,
    dir: PathBuf,
    victims: [PathBuf; 2],
}

impl Site {
    fn new(label: &str) -> Site {
        let top = scratch(label);
        let host = top.join("host");
        mdtune_fakeroot::demo_host(&host);
        let parent = top.join("var/lib/prometheus");
        let dir = parent.join("node-exporter");
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(top.join("etc")).unwrap();
        let victims = [top.join("etc/shadow"), top.join("etc/mdtune.prom")];
        for v in &victims {
            fs::write(v, SECRET).unwrap();
            fs::set_permissions(v, fs::Permissions::from_mode(0o600)).unwrap();
        }
        for d in [&parent, &dir] {
            give(d);
        }
        Site {
            top,
            host,
            parent,
            dir,
            victims,
        }
    }

    /// Plants a link at `at` to `to`, owned by nobody.
    fn link(&self, to: &Path, at: &Path) {
        symlink(to, at).unwrap();
        give(at);
    }

    /// Runs `mdtune --tick --root host --textfile dir`.
    fn tick(&self) -> crate::common::Run {
        let (host, dir) = (self.host.to_str().unwrap(), self.dir.to_str().unwrap());
        run_args(&["--tick", "--root", host, "--textfile", dir], "", &[])
    }

    /// Runs the removed unit's command on the same directory.
    fn old_unit(&self) {
        let status = Command::new("/bin/sh")
            .args(["-ec", OLD_UNIT])
            .env("TEXTFILE_DIR", &self.dir)
            .env("MDTUNE", bin())
            .env("MDTUNE_ROOT", &self.host)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Whether every victim still has its content and mode 0600 (a link in its place, or a
    /// file of other content or mode, is not).
    fn victims_untouched(&self) -> bool {
        self.victims.iter().all(|v| {
            let m = fs::symlink_metadata(v).unwrap();
            m.is_file() && m.mode() & 0o7777 == 0o600 && fs::read(v).unwrap() == SECRET
        })
    }

    /// The tick's promise: victims untouched, and either `mdtune.prom` written (a regular file,
    /// 0644, root's, the metrics) with exit 0, or exit 1 with a msg naming `named` and `why`.
    fn assert_safe(&self, out: &crate::common::Run, named: &Path, why: &str) {
        assert!(self.victims_untouched(), "a victim changed: {}", out.stdout);
        if out.code == 0 {
            let prom = self.dir.join("mdtune.prom");
            let m = fs::symlink_metadata(&prom).unwrap();
            assert!(m.is_file(), "{} is not a regular file", prom.display());
            assert_eq!(m.mode() & 0o7777, 0o644);
            assert_eq!(m.uid(), 0);
            let text = fs::read_to_string(&prom).unwrap();
            assert!(text.contains("mdtune_info{"), "{text}");
            assert_eq!(out.json["textfile"], prom.to_str().unwrap());
        } else {
            assert_eq!(out.code, 1, "{}", out.stdout);
            assert_eq!(out.json["failed"], true);
            let msg = out.msg();
            assert!(msg.contains(named.to_str().unwrap()), "{msg}");
            assert!(msg.contains(why), "{msg}");
        }
    }
}

/// `chown -h nobody:nogroup`: the planting user's.
fn give(path: &Path) {
    lchown(path, Some(NOBODY), Some(NOBODY)).expect("chown: this test needs root");
}

#[test]
fn a_tick_with_nothing_to_do_exits_0_and_writes_the_textfile_0644() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-plain");
    let out = site.tick();
    assert_eq!(out.code, 0, "{}", out.stdout);
    for key in ["resumed", "ended", "recorded"] {
        assert_eq!(out.json[key], serde_json::json!([]), "{key}");
    }
    assert_eq!(out.json["changed"], false);
    assert!(out.msg().starts_with("nothing to do"), "{}", out.msg());
    site.assert_safe(&out, &site.dir, "");
    let names: Vec<_> = fs::read_dir(&site.dir).unwrap().flatten().collect();
    assert_eq!(names.len(), 1, "only mdtune.prom is left");
    // The same text --metrics prints.
    let metrics = run_args(
        &["--metrics", "--root", site.host.to_str().unwrap()],
        "",
        &[],
    );
    let written = fs::read_to_string(site.dir.join("mdtune.prom")).unwrap();
    let strip = |t: &str| {
        t.lines()
            .filter(|l| !l.contains("timestamp"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&written), strip(&metrics.stdout));
}

#[test]
fn a_textfile_directory_that_is_a_link_is_not_followed() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-dir-link");
    fs::remove_dir(&site.dir).unwrap();
    site.link(&site.top.join("etc"), &site.dir);
    let out = site.tick();
    site.assert_safe(&out, &site.dir, "symbolic link");
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(fs::read_dir(site.top.join("etc")).unwrap().count(), 2);
}

#[test]
fn a_textfile_directory_whose_parent_is_a_link_is_not_followed() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-parent-link");
    let elsewhere = site.top.join("elsewhere");
    fs::rename(&site.parent, &elsewhere).unwrap();
    fs::remove_dir(elsewhere.join("node-exporter")).unwrap();
    site.link(&site.top.join("etc"), &elsewhere.join("node-exporter"));
    site.link(&elsewhere, &site.parent);
    let out = site.tick();
    site.assert_safe(&out, &site.parent, "symbolic link");
    assert_eq!(out.code, 1, "{}", out.stdout);
}

#[test]
fn a_planted_temporary_name_is_never_opened() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-temp-link");
    let planted = site.dir.join(".mdtune.prom.tmp");
    site.link(&site.victims[0], &planted);
    let out = site.tick();
    site.assert_safe(&out, &site.dir, "");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(fs::read_link(&planted).unwrap(), site.victims[0]);
}

#[test]
fn a_link_in_the_textfiles_place_is_replaced_not_followed() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-prom-link");
    site.link(&site.victims[0], &site.dir.join("mdtune.prom"));
    let out = site.tick();
    site.assert_safe(&out, &site.dir, "");
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn a_fifo_in_the_textfiles_place_is_replaced_without_being_opened() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-prom-fifo");
    let prom = site.dir.join("mdtune.prom");
    let made = Command::new("mkfifo").arg(&prom).status().unwrap();
    assert!(made.success());
    chown(&prom, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = site.tick();
    site.assert_safe(&out, &site.dir, "");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!fs::symlink_metadata(&prom).unwrap().file_type().is_fifo());
}

#[test]
fn a_host_that_cannot_be_read_fails_the_tick_and_keeps_the_old_textfile() {
    if !needs(Requirement::Root) {
        return;
    }
    let site = Site::new("tick-no-host");
    fs::write(site.dir.join("mdtune.prom"), "old 1\n").unwrap();
    // A limit the kernel would never print: the host cannot be read (as `--metrics` exits 1).
    fs::write(
        site.host.join("proc/sys/dev/raid/speed_limit_min"),
        "garbage\n",
    )
    .unwrap();
    let out = site.tick();
    assert_eq!(fs::read(site.dir.join("mdtune.prom")).unwrap(), b"old 1\n");
    assert!(out.code != 0, "{}", out.stdout);
    assert_eq!(
        fs::read_dir(&site.dir).unwrap().count(),
        1,
        "no temporary file"
    );
}

#[test]
fn unusable_tick_arguments_exit_2_saying_what_is_allowed() {
    for (args, says) in [
        (&["--tick", "--textfile", "relative/dir"][..], "is relative"),
        (&["--tick", "--textfile", ""][..], "is empty"),
        (&["--tick", "--textfile"][..], "needs a directory"),
        (&["--tick", "--now"][..], "unknown argument"),
        (
            &["--tick", "--root", "/nonexistent-mdtune-root"][..],
            "does not exist",
        ),
    ] {
        let out = run_args(args, "", &[]);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.msg().contains(says), "{args:?}: {}", out.msg());
        assert!(out.stderr.is_empty(), "{}", out.stderr);
    }
}

/// The checks above, on the removed unit's command: each plant it wrote through is caught.
#[test]
fn the_old_units_command_wrote_through_what_was_planted() {
    if !needs(Requirement::Root) {
        return;
    }
    let temp = Site::new("tick-old-temp");
    temp.link(&temp.victims[0], &temp.dir.join(".mdtune.prom.tmp"));
    temp.old_unit();
    assert!(
        !temp.victims_untouched(),
        "the old unit wrote into the victim"
    );
    let m = fs::metadata(&temp.victims[0]).unwrap();
    assert_eq!(m.mode() & 0o777, 0o644, "and made it readable by all");

    let dir = Site::new("tick-old-dir");
    fs::remove_dir(&dir.dir).unwrap();
    dir.link(&dir.top.join("etc"), &dir.dir);
    dir.old_unit();
    assert!(
        !dir.victims_untouched(),
        "the old unit replaced etc/mdtune.prom"
    );
}
