//! Runs one case and compares what happened with `expect` (conformance README, "Rules of
//! the runner").

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use packc_compiler::diag::Severity;
use packc_compiler::{check_file_bytes, check_loaded, Checked, Options};
use packc_vm::driver::{drive_with, ScriptItem};
use packc_vm::value::json_eq;
use packc_vm::{OwnedOutcome, Program, Run, RunError, RunOptions, Target};
use serde_json::Value;

use crate::calls::{calls_json, Recorder};
use crate::case::{Case, PackSource};
use crate::scripted::ScriptedHost;

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Actual {
    /// The outcome, or the run-time error.
    pub result: Result<OwnedOutcome, RunError>,
    /// The trace lines.
    pub trace: Vec<String>,
    /// The calls, in the case format (`{prompt, input, system}` / `{tool, args}` / ...),
    /// each host call with the `answer` it got.
    pub calls: Vec<Value>,
}

/// A case's verdict: `Ok` when it passed, else every difference found, one per line.
pub type CaseResult = Result<(), String>;

/// How a case is run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCaseOptions {
    /// Also run the case a second time, snapshotting the run after every `resume` and
    /// continuing from a restored copy; it must end exactly as the uninterrupted run.
    /// (The test suite's check of `Run::snapshot` / `Run::restore`; `packc test` leaves
    /// it off.)
    pub check_snapshots: bool,
    /// Further folders the files a pack names may be read from
    /// (`packc_compiler::Options::allow_paths`; `packc test --allow-path`).
    pub allow_paths: Vec<std::path::PathBuf>,
    /// The embedder's cap on host calls per run (`RunOptions::max_host_calls`); past
    /// it the run fails with `limit_exceeded`, which the case's expectations then see.
    /// `None` (the default): no cap, as the case format sets no embedder limits;
    /// `packc test` sets one (`--max-host-calls`).
    pub max_host_calls: Option<u64>,
}

/// Reads and runs the case file at `path`.
pub fn run_case_file(path: &Path) -> CaseResult {
    run_case_file_with(path, RunCaseOptions::default())
}

/// Reads and runs the case file at `path` with `options`. A failure starts with the
/// case's `about` line (`about: ...`), when it has one.
pub fn run_case_file_with(path: &Path, options: RunCaseOptions) -> CaseResult {
    let case = Case::read(path).map_err(|e| e.to_string())?;
    // A failure starts with what the case shows, so a reader knows what broke.
    run_case_with(&case, options).map_err(|diff| match case.about.trim() {
        "" => diff,
        about => format!("about: {about}\n{diff}"),
    })
}

/// Runs a parsed case: the compile half ([`check_case`]), then, for a run case, the run.
pub fn run_case(case: &Case) -> CaseResult {
    run_case_with(case, RunCaseOptions::default())
}

/// [`run_case`] with `options`.
pub fn run_case_with(case: &Case, run_options: RunCaseOptions) -> CaseResult {
    let Some((checked, base_dir)) = compile_half(case, &run_options.allow_paths)? else {
        return Ok(());
    };
    let Some(spec) = &case.run else {
        return Ok(());
    };
    let options = Options {
        base_dir,
        allow_paths: run_options.allow_paths.clone(),
        ..Options::default()
    };
    let module = packc_compiler::lower(&checked, &options).map_err(|e| e.to_string())?;
    // A queue no call consumes is only unconsumed answers, which a case may leave
    // (conformance README, "Rules of the runner"); when the case fails it is the
    // likely reason, so it is named then.
    let unknown = crate::queues::unknown_queues(spec, &module);
    let program = Arc::new(Program::new(module).map_err(|e| e.to_string())?);
    let cap = run_options.max_host_calls;
    let actual = execute_program(&program, spec, false, cap)?;
    let mut diffs = Vec::new();
    compare(case, &actual, &mut diffs);
    if !diffs.is_empty() {
        diffs.extend(unknown.into_iter().map(|q| format!("note: {}", q.message)));
    }
    if run_options.check_snapshots {
        let restored = execute_program(&program, spec, true, cap)?;
        if restored.trace != actual.trace
            || restored.calls != actual.calls
            || format!("{:?}", restored.result) != format!("{:?}", actual.result)
        {
            diffs.push(format!(
                "a run restored from a snapshot after every resume differs: {:?} / {:?} vs {:?} / {:?}",
                restored.result, restored.trace, actual.result, actual.trace
            ));
        }
    }
    verdict(diffs)
}

/// Only the compile half of a case: `compile_error` / `at` among the reported errors,
/// the exact set of `warnings` when given, and no error at all when no `compile_error`
/// is expected (every run case).
pub fn check_case(case: &Case) -> CaseResult {
    compile_half(case, &[]).map(|_| ())
}

/// The compile half; `Some` with the checked pack when the case goes on to run.
#[allow(clippy::type_complexity)]
fn compile_half(
    case: &Case,
    allow_paths: &[std::path::PathBuf],
) -> Result<Option<(Checked, Option<std::path::PathBuf>)>, String> {
    let (checked, base_dir) = compile(case, allow_paths)?;
    let expect = &case.expect;
    let errors: Vec<(String, String)> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            (
                d.kind.as_str().to_owned(),
                d.pointer().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let mut diffs = Vec::new();
    for (name, expected, severity) in [
        ("warnings", &expect.warnings, Severity::Warning),
        ("notes", &expect.notes, Severity::Note),
    ] {
        let Some(expected) = expected else { continue };
        let reported: BTreeSet<String> = checked
            .diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .map(|d| d.kind.as_str().to_owned())
            .collect();
        if *expected != reported {
            diffs.push(format!(
                "{name}: expected {expected:?}, reported {reported:?}"
            ));
        }
    }
    match &expect.compile_error {
        Some(kind) => {
            let at = expect.at.as_deref();
            if !errors
                .iter()
                .any(|(k, p)| k == kind && at.is_none_or(|a| a == p))
            {
                let place = at.map_or(String::new(), |a| format!(" at {a}"));
                diffs.push(format!(
                    "expected compile error {kind}{place}; {}",
                    reported_errors(&checked)
                ));
            }
            verdict(diffs).map(|()| None)
        }
        None if !errors.is_empty() => {
            diffs.push(format!(
                "expected no compile error; {}",
                reported_errors(&checked)
            ));
            verdict(diffs).map(|()| None)
        }
        None => verdict(diffs).map(|()| Some((checked, base_dir))),
    }
}

/// The pack's errors, one line each: kind, pointer and message (a case's pack is often
/// inline, so there is no line to point at).
fn reported_errors(checked: &Checked) -> String {
    let lines: Vec<String> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| match d.pointer() {
            Some(p) => format!("\n  {} at {p}: {}", d.kind.as_str(), d.message),
            None => format!("\n  {}: {}", d.kind.as_str(), d.message),
        })
        .collect();
    match lines.len() {
        0 => "the pack has no error".to_owned(),
        n => format!("the pack has {n} error(s):{}", lines.concat()),
    }
}

fn verdict(diffs: Vec<String>) -> CaseResult {
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("\n"))
    }
}

/// Checks the case's pack; also returns the folder schema files are read from.
fn compile(
    case: &Case,
    allow_paths: &[std::path::PathBuf],
) -> Result<(Checked, Option<std::path::PathBuf>), String> {
    Ok(match &case.pack {
        PackSource::File(path) => {
            let bytes = read_pack_file(case, path, allow_paths)?;
            let base_dir = path.parent().map(Path::to_path_buf);
            let options = Options {
                base_dir: base_dir.clone(),
                allow_paths: allow_paths.to_vec(),
                ..Options::default()
            };
            (check_file_bytes(path, &bytes, &options), base_dir)
        }
        PackSource::Inline(loaded) => (check_loaded(loaded.clone(), &Options::default()), None),
    })
}

/// The bytes of a case's `pack_file` (`path`, the case's folder joined with the name),
/// read only when it names a `.yaml`, `.yml` or `.json` file in the case's folder, the
/// folder above it, the current folder or an allowed folder
/// (`packc_compiler::paths::open`'s rules: links and `..` followed, an outside file never
/// looked at). A case from a pull request must not be able to print a file of the
/// machine that tests it, through the diagnostics of a "pack" that is not one.
fn read_pack_file(
    case: &Case,
    path: &Path,
    allow_paths: &[std::path::PathBuf],
) -> Result<Vec<u8>, String> {
    let shown = path.display();
    if !packc_compiler::paths::is_pack_name(path) {
        return Err(format!(
            "{shown}: the case's `pack_file` must name a pack file (.yaml, .yml or .json)"
        ));
    }
    // The case's folder and the one above it (cases often sit in `cases/` beside their
    // packs), and the current folder.
    let mut allow = vec![case.dir.clone()];
    allow.extend(case.dir.parent().map(Path::to_path_buf));
    allow.extend(std::env::current_dir());
    allow.extend(allow_paths.iter().cloned());
    let folders = packc_compiler::paths::Folders {
        // Relative names are resolved from the current folder, as `path` is.
        base: std::path::PathBuf::new(),
        allow,
    };
    let name = path
        .to_str()
        .ok_or_else(|| format!("{shown}: not a UTF-8 path"))?;
    let (file, _) = packc_compiler::paths::open(&folders, name).map_err(|e| match e {
        packc_compiler::paths::OpenError::Outside(_) => format!(
            "{shown}: the case's `pack_file` is outside the case's folder, the folder above it and the current folder, and a case reads its pack only from those (or from a folder given with --allow-path)"
        ),
        packc_compiler::paths::OpenError::Unusable(why) => {
            format!(
                "{shown}: the case's `pack_file` cannot be read: {why}{}",
                nearest_pack(path)
            )
        }
    })?;
    let limit = packc_compiler::load::Limits::default().max_source_bytes as u64;
    packc_compiler::paths::read_bounded(file, limit).map_err(|e| format!("{shown}: {e}"))
}

/// `; did you mean `x.pack.yaml`?` for a `pack_file` that is not there: the closest
/// name of a pack file in the same folder, if one is close.
fn nearest_pack(path: &Path) -> String {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return String::new();
    };
    let Ok(entries) = std::fs::read_dir(packc_compiler::paths::folder_of(path)) else {
        return String::new();
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| packc_compiler::paths::is_pack_name(Path::new(n)) && !n.ends_with(".case.yaml"))
        .collect();
    ir_spec::suggest::suggest(name, names.iter().map(String::as_str))
        .map_or_else(String::new, |n| format!("; did you mean `{n}`?"))
}

/// Runs a lowered module with the scripted host of `spec`.
pub fn execute(module: ir_spec::Module, spec: &crate::RunSpec) -> Result<Actual, String> {
    let program = Arc::new(Program::new(module).map_err(|e| e.to_string())?);
    execute_program(&program, spec, false, None)
}

/// Runs `program` with the scripted host of `spec`; with `restore`, the run is
/// snapshotted after every `resume` and continued from a restored copy; `max_host_calls`
/// is the embedder's cap.
fn execute_program(
    program: &Arc<Program>,
    spec: &crate::RunSpec,
    restore: bool,
    max_host_calls: Option<u64>,
) -> Result<Actual, String> {
    let target = Target::parse(program.module(), &spec.target).map_err(|e| e.to_string())?;
    let options = RunOptions {
        host_variables: spec.variables.clone(),
        // The case format sets no embedder limits (conformance README); `packc test`
        // caps host calls all the same, since a scripted run that always ends may still
        // make billions of calls (a huge `retry.max_attempts`).
        max_host_calls,
        // `calls` is compared.
        record_calls: true,
        // The value and snapshot limits keep their defaults, far above any case's values.
        ..RunOptions::default()
    };
    let mut run = Run::new(program.clone(), target, options.clone()).map_err(|e| e.to_string())?;
    let mut scripted = ScriptedHost::new(spec);
    // Each call is kept with its answer: an `expect.calls` item may give the `answer`.
    let mut host = Recorder {
        inner: &mut scripted,
        calls: Vec::new(),
    };
    let mut script = spec.script.iter();
    let result = drive_with(
        &mut run,
        &mut host,
        |_| Ok(ScriptItem::input(script.next())),
        |_, run, _, _| {
            if restore {
                let bytes = run.snapshot();
                *run = Run::restore_with(program.clone(), &bytes, &options)
                    .map_err(|e| format!("restore: {e}"))?;
            }
            Ok::<_, String>(())
        },
    )?;
    Ok(Actual {
        result,
        trace: run.trace_lines(),
        calls: calls_json(&run.calls(), host.calls),
    })
}

fn compare(case: &Case, actual: &Actual, diffs: &mut Vec<String>) {
    let e = &case.expect;
    match (&e.error, &actual.result) {
        (Some(kind), Err(err)) if err.kind.as_str() == kind => {}
        (Some(kind), Err(err)) => diffs.push(format!("error: expected {kind}, got {err}")),
        (Some(kind), Ok(o)) => diffs.push(format!(
            "error: expected {kind}, the run ended with output {}",
            o.output
        )),
        (None, Err(err)) => diffs.push(format!("the run failed: {err}")),
        (None, Ok(o)) => {
            if let Some(out) = &e.output {
                if !json_eq(out, &o.output) {
                    diffs.push(format!("output: expected {out}, got {}", o.output));
                }
            }
            if let Some(state) = &e.state {
                if o.state.as_deref() != Some(state) {
                    diffs.push(match &o.state {
                        Some(got) => format!("state: expected {state}, got {got}"),
                        None => format!("state: expected {state}, the run has no workflow state"),
                    });
                }
            }
            if let Some(reply) = &e.reply {
                if o.reply != *reply {
                    diffs.push(format!("reply: expected {reply:?}, got {:?}", o.reply));
                }
            }
        }
    }
    if let Some(trace) = &e.trace {
        if *trace != actual.trace {
            diffs.push(format!(
                "trace differs (- expected, + got):\n{}",
                line_diff(trace, &actual.trace)
            ));
        }
    }
    if let Some(calls) = &e.calls {
        compare_calls(calls, &actual.calls, diffs);
    }
}

/// A line diff of `expected` against `actual`: common lines indented, the others marked
/// `- ` (expected only) and `+ ` (got only), from a longest common subsequence.
fn line_diff(expected: &[String], actual: &[String]) -> String {
    let (n, m) = (expected.len(), actual.len());
    // Traces are short; past this size the plain lists are as readable as a diff.
    if n.saturating_mul(m) > 4_000_000 {
        return format!("  - {expected:?}\n  + {actual:?}");
    }
    // lcs[i][j]: the longest common subsequence of expected[i..] and actual[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == actual[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && expected[i] == actual[j] {
            out.push(format!("    {}", expected[i]));
            (i, j) = (i + 1, j + 1);
        } else if j == m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("  - {}", expected[i]));
            i += 1;
        } else {
            out.push(format!("  + {}", actual[j]));
            j += 1;
        }
    }
    out.join("\n")
}

/// Where `expected` and `actual` (two unequal values at `at`) first differ, as
/// `at.member[i]: expected X, got Y`: objects and arrays of one length are followed
/// member by member, element by element.
fn first_difference(mut at: String, expected: &Value, actual: &Value) -> String {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            if let Some((k, v)) = e
                .iter()
                .find(|(k, v)| !a.get(*k).is_some_and(|x| json_eq(v, x)))
            {
                at.push('.');
                at.push_str(k);
                return match a.get(k) {
                    Some(x) => first_difference(at, v, x),
                    None => format!("{at}: expected {v}, missing"),
                };
            }
            if let Some((k, v)) = a.iter().find(|(k, _)| !e.contains_key(*k)) {
                return format!("{at}.{k}: not expected, got {v}");
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            if let Some(i) = (0..e.len()).find(|&i| !json_eq(&e[i], &a[i])) {
                return first_difference(format!("{at}[{i}]"), &e[i], &a[i]);
            }
        }
        _ => {}
    }
    format!("{at}: expected {expected}, got {actual}")
}

/// `calls`: same length; each expected member compared, members left out not compared.
fn compare_calls(expected: &[Value], actual: &[Value], diffs: &mut Vec<String>) {
    let mut bad = Vec::new();
    for (i, exp) in expected.iter().enumerate() {
        let Some(act) = actual.get(i) else {
            bad.push(format!("calls[{i}]: expected {exp}, no such call"));
            continue;
        };
        let members = exp.as_object().map(|m| {
            m.iter()
                .find(|(k, v)| !act.get(*k).is_some_and(|a| json_eq(v, a)))
        });
        match members {
            Some(None) => {}
            Some(Some((k, v))) => {
                let at = format!("calls[{i}].{k}");
                let what = match act.get(k) {
                    Some(a) => first_difference(at, v, a),
                    None => format!("{at}: expected {v}, the call has no `{k}`"),
                };
                bad.push(format!("{what} (the call: {act})"));
            }
            None => bad.push(format!("calls[{i}]: expected {exp}, got {act}")),
        }
    }
    for (i, act) in actual.iter().enumerate().skip(expected.len()) {
        bad.push(format!("calls[{i}]: unexpected {act}"));
    }
    if !bad.is_empty() {
        diffs.push(format!("calls differ: {}", bad.join("; ")));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{compare_calls, first_difference};

    /// A `pack_file` that is not there names the closest pack file beside it.
    #[test]
    fn a_missing_pack_file_offers_the_closest_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("support.pack.yaml"), "id: x\n").unwrap();
        std::fs::write(dir.join("other.case.yaml"), "about: x\n").unwrap();
        let case = dir.join("c.case.yaml");
        std::fs::write(
            &case,
            "about: x\npack_file: suport.pack.yaml\nexpect: {warnings: []}\n",
        )
        .unwrap();
        let e = crate::run_case_file(&case).unwrap_err();
        assert!(
            e.ends_with("not found; did you mean `support.pack.yaml`?"),
            "{e}"
        );
    }

    #[test]
    fn a_call_that_differs_names_the_member() {
        let at = || "calls[1].input".to_owned();
        assert_eq!(
            first_difference(
                at(),
                &json!({"a": {"tier": "gold"}}),
                &json!({"a": {"tier": "silver"}})
            ),
            r#"calls[1].input.a.tier: expected "gold", got "silver""#
        );
        assert_eq!(
            first_difference(at(), &json!({"a": [1, 2]}), &json!({"a": [1, 3]})),
            "calls[1].input.a[1]: expected 2, got 3"
        );
        assert_eq!(
            first_difference(at(), &json!({"a": 1}), &json!({"b": 1})),
            "calls[1].input.a: expected 1, missing"
        );
        assert_eq!(
            first_difference(at(), &json!({"a": 1}), &json!({"a": 1, "b": 2})),
            "calls[1].input.b: not expected, got 2"
        );
        assert_eq!(
            first_difference(at(), &json!([1]), &json!([1, 2])),
            "calls[1].input: expected [1], got [1,2]"
        );
        let mut diffs = Vec::new();
        let actual = [json!({"prompt": "p", "input": "x"})];
        compare_calls(
            &[json!({"prompt": "p", "system": "S"})],
            &actual,
            &mut diffs,
        );
        assert_eq!(
            diffs,
            [
                r#"calls differ: calls[0].system: expected "S", the call has no `system` (the call: {"prompt":"p","input":"x"})"#
            ]
        );
    }
}
