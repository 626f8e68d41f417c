//! Every pack of `../shared/corpus` is accepted or rejected exactly as the `packc` column
//! of its MANIFEST says: the verdict, and the set of (kind, pointer) of its errors and of
//! its warnings. One test per file; skipped cleanly when `../shared` is absent. Each pack's
//! host validators (the list `packc check` prints) are pinned too: [`HOST_VALIDATORS`].

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
        let name = file.replace(['/', '-', '.'], "_");
        trials.push(Trial::test(format!("corpus::{name}"), move || {
            run(&file, &path, &entry)
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

/// The host validators of each pack (pointer, type): every enabled validator whose type is
/// not built in (`shared/semantics/later-versions.md` §4), which a live run refuses to start
/// without a binding. A pack not listed has none.
///
/// Every validator the MANIFEST lists among the types unknown to the reference registry
/// (`types_unknown_to_reference_registry`) must be here: a type the reference runtime cannot
/// judge is not one packc judges itself. Besides those:
/// - `toxicity` (add-evals complete example): the reference registry serves it with a
///   handler of its own, but §4 makes it no built-in, so the host judges it.
/// - `pii_leakge` (PromptKit's `guardrail-bad-type`): the misspelling is the point of the
///   pack; packc cannot tell it from a custom type, so it is a host validator like any other
///   and a live run without a `guards:` binding for it refuses to start, naming it.
/// - `required_phrase` (transparency obligation): listed although the pack is rejected,
///   as `packc check` lists it beside the errors.
const HOST_VALIDATORS: &[(&str, &[(&str, &str)])] = &[
    (
        "omnia/samples-customer-support",
        &[("/prompts/billing/validators/0", "pii_detection")],
    ),
    (
        "promptkit/guardrail-bad-type",
        &[("/prompts/chat/validators/0", "pii_leakge")],
    ),
    (
        "promptpack-langchainjs/validation-demo",
        &[
            ("/prompts/responder/validators/1", "pii_detection"),
            ("/prompts/responder/validators/2", "sentiment"),
        ],
    ),
    (
        "promptpack-spec-later/v1.8.1-examples--transparency-obligation-with-controls",
        &[("/prompts/support/validators/0", "required_phrase")],
    ),
    (
        "promptpack-spec/add-evals--complete-example",
        &[("/prompts/support/validators/0", "toxicity")],
    ),
    (
        "promptpack-spec/examples--complete-customer-support-system",
        &[("/prompts/billing/validators/0", "pii_detection")],
    ),
    (
        "promptpack-spec/examples--document-review-pipeline-with-evals",
        &[("/prompts/risk_analyzer/validators/0", "pii_detection")],
    ),
];

/// The pack's host validators against [`HOST_VALIDATORS`] and the MANIFEST's unknown types.
fn host_validator_problems(
    file: &str,
    doc: &packc_compiler::doc::Node<'_>,
    entry: &Value,
) -> Vec<String> {
    let found = packc_compiler::validators::host_validators(doc);
    let want: Vec<(String, String)> = HOST_VALIDATORS
        .iter()
        .filter(|(name, _)| file.starts_with(&format!("{name}.pack.")))
        .flat_map(|(_, list)| list.iter())
        .map(|(ptr, ty)| (ptr.to_string(), ty.to_string()))
        .collect();
    let mut problems = Vec::new();
    if found != want {
        problems.push(format!("host validators {found:?}, expected {want:?}"));
    }
    // `validator pii_detection @prompts/billing`: the type and its prompt.
    let unknown = entry["types_unknown_to_reference_registry"].as_array();
    for text in unknown.into_iter().flatten().filter_map(Value::as_str) {
        let Some((ty, prompt)) = text
            .strip_prefix("validator ")
            .and_then(|t| t.split_once(" @prompts/"))
        else {
            continue;
        };
        let at = format!("/prompts/{prompt}/validators/");
        if !found.iter().any(|(p, t)| t == ty && p.starts_with(&at)) {
            problems.push(format!(
                "the MANIFEST's unknown validator type `{ty}` of prompt `{prompt}` is not a host validator"
            ));
        }
    }
    problems
}

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

fn run(file: &str, path: &PathBuf, entry: &Value) -> Result<(), Failed> {
    let expected = &entry["packc"];
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
    let full = path.to_string_lossy();
    for (name, kind, at) in EXTRA_WARNINGS
        .iter()
        .filter(|(name, ..)| full.contains(name))
    {
        let _ = name;
        want_warnings.insert((kind.to_string(), at.to_string()));
    }
    if warnings != want_warnings {
        problems.push(format!("warnings {warnings:?}, expected {want_warnings:?}"));
    }
    if let Some(loaded) = &checked.loaded {
        problems.extend(host_validator_problems(
            file,
            &loaded.doc(&packc_compiler::doc::Arena::new()),
            entry,
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}
