//! Who ran mdtune, as the trail names them (docs/reference.md §6): the tool (Ansible from the
//! `_ansible_*` keys of its arguments, Salt from `MDTUNE_CALLER`, which the Salt modules set,
//! udev from `--udev`, anything else a command line) and the person (`SUDO_USER` when sudo ran
//! it, else `LOGNAME` or `USER`, else the effective uid). Nothing here is trusted: it is what
//! the caller says of itself, written down escaped, for a person to read.

use serde_json::Value as Json;

/// The environment variable a wrapper sets to name itself (`salt mdtune.apply`).
pub const CALLER_ENV: &str = "MDTUNE_CALLER";

/// At most this many characters of what a caller says of itself reach the log.
const MAX_CHARS: usize = 120;

/// Who ran this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// `ansible mdtune.mdraid.mdtune (ansible 2.19.0)`, `salt mdtune.apply`, `udev --udev md0`,
    /// `command line`.
    pub(crate) tool: String,
    /// `user alice via sudo`, `user root`, `uid 0`.
    pub(crate) person: String,
}

impl Caller {
    /// The caller of a JSON run whose input is `text`, from its `_ansible_*` keys and the
    /// environment.
    pub fn of_input(text: &str) -> Caller {
        let json: Json = serde_json::from_str(text).unwrap_or(Json::Null);
        let key = |k: &str| json.get(k).and_then(Json::as_str).map(clean);
        let env = std::env::var(CALLER_ENV)
            .ok()
            .filter(|s| !s.trim().is_empty());
        let tool = match (key("_ansible_module_name"), env) {
            (Some(module), _) => match key("_ansible_version") {
                Some(v) => format!("ansible {module} (ansible {v})"),
                None => format!("ansible {module}"),
            },
            (None, Some(said)) => clean(&said),
            (None, None) => "command line".to_string(),
        };
        Caller {
            tool,
            person: person(),
        }
    }

    /// The caller of `--udev NAME`: the persisted udev rule.
    pub fn udev(name: &str) -> Caller {
        Caller {
            tool: format!("udev --udev {}", clean(name)),
            person: person(),
        }
    }

    /// The caller of `--tick`: its timer, mdadm's monitor, or a person.
    pub fn tick() -> Caller {
        Caller {
            tool: "tick".to_string(),
            person: person(),
        }
    }

    /// `ansible mdtune (ansible 2.19.0), user alice via sudo`.
    pub fn describe(&self) -> String {
        format!("{}, {}", self.tool, self.person)
    }
}

/// The person: who sudo ran it for, else the login name, else the uid.
fn person() -> String {
    let var = |k: &str| std::env::var(k).ok().filter(|s| !s.trim().is_empty());
    match (var("SUDO_USER"), var("LOGNAME").or_else(|| var("USER"))) {
        (Some(u), _) => format!("user {} via sudo", clean(&u)),
        (None, Some(u)) => format!("user {}", clean(&u)),
        (None, None) => format!("uid {}", crate::sys::effective_uid()),
    }
}

/// What a caller says, on one line, escaped, and not too long.
fn clean(said: &str) -> String {
    let short: String = said.trim().chars().take(MAX_CHARS).collect();
    crate::view::escaped(&short).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansible_is_named_from_its_keys_and_escaped() {
        let c = Caller::of_input(
            r#"{"_ansible_module_name": "mdtune.mdraid.mdtune", "_ansible_version": "2.19.0"}"#,
        );
        assert_eq!(c.tool, "ansible mdtune.mdraid.mdtune (ansible 2.19.0)");
        let c = Caller::of_input(r#"{"_ansible_module_name": "x\ny"}"#);
        assert_eq!(c.tool, "ansible x\\x0ay");
        assert_eq!(Caller::udev("md0").tool, "udev --udev md0");
        assert!(!c.person.is_empty());
    }
}
