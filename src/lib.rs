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

/// Compiles the pack file at `path` (check, lower) into a VM program, panicking on any
/// diagnostic error: for benchmarks and tests over packs known to be clean.
pub fn program(path: &std::path::Path) -> std::sync::Arc<packc_vm::Program> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let options = packc_compiler::Options {
        base_dir: path.parent().map(std::path::Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    let module = packc_compiler::lower(&checked, &options).expect("a clean pack lowers");
    std::sync::Arc::new(packc_vm::Program::new(module).expect("a lowered module verifies"))
}

/// One pack of `../shared/corpus`, with its `MANIFEST.json` entry.
pub struct CorpusPack {
    /// The file, relative to the corpus folder (`promptkit/hello.pack.json`).
    pub file: String,
    /// Its full path.
    pub path: PathBuf,
    /// Its whole MANIFEST entry (`packc` holds the expected verdict and diagnostics).
    pub entry: serde_json::Value,
}

/// Every pack the corpus MANIFEST lists, in its order; empty without `../shared`.
pub fn corpus() -> Vec<CorpusPack> {
    let Some(shared) = shared_dir() else {
        return Vec::new();
    };
    let dir = shared.join("corpus");
    let text = std::fs::read(dir.join("MANIFEST.json")).expect("MANIFEST.json is readable");
    let manifest: serde_json::Value = serde_json::from_slice(&text).expect("MANIFEST.json is JSON");
    let entries = manifest.as_array().expect("MANIFEST.json is a list");
    entries
        .iter()
        .map(|entry| {
            let file = entry["file"].as_str().expect("entry has a file").to_owned();
            CorpusPack {
                path: dir.join(&file),
                file,
                entry: entry.clone(),
            }
        })
        .collect()
}
