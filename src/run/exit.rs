//! The output vocabulary at the edge of a run: the exit status, the JSON object of a run that
//! failed before it could report, printing the one object a run ends with, and the panic hook
//! that turns a panic into such an object (docs/reference.md §1).

use serde_json::Value as Json;

/// The exit status: decided here, from the report or from the kind of error that stopped the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The run succeeded, changed or not, compliant or not.
    Ok = 0,
    /// The run failed (`"failed": true`).
    Failed = 1,
    /// Unusable input: nothing was written, not even the lock.
    Input = 2,
    /// `--verify` only: the host is not compliant with its desired state.
    NotCompliant = 3,
}

/// The whole result of a run that failed before it could plan.
pub fn failure(msg: &str) -> Json {
    serde_json::json!({"changed": false, "failed": true, "msg": msg, "warnings": []})
}

/// Prints one JSON object on stdout and exits with `code`: how every run ends. Nothing useful can
/// be done if stdout is gone; the exit status still tells.
pub fn print_and_exit(json: &dyn std::fmt::Display, code: i32) -> ! {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{json}");
    let _ = out.flush();
    std::process::exit(code)
}

/// Makes a panic end the process like any failed run: one JSON failure object on stdout, exit 1,
/// never a bare panic message. `examples/panic_report.rs` proves it in each release build.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = format!("internal error (please report it): {info}");
        print_and_exit(&failure(&msg), Exit::Failed as i32)
    }));
}
