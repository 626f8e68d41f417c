//! Validators end to end (`shared/semantics/later-versions.md` §4): a workflow state
//! whose prompt has `banned_words` and `max_length` validators, run from the compiled
//! module, from its `.ppk` bytes, and from snapshots taken while a call is outstanding,
//! with the same outputs, trace and call record each way; and an embedder's Rust
//! closure serving a host validator.

use std::collections::VecDeque;
use std::sync::Arc;

use ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
use ir_spec::Artifact;
use packc_compiler::{build_artifact, Options};
use packc_vm::{Answer, Input, Need, Program, Run, RunOptions, Target};
use serde_json::{json, Value};

const PACK: &str = include_str!("packs/guards.yaml");

fn artifact() -> Artifact {
    let (checked, artifact) = build_artifact(PACK.as_bytes(), &Options::default()).unwrap();
    assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
    artifact.expect("the pack builds")
}

/// What a run produced: its output, trace and call record.
#[derive(Debug, PartialEq)]
struct Result {
    output: Value,
    trace: Vec<String>,
    calls: Vec<Value>,
}

/// Runs one turn whose model call is answered with `answer`. With `snapshots`, the run
/// is saved and restored from bytes every time it waits for an answer.
fn run(program: Arc<Program>, answer: &Value, snapshots: bool) -> Result {
    let options = RunOptions {
        record_calls: true,
        ..RunOptions::default()
    };
    let mut run = Run::new(program.clone(), Target::Workflow, options.clone()).unwrap();
    let mut turns: VecDeque<Value> = VecDeque::from([json!("hi")]);
    let mut input = Input::Start;
    loop {
        let need = run.resume(input).unwrap();
        if snapshots && matches!(need, Need::Calls | Need::Wait) {
            // The snapshot is the state; the options are the restorer's, as they were.
            run = Run::restore_with(program.clone(), &run.snapshot(), &options).unwrap();
        }
        input = match need {
            Need::Caller => match turns.pop_front() {
                Some(t) => Input::Turn(t),
                None => Input::Finish,
            },
            Need::Calls | Need::Wait => {
                let call = run.pending().next().unwrap();
                assert_eq!(call.prompt_task(), Some("support"));
                Input::Answer(
                    call.id(),
                    Answer::Output {
                        output: answer.clone(),
                        event: None,
                    },
                )
            }
            Need::Clock => Input::Clock(0),
            Need::Done => break,
        };
    }
    Result {
        output: run.outcome().unwrap().output.clone(),
        trace: run.trace_lines(),
        calls: run.calls().iter().map(|c| c.to_json()).collect(),
    }
}

#[test]
fn a_banned_word_is_replaced_and_a_long_answer_truncated_the_same_way_everywhere() {
    let long: String = "abcdefghij".repeat(500);
    assert_eq!(long.chars().count(), 5_000);
    let banned = json!("You could file a LAWSUIT.");

    let artifact = artifact();
    let direct = Arc::new(Program::new(artifact.module.clone()).unwrap());
    let call = json!({"prompt": "support", "input": "hi", "system": "Help the customer."});
    let replaced = run(direct.clone(), &banned, false);
    assert_eq!(
        replaced,
        Result {
            output: json!("I can't discuss that here."),
            trace: vec!["enter chat".into(), "guardrail banned_words chat".into()],
            calls: vec![
                call.clone(),
                json!({"guardrail": "banned_words", "at": "chat", "action": "replaced", "length": 25}),
            ],
        }
    );
    let truncated = run(direct, &json!(long), false);
    assert_eq!(
        truncated,
        Result {
            output: json!(long[..100]),
            trace: vec!["enter chat".into(), "guardrail max_length chat".into()],
            calls: vec![
                call,
                json!({"guardrail": "max_length", "at": "chat", "action": "truncated", "length": 5000}),
            ],
        }
    );

    let bytes = artifact.encode();
    let decoded = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES).unwrap();
    let from_ppk = Arc::new(Program::new(decoded.module).unwrap());
    for snapshots in [false, true] {
        assert_eq!(run(from_ppk.clone(), &banned, snapshots), replaced);
        assert_eq!(run(from_ppk.clone(), &json!(long), snapshots), truncated);
    }
}

#[test]
fn a_prompt_without_validators_is_not_rewritten() {
    let (head, rest) = PACK.split_once("    validators:").unwrap();
    let source = format!("{head}workflow:{}", rest.split_once("workflow:").unwrap().1);
    let (_, artifact) = build_artifact(source.as_bytes(), &Options::default()).unwrap();
    let module = artifact.unwrap().module;
    assert!(module.prompts.iter().all(|p| p.guards.is_empty()));
    let program = Arc::new(Program::new(module).unwrap());
    for answer in [json!("You could file a LAWSUIT."), json!("x".repeat(500))] {
        let r = run(program.clone(), &answer, false);
        assert_eq!(r.output, answer);
        assert_eq!(r.trace, ["enter chat"]);
    }
}

#[test]
fn an_embedder_closure_serves_a_host_validator() {
    use packc_host::live::{GuardHandler, Job, LiveConfig, LiveHost};
    let mut config = LiveConfig::default();
    config.guard_handlers.insert(
        "no_shouting".into(),
        GuardHandler::new(|params, text| {
            let min = params["min_letters"].as_u64().unwrap_or(1) as usize;
            let letters = text.chars().filter(|c| c.is_alphabetic()).count();
            Ok(letters < min || text.to_uppercase() != text)
        }),
    );
    let module = {
        let pack = PACK
            .replace("type: max_length", "type: no_shouting")
            .replace("params: {max_characters: 100}", "params: {min_letters: 3}");
        let (_, a) = build_artifact(pack.as_bytes(), &Options::default()).unwrap();
        a.unwrap().module
    };
    assert!(config.unbound_guards(&module).is_empty());
    assert_eq!(
        LiveConfig::default().unbound_guards(&module),
        ["no_shouting"]
    );
    let host = LiveHost::new(config);
    let ask = |text: &str| {
        host.answer(&Job::Guard {
            validator: "no_shouting".into(),
            params: json!({"min_letters": 3}),
            text: text.into(),
        })
        .0
    };
    let pass = |b: bool| Answer::Output {
        output: json!({"pass": b}),
        event: None,
    };
    assert_eq!(ask("STOP THAT"), pass(false));
    assert_eq!(ask("Stop that"), pass(true));
    assert_eq!(ask("OK"), pass(true));
}
