//! Front-end speed: load + check a generated pack of 1,000 compositions × 5 steps, in its
//! JSON form (~1 MB), with prompt keys shared by all steps or distinct per step, and the
//! same pack as YAML. Linear cost is checked by also measuring 250 and 500 compositions.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use packc_compiler::{check_bytes, Options};
use packc_suite::gen::{big_pack, sized_json_packs, PromptKeys};

fn bench_check(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group.sample_size(20);
    for (keys, n, text) in sized_json_packs() {
        assert!(!check_bytes(&text, &Options::default()).has_errors());
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new(format!("json/{keys:?}"), n),
            &text,
            |b, text| b.iter(|| check_bytes(text, &Options::default())),
        );
    }
    let yaml = packc_suite::gen::to_yaml(&big_pack(1000, 5, PromptKeys::Shared));
    assert!(!check_bytes(yaml.as_bytes(), &Options::default()).has_errors());
    group.throughput(Throughput::Bytes(yaml.len() as u64));
    group.bench_function("yaml/Shared/1000", |b| {
        b.iter(|| check_bytes(yaml.as_bytes(), &Options::default()))
    });
    group.finish();
}

criterion_group!(benches, bench_check);
criterion_main!(benches);
