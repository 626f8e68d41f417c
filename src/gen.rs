//! Generated packs for benchmarks and tests.

use serde_json::{json, Map, Value};

/// Whether the steps of a generated pack share prompt keys or each have their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKeys {
    /// Every step calls one of five prompts.
    Shared,
    /// Every step of every composition calls a prompt of its own.
    Distinct,
}

fn prompt(key: &str) -> Value {
    json!({
        "id": key, "name": format!("Prompt {key}"), "version": "1.0.0",
        "system_template": "Process the input: {{input}}"
    })
}

/// A pack of `comps` compositions of `steps` chained prompt steps each (step *k* binds
/// `${s<k-1>.output.x}`), one workflow state per composition.
pub fn big_pack(comps: usize, steps: usize, keys: PromptKeys) -> Value {
    let mut prompts = Map::new();
    let mut compositions = Map::new();
    let mut states = Map::new();
    if keys == PromptKeys::Shared {
        for k in 0..steps {
            prompts.insert(format!("p{k}"), prompt(&format!("p{k}")));
        }
    }
    for c in 0..comps {
        let mut list = Vec::with_capacity(steps);
        for k in 0..steps {
            let key = match keys {
                PromptKeys::Shared => format!("p{k}"),
                PromptKeys::Distinct => {
                    let key = format!("c{c}_p{k}");
                    prompts.insert(key.clone(), prompt(&key));
                    key
                }
            };
            let input = if k == 0 {
                "${input.text}".to_string()
            } else {
                format!("${{s{}.output.x}}", k - 1)
            };
            list.push(json!({"id": format!("s{k}"), "kind": "prompt", "prompt_task": key, "input": input}));
        }
        compositions.insert(format!("c{c}"), json!({"version": 1, "steps": list}));
        let mut state = json!({"orchestration": "composition", "composition": format!("c{c}")});
        if c + 1 < comps {
            state["on_event"] = json!({"Next": format!("s{}", c + 1)});
        }
        states.insert(format!("s{c}"), state);
    }
    json!({
        "id": "big", "name": "Big", "version": "1.0.0",
        "template_engine": {"version": "v1", "syntax": "{{variable}}"},
        "prompts": prompts,
        "workflow": {"version": 1, "entry": "s0", "states": states},
        "compositions": compositions,
    })
}

/// The JSON text of [`big_pack`] with 5 steps a composition, for each prompt-key choice
/// and 250, 500 and 1,000 compositions: the sizes the front-end benches measure, to check
/// that the cost grows linearly.
pub fn sized_json_packs() -> impl Iterator<Item = (PromptKeys, usize, Vec<u8>)> {
    [PromptKeys::Shared, PromptKeys::Distinct]
        .into_iter()
        .flat_map(|keys| [250, 500, 1000].map(|n| (keys, n)))
        .map(|(keys, n)| (keys, n, serde_json::to_vec(&big_pack(n, 5, keys)).unwrap()))
}

/// A JSON value as block-style YAML text (JSON strings are valid YAML scalars).
pub fn to_yaml(v: &Value) -> String {
    fn go(v: &Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, v) in m {
                    out.push_str(&pad);
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    scalar_or_nested(v, indent, out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for v in a {
                    out.push_str(&pad);
                    out.push('-');
                    scalar_or_nested(v, indent, out);
                }
            }
            _ => {
                out.push_str(&pad);
                out.push_str(&v.to_string());
                out.push('\n');
            }
        }
    }
    fn scalar_or_nested(v: &Value, indent: usize, out: &mut String) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                go(v, indent + 2, out);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                go(v, indent + 2, out);
            }
            _ => {
                out.push(' ');
                out.push_str(&v.to_string());
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    go(v, 0, &mut out);
    out
}
