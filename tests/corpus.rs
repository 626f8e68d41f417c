//! Every pack of `../shared/corpus` is accepted or rejected exactly as the `packc` column
//! of its MANIFEST says: the verdict, and the set of (kind, pointer) of its errors and of
//! its warnings. One test per file; skipped cleanly when `../shared` is absent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use packc_compiler::diag::Severity;
use packc_compiler::{check_bytes, check_loaded, load, Options};
use serde_json::Value;

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for packc_suite::CorpusPack { file, path, entry } in packc_suite::corpus() {
        let expected = entry["packc"].clone();
        let name = file.replace(['/', '-', '.'], "_");
        trials.push(Trial::test(format!("corpus::{name}"), move || {
            run(&path, &expected)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}

type Found = BTreeSet<(String, String)>;

/// Warnings the MANIFEST leaves out but a higher authority requires, per file.
///
/// The conformance README (which outranks the corpus MANIFEST's light lint) makes a step's
/// `output_schema` file that cannot be found next to the pack file the warning
/// `unresolved_schema`. This pack is a transcribed documentation example published without
/// its `schemas/` folder, so packc warns three times; the MANIFEST's lint does not model
/// schema files. Warnings never reject, so the verdict is unchanged.
///
/// Validators (`shared/semantics/later-versions.md` §4, which outranks the MANIFEST's
/// lint, written before validators were enforced) add two warnings. A validator carrying
/// `fail_on_violation: false` is `deprecated_fail_on_violation` (it enforces anyway), and
/// so is one carrying `fail_on_violation: true` in a pack read at level 1.8 or above (the
/// Omnia customer-support sample claims `latest`, level 1.9). PromptKit's
/// `guardrail-bad-params` is degenerate on purpose: a `length` validator with no limit,
/// which the reference runtime warns about and skips, is `inert_validator`.
const EXTRA_WARNINGS: &[(&str, &str, &str)] = &[
    (
        "procedural-document-analyzer",
        "unresolved_schema",
        "/compositions/analyze_document/steps/0/output_schema",
    ),
    (
        "procedural-document-analyzer",
        "unresolved_schema",
        "/compositions/analyze_document/steps/2/output_schema",
    ),
    (
        "procedural-document-analyzer",
        "unresolved_schema",
        "/compositions/analyze_document/steps/3/output_schema",
    ),
    (
        "promptpack-spec/rfc0006--example-3-full-pack-with-both-levels-and-met",
        "deprecated_fail_on_violation",
        "/prompts/onboarding/validators/0/fail_on_violation",
    ),
    (
        "promptpack-spec/examples--research-crew-agents-without-workflow",
        "deprecated_fail_on_violation",
        "/prompts/writer/validators/0/fail_on_violation",
    ),
    (
        "promptpack-python/tests-fixture-sample",
        "deprecated_fail_on_violation",
        "/prompts/support/validators/0/fail_on_violation",
    ),
    (
        "promptpack-python/customer-support",
        "deprecated_fail_on_violation",
        "/prompts/support/validators/1/fail_on_violation",
    ),
    (
        "promptpack-python/sales-assistant",
        "deprecated_fail_on_violation",
        "/prompts/sales/validators/0/fail_on_violation",
    ),
    (
        "promptpack-langchainjs/validation-demo",
        "deprecated_fail_on_violation",
        "/prompts/responder/validators/2/fail_on_violation",
    ),
    (
        "promptpack-langchainjs/customer-support",
        "deprecated_fail_on_violation",
        "/prompts/support/validators/1/fail_on_violation",
    ),
    (
        "promptpack-langchainjs/sales-assistant",
        "deprecated_fail_on_violation",
        "/prompts/sales/validators/0/fail_on_violation",
    ),
    (
        "promptkit/guardrail-bad-params",
        "inert_validator",
        "/prompts/chat/validators/0",
    ),
    (
        "omnia/chart-demos-resources-demo-tools-prompts",
        "deprecated_fail_on_violation",
        "/prompts/default/validators/0/fail_on_violation",
    ),
    (
        "omnia/samples-customer-support",
        "deprecated_fail_on_violation",
        "/prompts/billing/validators/0/fail_on_violation",
    ),
    (
        "omnia/samples-customer-support",
        "deprecated_fail_on_violation",
        "/prompts/billing/validators/1/fail_on_violation",
    ),
    (
        "omnia/samples-dev-samples",
        "deprecated_fail_on_violation",
        "/prompts/default/validators/0/fail_on_violation",
    ),
];

fn expected_set(v: &Value) -> Found {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or("").to_string(),
                d["at"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn run(path: &PathBuf, expected: &Value) -> Result<(), Failed> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let options = Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Options::default()
    };
    let checked = check_bytes(&bytes, &options);
    // The JSON fast path (no span index unless something is reported) must agree with the
    // YAML loader's path, diagnostic for diagnostic.
    if let Ok(loaded) = load::load_bytes(&bytes, &options.limits) {
        let slow = check_loaded(loaded, &options);
        if slow.diagnostics != checked.diagnostics {
            return Err(format!(
                "fast and slow paths differ:\n{:?}\n{:?}",
                checked.diagnostics, slow.diagnostics
            )
            .into());
        }
    }
    let found = |sev: Severity| -> Found {
        checked
            .diagnostics
            .iter()
            .filter(|d| d.severity == sev)
            .map(|d| {
                (
                    d.kind.as_str().to_string(),
                    d.pointer().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let (errors, warnings) = (found(Severity::Error), found(Severity::Warning));
    let verdict = if errors.is_empty() {
        "compile"
    } else {
        "reject"
    };
    let mut problems = Vec::new();
    if verdict != expected["verdict"] {
        problems.push(format!(
            "verdict {verdict}, expected {}",
            expected["verdict"]
        ));
    }
    let want_errors = expected_set(&expected["errors"]);
    if errors != want_errors {
        problems.push(format!("errors {errors:?}, expected {want_errors:?}"));
    }
    let mut want_warnings = expected_set(&expected["warnings"]);
    let file = path.to_string_lossy();
    for (name, kind, at) in EXTRA_WARNINGS
        .iter()
        .filter(|(name, ..)| file.contains(name))
    {
        let _ = name;
        want_warnings.insert((kind.to_string(), at.to_string()));
    }
    if warnings != want_warnings {
        problems.push(format!("warnings {warnings:?}, expected {want_warnings:?}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}
