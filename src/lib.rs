//! The packc test and benchmark suite.
//!
//! This package exists to hold the workspace's integration tests (`tests/`) and
//! criterion benchmarks (`benches/`); it has no library API of its own beyond the
//! helpers below, which the tests share.

use std::path::PathBuf;

/// The `../shared` folder beside the checkout, when it exists.
///
/// Tests that read the shared conformance cases or corpus skip cleanly without it,
/// so `cargo test` passes on a fresh clone.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    dir.is_dir().then_some(dir)
}

pub mod gen;
