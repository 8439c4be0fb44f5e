//! The `mdtune` command: reads the arguments (an Ansible args file, JSON on stdin, or `--udev`),
//! runs [`mdtune::run`], prints exactly one JSON object on stdout and exits 0 (success), 1
//! (failure) or 2 (unusable input). Nothing else is printed, and no panic reaches the caller
//! without a JSON object. For people, `--text` prints that object as text instead and
//! `--show` prints the host, read only (`mdtune::view`); `--verify` and `--metrics` print it
//! against what was rolled out, for the person on call and for Prometheus.

#![forbid(unsafe_code)]

use mdtune::run::{self, failure, print_and_exit as print, Exit};

use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};

const HELP: &str = "\
mdtune: idempotent tuning of Linux md RAID (group_thread_cnt from member hardware queues,
stripe cache, sync speed limits) for Ansible, Salt and people.

usage:
  mdtune ARGS_FILE              read the JSON input from a file (how Ansible calls a module)
  mdtune [-]                    read the JSON input from stdin
  mdtune --text ARGS_FILE | --text [-]
                                the same run, its report printed as text for a person
  mdtune --show [--root DIR]    show the host, read only: every array, its members and their
                                hardware queues, each tunable's value and what auto would set
  mdtune --verify [--json] [--root DIR]
                                compare the host with the persisted desired state (or the
                                defaults), one row per setting; exit 0 compliant, 3 not,
                                1 could not check, 2 unusable input
  mdtune --metrics [--root DIR] the host in Prometheus' text format (node_exporter textfile)
  mdtune --udev NAME [--root DIR]
                                apply the persisted desired state to array NAME (udev rule)
  mdtune --measure [--root DIR] [--seconds N] [--json] [ARRAY...]
                                read only: sample each array (all by default) N seconds
                                (default 10, 1-600): read and write bytes/s, I/O per second,
                                mean latency, the sync's speed and progress
  mdtune --tick [--root DIR] [--textfile DIR]
                                periodic housekeeping (timer, mdadm monitor); with --textfile,
                                write DIR/mdtune.prom (--metrics) through no link
  mdtune --schema               the input keys as JSON: types, ranges, defaults, the kernels
                                they need (what every form is checked against)
  mdtune --help | --version

The result is one JSON object on stdout (text with --text, --show, --verify and
--metrics). Exit status: 0 success (changed or not), 1 failure, 2 unusable input.
Preview a run without writing:
echo '{\"check_mode\": true}' | mdtune --text -
Input keys, output keys and examples: man mdtune, or docs/reference.md in the source.
";

/// How the run's one JSON object is printed: as it is, or with `--text` as text for a person.
static AS_TEXT: AtomicBool = AtomicBool::new(false);

/// Ends the run: its JSON object (or, with `--text`, that object as text) and the exit status.
fn end(json: &str, code: Exit) -> ! {
    if AS_TEXT.load(Ordering::Relaxed) {
        let report = serde_json::from_str(json).unwrap_or_default();
        print!("{}", mdtune::view::report(&report));
        exit(code as i32)
    }
    print(&json, code as i32)
}

fn usage_error(msg: &str) -> ! {
    end(&failure(msg).to_string(), Exit::Input)
}

/// The input text, read from `from` up to one byte past the limit, so that an endless or huge
/// input (an args file of `/dev/zero`) is refused after a bounded read, before it is parsed
/// (docs/reference.md §1).
fn read_input(from: impl Read, what: &str) -> String {
    // Room for a playbook's usual input, so that it is read by one `read` and the one that
    // returns 0, not by small probes that grow the buffer.
    let mut bytes = Vec::with_capacity(16 * 1024);
    let limit = mdtune::spec::MAX_INPUT as u64 + 1;
    if let Err(e) = from.take(limit).read_to_end(&mut bytes) {
        usage_error(&format!("cannot read the input from {what}: {e}"));
    }
    if bytes.len() > mdtune::spec::MAX_INPUT {
        usage_error(&mdtune::spec::SpecError::TooLarge.to_string());
    }
    String::from_utf8(bytes).unwrap_or_else(|e| {
        usage_error(&format!(
            "cannot read the input from {what}: it is not valid UTF-8 ({})",
            e.utf8_error()
        ))
    })
}

/// `NAME [--json] [--root DIR]`, in any order: the root (`/` by default) and whether `--json`
/// was given; `None` when the words are something else.
fn read_only_args<'a>(words: &[&'a str], name: &str, json_ok: bool) -> Option<(&'a str, bool)> {
    let (mut root, mut json, mut seen, mut i) = (None, false, false, 0);
    while i < words.len() {
        match words[i] {
            w if w == name && !seen => seen = true,
            "--json" if json_ok && !json => json = true,
            "--root" if root.is_none() => {
                root = Some(*words.get(i + 1)?);
                i += 1;
            }
            _ => return None,
        }
        i += 1;
    }
    seen.then_some((root.unwrap_or("/"), json))
}

/// `--verify` and `--metrics` (docs/reference.md §1): read only, text (or `--verify --json`).
fn on_call(words: &[&str]) {
    if let Some((root, json)) = read_only_args(words, "--verify", true) {
        let v = run::verify(&PathBuf::from(root), json);
        print!("{}", v.stdout);
        eprint!("{}", v.stderr);
        exit(v.exit as i32)
    }
    if let Some((root, _)) = read_only_args(words, "--metrics", false) {
        match run::metrics(&PathBuf::from(root)) {
            Ok(text) => {
                print!("{text}");
                exit(0)
            }
            Err((msg, code)) => {
                eprintln!("mdtune --metrics: {}", mdtune::view::escaped(&msg));
                exit(code as i32)
            }
        }
    }
}

fn main() {
    run::install_panic_hook();
    // `--text` before a run's input prints its report for a person; the run is the same.
    let mut args: Vec<_> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "--text") {
        AS_TEXT.store(true, Ordering::Relaxed);
        args.remove(0);
    }
    // Arguments that are not UTF-8 are unusable input, not a panic.
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            a.into_string().unwrap_or_else(|a| {
                usage_error(&format!(
                    "argument {:?} is not valid UTF-8 (mdtune --help)",
                    a.to_string_lossy()
                ))
            })
        })
        .collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let as_text = AS_TEXT.load(Ordering::Relaxed);
    if !as_text {
        on_call(&words);
        if words.contains(&"--measure") {
            let m = run::measure(&words);
            print!("{}", m.stdout);
            eprint!("{}", m.stderr);
            exit(m.exit as i32)
        }
        if words.contains(&"--tick") {
            let (json, code) = run::tick(&words);
            end(&json, code)
        }
    }
    let text = match words.as_slice() {
        ["--help" | "-h"] => {
            print!("{HELP}");
            exit(0)
        }
        ["--schema"] if !as_text => {
            println!("{:#}", mdtune::spec::schema());
            exit(0)
        }
        ["--version" | "-V"] => {
            println!("mdtune {}", env!("CARGO_PKG_VERSION"));
            exit(0)
        }
        ["--show"] | ["--show", "--root", _] | ["--root", _, "--show"] if !as_text => {
            let root = words.iter().skip_while(|w| **w != "--root").nth(1);
            match run::show(&PathBuf::from(root.unwrap_or(&"/"))) {
                Ok(view) => {
                    print!("{}", mdtune::view::host(&view));
                    exit(0)
                }
                Err((msg, code)) => {
                    eprintln!("mdtune --show: {}", mdtune::view::escaped(&msg));
                    exit(code as i32)
                }
            }
        }
        ["--udev", name] => {
            let (json, code) = run::udev(name, &PathBuf::from("/"));
            end(&json, code)
        }
        ["--udev", name, "--root", root] | ["--root", root, "--udev", name] => {
            let (json, code) = run::udev(name, &PathBuf::from(root));
            end(&json, code)
        }
        [] | ["-"] => {
            if words.is_empty() && io::stdin().is_terminal() {
                usage_error("no input: pass an args file, or JSON on stdin (mdtune --help)");
            }
            read_input(io::stdin(), "stdin")
        }
        [file] if !file.starts_with("--") => match mdtune::sys::open_args_file(Path::new(file)) {
            Ok(f) => read_input(f, &format!("the args file {file}")),
            Err(e) => usage_error(&format!("cannot read the args file {file}: {e}")),
        },
        _ => usage_error(&format!("unknown arguments {args:?} (mdtune --help)")),
    };
    let (json, code) = run::module(&text);
    end(&json, code)
}
