//! Workloads of the VM benchmarks (`benches/vm.rs`) that the VM's profiling examples
//! (`vm/examples/pred_profile.rs`, `guard_profile.rs`) replay, so that a profile and a
//! bench row measure the same thing.

use ir_spec::{Compare, Ordering, Pred, Ref, Root};
use serde_json::{json, Value};

/// The input the predicate rows (`vm_pred`) read.
pub fn pred_input() -> Value {
    json!({"assess": {"type": "research_paper", "confidence": 0.9, "complexity": 3,
                      "flagged_terms": []}})
}

fn path(field: &str) -> Ref {
    Ref {
        root: Root::Input,
        path: ["assess", field].into_iter().collect(),
    }
}

/// `vm_pred/compare`: one equality test, true on [`pred_input`].
pub fn compare_pred() -> Pred {
    Pred::Compare {
        path: path("type"),
        test: Compare::Equals {
            value: json!("research_paper"),
            negate: false,
        },
    }
}

/// `vm_pred/any_of_3`: RFC 0010 example 4's predicate; every clause is false on
/// [`pred_input`], so all three run.
pub fn any_of_pred() -> Pred {
    Pred::Any(vec![
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
    ])
}

/// A 200-character model answer for `examples/rfc0010-ex2.pack.yaml` (`vm_guard`): JSON
/// text, which the steps' `output_schema` parse.
pub fn text_answer() -> Value {
    let mut text = String::from(
        r#"{"type": "research_paper", "confidence": 0.9, "title": "Deep Residual Learning", "summary": ""#,
    );
    while text.len() < 198 {
        text.push('x');
    }
    text.push_str(r#""}"#);
    assert_eq!(text.chars().count(), 200);
    Value::String(text)
}

/// The source of `examples/rfc0010-ex2.pack.yaml` (given as `source`) with three
/// built-in validators on each prompt (`vm_guard/ex2_guarded`), none of which triggers
/// on [`text_answer`]: a banned-word list, a character limit, a regex.
pub fn guarded_ex2(source: &str) -> String {
    let guards = concat!(
        "    validators:\n",
        "      - {type: banned_words, params: {words: [lawsuit, refund, password]}}\n",
        "      - {type: max_length, params: {max_characters: 2000}}\n",
        "      - {type: regex, params: {pattern: '\"(type|summary)\"'}}\n",
    );
    source.replace("    parameters:\n", &format!("{guards}    parameters:\n"))
}
