//! `mdtune --measure [--root DIR] [--seconds N] [--json] [ARRAY...]` (docs/reference.md §1): read
//! only. Each array named (every md array by default) is sampled for N seconds (10 by default,
//! 1..600) from its own counters (`crate::measure`), all at once, and printed as a table for a
//! person or, with `--json`, one JSON object: per array the window's figures (the same as a
//! measured run's `effect.before`) and the sync that runs at the end of it, with its progress.
//! No lock is taken and nothing is written.

use super::exit::Exit;
use super::verify::Verified;
use crate::measure::{interval_for, intervals, sample, Reading, Sampler, Side};
use crate::spec::MEASURE_MAX;
use crate::sys::Root;
use serde_json::{json, Value as Json};
use std::path::Path;

/// What the words after `mdtune` ask of `--measure`.
#[derive(Debug)]
struct Args<'a> {
    root: &'a str,
    seconds: u64,
    json: bool,
    arrays: Vec<String>,
}

fn parse<'a>(words: &[&'a str]) -> Result<Args<'a>, String> {
    let mut a = Args {
        root: "/",
        seconds: 10,
        json: false,
        arrays: Vec::new(),
    };
    let (mut i, mut root, mut seconds) = (0, false, false);
    while i < words.len() {
        let next = || words.get(i + 1).copied();
        match words[i] {
            "--measure" => {}
            "--json" if !a.json => a.json = true,
            "--root" if !root => {
                a.root = next().ok_or("--root needs a directory")?;
                (root, i) = (true, i + 1);
            }
            "--seconds" if !seconds => {
                let v = next().ok_or("--seconds needs a number")?;
                a.seconds = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=MEASURE_MAX).contains(n))
                    .ok_or_else(|| {
                        format!("--seconds: {v:?} is not allowed; expected an integer 1..600")
                    })?;
                (seconds, i) = (true, i + 1);
            }
            w if !w.starts_with('-') => {
                let name = w.strip_prefix("/dev/").unwrap_or(w);
                if !name.starts_with("md") || name.contains('/') || name.contains("..") {
                    return Err(format!(
                        "{w:?} is not an md array (give md0 or /dev/md0; mdtune --help)"
                    ));
                }
                a.arrays.push(name.to_string());
            }
            w => {
                return Err(format!(
                    "unknown argument {w:?} for --measure (mdtune --help)"
                ))
            }
        }
        i += 1;
    }
    Ok(a)
}

/// Runs `--measure` with `words` (all of the command's arguments).
pub fn measure(words: &[&str]) -> Verified {
    let fail = |msg: String, exit: Exit| Verified {
        stdout: String::new(),
        stderr: format!("mdtune --measure: {}\n", crate::view::escaped(&msg)),
        exit,
    };
    let args = match parse(words) {
        Ok(a) => a,
        Err(e) => return fail(e, Exit::Input),
    };
    let root = match super::module::open_root(Path::new(args.root)) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string(), Exit::Input),
    };
    let names = if args.arrays.is_empty() {
        md_arrays(&root)
    } else {
        args.arrays.clone()
    };
    if names.is_empty() {
        return fail("no md array on this host".into(), Exit::Failed);
    }
    let sampler = Sampler::open(&root, &names);
    let windows = sample(&sampler, args.seconds);
    let arrays: Vec<Json> = names
        .iter()
        .zip(&windows)
        .map(|(n, w)| array(n, w))
        .collect();
    let unread: Vec<&String> = names
        .iter()
        .zip(&windows)
        .filter(|(_, w)| w.iter().all(|r| r.stat.is_none()))
        .map(|(n, _)| n)
        .collect();
    let report = json!({
        "seconds": args.seconds,
        "interval_ms": interval_for(args.seconds).as_millis() as u64,
        "arrays": arrays,
    });
    let stdout = if args.json {
        format!("{report}\n")
    } else {
        table(&report)
    };
    let stderr: String = unread
        .iter()
        .map(|n| format!("mdtune --measure: {n}: its stat could not be read\n"))
        .collect();
    let exit = if unread.is_empty() {
        Exit::Ok
    } else {
        Exit::Failed
    };
    Verified {
        stdout,
        stderr,
        exit,
    }
}

/// The md arrays under `sys/block` (those with an `md/` directory), sorted.
fn md_arrays(root: &Root) -> Vec<String> {
    let Ok(sys) = root.sys_dir() else {
        return Vec::new();
    };
    let names = sys.list_under(&["block"]).unwrap_or_default();
    names
        .into_iter()
        .filter(|n| n.starts_with("md"))
        .filter(|n| sys.exists_under(&["block", n, "md"]).unwrap_or(false))
        .collect()
}

/// One array's object: the window's figures, and the sync running at its end.
fn array(name: &str, readings: &[Reading]) -> Json {
    let mut a = json!({"name": name});
    let side = serde_json::to_value(Side::of(&intervals(readings))).unwrap_or(Json::Null);
    if let (Some(a), Some(s)) = (a.as_object_mut(), side.as_object()) {
        a.extend(s.clone());
    }
    a["sync"] = match readings.last().and_then(|r| r.sync.as_ref()) {
        Some(s) => json!({
            "action": s.action,
            "speed_kib_s": s.speed_kib_s,
            "completed": [s.done, s.total],
            "progress": if s.total > 0 { (s.done as f64 / s.total as f64 * 1000.0).round() / 1000.0 } else { 0.0 },
        }),
        None => Json::Null,
    };
    a
}

/// The report as a table for a person.
fn table(report: &Json) -> String {
    let mib = |v: &Json| format!("{:.1}", v.as_f64().unwrap_or(0.0) / 1048576.0);
    let mut out = format!(
        "{} s per array, a reading every {} ms\n{:<10} {:>11} {:>11} {:>9} {:>11} {:>11}  {}\n",
        report["seconds"],
        report["interval_ms"],
        "ARRAY",
        "READ MiB/s",
        "WRITE MiB/s",
        "IO/s",
        "LATENCY ms",
        "SYNC KiB/s",
        "SYNC"
    );
    for a in report["arrays"].as_array().into_iter().flatten() {
        let or_dash = |v: &Json| {
            if v.is_null() {
                "-".to_string()
            } else {
                v.to_string()
            }
        };
        let sync = &a["sync"];
        let progress = if sync.is_null() {
            "-".to_string()
        } else {
            format!(
                "{} {:.1}%",
                sync["action"].as_str().unwrap_or(""),
                sync["progress"].as_f64().unwrap_or(0.0) * 100.0
            )
        };
        out.push_str(&format!(
            "{:<10} {:>11} {:>11} {:>9} {:>11} {:>11}  {}\n",
            crate::view::escaped(a["name"].as_str().unwrap_or("")),
            mib(&a["read_bytes_per_second"]),
            mib(&a["write_bytes_per_second"]),
            a["ios_per_second"],
            or_dash(&a["latency_ms"]),
            or_dash(&a["sync_speed_kib_s"]),
            progress
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_in_any_order_and_seconds_in_range() {
        let a = parse(&["--measure", "--json", "md1", "--seconds", "3", "/dev/md0"]).unwrap();
        assert_eq!((a.seconds, a.json, a.root), (3, true, "/"));
        assert_eq!(a.arrays, ["md1", "md0"]);
        for bad in [
            &["--measure", "--seconds", "0"][..],
            &["--measure", "--seconds", "601"],
        ] {
            assert!(parse(bad).unwrap_err().contains("1..600"));
        }
        assert!(parse(&["--measure", "../sda"]).is_err());
        assert!(parse(&["--measure", "--frob"]).is_err());
    }
}
