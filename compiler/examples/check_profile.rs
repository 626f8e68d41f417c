//! Runs the front end on one pack file many times, for instruction counts:
//!
//! ```text
//! cargo build --release -p packc-compiler --example check_profile
//! valgrind --tool=callgrind --toggle-collect='*check_profile::round*' \
//!     target/release/examples/check_profile check|build PACK.json 3
//! ```
//!
//! `check` runs load + check; `build` runs load + check + lower + encode. Dividing the
//! collected count by the round count gives the cost of one warm round (the embedded
//! schema validator, compiled at most once per process, is built in the first round).

use packc_compiler::{build_artifact, check_bytes, Options};

#[inline(never)]
fn round(what: &str, text: &[u8]) -> usize {
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
    // One round outside the count, so that once-per-process work is not counted.
    round(&what, &text);
    let mut total = 0;
    for _ in 0..rounds {
        total += round(&what, &text);
    }
    println!("{total}");
}
