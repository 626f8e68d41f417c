//! The conformance suite on the VM directly: every case with a `run:` of
//! `../shared/conformance/cases`, `examples/cases` and `tests/cases`, compiled, lowered,
//! run with a scripted host and compared with `expect` — one test per case
//! (`vm::comp_parallel_barrier`, `vm::examples::rfc0010_ex2`,
//! `vm::own::run_agent_member_tool`), plus this crate's own cases in `tests/cases`
//! (`vm::vm::parallel_budget_issue_order`).
//!
//! Each case is also run a second time through a snapshot taken at every resume and
//! restored into a fresh run, which must end the same way.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Arguments, Trial};
use packc_compiler::diag::Severity;
use packc_compiler::{check_bytes, check_loaded, Checked, Options};
use packc_host::{Case, PackSource};
use packc_vm::driver::ScriptItem;
use packc_vm::value::json_eq;
use packc_vm::{Input, Need, Program, Run, RunError, RunOptions, Target};
use serde_json::Value;

use common::pick;
use packc_host::ScriptedHost;
use packc_vm::driver::Host;

fn main() {
    let args = Arguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs = vec![
        (String::from("examples::"), root.join("examples/cases")),
        (String::from("own::"), root.join("tests/cases")),
        (String::from("vm::"), root.join("vm/tests/cases")),
    ];
    let shared = root.join("../shared/conformance/cases");
    if shared.is_dir() {
        dirs.push((String::new(), shared));
    }
    let mut trials = Vec::new();
    for (prefix, dir) in dirs {
        for path in case_files(&dir) {
            let name = path
                .file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .replace(".case.yaml", "")
                        .replace('-', "_")
                })
                .unwrap_or_default();
            let Ok(case) = Case::read(&path) else {
                trials.push(Trial::test(format!("vm::{prefix}{name}"), move || {
                    Err(format!("{}: unreadable case", path.display()).into())
                }));
                continue;
            };
            if case.run.is_none() {
                continue;
            }
            trials.push(Trial::test(format!("vm::{prefix}{name}"), move || {
                run_case(&case).map_err(Into::into)
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn case_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".case.yaml"))
        .collect();
    files.sort();
    files
}

fn compile(case: &Case) -> Result<(Checked, Option<PathBuf>), String> {
    Ok(match &case.pack {
        PackSource::File(path) => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let base_dir = path.parent().map(Path::to_path_buf);
            let options = Options {
                base_dir: base_dir.clone(),
                ..Options::default()
            };
            (check_bytes(&bytes, &options), base_dir)
        }
        PackSource::Inline(loaded) => (check_loaded(loaded.clone(), &Options::default()), None),
    })
}

/// What a run produced.
struct Actual {
    result: Result<(Value, Option<String>), RunError>,
    trace: Vec<String>,
    calls: Vec<Value>,
}

fn run_case(case: &Case) -> Result<(), String> {
    let (checked, base_dir) = compile(case)?;
    let errors: Vec<String> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{} at {}", d.kind.as_str(), d.pointer().unwrap_or("")))
        .collect();
    let mut diffs = Vec::new();
    if let Some(expected) = &case.expect.warnings {
        let warnings: BTreeSet<String> = checked
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| d.kind.as_str().to_owned())
            .collect();
        if *expected != warnings {
            diffs.push(format!(
                "warnings: expected {expected:?}, reported {warnings:?}"
            ));
        }
    }
    if !errors.is_empty() {
        return Err(format!("expected no compile error; reported: {errors:?}"));
    }
    let spec = case.run.as_ref().ok_or("not a run case")?;
    let options = Options {
        base_dir,
        ..Options::default()
    };
    let module = packc_compiler::lower(&checked, &options).map_err(|e| e.to_string())?;
    let program = Arc::new(Program::new(module).map_err(|e| e.to_string())?);
    let actual = execute(&program, spec, false)?;
    compare(case, &actual, &mut diffs);
    // The same run again, snapshotted and restored at every step.
    let replayed = execute(&program, spec, true)?;
    if replayed.trace != actual.trace
        || replayed.calls != actual.calls
        || format!("{:?}", replayed.result) != format!("{:?}", actual.result)
    {
        diffs.push(format!(
            "a run restored from snapshots at every step differs: {:?} / {:?} vs {:?} / {:?}",
            replayed.result, replayed.trace, actual.result, actual.trace
        ));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("\n"))
    }
}

fn execute(
    program: &Arc<Program>,
    spec: &packc_host::RunSpec,
    restore: bool,
) -> Result<Actual, String> {
    let target = Target::parse(program.module(), &spec.target).map_err(|e| e.to_string())?;
    let options = RunOptions {
        host_variables: spec.variables.clone(),
        max_host_calls: None,
        record_calls: true,
    };
    let mut run = Run::new(program.clone(), target, options).map_err(|e| e.to_string())?;
    let mut host = ScriptedHost::new(spec);
    let mut script = spec.script.iter();
    let mut input = Input::Start;
    let result = loop {
        if restore {
            let bytes = run.snapshot();
            run = Run::restore(program.clone(), &bytes).map_err(|e| format!("restore: {e}"))?;
        }
        let need = match run.resume(input) {
            Ok(n) => n,
            Err(e) => break Err(e),
        };
        input = match need {
            Need::Done => {
                let o = run.outcome().ok_or("Done without an outcome")?;
                break Ok((o.output.clone(), o.state.map(str::to_owned)));
            }
            Need::Clock => Input::Clock(host.clock()),
            Need::Caller => match script.next() {
                Some(ScriptItem::Turn(v)) => Input::Turn(v.clone()),
                Some(ScriptItem::Event(e)) => Input::Event(e.clone()),
                None => Input::Finish,
            },
            Need::Calls | Need::Wait => {
                let call = pick(&run).ok_or("no outstanding call to answer")?;
                // Exercise the lazy accessors the way a real host would.
                let _ = call.input().as_value();
                let _ = call.system();
                let answer = host.call(&call);
                Input::Answer(call.id(), answer)
            }
        };
    };
    Ok(Actual {
        result,
        trace: run.trace_lines(),
        calls: run
            .calls()
            .iter()
            .map(packc_vm::CallRecord::to_json)
            .collect(),
    })
}

fn compare(case: &Case, actual: &Actual, diffs: &mut Vec<String>) {
    let e = &case.expect;
    match (&e.error, &actual.result) {
        (Some(kind), Err(err)) if err.kind.as_str() == kind => {}
        (Some(kind), Err(err)) => diffs.push(format!("error: expected {kind}, got {err}")),
        (Some(kind), Ok(o)) => diffs.push(format!(
            "error: expected {kind}, the run ended with output {}",
            o.0
        )),
        (None, Err(err)) => diffs.push(format!("the run failed: {err}")),
        (None, Ok((output, state))) => {
            if let Some(out) = &e.output {
                if !json_eq(out, output) {
                    diffs.push(format!("output: expected {out}, got {output}"));
                }
            }
            if let Some(expected) = &e.state {
                if state.as_deref() != Some(expected) {
                    diffs.push(format!("state: expected {expected}, got {state:?}"));
                }
            }
        }
    }
    if let Some(trace) = &e.trace {
        if *trace != actual.trace {
            diffs.push(format!("trace: expected {trace:?}, got {:?}", actual.trace));
        }
    }
    if let Some(calls) = &e.calls {
        let mut bad = Vec::new();
        for (i, exp) in calls.iter().enumerate() {
            let Some(act) = actual.calls.get(i) else {
                bad.push(format!("call {i}: expected {exp}, no such call"));
                continue;
            };
            let matches = exp.as_object().is_some_and(|m| {
                m.iter()
                    .all(|(k, v)| act.get(k).is_some_and(|a| json_eq(v, a)))
            });
            if !matches {
                bad.push(format!("call {i}: expected {exp}, got {act}"));
            }
        }
        for (i, act) in actual.calls.iter().enumerate().skip(calls.len()) {
            bad.push(format!("call {i}: unexpected {act}"));
        }
        if !bad.is_empty() {
            diffs.push(format!("calls differ: {}", bad.join("; ")));
        }
    }
}
