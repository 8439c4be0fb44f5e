//! Proves that a panic in mdtune ends as one JSON failure object on stdout with exit status 1,
//! under whatever build flags this example is built with: `bench/build-release.sh` builds it with
//! the release binaries' flags (std rebuilt without its backtrace printer, `panic = "abort"`) and
//! checks its output. It installs the binary's own hook and then panics on purpose.

fn main() {
    mdtune::run::install_panic_hook();
    let words: Vec<String> = std::env::args().collect();
    panic!(
        "deliberate panic to test the hook ({} arguments)",
        words.len()
    );
}
