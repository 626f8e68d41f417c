//! Runs one pack many times with prebuilt answers, for profilers (`perf`, callgrind):
//! `cargo run --release -p packc-vm --example profile -- <pack.yaml> <runs>`
//! (`VALUE_LIMITS=off`: without the value-limit walk; `BUILT_LIMIT=off`: without measuring
//! the text calls build).

use std::path::Path;

use packc_vm::{Answer, Run, RunOptions, Target};
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a pack file");
    let runs: usize = args
        .next()
        .map_or(1, |n| n.parse().expect("a number of runs"));
    let program = packc_suite::program(Path::new(&path));
    let model = json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
                       "flagged_terms": [], "risk": 0.2});
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    // `VALUE_LIMITS=off`: both value limits at usize::MAX, so no answer is walked.
    let mut options = RunOptions::default();
    if std::env::var("VALUE_LIMITS").is_ok_and(|v| v == "off") {
        options.max_value_bytes = usize::MAX;
        options.max_value_depth = usize::MAX;
    }
    // `BUILT_LIMIT=off`: no measuring of the text a call builds.
    if std::env::var("BUILT_LIMIT").is_ok_and(|v| v == "off") {
        options.max_built_bytes = usize::MAX;
    }
    // Every answer and input is built before the runs.
    // `EVENTS=billing,resolved`: the events the first answers name, in order.
    let events: Vec<String> = std::env::var("EVENTS")
        .map(|e| e.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let mut answers: Vec<Vec<Answer>> = (0..runs)
        .map(|_| {
            let mut list: Vec<Answer> = (0..1100)
                .map(|i| Answer::Output {
                    output: model.clone(),
                    event: events.get(i).cloned(),
                })
                .collect();
            list.reverse();
            list
        })
        .collect();
    let mut inputs: Vec<_> = (0..runs).map(|_| input.clone()).collect();
    let mut done = Vec::with_capacity(runs);
    for r in 0..runs {
        let mut run = Run::new(program.clone(), Target::Workflow, options.clone()).unwrap();
        let answers = &mut answers[r];
        let turn = std::mem::take(&mut inputs[r]);
        packc_suite::drive_to_end(&mut run, turn, |_| answers.pop().unwrap());
        done.push(run);
    }
    std::hint::black_box(&done);
}
