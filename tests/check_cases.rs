//! The compile-time half of every case of `../shared/conformance/cases` and of
//! `tests/cases/`, one test per file: the expected kind is among the reported errors, at
//! the expected `at` pointer, and the warning kinds are exactly the expected set when one
//! is given (the conformance README's rules). A case that expects no `compile_error`
//! (every run case) must compile without errors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use packc_compiler::diag::Severity;
use packc_compiler::load::{self, Limits};
use packc_compiler::{check_bytes, check_loaded, Options};
use serde_json::Value;

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
            let text = std::fs::read_to_string(&path).expect("case file is readable");
            let case = load::load_str(&text, &Limits::default()).expect("case file parses");
            let name = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".case.yaml", "")
                .replace('-', "_");
            trials.push(Trial::test(format!("check::{name}"), move || {
                run_case(&path, case)
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn run_case(path: &Path, case: load::Loaded) -> Result<(), Failed> {
    let expect = case.value.get("expect").ok_or("case has no `expect`")?;
    let checked = if let Some(file) = case.value.get("pack_file").and_then(Value::as_str) {
        let pack_path = path.parent().unwrap().join(file);
        let bytes =
            std::fs::read(&pack_path).map_err(|e| format!("{}: {e}", pack_path.display()))?;
        let options = Options {
            base_dir: pack_path.parent().map(Path::to_path_buf),
            ..Options::default()
        };
        check_bytes(&bytes, &options)
    } else {
        let pack = case.spans.subtree(
            "/pack",
            case.value
                .get("pack")
                .ok_or("case has neither `pack` nor `pack_file`")?
                .clone(),
        );
        check_loaded(pack, &Options::default())
    };
    let errors: Vec<(String, String)> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            (
                d.kind.as_str().to_string(),
                d.pointer().unwrap_or("").to_string(),
            )
        })
        .collect();
    let warnings: BTreeSet<String> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| d.kind.as_str().to_string())
        .collect();
    match expect.get("compile_error").and_then(Value::as_str) {
        Some(kind) => {
            let at = expect.get("at").and_then(Value::as_str);
            if !errors
                .iter()
                .any(|(k, p)| k == kind && at.is_none_or(|a| a == p))
            {
                return Err(format!(
                    "expected error {kind} at {at:?}; reported errors: {errors:?}"
                )
                .into());
            }
        }
        None => {
            if !errors.is_empty() {
                return Err(format!("expected no compile error; reported: {errors:?}").into());
            }
        }
    }
    if let Some(expected) = expect.get("warnings").and_then(Value::as_array) {
        let expected: BTreeSet<String> = expected
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        if expected != warnings {
            return Err(format!("expected warnings {expected:?}; reported {warnings:?}").into());
        }
    }
    Ok(())
}
