//! Shared by the test binaries: loading packs, and picking the call to answer next.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use packc_vm::{CallView, Program, Run};

/// Compiles the pack file at `path` into a program.
pub fn program(path: &Path) -> Arc<Program> {
    let bytes = std::fs::read(path).unwrap();
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    let module = packc_compiler::lower(&checked, &options).unwrap();
    Arc::new(Program::new(module).unwrap())
}

/// The outstanding call to answer next: the lowest branch first, then the oldest.
pub fn pick<'r>(run: &'r Run) -> Option<CallView<'r>> {
    run.pending()
        .min_by_key(|c| (c.branch().unwrap_or(0), c.id()))
}
