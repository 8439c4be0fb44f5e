//! Module inputs shaped like the real ones: the keys the contract and Ansible know, values at
//! every boundary the contract names, hostile selectors, and also arbitrary strings, numbers and
//! nesting, so that what the parser must refuse is exercised as much as what it must accept.

use arbitrary::{Result, Unstructured};
use mdtune::spec;
use serde_json::{Map, Number, Value as Json};

/// The `_ansible_*` keys Ansible adds, generated beside the module's own keys.
const ANSIBLE_KEYS: &[&str] = &[
    "_ansible_check_mode",
    "_ansible_diff",
    "_ansible_module_name",
];
use spec::{ENTRY_KEYS, POLICY_KEYS};

/// Strings a playbook could plausibly send, and ones an attacker would.
const STRINGS: &[&str] = &[
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
const INTS: &[i128] = &[
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
fn value(u: &mut Unstructured, depth: u32) -> Result<Json> {
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
fn key(u: &mut Unstructured, known: &[&str]) -> Result<String> {
    Ok(match u.int_in_range(0..=9u8)? {
        0 => format!("_ansible_{}", u.arbitrary::<&str>()?),
        1 => u.arbitrary()?,
        _ => (*u.choose(known)?).to_string(),
    })
}

/// An object with keys from `known` and values of any type.
fn object(u: &mut Unstructured, known: &[&str], depth: u32) -> Result<Map<String, Json>> {
    let n = u.int_in_range(0..=4u8)?;
    let mut map = Map::new();
    for _ in 0..n {
        let k = key(u, known)?;
        map.insert(k, value(u, depth)?);
    }
    Ok(map)
}

/// One element of `arrays`: a name and/or uuid and a few settings.
fn entry(u: &mut Unstructured) -> Result<Json> {
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
