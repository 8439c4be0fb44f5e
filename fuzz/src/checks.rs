//! What the targets assert of what the parser accepts: selectors that cannot leave
//! `sys/block`, settings inside the contract's ranges, a persisted copy that parses again; and
//! an independent oracle for inputs that repeat a key.

use mdtune::md::{Attr, SpeedLimit, Value};
use mdtune::spec::{NameSelector, Spec, Want, MAX_THREADS};

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

/// The largest `sync_io_depth` the contract allows (docs/reference.md §2: the kernel counts
/// `128 × depth` in an int).
const DEPTH_MAX: u64 = 16_777_215;

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
                (Attr::SyncIoDepth, Want::Value(Value::System)) => true,
                (Attr::SyncIoDepth, Want::Value(Value::Int(n))) => (1..=DEPTH_MAX).contains(&n),
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
        let most = match limit {
            SpeedLimit::IoDepth => DEPTH_MAX,
            SpeedLimit::Min | SpeedLimit::Max => INT_MAX,
        };
        assert!((1..=most).contains(&n), "{}: {n}", limit.name());
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
