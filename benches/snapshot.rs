//! Snapshot and resume of a suspended run: example 3 stopped inside its
//! parallel step with four branch calls outstanding, turned into bytes and brought back
//! against the same program, as a host moving a run to another machine would.
//! `ex3_final/snapshot`: the same run once the four branches have answered, waiting on
//! its final step, so the snapshot holds their outputs (as `packc batch` saves a row's
//! run after each answer).

use std::path::Path;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use packc_vm::{Answer, CallId, Input, Need, Run, RunOptions, Target};
use serde_json::json;

use packc_suite::program;

fn bench_snapshot(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = program(&root.join("examples/rfc0010-ex3.pack.yaml"));
    let mut run = Run::new(p.clone(), Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    let need = run
        .resume(Input::Turn(
            json!({"text": "A paper about residual networks."}),
        ))
        .unwrap();
    assert_eq!(need, Need::Calls);
    assert_eq!(run.pending().count(), 4, "suspended in the parallel step");
    let mut group = c.benchmark_group("snapshot");
    let bytes = snapshot_row(
        &mut group,
        &run,
        "ex3_parallel",
        "suspended in its parallel step",
    );
    group.bench_function("ex3_parallel/restore", |b| {
        b.iter(|| Run::restore(p.clone(), &bytes).unwrap())
    });

    let answer = json!({"summary": "Residual connections let very deep networks train.",
                        "entities": ["ResNet", "ImageNet", "CIFAR-10"], "confidence": 0.9,
                        "type": "research_paper", "complexity": 3, "flagged_terms": []});
    let ids: Vec<CallId> = run.pending().map(|c| c.id()).collect();
    for id in ids {
        let output = Answer::Output {
            output: answer.clone(),
            event: None,
        };
        run.resume(Input::Answer(id, output)).unwrap();
    }
    assert_eq!(run.pending().count(), 1, "waiting on the final step");
    snapshot_row(&mut group, &run, "ex3_final", "waiting on its final step");
    group.finish();
}

/// Benchmarks `<name>/snapshot` of `run`, its throughput in the snapshot's bytes, and
/// returns the snapshot.
fn snapshot_row(
    group: &mut BenchmarkGroup<'_, WallTime>,
    run: &Run,
    name: &str,
    state: &str,
) -> Vec<u8> {
    let bytes = run.snapshot();
    eprintln!("snapshot of ex3 {state}: {} bytes", bytes.len());
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function(format!("{name}/snapshot"), |b| b.iter(|| run.snapshot()));
    bytes
}

criterion_group!(benches, bench_snapshot);
criterion_main!(benches);
