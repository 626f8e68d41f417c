//! Evaluates the benchmark predicates (`benches/vm.rs`, group `vm_pred`) many times, for
//! callgrind: `cargo run --release -p packc-vm --example pred_profile -- <compare|any_of> <n>`.

use ir_spec::{Compare, Ordering, Pred, Ref, Root};
use packc_vm::internals::Compiled;
use serde_json::json;

fn path(field: &str) -> Ref {
    Ref {
        root: Root::Input,
        path: vec!["assess".into(), field.into()],
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "compare".to_owned());
    let n: usize = args.next().map_or(1, |n| n.parse().expect("a count"));
    let input = json!({"assess": {"type": "research_paper", "confidence": 0.9, "complexity": 3,
                                  "flagged_terms": []}});
    let pred = match which.as_str() {
        "compare" => Pred::Compare {
            path: path("type"),
            test: Compare::Equals {
                value: json!("research_paper"),
                negate: false,
            },
        },
        _ => Pred::Any(vec![
            Pred::Compare {
                path: path("confidence"),
                test: Compare::Ordered {
                    op: Ordering::Lt,
                    bound: Some(0.8),
                },
            },
            Pred::Compare {
                path: path("complexity"),
                test: Compare::Ordered {
                    op: Ordering::Gt,
                    bound: Some(7.0),
                },
            },
            Pred::Compare {
                path: path("flagged_terms"),
                test: Compare::Equals {
                    value: json!([]),
                    negate: true,
                },
            },
        ]),
    };
    let compiled = Compiled::new(&pred);
    let mut trues = 0;
    for _ in 0..n {
        if compiled.eval_input(std::hint::black_box(&input)) == Ok(true) {
            trues += 1;
        }
    }
    println!("{trues} of {n} true");
}
