//! Throughput: many independent runs of RFC 0010 example 2 on every core, each
//! thread with its own runs over one shared `Arc<Program>`, the host answering at once.
//! The figure is runs per second for the whole machine.

use std::path::Path;
use std::sync::Arc;
use std::thread;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use packc_vm::{Answer, Program, Run, RunOptions, Target};
use serde_json::{json, Value};

const RUNS_PER_THREAD: usize = 2_000;

use packc_suite::program;

fn one_run(p: &Arc<Program>, input: &Value, answer: &Value) -> bool {
    let mut run = Run::new(p.clone(), Target::Workflow, RunOptions::default()).unwrap();
    packc_suite::drive_to_end(&mut run, input.clone(), |_| Answer::Output {
        output: answer.clone(),
        event: None,
    });
    run.outcome().is_some()
}

fn bench_throughput(c: &mut Criterion) {
    let p = program(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rfc0010-ex2.pack.yaml"));
    let threads = thread::available_parallelism().map_or(2, |n| n.get());
    let input = json!({"text": "A paper about residual networks."});
    let answer = json!({"type": "research_paper", "title": "Deep Residual Learning"});
    let mut group = c.benchmark_group("throughput");
    group.sample_size(20);
    group.throughput(Throughput::Elements((threads * RUNS_PER_THREAD) as u64));
    group.bench_function(format!("ex2/{threads}_threads"), |b| {
        b.iter(|| {
            thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        (0..RUNS_PER_THREAD)
                            .filter(|_| one_run(&p, &input, &answer))
                            .count()
                    });
                }
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench_throughput);
criterion_main!(benches);
