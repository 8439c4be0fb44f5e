//! The random hosts and inputs: a small deterministic generator, hosts of random levels, names
//! and layouts, and random array entries and inputs over them.

use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

/// xorshift64*: small, fast and deterministic; statistical quality is beside the point here.
pub(super) struct Rng(u64);

impl Rng {
    /// The generator of host `host` under `seed`: splitmix64 of both, never zero (xorshift's
    /// one fixed point).
    pub(super) fn for_host(seed: u64, host: usize) -> Rng {
        let mut z = seed.wrapping_add((host as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)).max(1))
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

pub(super) const LEVELS: &[&str] = &["raid5", "raid6", "raid4", "raid1", "raid10", "raid0"];

/// One random host: `root/` is the system root, `outside/` a sibling that no run may touch.
pub(super) struct Host {
    pub(super) base: PathBuf,
    pub(super) root: PathBuf,
    pub(super) names: Vec<String>,
    pub(super) devnames: Vec<String>,
    pub(super) uuids: Vec<String>,
    pub(super) fake: FakeRoot,
}

pub(super) fn random_host(rng: &mut Rng, base: PathBuf) -> Host {
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

pub(super) fn random_entry(rng: &mut Rng, host: &Host) -> Value {
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
pub(super) fn random_input(rng: &mut Rng, host: &Host) -> Value {
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
