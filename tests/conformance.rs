//! The conformance suite: every case of `../shared/conformance/cases`, of
//! `examples/cases` and of `tests/cases` (our own), run end to end (compile, lower, run with the scripted host, compare)
//! by `packc_host::run_case_file`, one test per file: `conformance::comp_parallel_barrier`,
//! `conformance::examples::rfc0010_ex2`, `conformance::own::run_agent_member_tool`. The shared cases are skipped cleanly when
//! `../shared` is absent.
//!
//! Known gaps are listed in `tests/conformance/skip.toml` with a reason each; they show as
//! ignored (with the reason printed), and an entry that names no case is a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Trial};

fn main() {
    let args = Arguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut skips = read_skips(&root.join("tests/conformance/skip.toml"));
    let mut dirs = vec![
        (String::from("examples::"), root.join("examples/cases")),
        (String::from("own::"), root.join("tests/cases")),
    ];
    if let Some(shared) = packc_suite::shared_dir() {
        dirs.push((String::new(), shared.join("conformance/cases")));
    }
    let mut trials = Vec::new();
    for (prefix, dir) in dirs {
        for path in case_files(&dir) {
            let name = packc_suite::case_name(&path);
            let key = format!("{prefix}{name}");
            let skip = skips.remove(&key);
            if let Some(reason) = &skip {
                eprintln!("conformance::{key}: skipped: {reason}");
            }
            let trial = Trial::test(format!("conformance::{key}"), move || {
                // Every run case is also run snapshotted and restored after each resume.
                let options = packc_host::RunCaseOptions {
                    check_snapshots: true,
                    ..Default::default()
                };
                packc_host::run_case_file_with(&path, options).map_err(Into::into)
            });
            trials.push(trial.with_ignored_flag(skip.is_some()));
        }
    }
    // Entries for cases that do not exist are stale: fail loudly rather than hide them.
    // Without `../shared` the shared cases are absent, so only `examples::` entries count.
    let shared_present = packc_suite::shared_dir().is_some();
    for (key, reason) in skips {
        if shared_present || key.starts_with("examples::") || key.starts_with("own::") {
            trials.push(Trial::test(
                format!("conformance::skip_toml::{key}"),
                move || Err(format!("skip.toml names no case `{key}` ({reason})").into()),
            ));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The `*.case.yaml` files of `dir`, sorted; none when it does not exist.
fn case_files(dir: &Path) -> Vec<PathBuf> {
    packc_suite::files_ending(dir, ".case.yaml")
}

/// The `[skip]` table of `skip.toml`: test name → reason.
fn read_skips(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).expect("tests/conformance/skip.toml is readable");
    let doc: toml::Table = text.parse().expect("skip.toml is TOML");
    let Some(skip) = doc.get("skip").and_then(toml::Value::as_table) else {
        return BTreeMap::new();
    };
    skip.iter()
        .map(|(k, v)| {
            let reason = v.as_str().unwrap_or_default().trim().to_owned();
            assert!(!reason.is_empty(), "skip.toml: `{k}` needs a reason");
            (k.clone(), reason)
        })
        .collect()
}
