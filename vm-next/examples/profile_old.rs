//! The same workload as `profile.rs` on the current VM (`packc_vm`), for comparing
//! instruction counts under callgrind:
//! `cargo run --release -p packc-vm-next --example profile_old -- <pack.yaml> <runs>`.

use std::path::Path;
use std::sync::Arc;

use packc_vm::{Answer, Input, Need, Run, RunOptions, Target};
use serde_json::json;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a pack file");
    let runs: usize = args
        .next()
        .map_or(1, |n| n.parse().expect("a number of runs"));
    let path = Path::new(&path);
    let bytes = std::fs::read(path).expect("readable pack");
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    let module = Arc::new(packc_compiler::lower(&checked, &options).expect("lowers"));
    let model = json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
                       "flagged_terms": [], "risk": 0.2});
    let input = json!({"text": "A paper about residual networks.", "x": 0});
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
        let mut run = Run::new(module.clone(), Target::Workflow, RunOptions::default()).unwrap();
        let mut next = Input::Start;
        let mut turn = Some(std::mem::take(&mut inputs[r]));
        let answers = &mut answers[r];
        let mut outstanding = Vec::new();
        loop {
            next = match run.resume(next).unwrap() {
                Need::Done(_) => break,
                Need::Caller => turn.take().map_or(Input::Finish, Input::Turn),
                Need::Clock => Input::Clock(0),
                Need::Calls(calls) => {
                    outstanding.extend(calls);
                    take(&mut outstanding, answers)
                }
                Need::Wait => take(&mut outstanding, answers),
            };
        }
        done.push(run);
    }
    std::hint::black_box(&done);
}

fn take(outstanding: &mut Vec<packc_vm::HostCall>, answers: &mut Vec<Answer>) -> Input {
    let i = (0..outstanding.len())
        .min_by_key(|&i| (outstanding[i].branch.unwrap_or(0), outstanding[i].id))
        .unwrap();
    let call = outstanding.remove(i);
    Input::Answer(call.id, answers.pop().unwrap())
}
