//! Text that came from the host or the input, safe for a terminal (docs/reference.md §1):
//! `--show` and `--text` escape every class of control and direction character in every field
//! they print, through the real binary on fake roots with hostile names and values.

use crate::common::{needs, Requirement};
use crate::common::{run, scratch};
use crate::people::{layouts_host, refs, show};
use crate::people_text::{failing_host, text, unprivileged};
use mdtune_fakeroot::{FakeRoot, MdSpec};
use serde_json::{json, Value};

/// One character of each class that must not reach a terminal raw, and how the views show it:
/// an escape (CSI: clear the screen), a carriage return, a newline, a bell (ends an OSC title), a
/// tab, DEL, a C1 control (8-bit CSI), each bidirectional override, embedding and isolate, the
/// direction marks and the line separator.
const HOSTILE: [(&str, &str); 19] = [
    ("\u{1b}", "\\x1b"),
    ("\r", "\\x0d"),
    ("\n", "\\x0a"),
    ("\u{7}", "\\x07"),
    ("\t", "\\x09"),
    ("\u{7f}", "\\x7f"),
    ("\u{9b}", "\\x9b"),
    ("\u{202a}", "\\u{202a}"),
    ("\u{202b}", "\\u{202b}"),
    ("\u{202c}", "\\u{202c}"),
    ("\u{202d}", "\\u{202d}"),
    ("\u{202e}", "\\u{202e}"),
    ("\u{2066}", "\\u{2066}"),
    ("\u{2067}", "\\u{2067}"),
    ("\u{2068}", "\\u{2068}"),
    ("\u{2069}", "\\u{2069}"),
    ("\u{200f}", "\\u{200f}"),
    ("\u{61c}", "\\u{61c}"),
    ("\u{2028}", "\\u{2028}"),
];

/// Fails naming the class when `out` holds any hostile character raw. A newline is the views' own
/// line break: whether one came from a field is checked by counting lines.
fn assert_no_raw_control(out: &str, what: &str) {
    for (raw, shown) in HOSTILE {
        if raw == "\n" {
            continue;
        }
        assert!(
            !out.contains(raw),
            "{what}: a raw {shown} reached the terminal:\n{}",
            out.escape_debug()
        );
    }
}

/// Every string leaf of `v` (not its keys, which the views look fields up by) with `bad` in its
/// middle.
fn poison(v: &mut Value, bad: &str) {
    match v {
        Value::String(s) => *s = format!("{}{bad}{}", &s[..s.len() / 2], &s[s.len() / 2..]),
        Value::Array(items) => items.iter_mut().for_each(|i| poison(i, bad)),
        Value::Object(map) => map.values_mut().for_each(|i| poison(i, bad)),
        _ => {}
    }
}

#[test]
fn show_and_text_escape_every_class_in_every_field_they_print() {
    if !needs(Requirement::Root) {
        return;
    }
    // The JSON the views render, from real runs: a check-mode run of every layout with a diff,
    // warnings and held-back settings; a failed run with rolled_back; --show's view of the same
    // host. Each class goes into every string of each, and none may come out raw.
    let dir = scratch("escape-every-field");
    layouts_host(&dir);
    let checked = run(
        &dir,
        json!({"check_mode": true, "diff": true, "speed_limit_max": 400000,
               "arrays": [{"name": "*", "stripe_cache_size": 4096}, {"name": "md_none*"}]}),
    );
    let failed = scratch("escape-failed");
    failing_host(&failed);
    let failure = unprivileged(
        &["-"],
        &json!({"root": failed, "thread_policy": "off",
                "arrays": [{"name": "md0", "stripe_cache_size": 256}, {"name": "md1", "group_thread_cnt": 2}]}),
    );
    let shown_host = mdtune::run::show(&dir).expect("show");
    for (raw, shown) in HOSTILE {
        for (what, json, view) in [
            (
                "--text of a check run",
                &checked.json,
                mdtune::view::report as fn(&Value) -> String,
            ),
            (
                "--text of a failed run",
                &failure.json,
                mdtune::view::report,
            ),
            ("--show", &shown_host, mdtune::view::host),
        ] {
            let mut poisoned = json.clone();
            poison(&mut poisoned, raw);
            let clean = view(json);
            let out = view(&poisoned);
            assert_no_raw_control(&out, &format!("{what} with {shown}"));
            assert_eq!(
                out.lines().count(),
                clean.lines().count(),
                "{what}: {shown} in a field added or removed lines:\n{}",
                out.escape_debug()
            );
            assert!(out.contains(shown), "{what}: {shown} is not shown: {out}");
        }
    }
}

#[test]
fn a_hostile_array_name_and_devname_reach_the_terminal_escaped() {
    // A kernel name and a udev name from the host itself (sys/block/<name>, dev/md/<name>) with
    // an escape sequence that would clear the screen, a carriage return that would overwrite the
    // line, a newline that would fake one and an override that would reverse it.
    let dir = scratch("escape-host");
    let mut r = FakeRoot::new(&dir, 8);
    let d: Vec<String> = (0..3).map(|c| r.nvme(c, 4)).collect();
    let name = "md_a\u{1b}[2J\r\n\u{202e}b";
    r.md(
        name,
        &MdSpec::level("raid5", 1).devname("data\u{1b}]0;owned\u{7}"),
        &refs(&d),
    );
    let (code, out, err) = show(&dir);
    assert_eq!(code, 0, "{out}{err}");
    let text = text(&dir, json!({"check_mode": true}));
    assert_eq!(text.code, 0, "{}", text.stdout);
    for (what, out) in [("--show", &out), ("--text", &text.stdout)] {
        assert_no_raw_control(out, what);
        assert!(
            out.contains("md_a\\x1b[2J\\x0d\\x0a\\u{202e}b"),
            "{what} does not show the name escaped:\n{out}"
        );
    }
    assert!(out.contains("data\\x1b]0;owned\\x07"), "{out}");
    // The JSON of the same run keeps the name exactly: serde_json escapes it for the parser.
    let json = run(&dir, json!({"check_mode": true}));
    assert_eq!(json.json["arrays"][0]["name"], name, "{}", json.stdout);
}
