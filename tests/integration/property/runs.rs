//! Running an input (in-process or through the binary), a reboot of a random host, and the query
//! that asks the same of a host as a run.

use super::random::Host;
use crate::common::run_args;
use mdtune::run::{self, Exit};
use serde_json::{json, Value};
use std::fs;

/// Runs the module in-process or through the binary.
pub(super) fn execute(binary: bool, input: &Value) -> (Value, Exit) {
    let text = input.to_string();
    let (out, code) = if binary {
        let r = run_args(&["-"], &text, &[]);
        let code = match r.code {
            0 => Exit::Ok,
            1 => Exit::Failed,
            2 => Exit::Input,
            other => panic!("exit status {other}: {}", r.stdout),
        };
        (r.stdout, code)
    } else {
        run::module(&text)
    };
    let json: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(json["failed"] == true, code != Exit::Ok, "{out}");
    (json, code)
}

/// What a reboot does: kernel defaults back, `run/` empty; `etc/` and `usr/` stay.
pub(super) fn reboot(host: &Host) {
    for name in &host.names {
        for (attr, default) in [
            ("group_thread_cnt", "0"),
            ("stripe_cache_size", "256"),
            ("preread_bypass_threshold", "1"),
            ("skip_copy", "0"),
            ("sync_speed_min", "1000 (system)"),
            ("sync_speed_max", "200000 (system)"),
            ("sync_force_parallel", "0"),
        ] {
            if host.fake.md_attr(name, attr).exists() {
                host.fake.set_md(name, attr, default);
            }
        }
    }
    fs::write(
        host.root.join("proc/sys/dev/raid/speed_limit_min"),
        "1000\n",
    )
    .unwrap();
    fs::write(
        host.root.join("proc/sys/dev/raid/speed_limit_max"),
        "200000\n",
    )
    .unwrap();
    let run = host.root.join("run");
    if fs::symlink_metadata(run.join("mdtune")).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(run.join("mdtune")).unwrap();
    }
    let _ = fs::remove_file(run.join("mdtune.lock"));
}

/// The query of what `input` wants. An input without desired state of its own wants the
/// defaults, but a query without one compares with the persisted state (docs/reference.md §2):
/// such a query names the defaults (`arrays: [{"name": "*"}]`), unless the input is a query.
/// With `persist: true` that would also change the input the query expects persisted, so no
/// query says what such an input wants before its run (`None`).
pub(super) fn query_of(input: &Value) -> Option<Value> {
    let mut q = input.clone();
    let desired = [
        "arrays",
        "thread_policy",
        "speed_limit_min",
        "speed_limit_max",
        "sync_io_depth",
    ];
    if input["state"] != "query" && desired.iter().all(|k| input[*k].is_null()) {
        if input["persist"] == true {
            return None;
        }
        q["arrays"] = json!([{"name": "*"}]);
    }
    q["state"] = json!("query");
    Some(q)
}
