//! `mdtune --show`'s head for the person on call: the system limits in force (and where each
//! came from), whether the desired state is persisted and in force after a reboot (since when,
//! by which version, the udev rule, the saved originals, this boot's replays, the last run), and
//! whether the host is as rolled out, naming each drifted setting. Rendered from the JSON that
//! `crate::run::show` gathers, already escaped.

use super::cells::shown;
use serde_json::Value as Json;
use std::fmt::Write as _;

/// The lines of the head, after the host line.
pub(super) fn head(view: &Json) -> String {
    let mut out = String::new();
    out.push_str(&limits(&view["system_limits"]));
    persistence(&mut out, &view["persistence"]);
    compared(&mut out, &view["compared"]);
    out
}

/// `system: speed_limit_max 200000 (kernel default), speed_limit_min 50000 (rolled out 50000,
/// speed_limit_min)`.
fn limits(l: &Json) -> String {
    let Some(map) = l.as_object().filter(|m| !m.is_empty()) else {
        return "system: no speed limits (md is not loaded)\n".into();
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(name, o)| {
            let mut p = format!("{name} {} ({}", shown(&o["live"]), shown(&o["source"]));
            if !o["rolled_out"].is_null() {
                let _ = write!(p, "; rolled out {}", shown(&o["rolled_out"]));
            }
            p.push(')');
            p
        })
        .collect();
    format!("system: {}\n", parts.join(", "))
}

fn persistence(out: &mut String, p: &Json) {
    if p["persisted"] == true {
        let when = match (p["written"].as_str(), p["version"].as_str()) {
            (Some(t), Some(v)) => format!("since {t} by mdtune {v}"),
            _ => "since an unknown time (the manifest predates the record)".into(),
        };
        let _ = writeln!(out, "persisted: yes, {when} ({})", shown(&p["state_file"]));
    } else {
        out.push_str("persisted: no (nothing is put back at boot)\n");
    }
    let r = &p["rule"];
    let rule = match (r["installed"] == true, r["runs"].as_str()) {
        (false, _) => format!("{} not installed", shown(&r["file"])),
        (true, None) => format!(
            "{} installed, but it runs no mdtune --udev",
            shown(&r["file"])
        ),
        (true, Some(bin)) => {
            let mut s = format!("{} installed, runs {bin}", shown(&r["file"]));
            if r["binary_present"] != true {
                s.push_str(" (MISSING)");
            }
            if r["as_written"] != true {
                s.push_str(" (edited since persist wrote it)");
            }
            s
        }
    };
    let _ = writeln!(out, "  udev rule: {rule}");
    let originals: Vec<String> = p["originals"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(array, values)| {
            let v: Vec<String> = values
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k} {}", shown(v)))
                .collect();
            format!("{array} ({})", v.join(", "))
        })
        .collect();
    let _ = writeln!(
        out,
        "  saved originals: {}",
        if originals.is_empty() {
            "none (nothing changed since boot)".to_string()
        } else {
            originals.join("; ")
        }
    );
    let b = &p["boot"];
    match b["lines"].as_array() {
        Some(l) if l.is_empty() => {
            out.push_str("  this boot's replays: none changed or failed (journal)\n");
        }
        Some(l) => {
            out.push_str("  this boot's replays (journal):\n");
            for line in l {
                let _ = writeln!(out, "    {}", shown(line));
            }
        }
        None => {
            let _ = writeln!(
                out,
                "  this boot's replays: unknown: {}",
                shown(&b["unknown"])
            );
        }
    }
    let l = &p["last_run"];
    if l.is_object() {
        let how = match (l["failed"] == true, l["changed"] == true) {
            (true, _) => "failed",
            (false, true) => "changed",
            (false, false) => "changed nothing",
        };
        let _ = writeln!(
            out,
            "  last run: {} by {}, {}, {how} (mdtune {})",
            shown(&l["time"]),
            shown(&l["by"]),
            shown(&l["state"]),
            shown(&l["version"])
        );
    } else {
        out.push_str("  last run: none since boot\n");
    }
    for problem in p["problems"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  cannot read: {}", shown(problem));
    }
}

/// Whether the host is as rolled out (or, with nothing persisted, as the defaults want).
fn compared(out: &mut String, c: &Json) {
    if let Some(e) = c["error"].as_str() {
        let _ = writeln!(out, "drift: cannot tell: {e}");
        return;
    }
    let what = if c["rolled_out"] == true {
        "drift"
    } else {
        "drift (nothing persisted: against the defaults)"
    };
    let _ = writeln!(out, "{what}: {}", shown(&c["msg"]));
}
