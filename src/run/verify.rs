//! `mdtune --verify [--json]` (docs/reference.md §1): the host against what was rolled out.
//! Exit 0 when compliant, 3 when not, 1 when it could not check, 2 for unusable input: unlike
//! `saptune note verify` and `tuned-adm verify`, which exit 1 both when the system does not
//! comply and when they fail, so a cron job can tell drift from an error (`rpm -V`, too, exits
//! 1 for either). The text shows rows for what is not healthy (degraded, mismatches, no whole
//! check), which do not change the exit status: only the settings and persistence do. It is the
//! `query` that `{"state": "query"}` runs (`super::rolled_out`: against the persisted state, or
//! the defaults when nothing is persisted), printed as saptune's table (`crate::view::verify`)
//! or, with `--json`, as that report. JSON runs keep exit 0.

use super::error::RunError;
use super::exit::{failure, Exit};
use super::look::look;
use crate::persist::{self, PersistError};
use crate::spec::Spec;
use crate::sys::Root;
use serde_json::Value as Json;
use std::path::Path;

/// What `--verify` prints on stdout, what it says on stderr, and its exit status.
pub struct Verified {
    pub stdout: String,
    pub stderr: String,
    pub exit: Exit,
}

/// Verifies the host under `root`; `json` prints the report instead of the table.
pub fn verify(root: &Path, json: bool) -> Verified {
    let looked = look(root).and_then(|l| {
        readable(&l.root)?;
        Ok((l.wanted?, l.root, l.inv))
    });
    let (value, exit) = match looked {
        Ok((r, host_root, inv)) => {
            // Only the settings and the persisted state decide the exit status; the health
            // the text shows beside them does not (docs/reference.md §1).
            let exit = if r.compliant {
                Exit::Ok
            } else {
                Exit::NotCompliant
            };
            let mut value = serde_json::from_str(&r.to_text()).unwrap_or(Json::Null);
            if !json {
                crate::health::annotate(&mut value, &host_root, &inv);
                value["now_unix"] = Json::from(persist::now());
            }
            (value, exit)
        }
        Err(e) => (failure(&e.to_string()), e.exit()),
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if json {
        stdout = format!("{value}\n");
    } else if value["failed"] == true {
        let msg = crate::view::escaped(value["msg"].as_str().unwrap_or(""));
        stderr = format!("mdtune --verify: could not check: {msg}\n");
    } else {
        stdout = crate::view::verify(&value);
    }
    Verified {
        stdout,
        stderr,
        exit,
    }
}

/// The persisted state and its manifest as `--verify` needs them: one that cannot be read or
/// is not one mdtune wrote means it could not check (exit 1, docs/reference.md §1). One that is
/// not root's alone is no such error: the query is then not compliant and says why (exit 3).
fn readable(root: &Root) -> Result<(), RunError> {
    let usable = |e: &PersistError| matches!(e, PersistError::Untrusted { .. });
    match persist::load_state(root) {
        Ok(Some(text)) => {
            Spec::from_json(&text).map_err(|source| RunError::Persisted {
                path: format!("/etc/mdtune/{}", persist::STATE_FILE),
                source,
            })?;
        }
        Ok(None) => {}
        Err(e) if usable(&e) => {}
        Err(e) => return Err(e.into()),
    }
    match persist::written(root) {
        Err(e) if !usable(&e) => Err(e.into()),
        _ => Ok(()),
    }
}
