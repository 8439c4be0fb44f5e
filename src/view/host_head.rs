//! `mdtune --show`'s head for the person on call: the system limits in force (whether they are as
//! rolled out is the drift line's to say), whether the desired state is persisted and in force
//! after a reboot (since when, by which version and caller, its top-level reason, the udev rule, the saved originals, this boot's
//! replays, the last run), and whether the host is as rolled out, naming each drifted setting.
//! Rendered from the JSON that `crate::run::show` gathers, already escaped.

use super::cells::shown;
use serde_json::Value as Json;
use std::fmt::Write as _;

/// The lines of the head, after the host line.
pub(super) fn head(view: &Json) -> String {
    let mut out = String::from("system:");
    let limits = view["system_limits"].as_object().into_iter().flatten();
    for (i, (name, live)) in limits.enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(out, "{sep} {name} {}", shown(live));
    }
    if view["system_limits"]
        .as_object()
        .is_none_or(|m| m.is_empty())
    {
        out.push_str(" no speed limits (md is not loaded)");
    }
    out.push('\n');
    persistence(&mut out, &view["persistence"]);
    let c = &view["compared"];
    let what = match (c["error"].as_str(), c["rolled_out"] == true) {
        (Some(e), _) => format!("cannot tell: {e}"),
        (None, true) => shown(&c["msg"]),
        (None, false) => format!(
            "(nothing persisted: against the defaults) {}",
            shown(&c["msg"])
        ),
    };
    let _ = writeln!(out, "drift: {what}");
    out
}

fn persistence(out: &mut String, p: &Json) {
    let persisted = match (p["persisted"] == true, p["written"].as_str()) {
        (false, _) => "no (nothing is put back at boot)".to_string(),
        (true, Some(t)) => match p["by"].as_str() {
            Some(by) => format!(
                "yes, since {t} by mdtune {}, run by {by}",
                shown(&p["version"])
            ),
            None => format!("yes, since {t} by mdtune {}", shown(&p["version"])),
        },
        (true, None) => "yes, since an unknown time (the manifest predates the record)".into(),
    };
    let _ = writeln!(out, "persisted: {persisted} ({})", shown(&p["state_file"]));
    if let Some(r) = p["reason"].as_str() {
        let _ = writeln!(out, "  reason: {r}");
    }
    let r = &p["rule"];
    let _ = write!(out, "  udev rule: {} ", shown(&r["file"]));
    match (r["installed"] == true, r["runs"].as_str()) {
        (false, _) => out.push_str("not installed"),
        (true, None) => out.push_str("installed, but no line of it replays the persisted state"),
        (true, Some(bin)) => {
            let _ = write!(out, "installed, runs {bin}");
            if r["binary_present"] != true {
                out.push_str(" (MISSING)");
            }
            if r["as_written"] != true {
                out.push_str(" (edited since persist wrote it)");
            }
        }
    }
    for why in r["not_in_force"].as_array().into_iter().flatten() {
        let _ = write!(out, "\n  NOT IN FORCE at the next boot: {}", shown(why));
    }
    if r["not_in_force"].as_array().is_some_and(|l| !l.is_empty()) {
        let _ = write!(out, "\n  fix: {}", crate::persist::FIX);
    }
    out.push_str("\n  saved originals:");
    let originals = p["originals"].as_object().into_iter().flatten();
    for (i, (array, values)) in originals.enumerate() {
        let _ = write!(out, "{} {array} (", if i == 0 { "" } else { ";" });
        for (j, (k, v)) in values.as_object().into_iter().flatten().enumerate() {
            let _ = write!(out, "{}{k} {}", if j == 0 { "" } else { ", " }, shown(v));
        }
        out.push(')');
    }
    if p["originals"].as_object().is_none_or(|m| m.is_empty()) {
        out.push_str(" none (nothing changed since boot)");
    }
    let b = &p["boot"];
    match b["lines"].as_array() {
        Some(l) if l.is_empty() => {
            out.push_str("\n  this boot's replays: none changed or failed (journal)")
        }
        Some(l) => {
            out.push_str("\n  this boot's replays (journal):");
            for line in l {
                let _ = write!(out, "\n    {}", shown(line));
            }
        }
        None => {
            let _ = write!(
                out,
                "\n  this boot's replays: unknown: {}",
                shown(&b["unknown"])
            );
        }
    }
    let l = &p["last_run"];
    let how = match (l["failed"] == true, l["changed"] == true) {
        (true, _) => "failed",
        (false, true) => "changed",
        (false, false) => "changed nothing",
    };
    match l["time"].as_str() {
        Some(t) => {
            let (by, state, v) = (shown(&l["by"]), shown(&l["state"]), shown(&l["version"]));
            let _ = writeln!(
                out,
                "\n  last run: {t} by {by}, {state}, {how} (mdtune {v})"
            );
        }
        None => out.push_str("\n  last run: none since boot\n"),
    }
    for problem in p["problems"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  cannot read: {}", shown(problem));
    }
}
