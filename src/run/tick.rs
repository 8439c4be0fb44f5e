//! `mdtune --tick [--root DIR] [--textfile DIR]` (docs/reference.md §1): the periodic, idempotent
//! housekeeping run that `mdtune-tick.timer` starts every minute and mdadm's monitor on the
//! events that start or end a sync. It is not a daemon: it does what is due now and ends. Its
//! steps run in a fixed order ([`STEPS`]), each on its own (one that fails does not stop the
//! others), then, with `--textfile`, the metrics of the host as the steps left it are written to
//! `DIR/mdtune.prom` (`crate::sys::write_textfile`). One JSON object, like a run's: `changed`,
//! `failed`, `msg`, each step's list, `textfile`. This module parses the arguments, runs the
//! steps and builds the object; what a step does lives in the step named after it.

use super::exit::{failure, Exit};
use super::lock::{lock, lock_wait, UDEV_LOCK_WAIT_MS};
use super::module::open_root;
use super::show::metrics;
use crate::sys::Root;
use serde_json::{Map, Value as Json};
use std::path::{Component, Path, PathBuf};

/// The tick's arguments, parsed.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    root: PathBuf,
    textfile: Option<PathBuf>,
}

/// What one step did: one entry per thing done (an array and what), and why it could not do the
/// rest, when it could not (the tick then fails, exit 1, but every other step still runs).
type Done = (Vec<Json>, Option<String>);

/// One step of the tick: it is given the root (opened and checked) and returns what it did.
type Step = fn(&Root) -> Done;

/// The tick's steps, in the order they run, each with the key its list has in the JSON object
/// (docs/reference.md §1, `--tick` (a) to (c)). A new step is a function here and a row below;
/// the textfile ((d)) is written after all of them, so that it shows what they left.
const STEPS: [(&str, Step); 4] = [
    // (a) every sync an earlier mdtune froze and did not resume (a run killed mid-pause).
    ("resumed", resume_frozen),
    // (b) every sync boost whose sync has ended: the values before it restored; then every
    // boost of the persisted state whose sync has started.
    ("ended", super::boosts::ended),
    ("boosted", super::boosts::boosted),
    // (c) every check or repair seen to end.
    ("recorded", record_checks),
];

/// (a): resumes every sync a killed run left frozen, from its record (docs/reference.md §4,
/// "A pause that always ends"), under the host lock, so that no live run is mid-pause. A host
/// with no pause recorded is left alone: the lock is not even taken (nor created).
fn resume_frozen(root: &Root) -> Done {
    if crate::host::pause_records(root).is_empty() {
        return (Vec::new(), None);
    }
    let _lock = match lock(root, lock_wait(UDEV_LOCK_WAIT_MS)) {
        Ok(l) => l,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let resumed = crate::apply::resume_stale(root);
    crate::trail::tick(root.base(), &resumed);
    let failed: Vec<String> = resumed
        .iter()
        .filter(|r| r.outcome != "resumed" && r.outcome != "not frozen")
        .map(|r| format!("{}: the {} {}", r.array, r.action, r.outcome))
        .collect();
    let items = resumed
        .iter()
        .filter(|r| r.outcome == "resumed")
        .map(|r| serde_json::to_value(r).unwrap_or_default())
        .collect();
    (items, (!failed.is_empty()).then(|| failed.join("; ")))
}

/// (c): every check or repair seen to end, added to the record (`super::checks`).
fn record_checks(root: &Root) -> Done {
    super::checks::record(root)
}

/// The textfile's name in its directory, which node_exporter reads (`*.prom`).
const TEXTFILE: &str = "mdtune.prom";

/// Runs `mdtune --tick` with the command line's `words` (`--tick` among them): its JSON object
/// and exit status (0 nothing needed or all done, 1 something could not be done, 2 unusable
/// arguments or root).
pub fn tick(words: &[&str]) -> (String, Exit) {
    let args = match parse(words) {
        Ok(args) => args,
        Err(msg) => return (failure(&msg).to_string(), Exit::Input),
    };
    let root = match open_root(&args.root) {
        Ok(root) => root,
        Err(e) => return (failure(&e.to_string()).to_string(), e.exit()),
    };
    let mut out = Map::new();
    let mut errors = Vec::new();
    let mut done = Vec::new();
    for (key, step) in STEPS {
        let (items, error) = step(&root);
        if !items.is_empty() {
            done.push(format!("{key} {}", items.len()));
        }
        errors.extend(error.map(|e| format!("{key}: {e}")));
        out.insert(key.to_string(), Json::Array(items));
    }
    let changed = !done.is_empty();
    out.insert("textfile".into(), Json::Null);
    if let Some(dir) = &args.textfile {
        match textfile(&args.root, dir) {
            Ok(path) => {
                out.insert("textfile".into(), Json::from(path.display().to_string()));
            }
            Err(e) => errors.push(e),
        }
    }
    let failed = !errors.is_empty();
    let msg = summary(&done, &errors, &out["textfile"]);
    out.insert("changed".into(), Json::from(changed));
    out.insert("failed".into(), Json::from(failed));
    out.insert("msg".into(), Json::from(msg));
    out.insert("warnings".into(), Json::Array(Vec::new()));
    let code = if failed { Exit::Failed } else { Exit::Ok };
    (Json::Object(out).to_string(), code)
}

/// Writes the metrics of the host under `root` to `dir/mdtune.prom`; the path written, or why
/// not (the old file then stays).
fn textfile(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    let text = metrics(root).map_err(|(msg, _)| {
        format!(
            "the textfile in {} was not written (the old one stays): cannot read the host: {msg}",
            dir.display()
        )
    })?;
    crate::sys::write_textfile(dir, TEXTFILE, text.as_bytes()).map_err(|e| {
        format!(
            "the textfile in {} was not written (the old one stays): {e}",
            dir.display()
        )
    })?;
    Ok(dir.join(TEXTFILE))
}

/// The `msg`: what was done, what could not be, and where the textfile went.
fn summary(done: &[String], errors: &[String], textfile: &Json) -> String {
    let mut parts = Vec::new();
    if done.is_empty() && errors.is_empty() {
        parts.push("nothing to do".to_string());
    }
    parts.extend(done.iter().cloned());
    parts.extend(errors.iter().cloned());
    if let Some(path) = textfile.as_str() {
        parts.push(format!("wrote {path}"));
    }
    parts.join("; ")
}

/// Parses `--tick [--root DIR] [--textfile DIR]`, in any order, each at most once; what is
/// wrong and what is allowed otherwise.
fn parse(words: &[&str]) -> Result<Args, String> {
    const USAGE: &str = "mdtune --tick [--root DIR] [--textfile DIR]";
    let (mut root, mut textfile, mut ticks) = (None, None, 0);
    let mut rest = words.iter();
    while let Some(&word) = rest.next() {
        let slot = match word {
            "--tick" => {
                ticks += 1;
                if ticks > 1 {
                    return Err(format!("--tick is given twice ({USAGE})"));
                }
                continue;
            }
            "--root" => &mut root,
            "--textfile" => &mut textfile,
            other => {
                return Err(format!(
                    "unknown argument {other:?} for --tick: it takes --root DIR and \
                     --textfile DIR ({USAGE})"
                ))
            }
        };
        let Some(&value) = rest.next() else {
            return Err(format!("{word} needs a directory: {word} DIR ({USAGE})"));
        };
        if slot.is_some() {
            return Err(format!("{word} is given twice ({USAGE})"));
        }
        *slot = Some(checked_dir(word, value)?);
    }
    Ok(Args {
        root: root.unwrap_or_else(|| PathBuf::from("/")),
        textfile,
    })
}

/// The directory given with `flag`: not empty, absolute, without `..` (docs/reference.md §1).
fn checked_dir(flag: &str, value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    let problem = if value.is_empty() {
        "is empty"
    } else if !path.is_absolute() {
        "is relative"
    } else if path.components().any(|c| c == Component::ParentDir) {
        "has a `..`"
    } else {
        return Ok(path);
    };
    Err(format!(
        "{flag} {value:?} {problem}: give an absolute path without `..`, such as {}",
        if flag == "--textfile" {
            "/var/lib/prometheus/node-exporter"
        } else {
            "/ or /mnt/sysimage"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_arguments_come_in_any_order_each_once() {
        let args = parse(&["--textfile", "/t", "--tick", "--root", "/r"]).unwrap();
        assert_eq!(
            args,
            Args {
                root: "/r".into(),
                textfile: Some("/t".into())
            }
        );
        assert_eq!(parse(&["--tick"]).unwrap().root, Path::new("/"));
        assert_eq!(parse(&["--tick"]).unwrap().textfile, None);
    }

    #[test]
    fn unusable_tick_arguments_say_which_and_what_is_allowed() {
        for (words, says) in [
            (&["--tick", "--bogus"][..], "unknown argument \"--bogus\""),
            (
                &["--tick", "--textfile"][..],
                "--textfile needs a directory",
            ),
            (&["--tick", "--textfile", ""][..], "is empty"),
            (&["--tick", "--textfile", "rel/dir"][..], "is relative"),
            (&["--tick", "--textfile", "/a/../b"][..], "has a `..`"),
            (
                &["--tick", "--root", "/a", "--root", "/b"][..],
                "--root is given twice",
            ),
            (&["--tick", "--tick"][..], "--tick is given twice"),
        ] {
            let e = parse(words).unwrap_err();
            assert!(e.contains(says), "{words:?}: {e}");
            assert!(
                e.contains("--tick [--root DIR] [--textfile DIR]") || e.contains("absolute"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_msg_says_nothing_to_do_or_what_was_done_and_failed() {
        let none = summary(&[], &[], &Json::Null);
        assert_eq!(none, "nothing to do");
        let some = summary(
            &["resumed 1".into()],
            &["ended: x".into()],
            &Json::from("/t/mdtune.prom"),
        );
        assert_eq!(some, "resumed 1; ended: x; wrote /t/mdtune.prom");
    }
}
