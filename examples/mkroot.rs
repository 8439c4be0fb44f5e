//! Generates fake system roots: the bundled demo host and benchmark hosts.
//!
//! `cargo run --example mkroot -- demo DIR` writes the demo host (what `examples/demo-host` holds);
//! `cargo run --example mkroot -- bench DIR ARRAYS [DRIVES [QUEUES]]` writes a host of ARRAYS raid5
//! arrays, each over DRIVES NVMe drives (default 8) with QUEUES hardware queues (default 64).
//! The hosts are built by the fake-root builder the tests use (`mdtune-fakeroot`, tests/fakeroot).
use mdtune_fakeroot::{bench_host, demo_host};
use std::path::Path;
use std::process::exit;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u32| -> u32 {
        args.get(i).map_or(default, |v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("mkroot: not a number: {v}");
                exit(2)
            })
        })
    };
    match args.first().map(String::as_str) {
        Some("demo") if args.len() == 2 => {
            demo_host(Path::new(&args[1]));
        }
        Some("bench") if args.len() >= 3 => {
            bench_host(Path::new(&args[1]), num(2, 64), num(3, 8), num(4, 64));
        }
        _ => {
            eprintln!("usage: mkroot demo DIR | mkroot bench DIR ARRAYS [DRIVES [QUEUES]]");
            exit(2)
        }
    }
}
