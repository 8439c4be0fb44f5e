//! The input's keys, one list per level (docs/reference.md §2): the top level (its own keys
//! around the system limits, which are rows of `crate::md`'s table), an array entry (its
//! selectors and then every attribute of the table) and the thread policy object. Validation
//! (`desired`, `entry`, `policy`), `state: reverted` (which ignores the desired-state keys) and
//! `mdtune --schema` all read these lists; nothing else spells a key out.

use crate::md::{ATTR_ROWS, LIMIT_ROWS};

/// What a key of the input is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Desired state: what to want (`state: reverted` ignores it, with a warning).
    Desired,
    /// How to run, saved by `persist` with the desired state (`state`, `persist`).
    Run,
    /// How to run this time only: `persist` does not save it (`root`, `check_mode`, `diff`).
    RunOnly,
}

/// One key of the input that is not a tunable of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub role: Role,
    /// The values it takes, for `--schema` (`"string"`, `"boolean"`, `"auto | off | integer
    /// 0..8192 | object"`).
    pub takes: &'static str,
    /// Its value when it is not given, as JSON text; `None`: unset.
    pub default: Option<&'static str>,
    /// The words it takes, when it takes only words.
    pub choices: &'static [&'static str],
    pub doc: &'static str,
}

/// The top-level keys before the system limits.
const BEFORE_LIMITS: [Key; 2] = [
    Key {
        name: "arrays",
        role: Role::Desired,
        takes: "list of array entries",
        default: Some(r#"[{"name": "*"}]"#),
        choices: &[],
        doc: "which arrays to manage, each entry with its own settings",
    },
    Key {
        name: "thread_policy",
        role: Role::Desired,
        takes: "auto | off | false | integer 0..8192 | thread policy object",
        default: Some(r#""auto""#),
        choices: &[],
        doc: "group_thread_cnt of every selected raid4/5/6 array whose entry sets none",
    },
];

/// The top-level keys after the system limits.
const AFTER_LIMITS: [Key; 8] = [
    Key {
        name: "state",
        role: Role::Run,
        takes: "string",
        default: Some(r#""present""#),
        choices: &["present", "query", "reverted"],
        doc: "present applies, query only reports, reverted restores the saved originals",
    },
    Key {
        name: "persist",
        role: Role::Run,
        takes: "boolean",
        default: None,
        choices: &[],
        doc: "true keeps the desired state across reboots, false stops keeping it, unset leaves it",
    },
    Key {
        name: "root",
        role: Role::RunOnly,
        takes: "path",
        default: Some(r#""/""#),
        choices: &[],
        doc: "the prefix of every system path (tests, chroots, containers)",
    },
    Key {
        name: "check_mode",
        role: Role::RunOnly,
        takes: "boolean",
        default: Some("false"),
        choices: &[],
        doc: "compute and report, write nothing",
    },
    Key {
        name: "diff",
        role: Role::RunOnly,
        takes: "boolean",
        default: Some("false"),
        choices: &[],
        doc: "add diff (old -> new) to the result",
    },
    Key {
        name: "measure",
        role: Role::RunOnly,
        takes: "integer 1..600",
        default: None,
        choices: &[],
        doc: "seconds of the arrays' own counters sampled before and after the writes (arrays[].effect)",
    },
    Key {
        name: "revert_if_slower",
        role: Role::RunOnly,
        takes: "boolean",
        default: Some("false"),
        choices: &[],
        doc: "with measure: put the values back when the verdict is slower",
    },
    Key {
        name: "reason",
        role: Role::Run,
        takes: "string of at most 200 printable characters",
        default: None,
        choices: &[],
        doc: "why these values (a ticket, a vendor note): persisted, shown by --show and --verify, in the trail",
    },
];

/// The keys of an array entry that select arrays; the others are the attributes' rows.
pub const SELECTORS: [Key; 2] = [
    Key {
        name: "name",
        role: Role::Desired,
        takes: "string",
        default: None,
        choices: &[],
        doc:
            "kernel name (md0), glob over kernel names (md*), or mdadm name (/dev/md/NAME or NAME)",
    },
    Key {
        name: "uuid",
        role: Role::Desired,
        takes: "string",
        default: None,
        choices: &[],
        doc: "the array's uuid, in mdadm's form or the kernel's, any case",
    },
];

/// The keys of the thread policy object.
pub const POLICY: [Key; 5] = [
    Key {
        name: "mode",
        role: Role::Desired,
        takes: "string",
        default: Some(r#""auto""#),
        choices: &["auto", "fixed", "off"],
        doc: "auto counts hardware queues, fixed uses value, off sets 0",
    },
    Key {
        name: "value",
        role: Role::Desired,
        takes: "integer 0..8192",
        default: None,
        choices: &[],
        doc: "the thread count when mode is fixed",
    },
    Key {
        name: "min",
        role: Role::Desired,
        takes: "integer 0..8192",
        default: None,
        choices: &[],
        doc: "lower bound of auto when the members have more than one queue",
    },
    Key {
        name: "max",
        role: Role::Desired,
        takes: "integer 0..8192",
        default: None,
        choices: &[],
        doc: "upper bound of auto; unset: the CPUs the workers may run on per NUMA node",
    },
    Key {
        name: "combine",
        role: Role::Desired,
        takes: "string",
        default: Some(r#""min""#),
        choices: &["min", "max"],
        doc: "how auto combines members with different queue counts",
    },
];

/// The top-level keys that are not system limits, in the order [`TOP_KEYS`] lists them around
/// the limits.
pub fn own_keys() -> impl Iterator<Item = &'static Key> {
    BEFORE_LIMITS.iter().chain(AFTER_LIMITS.iter())
}

/// How many top-level keys there are.
const TOP_LEN: usize = BEFORE_LIMITS.len() + LIMIT_ROWS.len() + AFTER_LIMITS.len();

/// The input keys (besides `_ansible_*`): `arrays`, `thread_policy`, the system limits, then
/// how to run. A refusal of an unknown key lists them in this order.
pub const TOP_KEYS: &[&str] = &top_keys();

/// The top-level keys that are desired state (`arrays`, `thread_policy`, the system limits).
pub const DESIRED_KEYS: &[&str] = TOP_KEYS.split_at(BEFORE_LIMITS.len() + LIMIT_ROWS.len()).0;

/// The keys of the thread policy object.
pub const POLICY_KEYS: &[&str] = &names(&POLICY);

/// The keys of an array entry that are neither selectors nor attributes.
pub const ENTRY_EXTRAS: [Key; 2] = [
    Key {
        name: "sync_boost",
        role: Role::Desired,
        takes: "object",
        default: None,
        choices: &[],
        doc: "sync_speed_min, sync_speed_max, sync_io_depth in force only while the syncs of during run",
    },
    Key {
        name: "reason",
        role: Role::Desired,
        takes: "string of at most 200 printable characters",
        default: None,
        choices: &[],
        doc: "why this entry's values (a ticket, a vendor note)",
    },
];

/// The keys of an array entry: the selectors, every attribute of the table, then the extras.
pub const ENTRY_KEYS: &[&str] = &entry_keys();

const ENTRY_LEN: usize = SELECTORS.len() + ATTR_ROWS.len() + ENTRY_EXTRAS.len();

const fn entry_keys() -> [&'static str; ENTRY_LEN] {
    let mut keys = [""; ENTRY_LEN];
    let mut i = 0;
    while i < keys.len() {
        let (s, a) = (SELECTORS.len(), ATTR_ROWS.len());
        keys[i] = if i < s {
            SELECTORS[i].name
        } else if i < s + a {
            ATTR_ROWS[i - s].name
        } else {
            ENTRY_EXTRAS[i - s - a].name
        };
        i += 1;
    }
    keys
}

const fn top_keys() -> [&'static str; TOP_LEN] {
    let mut keys = [""; TOP_LEN];
    let mut i = 0;
    while i < TOP_LEN {
        let (b, l) = (BEFORE_LIMITS.len(), LIMIT_ROWS.len());
        keys[i] = if i < b {
            BEFORE_LIMITS[i].name
        } else if i < b + l {
            LIMIT_ROWS[i - b].name
        } else {
            AFTER_LIMITS[i - b - l].name
        };
        i += 1;
    }
    keys
}

const fn names<const N: usize>(keys: &[Key; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = keys[i].name;
        i += 1;
    }
    out
}

/// True if and only if `persist` does not save the top-level key `name`.
pub(crate) fn run_only(name: &str) -> bool {
    own_keys().any(|k| k.name == name && k.role == Role::RunOnly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_keys_are_the_spec_keys_around_the_limits() {
        assert_eq!(
            TOP_KEYS,
            [
                "arrays",
                "thread_policy",
                "speed_limit_min",
                "speed_limit_max",
                "sync_io_depth",
                "state",
                "persist",
                "root",
                "check_mode",
                "diff",
                "measure",
                "revert_if_slower",
                "reason"
            ]
        );
        assert_eq!(
            DESIRED_KEYS,
            [
                "arrays",
                "thread_policy",
                "speed_limit_min",
                "speed_limit_max",
                "sync_io_depth"
            ]
        );
        assert_eq!(POLICY_KEYS, ["mode", "value", "min", "max", "combine"]);
        assert_eq!(ENTRY_KEYS[..3], ["name", "uuid", "group_thread_cnt"]);
        assert_eq!(ENTRY_KEYS.len(), 12);
        assert!(run_only("root") && run_only("diff") && !run_only("persist"));
    }
}
