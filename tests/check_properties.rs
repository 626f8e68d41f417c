//! Properties of `packc check` over arbitrary mutations of the example packs: it never
//! panics, and the same input always gives the same diagnostics, byte for byte.

use std::path::PathBuf;

use packc_compiler::render::{self, RenderSource};
use packc_compiler::{check_bytes, Options};
use proptest::prelude::*;

fn examples() -> Vec<Vec<u8>> {
    packc_suite::example_packs()
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Cut(usize, usize),
    Insert(usize, Vec<u8>),
    DuplicateLine(usize),
    SwapLines(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Cut(i, n)),
        (
            any::<usize>(),
            prop::collection::vec(
                prop::sample::select(b"{}[]:,-&*!|>'\"\n #$ab0.".to_vec()),
                1..8
            )
        )
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

fn apply(mut bytes: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let len = bytes.len().max(1);
    match m {
        Mutation::Flip(i, b) => {
            if !bytes.is_empty() {
                bytes[i % len] ^= b | 1;
            }
        }
        Mutation::Cut(i, n) => {
            let start = i % len;
            let end = (start + n).min(bytes.len());
            bytes.drain(start.min(bytes.len())..end);
        }
        Mutation::Insert(i, b) => {
            let at = (i % len).min(bytes.len());
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::DuplicateLine(i) | Mutation::SwapLines(i, _) => {
            let mut lines: Vec<Vec<u8>> =
                bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            let n = lines.len();
            match m {
                Mutation::DuplicateLine(_) => {
                    let line = lines[i % n].clone();
                    lines.insert(i % n, line);
                }
                Mutation::SwapLines(a, b) => lines.swap(a % n, b % n),
                _ => unreachable!(),
            }
            bytes = lines.join(&b'\n');
        }
    }
    bytes
}

fn rendered(bytes: &[u8]) -> String {
    let options = Options {
        base_dir: Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")),
        ..Options::default()
    };
    let checked = check_bytes(bytes, &options);
    let text = String::from_utf8_lossy(bytes);
    let src = RenderSource::of_checked("mutated.pack.yaml", &text, &checked);
    let mut out = Vec::new();
    render::human(&src, &checked.diagnostics, false, &mut out).unwrap();
    for d in &checked.diagnostics {
        out.extend_from_slice(render::json(&src, d).to_string().as_bytes());
        out.push(b'\n');
    }
    String::from_utf8(out).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_examples_never_panic_and_are_deterministic(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let packs = examples();
        let mut bytes = packs[which.index(packs.len())].clone();
        for m in &mutations {
            bytes = apply(bytes, m);
        }
        let first = rendered(&bytes);
        let second = rendered(&bytes);
        prop_assert_eq!(first, second);
    }
}
