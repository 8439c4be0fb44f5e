//! Generators shared by the fuzz targets: module inputs shaped like the real ones (known keys,
//! values at every boundary the contract names, hostile selectors) and inventories of arbitrary
//! arrays, members and kernel values, all driven by the fuzzer's bytes through `arbitrary`.
//!
//! The shapes are biased, not restricted: every generator also emits arbitrary strings, numbers
//! and nesting, so what the library must refuse is exercised as much as what it must accept.

use arbitrary::{Result, Unstructured};
use mdtune::host::{Array, Inventory, Member, Sync};
use mdtune::md::{Attr, Kind, SpeedLimit, Value};
use mdtune::spec::{self, NameSelector, Spec, Want, MAX_THREADS};
use serde_json::{Map, Number, Value as Json};
use std::collections::BTreeMap;

/// The `_ansible_*` keys Ansible adds, generated beside the module's own keys.
pub const ANSIBLE_KEYS: &[&str] = &[
    "_ansible_check_mode",
    "_ansible_diff",
    "_ansible_module_name",
];
pub use spec::{ENTRY_KEYS, POLICY_KEYS};

/// Strings a playbook could plausibly send, and ones an attacker would.
pub const STRINGS: &[&str] = &[
    "auto",
    "off",
    "fixed",
    "system",
    "min",
    "max",
    "present",
    "query",
    "reverted",
    "absent",
    "yes",
    "no",
    "on",
    "true",
    "false",
    "y",
    "1",
    "0",
    " 8",
    "8192",
    "8193",
    "17",
    "4096",
    "-1",
    "md0",
    "md1",
    "md2",
    "md127",
    "md_d0",
    "md*",
    "md?",
    "md[0-2]",
    "md[",
    "*",
    "hana_data",
    "/dev/md/hana_data",
    "/dev/md/md0",
    "/dev/md/",
    "/dev/md/a/b",
    "/dev/md0",
    "/etc/passwd",
    "../md0",
    "md0/../../etc",
    "..",
    ".",
    "md\n0",
    "md\u{0}0",
    "md\u{7f}",
    "",
    "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90",
    "A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F90",
    "a1b2c3d4-e5f60718:293a4b5c:6d7e8f90",
    "00000000:00000000:00000000:00000000",
    "/tmp/root",
];

/// Integers at the edges of every range the contract names.
pub const INTS: &[i128] = &[
    0,
    1,
    2,
    8,
    16,
    17,
    255,
    256,
    257,
    1024,
    4096,
    8191,
    8192,
    8193,
    32768,
    32769,
    2_147_483_647,
    2_147_483_648,
    4_294_967_295,
    18_446_744_073_709_551_615,
    -1,
    -9_223_372_036_854_775_808,
];

fn int_json(n: i128) -> Json {
    if let Ok(v) = u64::try_from(n) {
        Json::from(v)
    } else if let Ok(v) = i64::try_from(n) {
        Json::from(v)
    } else {
        Json::Null
    }
}

/// A JSON value of any type, biased toward the module's vocabulary.
pub fn value(u: &mut Unstructured, depth: u32) -> Result<Json> {
    let pick = u.int_in_range(0..=11u8)?;
    Ok(match pick {
        0 => Json::Null,
        1 => Json::Bool(u.arbitrary()?),
        2 | 3 => int_json(*u.choose(INTS)?),
        4 => Json::from(u.arbitrary::<i64>()?),
        // Floats of moderate size only: near f64::MAX, serde_json's fast float parser may round
        // to infinity and refuse the text the map serialised to, which is not mdtune's concern.
        5 => Number::from_f64(f64::from(u.arbitrary::<i32>()?) / 8.0)
            .map_or(Json::Null, Json::Number),
        6 | 7 => Json::String((*u.choose(STRINGS)?).to_string()),
        8 => Json::String(u.arbitrary()?),
        9 => Json::String(format!(" {} ", u.choose(INTS)?)),
        10 if depth > 0 => {
            let n = u.int_in_range(0..=3u8)?;
            Json::Array((0..n).map(|_| value(u, depth - 1)).collect::<Result<_>>()?)
        }
        11 if depth > 0 => Json::Object(object(u, ENTRY_KEYS, depth - 1)?),
        _ => Json::Null,
    })
}

/// A key: mostly one of `known`, sometimes an `_ansible_` key or anything at all.
pub fn key(u: &mut Unstructured, known: &[&str]) -> Result<String> {
    Ok(match u.int_in_range(0..=9u8)? {
        0 => format!("_ansible_{}", u.arbitrary::<&str>()?),
        1 => u.arbitrary()?,
        _ => (*u.choose(known)?).to_string(),
    })
}

/// An object with keys from `known` and values of any type.
pub fn object(u: &mut Unstructured, known: &[&str], depth: u32) -> Result<Map<String, Json>> {
    let n = u.int_in_range(0..=4u8)?;
    let mut map = Map::new();
    for _ in 0..n {
        let k = key(u, known)?;
        map.insert(k, value(u, depth)?);
    }
    Ok(map)
}

/// One element of `arrays`: a name and/or uuid and a few settings.
pub fn entry(u: &mut Unstructured) -> Result<Json> {
    let mut map = Map::new();
    if u.ratio(3, 4)? {
        let name = if u.ratio(7, 8)? {
            Json::String((*u.choose(STRINGS)?).to_string())
        } else {
            value(u, 0)?
        };
        map.insert("name".into(), name);
    }
    if u.ratio(1, 4)? {
        map.insert(
            "uuid".into(),
            Json::String((*u.choose(STRINGS)?).to_string()),
        );
    }
    let n = u.int_in_range(0..=4u8)?;
    for _ in 0..n {
        let k = key(u, &ENTRY_KEYS[2..])?;
        map.insert(k, value(u, 1)?);
    }
    Ok(Json::Object(map))
}

/// A whole module input, shaped like what Ansible or Salt sends.
pub fn input(u: &mut Unstructured) -> Result<Map<String, Json>> {
    let mut map = Map::new();
    if u.ratio(3, 4)? {
        let n = u.int_in_range(0..=4u8)?;
        let arrays = (0..n).map(|_| entry(u)).collect::<Result<Vec<_>>>()?;
        map.insert("arrays".into(), Json::Array(arrays));
    }
    if u.ratio(1, 2)? {
        let policy = if u.ratio(1, 2)? {
            Json::Object(object(u, POLICY_KEYS, 0)?)
        } else {
            value(u, 1)?
        };
        map.insert("thread_policy".into(), policy);
    }
    let n = u.int_in_range(0..=3u8)?;
    let keys: Vec<&str> = spec::TOP_KEYS.iter().chain(ANSIBLE_KEYS).copied().collect();
    for _ in 0..n {
        let k = key(u, &keys)?;
        if k != "arrays" && k != "thread_policy" {
            map.insert(k, value(u, 1)?);
        }
    }
    Ok(map)
}

const NAMES: &[&str] = &["md0", "md1", "md2", "md3", "md127", "md_d0", "md126", "mdX"];
const DEVNAMES: &[&str] = &["hana_data", "hana_log", "archive", "md1", "scratch"];
const LEVELS: &[&str] = &[
    "raid0",
    "raid1",
    "raid4",
    "raid5",
    "raid6",
    "raid10",
    "linear",
    "multipath",
    "",
];
const STATES: &[&str] = &[
    "clean",
    "active",
    "active-idle",
    "readonly",
    "read-auto",
    "inactive",
    "clear",
    "",
];
const METADATA: &[&str] = &["1.2", "0.90", "external:imsm", "external:/md127/0", "none"];
const QUEUES: &[u64] = &[0, 1, 2, 4, 8, 16, 64, 128, 8192, 10_000, u64::MAX];
const KERNEL_INTS: &[u64] = &[0, 1, 16, 17, 256, 4096, 8192, 8193, 32768, u64::MAX];

fn kernel_value(u: &mut Unstructured, kind: Kind) -> Result<Value> {
    let int = |u: &mut Unstructured| -> Result<u64> {
        if u.ratio(3, 4)? {
            Ok(*u.choose(KERNEL_INTS)?)
        } else {
            u.arbitrary()
        }
    };
    Ok(match kind {
        Kind::Int => Value::Int(int(u)?),
        Kind::CInt if u.arbitrary()? => Value::Negative(-1),
        Kind::CInt => Value::Int(int(u)?),
        Kind::Bool => Value::Bool(u.arbitrary()?),
        Kind::SyncSpeed if u.arbitrary()? => Value::System,
        Kind::SyncSpeed => Value::Int(int(u)?),
    })
}

fn member(u: &mut Unstructured, i: usize) -> Result<Member> {
    let hw_queues = if u.ratio(7, 8)? {
        Some(*u.choose(QUEUES)?)
    } else {
        None
    };
    Ok(Member {
        name: format!("nvme{i}n1p1"),
        device: Some(format!("nvme{i}n1")),
        hw_queues,
        paths: Vec::new(),
        problem: hw_queues.is_none().then(|| "no mq/".to_string()),
        // Spares, faulty members and journals are reported but not counted.
        counted: u.ratio(7, 8)?,
        ..Member::default()
    })
}

/// An inventory of arbitrary arrays with unique kernel names, as [`mdtune::host::read`]
/// could return it: values of each attribute's kind, uuids as 32 hex digits.
pub fn inventory(u: &mut Unstructured) -> Result<Inventory> {
    let mut inv = Inventory::default();
    let mut names: Vec<&str> = NAMES.to_vec();
    let n = u.int_in_range(0..=5usize)?;
    for _ in 0..n {
        let i = u.choose_index(names.len())?;
        let name = names.swap_remove(i);
        let mut devnames: Vec<String> = Vec::new();
        for d in DEVNAMES {
            if u.ratio(1, 6)? {
                devnames.push((*d).to_string());
            }
        }
        let uuid = match u.int_in_range(0..=3u8)? {
            0 => None,
            // The uuid the generated inputs name, so uuid selectors match sometimes.
            1 => Some("a1b2c3d4e5f60718293a4b5c6d7e8f90".to_string()),
            _ => Some(format!("{:032x}", u.arbitrary::<u128>()?)),
        };
        let members = (0..u.int_in_range(0..=5usize)?)
            .map(|m| member(u, m))
            .collect::<Result<_>>()?;
        let mut values = BTreeMap::new();
        for attr in Attr::ALL {
            if u.ratio(3, 4)? {
                values.insert(attr, kernel_value(u, attr.kind())?);
            }
        }
        let sync = if u.arbitrary()? {
            Some(Sync {
                action: "idle".into(),
                completed: u.arbitrary()?,
                speed_kib_s: u.arbitrary()?,
            })
        } else {
            None
        };
        inv.arrays.push(Array {
            name: name.to_string(),
            devnames,
            uuid,
            level: (*u.choose(LEVELS)?).to_string(),
            array_state: (*u.choose(STATES)?).to_string(),
            metadata_version: (*u.choose(METADATA)?).to_string(),
            members,
            sync,
            values,
            reshape: u.ratio(1, 8)?.then(|| "sync_action is reshape".to_string()),
            ..Array::default()
        });
    }
    for limit in SpeedLimit::ALL {
        if u.ratio(3, 4)? {
            let v = if u.ratio(1, 8)? {
                Value::Negative(-1)
            } else {
                Value::Int(*u.choose(KERNEL_INTS)?)
            };
            inv.speed_limits.insert(limit, v);
        }
    }
    inv.cpus.online = if u.ratio(3, 4)? {
        Some(*u.choose(QUEUES)?)
    } else {
        None
    };
    Ok(inv)
}

/// True if and only if `name` could not steer a path out of `sys/block`.
fn tame(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('/')
        && !name.contains("..")
        && name != "."
        && !name.chars().any(char::is_control)
}

/// The largest value the kernel stores in `sync_speed_*` and `speed_limit_*` (an int).
const INT_MAX: u64 = 2_147_483_647;

/// Asserts what every accepted input guarantees: selectors that cannot leave `sys/block`,
/// settings of the right kind inside the contract's ranges, and a persisted copy that `--udev`
/// can parse again.
pub fn check_spec(spec: &Spec) {
    for e in &spec.arrays {
        match &e.name {
            Some(NameSelector::Exact(n) | NameSelector::DevMd(n)) => assert!(tame(n), "{n:?}"),
            Some(NameSelector::Glob(p)) => assert!(tame(p.as_str()), "{p:?}"),
            None => assert!(e.uuid.is_some(), "an entry without name or uuid"),
        }
        if let Some(uuid) = &e.uuid {
            assert!(
                uuid.len() == 32 && uuid.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
                "{uuid:?}"
            );
        }
        for (&attr, &want) in &e.settings {
            let ok = match (attr, want) {
                (Attr::GroupThreadCnt, Want::Auto) => true,
                (_, Want::Auto) => false,
                (Attr::GroupThreadCnt, Want::Value(Value::Int(n))) => n <= MAX_THREADS,
                (Attr::StripeCacheSize, Want::Value(Value::Int(n))) => (17..=32768).contains(&n),
                (Attr::PrereadBypassThreshold, Want::Value(Value::Int(_))) => true,
                (Attr::SkipCopy | Attr::SyncForceParallel, Want::Value(Value::Bool(_))) => true,
                (Attr::SyncSpeedMin | Attr::SyncSpeedMax, Want::Value(Value::System)) => true,
                (Attr::SyncSpeedMin | Attr::SyncSpeedMax, Want::Value(Value::Int(n))) => {
                    (1..=INT_MAX).contains(&n)
                }
                _ => false,
            };
            assert!(ok, "{attr}: {want:?} accepted");
        }
        if let (Some(Want::Value(Value::Int(lo))), Some(Want::Value(Value::Int(hi)))) = (
            e.settings.get(&Attr::SyncSpeedMin),
            e.settings.get(&Attr::SyncSpeedMax),
        ) {
            assert!(
                lo <= hi,
                "sync_speed_min {lo} > sync_speed_max {hi} accepted"
            );
        }
    }
    let policy = &spec.thread_policy;
    match policy.want {
        Want::Auto => {}
        Want::Value(Value::Int(n)) => assert!(n <= MAX_THREADS),
        Want::Value(v) => panic!("thread_policy {v:?} accepted"),
    }
    for bound in [policy.auto.min, policy.auto.max].into_iter().flatten() {
        assert!(bound <= MAX_THREADS);
    }
    if let (Some(lo), Some(hi)) = (policy.auto.min, policy.auto.max) {
        assert!(lo <= hi);
    }
    for (&limit, &n) in &spec.speed_limits {
        assert!((1..=INT_MAX).contains(&n), "{}: {n}", limit.name());
    }
    if let (Some(lo), Some(hi)) = (
        spec.speed_limits.get(&SpeedLimit::Min),
        spec.speed_limits.get(&SpeedLimit::Max),
    ) {
        assert!(lo <= hi);
    }
    assert!(spec.only.is_none(), "only is never set by input");
    for k in spec.persisted.keys() {
        assert!(
            !k.starts_with("_ansible_") && !["check_mode", "diff", "root"].contains(&k.as_str()),
            "persisted {k}"
        );
    }
    // What persist saves is what --udev replays: it must parse again, to the same settings.
    let mut saved = spec.persisted.clone();
    saved.remove("persist");
    let text = serde_json::to_string(&saved).expect("a map always serialises");
    let again = Spec::from_json(&text)
        .unwrap_or_else(|e| panic!("the persisted state {text} does not parse again: {e}"));
    assert_eq!(again.arrays.len(), spec.arrays.len());
    for (a, b) in again.arrays.iter().zip(&spec.arrays) {
        assert_eq!(a.settings, b.settings);
        assert_eq!(a.uuid, b.uuid);
    }
    assert_eq!(again.thread_policy, spec.thread_policy);
    assert_eq!(again.speed_limits, spec.speed_limits);
    assert_eq!(again.state, spec.state);
}

/// Whether some object in `text` repeats a key, found through serde's own visitor (map keys as
/// serde_json decodes them): an oracle for the scan `Spec::from_json` makes, sharing none of its
/// code. `None` when `text` is not JSON.
pub fn repeats_a_key(text: &str) -> Option<bool> {
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    struct Repeats(bool);
    struct Walk;
    impl<'de> Visitor<'de> for Walk {
        type Value = Repeats;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<Repeats, E> {
            Ok(Repeats(false))
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<Repeats, E> {
            Ok(Repeats(false))
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<Repeats, E> {
            Ok(Repeats(false))
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<Repeats, E> {
            Ok(Repeats(false))
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<Repeats, E> {
            Ok(Repeats(false))
        }
        fn visit_unit<E>(self) -> std::result::Result<Repeats, E> {
            Ok(Repeats(false))
        }
        fn visit_seq<A: SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Repeats, A::Error> {
            let mut any = false;
            while let Some(Repeats(r)) = seq.next_element()? {
                any |= r;
            }
            Ok(Repeats(any))
        }
        fn visit_map<A: MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Repeats, A::Error> {
            // With serde_json's arbitrary_precision a number is a one-key map; it repeats nothing.
            let mut seen = std::collections::HashSet::new();
            let mut any = false;
            while let Some(k) = map.next_key::<String>()? {
                any |= !seen.insert(k);
                let Repeats(r) = map.next_value()?;
                any |= r;
            }
            Ok(Repeats(any))
        }
    }
    impl<'de> Deserialize<'de> for Repeats {
        fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Repeats, D::Error> {
            d.deserialize_any(Walk)
        }
    }
    serde_json::from_str::<Repeats>(text)
        .ok()
        .map(|Repeats(r)| r)
}
