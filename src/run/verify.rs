//! `mdtune --verify [--json]` (docs/reference.md §1): the host against what was rolled out,
//! failing like the tools SAP admins know (`saptune note verify`, `tuned-adm verify`, `rpm -V`):
//! exit 0 when compliant, 3 when not, 1 when it could not check, 2 for unusable input. It is the
//! `query` that `{"state": "query"}` runs (`super::rolled_out`: against the persisted state, or
//! the defaults when nothing is persisted), printed as saptune's table (`crate::view::verify`)
//! or, with `--json`, as its report with the rows beside it. JSON runs keep exit 0.

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
    let report = look(root).and_then(|l| l.wanted);
    let (mut value, exit) = match &report {
        Ok(r) => (
            serde_json::from_str::<Json>(&r.to_text()).unwrap_or(Json::Null),
            if r.compliant {
                Exit::Ok
            } else {
                Exit::NotCompliant
            },
        ),
        Err(e) => (failure(&e.to_string()), e.exit()),
    };
    if report.is_err() {
        let msg = value["msg"].as_str().unwrap_or("").to_string();
        return match json {
            true => Verified {
                stdout: format!("{value}\n"),
                stderr: String::new(),
                exit,
            },
            false => Verified {
                stdout: String::new(),
                stderr: format!(
                    "mdtune --verify: could not check: {}\n",
                    crate::view::escaped(&msg)
                ),
                exit,
            },
        };
    }
    if json {
        value["rows"] = Json::Array(crate::view::verify_rows(&value));
        return Verified {
            stdout: format!("{value}\n"),
            stderr: String::new(),
            exit,
        };
    }
    Verified {
        stdout: crate::view::verify(&value),
        stderr: String::new(),
        exit,
    }
}
