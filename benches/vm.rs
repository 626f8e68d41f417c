//! VM hot path: whole runs of the bundled packs with a host that answers every call at
//! once with a fixed value (issue 4's rows). The packs are YAML files anyone can read:
//! `examples/rfc0010-ex1..4.pack.yaml`, `benches/packs/chain-{100,1000}.pack.yaml`,
//! `examples/guide-add-workflow.pack.yaml`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ir_spec::Module;
use packc_vm::{Answer, Call, HostCall, Input, Need, Run, RunOptions, Target};
use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn module(path: &Path) -> Arc<Module> {
    let bytes = std::fs::read(path).unwrap();
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    Arc::new(packc_compiler::lower(&checked, &options).unwrap())
}

/// The no-op host: a fixed small object for every call; a prompt state's answer also
/// names the event that moves the support workflow on.
fn answer(call: &HostCall, events: &[(&str, &str)]) -> Answer {
    match &call.call {
        Call::Model(m) => Answer::Output {
            output: json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3, "flagged_terms": []}),
            event: events
                .iter()
                .find(|(p, _)| *p == m.prompt)
                .map(|(_, e)| e.to_string()),
        },
        Call::Tool(_) => Answer::Output {
            output: json!({"ok": true}),
            event: None,
        },
    }
}

/// One whole run: start, one turn, answer every call (lowest branch first), finish.
fn run_once(
    module: &Arc<Module>,
    target: &Target,
    input: &Value,
    events: &[(&str, &str)],
) -> Value {
    let mut run = Run::new(module.clone(), *target, RunOptions::default()).unwrap();
    let mut outstanding: Vec<HostCall> = Vec::new();
    let mut next = Input::Start;
    let mut turned = false;
    loop {
        next = match run.resume(next).unwrap() {
            Need::Done(outcome) => return outcome.output,
            Need::Caller if !turned => {
                turned = true;
                Input::Turn(input.clone())
            }
            Need::Caller => Input::Finish,
            Need::Clock => Input::Clock(0),
            Need::Calls(calls) => {
                outstanding.extend(calls);
                take(&mut outstanding, events)
            }
            Need::Wait => take(&mut outstanding, events),
        }
    }
}

fn take(outstanding: &mut Vec<HostCall>, events: &[(&str, &str)]) -> Input {
    let i = (0..outstanding.len())
        .min_by_key(|&i| (outstanding[i].branch.unwrap_or(0), outstanding[i].id))
        .unwrap();
    let call = outstanding.swap_remove(i);
    Input::Answer(call.id, answer(&call, events))
}

fn bench_runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("run");
    let input = json!({"text": "A paper about residual networks.", "x": 0, "document": "d"});
    let cases: &[(&str, &str)] = &[
        ("ex1", "examples/rfc0010-ex1.pack.yaml"),
        ("ex2", "examples/rfc0010-ex2.pack.yaml"),
        ("ex3", "examples/rfc0010-ex3.pack.yaml"),
        ("ex4", "examples/rfc0010-ex4.pack.yaml"),
        ("chain100", "benches/packs/chain-100.pack.yaml"),
        ("chain1000", "benches/packs/chain-1000.pack.yaml"),
    ];
    for (name, path) in cases {
        let m = module(&root().join(path));
        let target = Target::Workflow;
        run_once(&m, &target, &input, &[]);
        group.bench_with_input(BenchmarkId::from_parameter(name), &m, |b, m| {
            b.iter(|| run_once(m, &target, &input, &[]))
        });
    }
    let support = module(&root().join("examples/guide-add-workflow.pack.yaml"));
    let events = [("triage", "billing"), ("billing", "resolved")];
    run_once(
        &support,
        &Target::Workflow,
        &json!("I was charged twice"),
        &events,
    );
    group.throughput(Throughput::Elements(1));
    group.bench_function("workflow_support", |b| {
        b.iter(|| {
            run_once(
                &support,
                &Target::Workflow,
                &json!("I was charged twice"),
                &events,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench_runs);
criterion_main!(benches);
