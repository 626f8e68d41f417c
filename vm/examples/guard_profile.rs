//! Runs `examples/rfc0010-ex2.pack.yaml` many times with both model calls answered by a
//! 200-character text, with or without three built-in validators on each prompt (the
//! `vm_guard` bench rows), for profilers:
//! `cargo run --release -p packc-vm --example guard_profile -- <plain|guarded> <runs>`.
//!
//! The cost of the validators on one answer, in instructions:
//! ```sh
//! cargo build --release -p packc-vm --example guard_profile
//! for kind in plain guarded; do
//!     valgrind --tool=callgrind --toggle-collect='*Run::resume*' \
//!         target/release/examples/guard_profile $kind 101   # and with 1
//! done
//! ```
//! ((guarded 101 − guarded 1) − (plain 101 − plain 1)) ÷ 100 ÷ 2 answers per run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use packc_vm::{Answer, Input, Need, Program, Run, RunOptions, Target};
use serde_json::{json, Value};

/// The three validators of the `vm_guard/ex2_guarded` bench row, none of which triggers
/// on [`text_answer`].
const GUARDS: &str = concat!(
    "    validators:\n",
    "      - {type: banned_words, params: {words: [lawsuit, refund, password]}}\n",
    "      - {type: max_length, params: {max_characters: 2000}}\n",
    "      - {type: regex, params: {pattern: '\"(type|summary)\"'}}\n",
);

/// A 200-character model answer: JSON text, which the steps' `output_schema` parse.
fn text_answer() -> Value {
    let mut text = String::from(
        r#"{"type": "research_paper", "confidence": 0.9, "title": "Deep Residual Learning", "summary": ""#,
    );
    while text.len() < 198 {
        text.push('x');
    }
    text.push_str(r#""}"#);
    Value::String(text)
}

fn program(guarded: bool) -> Arc<Program> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("examples/rfc0010-ex2.pack.yaml");
    let mut source = std::fs::read_to_string(&path).expect("readable pack");
    if guarded {
        source = source.replace("    parameters:\n", &format!("{GUARDS}    parameters:\n"));
    }
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(source.as_bytes(), &options);
    let module = packc_compiler::lower(&checked, &options).expect("lowers");
    assert!(module
        .prompts
        .iter()
        .all(|p| p.guards.len() == 3 * usize::from(guarded)));
    Arc::new(Program::new(module).expect("valid"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let guarded = match args.next().as_deref() {
        Some("plain") => false,
        Some("guarded") => true,
        _ => panic!("usage: guard_profile <plain|guarded> <runs>"),
    };
    let runs: usize = args
        .next()
        .map_or(1, |n| n.parse().expect("a number of runs"));
    let program = program(guarded);
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    let text = text_answer();
    // Every answer and input is built before the runs.
    let mut answers: Vec<Vec<Answer>> = (0..runs)
        .map(|_| {
            vec![
                Answer::Output {
                    output: text.clone(),
                    event: None,
                };
                2
            ]
        })
        .collect();
    let mut inputs: Vec<_> = (0..runs).map(|_| input.clone()).collect();
    let mut done = Vec::with_capacity(runs);
    for r in 0..runs {
        let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
        let mut next = Input::Start;
        let mut turn = Some(std::mem::take(&mut inputs[r]));
        let answers = &mut answers[r];
        loop {
            next = match run.resume(next).unwrap() {
                Need::Done => break,
                Need::Caller => turn.take().map_or(Input::Finish, Input::Turn),
                Need::Clock => Input::Clock(0),
                Need::Calls | Need::Wait => {
                    let id = run.pending().next().unwrap().id();
                    Input::Answer(id, answers.pop().unwrap())
                }
            };
        }
        assert!(run.outcome().is_some(), "runs to its end");
        assert!(run
            .trace_lines()
            .iter()
            .all(|l| !l.starts_with("guardrail")));
        done.push(run);
    }
    std::hint::black_box(&done);
}
