//! Embedding the VM, from a pack file to its outcome: compile the pack in process (its
//! diagnostics rendered with file and line), encode the artifact `packc build` would
//! write, load it into a [`Program`], and drive a run with a host of your own.
//!
//! ```sh
//! cargo run -p packc-vm --example embed -- examples/rfc0010-ex2.pack.yaml
//! ```
//!
//! The host here answers model calls with fixed JSON: where a real one sends
//! `call.system()` and `call.input()` to a model. The VM does not check a call's answer
//! against its `output_schema`, nor a turn against the composition's `input_schema`:
//! that is the host's to do (`packc run` and `packc batch` check the turn input;
//! `packc_host::live` checks model answers).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use packc_vm::{Answer, CallView, Input, Need, Program, Run, RunOptions, Target};
use serde_json::{json, Value};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "examples/rfc0010-ex2.pack.yaml".into()),
    );
    let source = std::fs::read(&path)?;
    // The pack's folder: its schema files are read from there (and below) only.
    let options = packc_compiler::Options {
        base_dir: path.parent().map(PathBuf::from),
        ..Default::default()
    };
    let (checked, artifact) = packc_compiler::build_file_bytes(&path, &source, &options)?;
    let (name, text) = (path.display().to_string(), String::from_utf8_lossy(&source));
    let shown = packc_compiler::RenderSource::of_checked(&name, &text, &checked);
    packc_compiler::render::human(&shown, &checked.diagnostics, false, &mut std::io::stderr())?;
    let Some(artifact) = artifact else {
        return Err(format!("{name} has errors").into());
    };
    // The bytes `packc build` writes: store them, ship them, load them anywhere.
    let bytes = artifact.encode();
    // Decoded, verified and precomputed once; shared by every run (and thread).
    let program = Arc::new(Program::load(&bytes, &ir_spec::DecodeLimits::default())?);

    let mut run = Run::new(program, Target::Workflow, RunOptions::default())?;
    let mut turns = VecDeque::from([json!({"text": "A paper about residual networks."})]);
    let mut next = Input::Start;
    loop {
        next = match run.resume(next)? {
            // The caller's turn; once there is none left, finish the run.
            Need::Caller => turns.pop_front().map_or(Input::Finish, Input::Turn),
            // Answer the outstanding calls one at a time, in any order.
            Need::Calls | Need::Wait => {
                let call = run.pending().next().ok_or("no call is outstanding")?;
                Input::Answer(call.id(), answer(&call))
            }
            Need::Clock => Input::Clock(now_ms()),
            Need::Done => break,
        };
    }
    let outcome = run.outcome().ok_or("the run has no outcome")?;
    println!("{}", outcome.output);
    for line in run.trace_lines() {
        eprintln!("  {line}");
    }
    Ok(())
}

/// A fixed answer per prompt: what a model would say.
fn answer(call: &CallView<'_>) -> Answer {
    let output: Value = match call.prompt_task() {
        Some("doc_classifier") => json!({"type": "research_paper", "confidence": 0.9}),
        Some(_) => json!({"summary": "a paper", "entities": []}),
        None => return Answer::Error("this host answers model calls only".into()),
    };
    Answer::Output {
        output,
        event: None,
    }
}

/// Milliseconds of the host's clock, for a workflow with a wall-time budget.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
