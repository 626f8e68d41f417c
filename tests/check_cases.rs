//! The compile-time half of every case of `../shared/conformance/cases`, `examples/cases`
//! and `tests/cases/`, one test per file, by the same runner as `packc test`
//! (`packc_host::check_case`): the expected kind is among the reported errors, at the
//! expected `at` pointer, and the warning kinds are exactly the expected set when one is
//! given (the conformance README's rules). A case that expects no `compile_error` (every
//! run case) must compile without errors.

use std::path::PathBuf;

use libtest_mimic::{Arguments, Trial};
use packc_host::Case;

fn main() {
    let args = Arguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("tests/cases"), root.join("examples/cases")];
    if let Some(shared) = packc_suite::shared_dir() {
        dirs.push(shared.join("conformance/cases"));
    }
    let mut trials = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".case.yaml"))
            .collect();
        files.sort();
        for path in files {
            let name = path
                .file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .replace(".case.yaml", "")
                        .replace('-', "_")
                })
                .unwrap_or_default();
            trials.push(Trial::test(format!("check::{name}"), move || {
                let case = Case::read(&path).map_err(|e| e.to_string())?;
                packc_host::check_case(&case).map_err(Into::into)
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
