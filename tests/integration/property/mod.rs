//! Property test: random runs (present, check mode, query, persist, revert, udev replays and
//! reboots, in random order) on random fake hosts, with a fixed seed. After every run it checks
//! what the contract promises of every report:
//!
//! - `changed` is true exactly when a file under the root changed (for a real run), and a check
//!   mode run's `changed` and `compliant` are what the same real run then reports;
//! - every setting's `before` is the file's value before the run, and `after` the value after it
//!   (a real run) or the same file untouched (check mode, query);
//! - `compliant` is what a fresh query of the same input says just before the run, and a real
//!   `present` run that succeeded leaves a host that a fresh query calls compliant;
//! - `compliant` agrees with what was read: never for a run that checked nothing, never for an
//!   array with a file that read empty, and only when every setting read is the one wanted;
//! - `persist.diverged` lists exactly the settings that the persisted file (run as a query)
//!   wants otherwise than a run without `persist`;
//! - a revert's `persist.files` are exactly the persisted files and originals it removed, and its
//!   `changed` is true whenever it restored or removed something, even when a later step failed;
//! - exit 2 wrote nothing, not even the lock or a directory;
//! - no file outside the root changed, even when a link in the root points out of it.
//!
//! Most runs call the library's entry point in-process (thousands of runs in seconds); a few
//! hosts are driven through the real binary. `MDTUNE_PROPERTY_RUNS` and `MDTUNE_PROPERTY_SEED`

mod checks;
mod random;
mod runs;
mod snapshot;

use checks::*;
use mdtune::run::Exit;
use random::*;
use runs::*;
use serde_json::{json, Value};
use snapshot::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Runs `input` and checks every property. Returns the report and the exit status.
fn check_run(host: &Host, binary: bool, input: &Value, ctx: &Ctx) -> (Value, Exit) {
    let state = input["state"].as_str().unwrap_or("present");
    let check = input["check_mode"] == true;
    // The fresh query of the same input, before the run.
    let fresh = (state != "reverted")
        .then(|| query_of(input))
        .flatten()
        .map(|mut q| {
            q["check_mode"] = json!(false);
            execute(binary, &q)
        });
    // What the persisted state (run as a query) wants, for a run that leaves persistence alone.
    let unset = input.get("persist").is_none_or(Value::is_null);
    let persisted = (state != "reverted" && unset)
        .then(|| persisted_wants(host, binary))
        .flatten();
    let before = tree(&host.base);
    let (report, code) = execute(binary, input);
    let after = tree(&host.base);
    let outside = |t: &Tree| -> Tree {
        t.iter()
            .filter(|(p, _)| p.starts_with("outside"))
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect()
    };
    if outside(&before) != outside(&after) {
        ctx.fail("a file outside the root changed", &report);
    }
    if code == Exit::Input {
        if before != after {
            ctx.fail("exit 2 wrote something", &report);
        }
        if let Some((_, c)) = &fresh {
            if *c != Exit::Input && state != "reverted" {
                ctx.fail("exit 2, but the fresh query was not refused", &report);
            }
        }
        return (report, code);
    }
    let files = changed_files(&before, &after);
    let real = state != "query" && !check;
    if !real && !files.is_empty() {
        ctx.fail(
            &format!("check mode or query changed files: {files:?}"),
            &report,
        );
    }
    let file_changed = !files.is_empty();
    if real && (report["changed"] == true) != file_changed {
        ctx.fail(
            &format!("changed disagrees with the files changed: {files:?}"),
            &report,
        );
    }
    // A run that changes (or would change) something found the host not compliant, and one that
    // finds it not compliant changes it (no generated host holds a setting back).
    let blind = state != "reverted" && cannot_comply(host, &before, &report);
    if state != "query"
        && code == Exit::Ok
        && !blind
        && (report["changed"] == true) == (report["compliant"] == true)
    {
        ctx.fail(
            "changed and compliant agree instead of being opposite",
            &report,
        );
    }
    if state == "query" && report["changed"] == true {
        ctx.fail("a query said changed", &report);
    }
    check_settings(
        host.root.as_path(),
        &before,
        &report,
        real && code == Exit::Ok,
        ctx,
    );
    if code == Exit::Ok && state != "reverted" {
        check_compliant(&before, &report, ctx);
        check_diverged(persisted.as_ref(), &report, ctx);
    }
    if state == "reverted" && real {
        check_removed(&before, &after, &report, ctx);
    }
    if let Some((q, qcode)) = fresh {
        if qcode == Exit::Ok && code == Exit::Ok && q["compliant"] != report["compliant"] {
            ctx.fail(
                &format!("compliant disagrees with a fresh query: {q}"),
                &report,
            );
        }
    }
    if real && state == "present" && code == Exit::Ok {
        check_converged(host, binary, input, &after, &report, ctx);
    }
    (report, code)
}

/// Runs one random host's sequence of runs, checking each. The host's randomness comes from
/// the seed and its number alone, so a failure reproduces with `MDTUNE_PROPERTY_HOST`.
fn run_host(seed: u64, host_no: usize, scratch: &Path, codes: &mut BTreeMap<i32, usize>) -> usize {
    let mut rng = Rng::for_host(seed, host_no);
    let base = scratch.join(format!("host{host_no}"));
    let host = random_host(&mut rng, base.clone());
    let binary = host_no % 16 == 0;
    let mut done = 0;
    let steps = 10 + rng.below(20);
    for step in 0..steps {
        let mut input = random_input(&mut rng, &host);
        input["root"] = json!(host.root);
        let kind = rng.below(100);
        match kind {
            0..=4 => {
                reboot(&host);
                continue;
            }
            5..=11 => {
                let name = rng.pick(&host.names).clone();
                let before = tree(&host.base);
                let (out, code) = mdtune::run::udev(&name, &host.root);
                let after = tree(&host.base);
                let report: Value = serde_json::from_str(&out).unwrap();
                let ctx = Ctx {
                    seed,
                    host: host_no,
                    step,
                    input: &json!({"udev": name}),
                };
                let files: Vec<_> = changed_files(&before, &after)
                    .into_iter()
                    .filter(|p| !p.starts_with("root/dev"))
                    .collect();
                if files.iter().any(|p| p.starts_with("outside")) {
                    ctx.fail("udev: a file outside the root changed", &report);
                }
                let file_changed = !files.is_empty();
                if (report["changed"] == true) != file_changed {
                    ctx.fail(&format!("udev: changed disagrees with {files:?}"), &report);
                }
                if code == Exit::Input {
                    ctx.fail("udev: exit 2 for a name the host has", &report);
                }
                done += 1;
                continue;
            }
            12..=26 => input["state"] = json!("query"),
            27..=41 => input["state"] = json!("reverted"),
            42..=61 => input["check_mode"] = json!(true),
            _ => {}
        }
        if (27..=41).contains(&kind) && rng.chance(30) {
            input["check_mode"] = json!(true);
        }
        let ctx = Ctx {
            seed,
            host: host_no,
            step,
            input: &input,
        };
        let (report, code) = check_run(&host, binary, &input, &ctx);
        *codes.entry(code as i32).or_insert(0) += 1;
        done += 1;
        // Check mode predicts the real run: run it and compare.
        if input["check_mode"] == true && code == Exit::Ok {
            let mut real = input.clone();
            real["check_mode"] = json!(false);
            let ctx = Ctx {
                seed,
                host: host_no,
                step,
                input: &real,
            };
            let (r, c) = check_run(&host, binary, &real, &ctx);
            done += 1;
            if c == Exit::Ok
                && (r["changed"] != report["changed"] || r["compliant"] != report["compliant"])
            {
                ctx.fail(&format!("check mode predicted {report}"), &r);
            }
        }
    }
    fs::remove_dir_all(&base).unwrap();
    forget_reads();
    done
}

#[test]
fn random_runs_on_random_hosts_keep_every_report_true() {
    let env = |k: &str| std::env::var(k).ok();
    let runs: usize = env("MDTUNE_PROPERTY_RUNS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let seed: u64 = env("MDTUNE_PROPERTY_SEED")
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x6d64_7475_6e65_0001);
    let scratch = crate::common::scratch("property");
    let mut codes = BTreeMap::new();
    if let Some(host) = env("MDTUNE_PROPERTY_HOST").and_then(|s| s.parse().ok()) {
        run_host(seed, host, &scratch, &mut codes);
        return;
    }
    // Two workers, one host at a time each: the hosts' roots and locks are separate.
    let next = std::sync::atomic::AtomicUsize::new(1);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let all = std::sync::Mutex::new(BTreeMap::new());
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut codes = BTreeMap::new();
                while done.load(std::sync::atomic::Ordering::SeqCst) < runs {
                    let host = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let n = run_host(seed, host, &scratch, &mut codes);
                    done.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                }
                let mut all = all.lock().unwrap();
                for (k, v) in codes {
                    *all.entry(k).or_insert(0) += v;
                }
            });
        }
    });
    codes.extend(all.into_inner().unwrap());
    let _ = fs::remove_dir_all(&scratch);
    eprintln!(
        "{} runs on {} hosts in {:?}, seed {seed:#x}; exit statuses {codes:?}",
        done.into_inner(),
        next.into_inner() - 1,
        started.elapsed()
    );
    // The generator must reach every outcome, or the properties prove little.
    for code in [0, 1, 2] {
        assert!(
            codes.get(&code).copied().unwrap_or(0) > 0,
            "no run exited {code}: {codes:?}"
        );
    }
}
