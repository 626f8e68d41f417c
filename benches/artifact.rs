//! Compile and load: `build_artifact` (load + check + lower + encode) of the generated
//! 1,000 compositions × 5 steps pack in its JSON form, with shared and distinct prompt
//! keys; and artifact decode + verify of examples/rfc0010-ex1..ex4 (the rows of benches/README.md).

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
use ir_spec::Artifact;
use packc_compiler::{build_artifact, Options};
use packc_suite::gen::sized_json_packs;

fn bench_compile(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group.sample_size(20);
    for (keys, n, text) in sized_json_packs() {
        let (_, artifact) = build_artifact(&text, &Options::default()).unwrap();
        assert!(artifact.is_some());
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new(format!("json/{keys:?}"), n),
            &text,
            |b, text| {
                b.iter(|| {
                    build_artifact(text, &Options::default())
                        .unwrap()
                        .1
                        .unwrap()
                        .encode()
                })
            },
        );
    }
    group.finish();
}

fn bench_load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load_verify");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for n in 1..=4 {
        let path = root.join(format!("examples/rfc0010-ex{n}.pack.yaml"));
        let options = Options {
            base_dir: path.parent().map(Into::into),
            ..Options::default()
        };
        let source = std::fs::read(&path).unwrap();
        let bytes = build_artifact(&source, &options)
            .unwrap()
            .1
            .unwrap()
            .encode();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("ex{n}")),
            &bytes,
            |b, bytes| b.iter(|| Artifact::decode(bytes, DEFAULT_MAX_ARTIFACT_BYTES).unwrap()),
        );
    }
    group.finish();
}

criterion_group!(benches, bench_compile, bench_load);
criterion_main!(benches);
