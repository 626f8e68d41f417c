//! Runs the front end on one pack file many times, for instruction counts:
//!
//! ```text
//! cargo build --release -p packc-compiler --example check_profile
//! valgrind --tool=callgrind --toggle-collect='*check_profile::round*' \
//!     target/release/examples/check_profile check|build PACK.json 3
//! ```
//!
//! `check` runs load + check; `build` runs load + check + lower + encode. Only the counted
//! rounds are collected: a first, uncounted one (`warm_up`) builds what a process builds
//! once, such as the embedded schema validator, so the collected count divided by the
//! round count is the cost of one warm round.

use packc_compiler::{build_artifact, check_bytes, Options};

#[inline(never)]
fn round(what: &str, text: &[u8]) -> usize {
    work(what, text)
}

#[inline(never)]
fn warm_up(what: &str, text: &[u8]) -> usize {
    work(what, text)
}

fn work(what: &str, text: &[u8]) -> usize {
    match what {
        "check" => check_bytes(text, &Options::default()).diagnostics.len(),
        "build" => build_artifact(text, &Options::default())
            .expect("the pack lowers")
            .1
            .expect("the pack has no errors")
            .encode()
            .len(),
        other => panic!("unknown mode `{other}`: use check or build"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args
        .next()
        .expect("usage: check_profile check|build PACK [ROUNDS]");
    let path = args
        .next()
        .expect("usage: check_profile check|build PACK [ROUNDS]");
    let rounds: usize = args
        .next()
        .map_or(1, |n| n.parse().expect("ROUNDS is a number"));
    let text = std::fs::read(&path).expect("the pack file reads");
    warm_up(&what, &text);
    let mut total = 0;
    for _ in 0..rounds {
        total += round(&what, &text);
    }
    println!("{total}");
}
