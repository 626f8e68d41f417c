//! The system under test: check and lower the generated pack with the compiler, then run
//! it on the VM against the scripted host of `packc test` (`packc_host::ScriptedHost`),
//! driven as `packc_host::runner` drives a case; the eval requests are read as well.
//! Some runs are snapshotted after every `resume` and continued from a restored copy
//! (`Generated::restore`), which must change nothing.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use packc_compiler::diag::Severity;
use packc_compiler::{check_bytes, lower, Options};
use packc_host::{RunSpec, ScriptedHost};
use packc_vm::driver::drive_with;
use packc_vm::{CallRecord, Input, OwnedOutcome, Program, Run, RunError, RunOptions, Target};
use serde_json::{json, Value};

use super::gen::{Generated, Item};

/// What the VM produced.
pub struct Actual {
    /// The outcome, or the run-time error.
    pub result: Result<OwnedOutcome, RunError>,
    /// The trace lines.
    pub trace: Vec<String>,
    /// The calls, as `{prompt, input, system}` / `{tool, args}`.
    pub calls: Vec<Value>,
    /// The eval requests, as `{step, eval, output}`.
    pub evals: Vec<Value>,
}

/// The pack as JSON text, checked and lowered; `Err` lists the errors (a generator bug).
pub fn compile(g: &Generated) -> Result<ir_spec::Module, String> {
    let text = serde_json::to_string(&g.pack).unwrap();
    let options = Options::default();
    let checked = check_bytes(text.as_bytes(), &options);
    let errors: Vec<String> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{} at {:?}: {}", d.kind.as_str(), d.pointer(), d.message))
        .collect();
    if !errors.is_empty() {
        return Err(format!(
            "the generator made an invalid pack: {}",
            errors.join("; ")
        ));
    }
    lower(&checked, &options).map_err(|e| format!("lowering failed: {e}"))
}

/// Runs `module` with `g`'s script and answers.
pub fn run(module: ir_spec::Module, g: &Generated) -> Result<Actual, String> {
    let queues = |m: &BTreeMap<String, Vec<Value>>| {
        m.iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect::<VecDeque<_>>()))
            .collect()
    };
    let spec = RunSpec {
        target: g.target.clone(),
        script: Vec::new(),
        prompts: queues(&g.prompts),
        tools: queues(&g.tools),
        guards: BTreeMap::new(),
        extensions: queues(&g.extensions),
        clock: g.clock.clone(),
        variables: g.variables.clone(),
    };
    let program = Arc::new(Program::new(module).map_err(|e| e.to_string())?);
    let target = Target::parse(program.module(), &g.target).map_err(|e| e.to_string())?;
    let options = RunOptions {
        host_variables: g.variables.clone(),
        max_host_calls: g.max_host_calls,
        record_calls: true,
        ..RunOptions::default()
    };
    let mut run = Run::new(program.clone(), target, options.clone()).map_err(|e| e.to_string())?;
    let mut host = ScriptedHost::new(&spec);
    let mut script = g.script.iter();
    let result = drive_with(
        &mut run,
        &mut host,
        |_| {
            Ok(match script.next() {
                Some(Item::Turn(v)) => Input::Turn(v.clone()),
                Some(Item::Event(e)) => Input::Event(e.clone()),
                None => Input::Finish,
            })
        },
        |_, run, _, _| {
            if g.restore {
                *run = Run::restore_with(program.clone(), &run.snapshot(), &options)
                    .map_err(|e| format!("restore: {e}"))?;
            }
            Ok::<_, String>(())
        },
    )?;
    Ok(Actual {
        result,
        trace: run.trace_lines(),
        calls: run.calls().iter().map(CallRecord::to_json).collect(),
        evals: run
            .evals()
            .into_iter()
            .map(|e| json!({"step": e.step, "eval": e.eval, "output": e.output}))
            .collect(),
    })
}
