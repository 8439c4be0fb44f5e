//! The properties each report must keep, checked against the snapshots taken around its run;
//! a failure names the seed, the host and the step (`Ctx`).

use super::random::Host;
use super::runs::{execute, query_of};
use super::snapshot::*;
use mdtune::run::Exit;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

pub(super) struct Ctx<'a> {
    pub(super) seed: u64,
    pub(super) host: usize,
    pub(super) step: usize,
    pub(super) input: &'a Value,
}

impl Ctx<'_> {
    pub(super) fn fail(&self, what: &str, report: &Value) -> ! {
        panic!(
            "seed {:#x}, host {}, step {}: {what}\ninput: {}\nreport: {report}",
            self.seed, self.host, self.step, self.input
        )
    }
}

/// Each setting the report names against the files: `before` is what the file held before the
/// run and, when `written` (the run was real and succeeded), `after` is what the file holds now
/// and `changed` says whether it changed.
pub(super) fn check_settings(root: &Path, before: &Tree, report: &Value, written: bool, ctx: &Ctx) {
    for (target, setting, b, a, changed) in settings(report) {
        let Some(was) = read_value_in(before, &target, &setting) else {
            ctx.fail(
                &format!("{target} {setting}: reported, but no such file"),
                report,
            );
        };
        if report_value(&b) != was {
            ctx.fail(
                &format!("{target} {setting}: before {b} but the file held {was}"),
                report,
            );
        }
        let now = read_value(root, &target, &setting);
        if written && report_value(&a) != now {
            ctx.fail(
                &format!("{target} {setting}: after {a} but the file holds {now}"),
                report,
            );
        }
        if written && changed != (was != now) {
            ctx.fail(
                &format!("{target} {setting}: changed {changed}, file {was} -> {now}"),
                report,
            );
        }
    }
}

/// A successful real present run converges: a fresh query then says compliant.
pub(super) fn check_converged(
    host: &Host,
    binary: bool,
    input: &Value,
    after: &Tree,
    report: &Value,
    ctx: &Ctx,
) {
    // After a run that persisted its input, a plain query compares with just that.
    let q = query_of(input).unwrap_or_else(|| {
        let mut q = input.clone();
        q["state"] = json!("query");
        q
    });
    let (q, _) = execute(binary, &q);
    if q["compliant"] != true && !cannot_comply(host, after, &q) {
        ctx.fail(
            &format!("not compliant right after a present run: {q}"),
            report,
        );
    }
}

/// True when no run can be compliant on this host as it is: the report checked nothing, an
/// array it reports reads empty, the persisted state diverges or cannot be read (a link out).
pub(super) fn cannot_comply(host: &Host, t: &Tree, report: &Value) -> bool {
    let arrays = report["arrays"].as_array().cloned().unwrap_or_default();
    let none = arrays.is_empty() && report["system"].as_object().is_none_or(|s| s.is_empty());
    let etc_link = fs::symlink_metadata(host.root.join("etc/mdtune"))
        .is_ok_and(|m| m.file_type().is_symlink());
    none || etc_link
        || arrays
            .iter()
            .any(|a| reads_empty(t, a["name"].as_str().unwrap_or("")))
        || report["persist"]["diverged"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
}

/// The value a report's setting wants: `held_back.wanted`, else `after`.
pub(super) fn wanted(s: &Value) -> Value {
    match s.get("held_back") {
        Some(h) => h["wanted"].clone(),
        None => s["after"].clone(),
    }
}

/// `(target, setting) -> wanted` of every setting a report plans.
pub(super) fn wants(report: &Value) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    for a in report["arrays"].as_array().into_iter().flatten() {
        for (k, s) in a["settings"].as_object().into_iter().flatten() {
            let name = a["name"].as_str().unwrap().to_string();
            out.insert((name, k.clone()), report_value(&wanted(s)));
        }
    }
    for (k, s) in report["system"].as_object().into_iter().flatten() {
        out.insert(("system".into(), k.clone()), report_value(&wanted(s)));
    }
    out
}

/// What the persisted state wants on the host as it is now: its own query's settings. `None`
/// when nothing is persisted (or `etc/mdtune` is not a directory of the root).
pub(super) fn persisted_wants(
    host: &Host,
    binary: bool,
) -> Option<BTreeMap<(String, String), String>> {
    let etc = host.root.join("etc/mdtune");
    if !fs::symlink_metadata(&etc).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let text = fs::read_to_string(etc.join("mdtune.json")).ok()?;
    let mut q: Value = serde_json::from_str(&text).ok()?;
    q["root"] = json!(host.root);
    q["state"] = json!("query");
    let (report, code) = execute(binary, &q);
    (code == Exit::Ok).then(|| wants(&report))
}

/// `compliant`, per setting, per array and overall, is what was read: the setting's `before`
/// is the value wanted; the array has every setting compliant and no file that read empty; the
/// run checked something, every array and system setting is compliant, no persisted file is
/// due and nothing diverges.
pub(super) fn check_compliant(before: &Tree, report: &Value, ctx: &Ctx) {
    let arrays = report["arrays"].as_array().cloned().unwrap_or_default();
    let system = report["system"].as_object().cloned().unwrap_or_default();
    let mut all = !arrays.is_empty() || !system.is_empty();
    let setting_ok = |what: &str, s: &Value| -> bool {
        let ok = report_value(&s["before"]) == report_value(&wanted(s));
        if (s["compliant"] == true) != ok {
            ctx.fail(
                &format!(
                    "{what}: compliant {} but before {} and wanted {}",
                    s["compliant"],
                    s["before"],
                    wanted(s)
                ),
                report,
            );
        }
        ok
    };
    for a in &arrays {
        let name = a["name"].as_str().unwrap();
        let mut ok = !reads_empty(before, name);
        for (k, s) in a["settings"].as_object().into_iter().flatten() {
            ok &= setting_ok(&format!("{name} {k}"), s);
        }
        if (a["compliant"] == true) != ok {
            ctx.fail(
                &format!(
                    "{name}: compliant {} but what was read says {ok}",
                    a["compliant"]
                ),
                report,
            );
        }
        all &= ok;
    }
    for (k, s) in &system {
        all &= setting_ok(&format!("system {k}"), s);
    }
    let persist = &report["persist"];
    let empty = |v: &Value| v.as_array().is_none_or(|a| a.is_empty());
    all &= empty(&persist["files"]) && empty(&persist["left"]) && empty(&persist["diverged"]);
    all &= !report["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("persisted state cannot be read"))
        });
    if (report["compliant"] == true) != all {
        ctx.fail(
            &format!(
                "compliant {} but what was read says {all}",
                report["compliant"]
            ),
            report,
        );
    }
}

/// `persist.diverged` is exactly what the persisted state wants otherwise than this run.
pub(super) fn check_diverged(
    persisted: Option<&BTreeMap<(String, String), String>>,
    report: &Value,
    ctx: &Ctx,
) {
    let mut expected: Vec<String> = Vec::new();
    if let Some(p) = persisted {
        for (key, want) in wants(report) {
            if let Some(pv) = p.get(&key).filter(|pv| **pv != want) {
                expected.push(format!("{} {} {pv}", key.0, key.1));
            }
        }
    }
    let mut actual: Vec<String> = report["persist"]["diverged"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let t = d["target"].as_str().unwrap_or("?");
            let s = d["setting"].as_str().unwrap_or("?");
            format!("{t} {s} {}", report_value(&d["value"]))
        })
        .collect();
    expected.sort();
    actual.sort();
    if expected != actual {
        ctx.fail(
            &format!("persist.diverged is {actual:?}, the persisted file says {expected:?}"),
            report,
        );
    }
}

/// A real revert's `persist.files` are exactly the files under the root it removed.
pub(super) fn check_removed(before: &Tree, after: &Tree, report: &Value, ctx: &Ctx) {
    let mut removed: Vec<String> = before
        .iter()
        .filter(|(p, n)| **n != Node::Dir && p.starts_with("root") && !after.contains_key(*p))
        .filter(|(p, _)| !p.ends_with("run/mdtune.lock"))
        .map(|(p, _)| format!("/{}", p.strip_prefix("root").unwrap().display()))
        .collect();
    let mut listed: Vec<String> = report["persist"]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f.as_str().unwrap_or("?").to_string())
        .collect();
    removed.sort();
    listed.sort();
    if removed != listed {
        ctx.fail(
            &format!("revert removed {removed:?} but lists {listed:?}"),
            report,
        );
    }
}
