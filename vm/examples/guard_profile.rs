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

use packc_suite::workloads;
use packc_vm::{Answer, Program, Run, RunOptions, Target};
use serde_json::json;

fn program(guarded: bool) -> Arc<Program> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("examples/rfc0010-ex2.pack.yaml");
    let mut source = std::fs::read_to_string(&path).expect("readable pack");
    if guarded {
        source = workloads::guarded_ex2(&source);
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
    let text = workloads::text_answer();
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
        let answers = &mut answers[r];
        let turn = std::mem::take(&mut inputs[r]);
        packc_suite::drive_to_end(&mut run, turn, |_| answers.pop().unwrap());
        assert!(run.outcome().is_some(), "runs to its end");
        assert!(run
            .trace_lines()
            .iter()
            .all(|l| !l.starts_with("guardrail")));
        done.push(run);
    }
    std::hint::black_box(&done);
}
