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
        for path in packc_suite::files_ending(&dir, ".case.yaml") {
            let name = packc_suite::case_name(&path);
            trials.push(Trial::test(format!("check::{name}"), move || {
                let case = Case::read(&path).map_err(|e| e.to_string())?;
                packc_host::check_case(&case).map_err(Into::into)
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
