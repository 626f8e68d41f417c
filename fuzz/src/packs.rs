//! The packs of `examples/`, compiled once, and the scripted answers of `examples/cases/`
//! as a pool the fuzzed host draws from.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use packc_vm::{Answer, Program, ToolRequest};
use serde_json::Value;

/// The example packs, by file name, embedded so that the fuzzers carry them.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "guide-add-composition.pack.yaml",
        include_str!("../../examples/guide-add-composition.pack.yaml"),
    ),
    (
        "guide-add-workflow.pack.yaml",
        include_str!("../../examples/guide-add-workflow.pack.yaml"),
    ),
    (
        "rfc0010-ex1.pack.yaml",
        include_str!("../../examples/rfc0010-ex1.pack.yaml"),
    ),
    (
        "rfc0010-ex2.pack.yaml",
        include_str!("../../examples/rfc0010-ex2.pack.yaml"),
    ),
    (
        "rfc0010-ex3.pack.yaml",
        include_str!("../../examples/rfc0010-ex3.pack.yaml"),
    ),
    (
        "rfc0010-ex4.pack.yaml",
        include_str!("../../examples/rfc0010-ex4.pack.yaml"),
    ),
];

/// The example case files (their `run.host` answers, inputs and events feed the pool).
const CASES: &[&str] = &[
    include_str!("../../examples/cases/guide-add-composition.case.yaml"),
    include_str!("../../examples/cases/guide-add-workflow.case.yaml"),
    include_str!("../../examples/cases/rfc0010-ex1.case.yaml"),
    include_str!("../../examples/cases/rfc0010-ex2-general.case.yaml"),
    include_str!("../../examples/cases/rfc0010-ex2.case.yaml"),
    include_str!("../../examples/cases/rfc0010-ex3.case.yaml"),
    include_str!("../../examples/cases/rfc0010-ex4.case.yaml"),
    include_str!("../../examples/rfc0010-ex2.host.yaml"),
];

/// One compiled example.
pub struct Pack {
    /// The file name under `examples/`.
    pub name: &'static str,
    /// The program, shared by runs.
    pub program: Arc<Program>,
}

/// Answers, turn inputs and events taken from the example cases.
#[derive(Default)]
pub struct Pool {
    /// Scripted answers by prompt key or tool key.
    pub answers: BTreeMap<String, Vec<Answer>>,
    /// Turn inputs (`run.input`, `run.script[].turn`).
    pub turns: Vec<Value>,
    /// Caller events (`run.script[].event`).
    pub events: Vec<String>,
}

/// The folder of the example packs (their `output_schema` files are read from it).
pub fn examples_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples"))
}

/// The example packs, compiled on first use. A pack that does not build is a bug of
/// the compiler or of the examples, so it panics (once, at the first input).
pub fn examples() -> &'static [Pack] {
    static PACKS: OnceLock<Vec<Pack>> = OnceLock::new();
    PACKS.get_or_init(|| {
        let options = packc_compiler::Options {
            base_dir: Some(examples_dir()),
            ..Default::default()
        };
        EXAMPLES
            .iter()
            .map(|&(name, source)| {
                let (_, artifact) = packc_compiler::build_artifact(source.as_bytes(), &options)
                    .unwrap_or_else(|e| panic!("{name} does not lower: {e:?}"));
                let artifact = artifact.unwrap_or_else(|| panic!("{name} has errors"));
                let program = Program::new(artifact.module)
                    .unwrap_or_else(|e| panic!("{name} is not a valid program: {e}"));
                Pack {
                    name,
                    program: Arc::new(program),
                }
            })
            .collect()
    })
}

/// The pool of the example cases, parsed on first use.
pub fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut pool = Pool::default();
        let limits = packc_compiler::load::Limits::default();
        for text in CASES {
            let doc = packc_compiler::load::load_str(text, &limits)
                .expect("an example case parses")
                .into_value();
            // A case's run is under `run`; a host file is the run itself.
            let run = doc.get("run").unwrap_or(&doc);
            for kind in ["prompts", "tools"] {
                let Some(by_key) = run
                    .pointer(&format!("/host/{kind}"))
                    .and_then(Value::as_object)
                else {
                    continue;
                };
                for (key, answers) in by_key {
                    let list = pool.answers.entry(key.clone()).or_default();
                    list.extend(answers.as_array().into_iter().flatten().map(answer));
                }
            }
            pool.turns.extend(run.get("input").cloned());
            for item in run
                .get("script")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                pool.turns.extend(item.get("turn").cloned());
                if let Some(e) = item.get("event").and_then(Value::as_str) {
                    pool.events.push(e.to_owned());
                }
            }
        }
        pool
    })
}

/// A scripted answer of the case format (`{output, event}`, `{tool_calls}`, `{error}`).
fn answer(v: &Value) -> Answer {
    if let Some(e) = v.get("error") {
        return Answer::Error(e.as_str().unwrap_or("failed").to_owned());
    }
    if let Some(calls) = v.get("tool_calls").and_then(Value::as_array) {
        return Answer::ToolCalls(
            calls
                .iter()
                .map(|c| ToolRequest {
                    name: c
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    args: c.get("args").cloned().unwrap_or(Value::Null),
                })
                .collect(),
        );
    }
    Answer::Output {
        output: v.get("output").cloned().unwrap_or(Value::Null),
        event: v.get("event").and_then(Value::as_str).map(str::to_owned),
    }
}
