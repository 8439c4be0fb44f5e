//! `mdtune --verify [--json]` (docs/reference.md §1): the host against what was rolled out,
//! failing like the tools SAP admins know (`saptune note verify`, `tuned-adm verify`, `rpm -V`):
//! exit 0 when compliant, 3 when not, 1 when it could not check, 2 for unusable input. It is the
//! `query` that `{"state": "query"}` runs (`super::rolled_out`: against the persisted state, or
//! the defaults when nothing is persisted), printed as saptune's table (`crate::view::verify`)
//! or, with `--json`, as that report. JSON runs keep exit 0.

use super::exit::{failure, Exit};
use super::look::look;
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
    let (value, exit) = match look(root).and_then(|l| l.wanted) {
        Ok(r) => {
            let exit = if r.compliant {
                Exit::Ok
            } else {
                Exit::NotCompliant
            };
            (
                serde_json::from_str(&r.to_text()).unwrap_or(Json::Null),
                exit,
            )
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
