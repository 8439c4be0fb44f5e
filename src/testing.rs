//! What the unit tests share: a fresh scratch directory per test. Only in test builds; the
//! integration tests have their own support (`tests/integration/common`, `tests/fakeroot`).

use std::fs;
use std::path::PathBuf;

/// A fresh, empty directory `mdtune-unit-<name>-<pid>` under the temp directory, by its real
/// path (the floor's tests compare real paths).
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mdtune-unit-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::canonicalize(&dir).unwrap()
}

/// Builds a small tree under `dir`, one entry per item: `"a/b/"` a directory, `"a/f=text"` a file
/// holding `text` (its directories made), `"a/l->target"` a link to `target` (relative to the
/// link, or absolute).
pub(crate) fn tree(dir: &std::path::Path, items: &[&str]) {
    for item in items {
        let (path, made) = if let Some((link, target)) = item.split_once("->") {
            (link, Made::Link(target))
        } else if let Some((file, text)) = item.split_once('=') {
            (file, Made::File(text))
        } else {
            (*item, Made::Dir)
        };
        let path = dir.join(path);
        fs::create_dir_all(if matches!(made, Made::Dir) {
            &path
        } else {
            path.parent().unwrap()
        })
        .unwrap();
        match made {
            Made::Dir => {}
            Made::File(text) => fs::write(&path, text).unwrap(),
            Made::Link(target) => std::os::unix::fs::symlink(target, &path).unwrap(),
        }
    }
}

enum Made<'a> {
    Dir,
    File(&'a str),
    Link(&'a str),
}

/// Fails naming the first of `parts` that `text` does not hold, with the whole text.
pub(crate) fn assert_has(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
}
