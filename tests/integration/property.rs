//! Property test: random runs (present, check mode, query, persist, revert, udev replays and
//! reboots, in random order) on random fake hosts, with a fixed seed. After every run it checks
//! what the contract promises of every report:
//!
//! - `changed` is true exactly when a file under the root changed (for a real run), and a check
//!   mode run's `changed` and `compliant` are what the same real run then reports;
//! - every setting's `before` is the file's value before the run, and `after` the value after it
//!   (a real run) or the same file untouched (check mode, query);
//! - `compliant` is what a fresh query of the same input says just before the run, and a real
//!   `present` run that succeeded leaves a host that a fresh query calls compliant;
//! - `compliant` agrees with what was read: never for a run that checked nothing, never for an
//!   array with a file that read empty, and only when every setting read is the one wanted;
//! - `persist.diverged` lists exactly the settings that the persisted file (run as a query)
//!   wants otherwise than a run without `persist`;
//! - a revert's `persist.files` are exactly the persisted files and originals it removed, and its
//!   `changed` is true whenever it restored or removed something, even when a later step failed;
//! - exit 2 wrote nothing, not even the lock or a directory;
//! - no file outside the root changed, even when a link in the root points out of it.
//!
//! Most runs call the library's entry point in-process (thousands of runs in seconds); a few
//! hosts are driven through the real binary. `MDTUNE_PROPERTY_RUNS` and `MDTUNE_PROPERTY_SEED`
//! change the amount and the seed; a failure names the seed, the host and the step.

use crate::common::run_args;
use mdtune::run::{self, Exit};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// xorshift64*: small, fast and deterministic; statistical quality is beside the point here.
struct Rng(u64);

impl Rng {
    /// The generator of host `host` under `seed`: splitmix64 of both, never zero (xorshift's
    /// one fixed point).
    fn for_host(seed: u64, host: usize) -> Rng {
        let mut z = seed.wrapping_add((host as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)).max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What is under a directory: every file's content, every link's target, every directory.
type Tree = BTreeMap<PathBuf, Node>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    File(Vec<u8>),
    /// A file too big to read on every snapshot (an installed binary): its size, inode and
    /// modification time, which a rewrite (temp file and rename) always changes.
    Big(u64, u64, i64, i64),
    Link(PathBuf),
    Dir,
}

/// The contents of the files read so far, by path, with the size, inode and modification time
/// they had then: a file whose metadata did not change is not read again.
type Cache = std::collections::HashMap<PathBuf, ((u64, u64, i64, i64), Vec<u8>)>;

thread_local! {
    static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(Cache::new());
}

fn tree(dir: &Path) -> Tree {
    use std::os::unix::fs::MetadataExt;
    let mut out = Tree::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let meta = fs::symlink_metadata(&p).unwrap();
            let key = (meta.len(), meta.ino(), meta.mtime(), meta.mtime_nsec());
            let node = if meta.file_type().is_symlink() {
                Node::Link(fs::read_link(&p).unwrap())
            } else if meta.is_dir() {
                stack.push(p.clone());
                Node::Dir
            } else if meta.file_type().is_file() && meta.len() > 65536 {
                Node::Big(key.0, key.1, key.2, key.3)
            } else if meta.file_type().is_file() {
                Node::File(CACHE.with_borrow_mut(|c| match c.get(&p) {
                    Some((k, bytes)) if *k == key => bytes.clone(),
                    _ => {
                        let bytes = fs::read(&p).unwrap();
                        c.insert(p.clone(), (key, bytes.clone()));
                        bytes
                    }
                }))
            } else {
                continue; // sockets
            };
            out.insert(rel, node);
        }
    }
    out
}

/// The files (not directories) that differ between two trees, without the lock file, which
/// holds nothing.
fn changed_files(before: &Tree, after: &Tree) -> Vec<PathBuf> {
    fn file<'a>(t: &'a Tree, p: &PathBuf) -> Option<&'a Node> {
        t.get(p).filter(|n| **n != Node::Dir)
    }
    before
        .keys()
        .chain(after.keys().filter(|p| !before.contains_key(*p)))
        .filter(|p| !p.ends_with("run/mdtune.lock"))
        .filter(|p| file(before, p) != file(after, p))
        .cloned()
        .collect()
}

/// A value as the report types it, as text: `"1"`/`"0"` for booleans, `"system"`, or digits.
fn report_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "1" } else { "0" }.to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value as a fake kernel file holds it, in the same form as [`report_value`].
fn file_value(text: &str, boolean: bool) -> String {
    let t = text.trim();
    if t == "system" || t.ends_with("(system)") {
        return "system".to_string();
    }
    let t = t.trim_end_matches(" (local)");
    if boolean {
        return if t == "0" { "0" } else { "1" }.to_string();
    }
    t.to_string()
}

const LEVELS: &[&str] = &["raid5", "raid6", "raid4", "raid1", "raid10", "raid0"];

/// One random host: `root/` is the system root, `outside/` a sibling that no run may touch.
struct Host {
    base: PathBuf,
    root: PathBuf,
    names: Vec<String>,
    devnames: Vec<String>,
    uuids: Vec<String>,
    fake: FakeRoot,
}

fn random_host(rng: &mut Rng, base: PathBuf) -> Host {
    let _ = fs::remove_dir_all(&base);
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(outside.join("rules")).unwrap();
    fs::write(outside.join("rules/keep.rules"), "# not mdtune's\n").unwrap();
    fs::write(outside.join("mdtune"), "not mdtune's binary\n").unwrap();
    fs::write(outside.join("kmsg"), "").unwrap();
    fs::create_dir_all(outside.join("saved")).unwrap();
    let mut fake = FakeRoot::new(&root, *rng.pick(&[4, 8, 32]));
    let (mut names, mut devnames, mut uuids) = (Vec::new(), Vec::new(), Vec::new());
    let mut ctrl = 0;
    for i in 0..1 + rng.below(3) {
        let level = *rng.pick(LEVELS);
        let members: Vec<String> = (0..2 + rng.below(2))
            .map(|_| {
                ctrl += 1;
                if rng.chance(70) {
                    let q = *rng.pick(&[1, 2, 4]);
                    fake.nvme(ctrl, q)
                } else {
                    fake.scsi(&format!("sd{}", (b'a' + ctrl as u8) as char), 1)
                }
            })
            .collect();
        let m: Vec<&str> = members.iter().map(String::as_str).collect();
        let mut spec = MdSpec::level(level, 0x1000 + i as u32).devname(&format!("data{i}"));
        if rng.chance(8) {
            spec.array_state = "inactive".into();
        }
        let name = if rng.chance(15) {
            format!("md_vol-{i}")
        } else {
            format!("md{i}")
        };
        fake.md(&name, &spec, &m);
        // An array being stopped reads empty (until the next reboot rewrites its files).
        if rng.chance(4) && fake.md_attr(&name, "group_thread_cnt").exists() {
            fake.set_md(&name, "group_thread_cnt", "");
        }
        uuids.push(spec.uuid.clone());
        names.push(name);
        devnames.push(format!("data{i}"));
    }
    // Some hosts have a link in the root that leads out of it, where mdtune writes.
    if rng.chance(20) {
        let (link, target): (&str, &str) = *rng.pick(&[
            ("etc/udev/rules.d", "rules"),
            ("usr/local/sbin/mdtune", "mdtune"),
            ("run/mdtune", "saved"),
            ("dev/kmsg", "kmsg"),
            ("etc/mdtune", "saved"),
        ]);
        let link = root.join(link);
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(outside.join(target), link).unwrap();
    }
    Host {
        base,
        root,
        names,
        devnames,
        uuids,
        fake,
    }
}

fn random_entry(rng: &mut Rng, host: &Host) -> Value {
    let i = rng.below(host.names.len());
    let mut e = match rng.below(10) {
        0..=3 => json!({"name": "md*"}),
        4..=6 => json!({"name": host.names[i]}),
        7 => json!({"name": host.devnames[i]}),
        8 => json!({"uuid": host.uuids[i]}),
        _ if rng.chance(30) => json!({"name": "md9"}), // matches nothing: exit 2
        _ => json!({"name": format!("/dev/md/{}", host.devnames[i])}),
    };
    let settings: &[(&str, &[Value])] = &[
        ("stripe_cache_size", &[json!(256), json!(512), json!(4096)]),
        (
            "group_thread_cnt",
            &[json!("auto"), json!("off"), json!(2), json!(8)],
        ),
        (
            "sync_speed_max",
            &[json!("system"), json!(50000), json!(200000)],
        ),
        ("sync_speed_min", &[json!("system"), json!(1000)]),
        ("skip_copy", &[json!(true), json!(false)]),
        (
            "preread_bypass_threshold",
            &[json!(0), json!(1), json!(100)],
        ),
        ("sync_force_parallel", &[json!(true), json!(false)]),
    ];
    for (key, values) in settings {
        if rng.chance(30) {
            e[*key] = rng.pick(values).clone();
        }
    }
    e
}

/// A random input. The state and check mode are chosen by the caller.
fn random_input(rng: &mut Rng, host: &Host) -> Value {
    let mut input = json!({"diff": true});
    if rng.chance(85) {
        let entries: Vec<Value> = (0..1 + rng.below(2))
            .map(|_| random_entry(rng, host))
            .collect();
        input["arrays"] = json!(entries);
    }
    if rng.chance(40) {
        input["thread_policy"] = rng.pick(&[json!("auto"), json!("off"), json!(4)]).clone();
    }
    if rng.chance(20) {
        input["speed_limit_max"] = rng.pick(&[json!(200000), json!(300000)]).clone();
    }
    if rng.chance(10) {
        input["speed_limit_min"] = rng.pick(&[json!(1000), json!(5000)]).clone();
    }
    if rng.chance(20) {
        input["persist"] = json!(true);
    }
    if rng.chance(2) {
        input["stripe_cache"] = json!(1); // unknown key: exit 2
    }
    input
}

/// Runs the module in-process or through the binary.
fn execute(binary: bool, input: &Value) -> (Value, Exit) {
    let text = input.to_string();
    let (out, code) = if binary {
        let r = run_args(&["-"], &text, &[]);
        let code = match r.code {
            0 => Exit::Ok,
            1 => Exit::Failed,
            2 => Exit::Input,
            other => panic!("exit status {other}: {}", r.stdout),
        };
        (r.stdout, code)
    } else {
        run::module(&text)
    };
    let json: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(json["failed"] == true, code != Exit::Ok, "{out}");
    (json, code)
}

/// The kernel file behind a report's setting.
fn setting_file(root: &Path, target: &str, setting: &str) -> PathBuf {
    if target == "system" {
        root.join("proc/sys/dev/raid").join(setting)
    } else {
        root.join("sys/block").join(target).join("md").join(setting)
    }
}

/// Every `(target, setting, before, after, changed)` in a report.
fn settings(report: &Value) -> Vec<(String, String, Value, Value, bool)> {
    let mut out = Vec::new();
    for a in report["arrays"].as_array().into_iter().flatten() {
        let name = a["name"].as_str().unwrap().to_string();
        for (k, s) in a["settings"].as_object().into_iter().flatten() {
            let s = s.clone();
            out.push((
                name.clone(),
                k.clone(),
                s["before"].clone(),
                s["after"].clone(),
                s["changed"] == true,
            ));
        }
    }
    for (k, s) in report["system"].as_object().into_iter().flatten() {
        out.push((
            "system".into(),
            k.clone(),
            s["before"].clone(),
            s["after"].clone(),
            s["changed"] == true,
        ));
    }
    out
}

fn read_value(root: &Path, target: &str, setting: &str) -> String {
    let text = fs::read_to_string(setting_file(root, target, setting)).unwrap();
    file_value(
        &text,
        matches!(setting, "skip_copy" | "sync_force_parallel"),
    )
}

/// What a reboot does: kernel defaults back, `run/` empty; `etc/` and `usr/` stay.
fn reboot(host: &Host) {
    for name in &host.names {
        for (attr, default) in [
            ("group_thread_cnt", "0"),
            ("stripe_cache_size", "256"),
            ("preread_bypass_threshold", "1"),
            ("skip_copy", "0"),
            ("sync_speed_min", "1000 (system)"),
            ("sync_speed_max", "200000 (system)"),
            ("sync_force_parallel", "0"),
        ] {
            if host.fake.md_attr(name, attr).exists() {
                host.fake.set_md(name, attr, default);
            }
        }
    }
    fs::write(
        host.root.join("proc/sys/dev/raid/speed_limit_min"),
        "1000\n",
    )
    .unwrap();
    fs::write(
        host.root.join("proc/sys/dev/raid/speed_limit_max"),
        "200000\n",
    )
    .unwrap();
    let run = host.root.join("run");
    if fs::symlink_metadata(run.join("mdtune")).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(run.join("mdtune")).unwrap();
    }
    let _ = fs::remove_file(run.join("mdtune.lock"));
}

struct Ctx<'a> {
    seed: u64,
    host: usize,
    step: usize,
    input: &'a Value,
}

impl Ctx<'_> {
    fn fail(&self, what: &str, report: &Value) -> ! {
        panic!(
            "seed {:#x}, host {}, step {}: {what}\ninput: {}\nreport: {report}",
            self.seed, self.host, self.step, self.input
        )
    }
}

/// Runs `input` and checks every property. Returns the report and the exit status.
fn check_run(host: &Host, binary: bool, input: &Value, ctx: &Ctx) -> (Value, Exit) {
    let state = input["state"].as_str().unwrap_or("present");
    let check = input["check_mode"] == true;
    // The fresh query of the same input, before the run.
    let fresh = (state != "reverted")
        .then(|| query_of(input))
        .flatten()
        .map(|mut q| {
            q["check_mode"] = json!(false);
            execute(binary, &q)
        });
    // What the persisted state (run as a query) wants, for a run that leaves persistence alone.
    let unset = input.get("persist").is_none_or(Value::is_null);
    let persisted = (state != "reverted" && unset)
        .then(|| persisted_wants(host, binary))
        .flatten();
    let before = tree(&host.base);
    let (report, code) = execute(binary, input);
    let after = tree(&host.base);
    let outside = |t: &Tree| -> Tree {
        t.iter()
            .filter(|(p, _)| p.starts_with("outside"))
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect()
    };
    if outside(&before) != outside(&after) {
        ctx.fail("a file outside the root changed", &report);
    }
    if code == Exit::Input {
        if before != after {
            ctx.fail("exit 2 wrote something", &report);
        }
        if let Some((_, c)) = &fresh {
            if *c != Exit::Input && state != "reverted" {
                ctx.fail("exit 2, but the fresh query was not refused", &report);
            }
        }
        return (report, code);
    }
    let files = changed_files(&before, &after);
    let real = state != "query" && !check;
    if !real && !files.is_empty() {
        ctx.fail(
            &format!("check mode or query changed files: {files:?}"),
            &report,
        );
    }
    let file_changed = !files.is_empty();
    if real && (report["changed"] == true) != file_changed {
        ctx.fail(
            &format!("changed disagrees with the files changed: {files:?}"),
            &report,
        );
    }
    // A run that changes (or would change) something found the host not compliant, and one that
    // finds it not compliant changes it (no generated host holds a setting back).
    let blind = state != "reverted" && cannot_comply(host, &before, &report);
    if state != "query"
        && code == Exit::Ok
        && !blind
        && (report["changed"] == true) == (report["compliant"] == true)
    {
        ctx.fail(
            "changed and compliant agree instead of being opposite",
            &report,
        );
    }
    if state == "query" && report["changed"] == true {
        ctx.fail("a query said changed", &report);
    }
    check_settings(
        host.root.as_path(),
        &before,
        &report,
        real && code == Exit::Ok,
        ctx,
    );
    if code == Exit::Ok && state != "reverted" {
        check_compliant(&before, &report, ctx);
        check_diverged(persisted.as_ref(), &report, ctx);
    }
    if state == "reverted" && real {
        check_removed(&before, &after, &report, ctx);
    }
    if let Some((q, qcode)) = fresh {
        if qcode == Exit::Ok && code == Exit::Ok && q["compliant"] != report["compliant"] {
            ctx.fail(
                &format!("compliant disagrees with a fresh query: {q}"),
                &report,
            );
        }
    }
    if real && state == "present" && code == Exit::Ok {
        check_converged(host, binary, input, &after, &report, ctx);
    }
    (report, code)
}

/// Each setting the report names against the files: `before` is what the file held before the
/// run and, when `written` (the run was real and succeeded), `after` is what the file holds now
/// and `changed` says whether it changed.
fn check_settings(root: &Path, before: &Tree, report: &Value, written: bool, ctx: &Ctx) {
    for (target, setting, b, a, changed) in settings(report) {
        let Some(was) = read_value_in(before, &target, &setting) else {
            ctx.fail(
                &format!("{target} {setting}: reported, but no such file"),
                report,
            );
        };
        if report_value(&b) != was {
            ctx.fail(
                &format!("{target} {setting}: before {b} but the file held {was}"),
                report,
            );
        }
        let now = read_value(root, &target, &setting);
        if written && report_value(&a) != now {
            ctx.fail(
                &format!("{target} {setting}: after {a} but the file holds {now}"),
                report,
            );
        }
        if written && changed != (was != now) {
            ctx.fail(
                &format!("{target} {setting}: changed {changed}, file {was} -> {now}"),
                report,
            );
        }
    }
}

/// The query of what `input` wants. An input without desired state of its own wants the
/// defaults, but a query without one compares with the persisted state (docs/reference.md §2):
/// such a query names the defaults (`arrays: [{"name": "*"}]`), unless the input is a query.
/// With `persist: true` that would also change the input the query expects persisted, so no
/// query says what such an input wants before its run (`None`).
fn query_of(input: &Value) -> Option<Value> {
    let mut q = input.clone();
    let desired = [
        "arrays",
        "thread_policy",
        "speed_limit_min",
        "speed_limit_max",
        "sync_io_depth",
    ];
    if input["state"] != "query" && desired.iter().all(|k| input[*k].is_null()) {
        if input["persist"] == true {
            return None;
        }
        q["arrays"] = json!([{"name": "*"}]);
    }
    q["state"] = json!("query");
    Some(q)
}

/// A successful real present run converges: a fresh query then says compliant.
fn check_converged(
    host: &Host,
    binary: bool,
    input: &Value,
    after: &Tree,
    report: &Value,
    ctx: &Ctx,
) {
    // After a run that persisted its input, a plain query compares with just that.
    let q = query_of(input).unwrap_or_else(|| {
        let mut q = input.clone();
        q["state"] = json!("query");
        q
    });
    let (q, _) = execute(binary, &q);
    if q["compliant"] != true && !cannot_comply(host, after, &q) {
        ctx.fail(
            &format!("not compliant right after a present run: {q}"),
            report,
        );
    }
}

/// Reads a setting's value from a tree taken before the run.
fn read_value_in(t: &Tree, target: &str, setting: &str) -> Option<String> {
    let path = setting_file(Path::new("root"), target, setting);
    // sys/block/<name> is a link into devices/: follow it inside the tree.
    let real = if target == "system" {
        path
    } else {
        let Some(Node::Link(l)) = t.get(&Path::new("root/sys/block").join(target)) else {
            return None;
        };
        let dir = normalize(&Path::new("root/sys/block").join(l));
        dir.join("md").join(setting)
    };
    match t.get(&real) {
        Some(Node::File(b)) => Some(file_value(
            &String::from_utf8_lossy(b),
            matches!(setting, "skip_copy" | "sync_force_parallel"),
        )),
        _ => None,
    }
}

/// The text of a setting's file in a tree taken before the run, as it is.
fn raw_in(t: &Tree, target: &str, setting: &str) -> Option<String> {
    let Some(Node::Link(l)) = t.get(&Path::new("root/sys/block").join(target)) else {
        return None;
    };
    let dir = normalize(&Path::new("root/sys/block").join(l));
    match t.get(&dir.join("md").join(setting)) {
        Some(Node::File(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

const TUNABLES: &[&str] = &[
    "group_thread_cnt",
    "stripe_cache_size",
    "preread_bypass_threshold",
    "skip_copy",
    "sync_speed_min",
    "sync_speed_max",
    "sync_force_parallel",
];

/// True if and only if one of `array`'s tunable files read empty (an array being stopped).
fn reads_empty(t: &Tree, array: &str) -> bool {
    TUNABLES
        .iter()
        .any(|a| raw_in(t, array, a).is_some_and(|v| v.trim().is_empty()))
}

/// True when no run can be compliant on this host as it is: the report checked nothing, an
/// array it reports reads empty, the persisted state diverges or cannot be read (a link out).
fn cannot_comply(host: &Host, t: &Tree, report: &Value) -> bool {
    let arrays = report["arrays"].as_array().cloned().unwrap_or_default();
    let none = arrays.is_empty() && report["system"].as_object().is_none_or(|s| s.is_empty());
    let etc_link = fs::symlink_metadata(host.root.join("etc/mdtune"))
        .is_ok_and(|m| m.file_type().is_symlink());
    none || etc_link
        || arrays
            .iter()
            .any(|a| reads_empty(t, a["name"].as_str().unwrap_or("")))
        || report["persist"]["diverged"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
}

/// The value a report's setting wants: `held_back.wanted`, else `after`.
fn wanted(s: &Value) -> Value {
    match s.get("held_back") {
        Some(h) => h["wanted"].clone(),
        None => s["after"].clone(),
    }
}

/// `(target, setting) -> wanted` of every setting a report plans.
fn wants(report: &Value) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for a in report["arrays"].as_array().into_iter().flatten() {
        for (k, s) in a["settings"].as_object().into_iter().flatten() {
            let name = a["name"].as_str().unwrap().to_string();
            out.insert((name, k.clone()), report_value(&wanted(s)));
        }
    }
    for (k, s) in report["system"].as_object().into_iter().flatten() {
        out.insert(("system".into(), k.clone()), report_value(&wanted(s)));
    }
    out
}

/// What the persisted state wants on the host as it is now: its own query's settings. `None`
/// when nothing is persisted (or `etc/mdtune` is not a directory of the root).
fn persisted_wants(host: &Host, binary: bool) -> Option<BTreeMap<(String, String), String>> {
    let etc = host.root.join("etc/mdtune");
    if !fs::symlink_metadata(&etc).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let text = fs::read_to_string(etc.join("mdtune.json")).ok()?;
    let mut q: Value = serde_json::from_str(&text).ok()?;
    q["root"] = json!(host.root);
    q["state"] = json!("query");
    let (report, code) = execute(binary, &q);
    (code == Exit::Ok).then(|| wants(&report))
}

/// `compliant`, per setting, per array and overall, is what was read: the setting's `before`
/// is the value wanted; the array has every setting compliant and no file that read empty; the
/// run checked something, every array and system setting is compliant, no persisted file is
/// due and nothing diverges.
fn check_compliant(before: &Tree, report: &Value, ctx: &Ctx) {
    let arrays = report["arrays"].as_array().cloned().unwrap_or_default();
    let system = report["system"].as_object().cloned().unwrap_or_default();
    let mut all = !arrays.is_empty() || !system.is_empty();
    let setting_ok = |what: &str, s: &Value| -> bool {
        let ok = report_value(&s["before"]) == report_value(&wanted(s));
        if (s["compliant"] == true) != ok {
            ctx.fail(
                &format!(
                    "{what}: compliant {} but before {} and wanted {}",
                    s["compliant"],
                    s["before"],
                    wanted(s)
                ),
                report,
            );
        }
        ok
    };
    for a in &arrays {
        let name = a["name"].as_str().unwrap();
        let mut ok = !reads_empty(before, name);
        for (k, s) in a["settings"].as_object().into_iter().flatten() {
            ok &= setting_ok(&format!("{name} {k}"), s);
        }
        if (a["compliant"] == true) != ok {
            ctx.fail(
                &format!(
                    "{name}: compliant {} but what was read says {ok}",
                    a["compliant"]
                ),
                report,
            );
        }
        all &= ok;
    }
    for (k, s) in &system {
        all &= setting_ok(&format!("system {k}"), s);
    }
    let persist = &report["persist"];
    let empty = |v: &Value| v.as_array().is_none_or(|a| a.is_empty());
    all &= empty(&persist["files"]) && empty(&persist["left"]) && empty(&persist["diverged"]);
    all &= !report["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("persisted state cannot be read"))
        });
    if (report["compliant"] == true) != all {
        ctx.fail(
            &format!(
                "compliant {} but what was read says {all}",
                report["compliant"]
            ),
            report,
        );
    }
}

/// `persist.diverged` is exactly what the persisted state wants otherwise than this run.
fn check_diverged(
    persisted: Option<&BTreeMap<(String, String), String>>,
    report: &Value,
    ctx: &Ctx,
) {
    let mut expected: Vec<String> = Vec::new();
    if let Some(p) = persisted {
        for (key, want) in wants(report) {
            if let Some(pv) = p.get(&key).filter(|pv| **pv != want) {
                expected.push(format!("{} {} {pv}", key.0, key.1));
            }
        }
    }
    let mut actual: Vec<String> = report["persist"]["diverged"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let t = d["target"].as_str().unwrap_or("?");
            let s = d["setting"].as_str().unwrap_or("?");
            format!("{t} {s} {}", report_value(&d["value"]))
        })
        .collect();
    expected.sort();
    actual.sort();
    if expected != actual {
        ctx.fail(
            &format!("persist.diverged is {actual:?}, the persisted file says {expected:?}"),
            report,
        );
    }
}

/// A real revert's `persist.files` are exactly the files under the root it removed.
fn check_removed(before: &Tree, after: &Tree, report: &Value, ctx: &Ctx) {
    let mut removed: Vec<String> = before
        .iter()
        .filter(|(p, n)| **n != Node::Dir && p.starts_with("root") && !after.contains_key(*p))
        .filter(|(p, _)| !p.ends_with("run/mdtune.lock"))
        .map(|(p, _)| format!("/{}", p.strip_prefix("root").unwrap().display()))
        .collect();
    let mut listed: Vec<String> = report["persist"]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f.as_str().unwrap_or("?").to_string())
        .collect();
    removed.sort();
    listed.sort();
    if removed != listed {
        ctx.fail(
            &format!("revert removed {removed:?} but lists {listed:?}"),
            report,
        );
    }
}

/// Resolves `..` in a relative path without touching the filesystem.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Runs one random host's sequence of runs, checking each. The host's randomness comes from
/// the seed and its number alone, so a failure reproduces with `MDTUNE_PROPERTY_HOST`.
fn run_host(seed: u64, host_no: usize, scratch: &Path, codes: &mut BTreeMap<i32, usize>) -> usize {
    let mut rng = Rng::for_host(seed, host_no);
    let base = scratch.join(format!("host{host_no}"));
    let host = random_host(&mut rng, base.clone());
    let binary = host_no % 16 == 0;
    let mut done = 0;
    let steps = 10 + rng.below(20);
    for step in 0..steps {
        let mut input = random_input(&mut rng, &host);
        input["root"] = json!(host.root);
        let kind = rng.below(100);
        match kind {
            0..=4 => {
                reboot(&host);
                continue;
            }
            5..=11 => {
                let name = rng.pick(&host.names).clone();
                let before = tree(&host.base);
                let (out, code) = mdtune::run::udev(&name, &host.root);
                let after = tree(&host.base);
                let report: Value = serde_json::from_str(&out).unwrap();
                let ctx = Ctx {
                    seed,
                    host: host_no,
                    step,
                    input: &json!({"udev": name}),
                };
                let files: Vec<_> = changed_files(&before, &after)
                    .into_iter()
                    .filter(|p| !p.starts_with("root/dev"))
                    .collect();
                if files.iter().any(|p| p.starts_with("outside")) {
                    ctx.fail("udev: a file outside the root changed", &report);
                }
                let file_changed = !files.is_empty();
                if (report["changed"] == true) != file_changed {
                    ctx.fail(&format!("udev: changed disagrees with {files:?}"), &report);
                }
                if code == Exit::Input {
                    ctx.fail("udev: exit 2 for a name the host has", &report);
                }
                done += 1;
                continue;
            }
            12..=26 => input["state"] = json!("query"),
            27..=41 => input["state"] = json!("reverted"),
            42..=61 => input["check_mode"] = json!(true),
            _ => {}
        }
        if (27..=41).contains(&kind) && rng.chance(30) {
            input["check_mode"] = json!(true);
        }
        let ctx = Ctx {
            seed,
            host: host_no,
            step,
            input: &input,
        };
        let (report, code) = check_run(&host, binary, &input, &ctx);
        *codes.entry(code as i32).or_insert(0) += 1;
        done += 1;
        // Check mode predicts the real run: run it and compare.
        if input["check_mode"] == true && code == Exit::Ok {
            let mut real = input.clone();
            real["check_mode"] = json!(false);
            let ctx = Ctx {
                seed,
                host: host_no,
                step,
                input: &real,
            };
            let (r, c) = check_run(&host, binary, &real, &ctx);
            done += 1;
            if c == Exit::Ok
                && (r["changed"] != report["changed"] || r["compliant"] != report["compliant"])
            {
                ctx.fail(&format!("check mode predicted {report}"), &r);
            }
        }
    }
    fs::remove_dir_all(&base).unwrap();
    CACHE.with_borrow_mut(|c| c.clear());
    done
}

#[test]
fn random_runs_on_random_hosts_keep_every_report_true() {
    let env = |k: &str| std::env::var(k).ok();
    let runs: usize = env("MDTUNE_PROPERTY_RUNS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let seed: u64 = env("MDTUNE_PROPERTY_SEED")
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x6d64_7475_6e65_0001);
    let scratch = crate::common::scratch("property");
    let mut codes = BTreeMap::new();
    if let Some(host) = env("MDTUNE_PROPERTY_HOST").and_then(|s| s.parse().ok()) {
        run_host(seed, host, &scratch, &mut codes);
        return;
    }
    // Two workers, one host at a time each: the hosts' roots and locks are separate.
    let next = std::sync::atomic::AtomicUsize::new(1);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let all = std::sync::Mutex::new(BTreeMap::new());
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut codes = BTreeMap::new();
                while done.load(std::sync::atomic::Ordering::SeqCst) < runs {
                    let host = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let n = run_host(seed, host, &scratch, &mut codes);
                    done.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                }
                let mut all = all.lock().unwrap();
                for (k, v) in codes {
                    *all.entry(k).or_insert(0) += v;
                }
            });
        }
    });
    codes.extend(all.into_inner().unwrap());
    let _ = fs::remove_dir_all(&scratch);
    eprintln!(
        "{} runs on {} hosts in {:?}, seed {seed:#x}; exit statuses {codes:?}",
        done.into_inner(),
        next.into_inner() - 1,
        started.elapsed()
    );
    // The generator must reach every outcome, or the properties prove little.
    for code in [0, 1, 2] {
        assert!(
            codes.get(&code).copied().unwrap_or(0) > 0,
            "no run exited {code}: {codes:?}"
        );
    }
}
