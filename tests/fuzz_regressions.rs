//! Regression tests for what the fuzz targets (`fuzz/`, `cargo fuzz`) found: one test per
//! finding, named after it, with the input written out (inline, or in `tests/fuzz/`).
//! `fuzz/README.md` lists the runs that found them.

use std::path::Path;
use std::sync::Arc;

use packc_compiler::{check_bytes, Options};
use packc_vm::{Answer, ErrorKind, Input, Need, Program, Run, RunOptions, Target};
use serde_json::json;

/// Compiles an example pack of `examples/` into a program.
fn example(name: &str) -> Arc<Program> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let bytes = std::fs::read(dir.join(name)).expect("the example is readable");
    let options = Options {
        base_dir: Some(dir),
        ..Options::default()
    };
    let checked = check_bytes(&bytes, &options);
    assert!(!checked.has_errors(), "{:#?}", checked.diagnostics);
    let module = packc_compiler::lower(&checked, &options).expect("the example lowers");
    Arc::new(Program::new(module).expect("the example is a program"))
}

/// `host_answers`: a run reset while a call was outstanding still listed that call in
/// `pending()` and took an answer to it, after its `Start`, as if the new run had issued
/// it. A reset run is a fresh run: nothing is outstanding.
#[test]
fn reset_forgets_outstanding_calls() {
    let program = example("rfc0010-ex2.pack.yaml");
    let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start), Ok(Need::Caller));
    let need = run.resume(Input::Turn(json!({"text": "a paper"}))).unwrap();
    assert_eq!(need, Need::Calls);
    let stale = run.pending().next().expect("a call is outstanding").id();

    run.reset();
    assert_eq!(
        run.pending().count(),
        0,
        "a reset run has nothing outstanding"
    );
    assert_eq!(run.resume(Input::Start), Ok(Need::Caller));
    assert_eq!(run.pending().count(), 0);
    let answer = Answer::Output {
        output: json!({"type": "research_paper"}),
        event: None,
    };
    let err = run.resume(Input::Answer(stale, answer)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Protocol, "{err}");

    // And the reset run runs like a new one.
    let mut fresh = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(fresh.resume(Input::Start), Ok(Need::Caller));
    let turn = || Input::Turn(json!({"text": "a paper"}));
    assert_eq!(run.resume(turn()), fresh.resume(turn()));
    let ids = |r: &Run| r.pending().map(|c| c.id()).collect::<Vec<_>>();
    assert_eq!(ids(&run), ids(&fresh));
    assert_eq!(run.trace_lines(), fresh.trace_lines());
}

/// `artifact_load`: an artifact whose predicate bound is a NaN (an `f64` field is any
/// IEEE binary64 in the format; no pack lowers to one) loads, and decoding then encoding
/// it gives the same bytes, though the decoded artifact is not `==` to itself (NaN ≠
/// NaN). The fuzz target compared decoded artifacts with `==` and reported it; it now
/// compares bytes. Running it, every ordered comparison with a NaN bound is false.
#[test]
fn nan_predicate_bound_round_trips_and_compares_false() {
    use ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
    use ir_spec::{Artifact, Compare, Pred, StepKind};

    let pack = r#"{
      "id": "nan", "name": "NaN", "version": "1.0.0",
      "template_engine": {"version": "v1", "syntax": "{{variable}}"},
      "prompts": {
        "low": {"id": "low", "name": "Low", "version": "1.0.0", "system_template": "low"},
        "high": {"id": "high", "name": "High", "version": "1.0.0", "system_template": "high"}
      },
      "compositions": {
        "pick": {"version": 1, "steps": [
          {"id": "check", "kind": "branch",
           "predicate": {"path": "${input.score}", "op": "less_than", "value": 0.5},
           "then": "low", "else": "high"},
          {"id": "low", "kind": "prompt", "prompt_task": "low", "input": "${input}"},
          {"id": "high", "kind": "prompt", "prompt_task": "high", "input": "${input}"}
        ]}
      }
    }"#;
    let checked = check_bytes(pack.as_bytes(), &Options::default());
    assert!(!checked.has_errors(), "{:#?}", checked.diagnostics);
    let mut artifact = packc_compiler::artifact(&checked, pack.as_bytes(), &Options::default())
        .expect("the pack lowers");
    let step = &mut artifact.module.compositions[0].steps[0];
    let StepKind::Branch { predicate, .. } = &mut step.kind else {
        panic!("the first step is the branch");
    };
    let Pred::Compare {
        test: Compare::Ordered { bound, .. },
        ..
    } = predicate
    else {
        panic!("the predicate is an ordered compare");
    };
    *bound = Some(f64::NAN);

    let bytes = artifact.encode();
    let loaded = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES).expect("a NaN bound loads");
    assert_eq!(
        loaded.encode(),
        bytes,
        "decode then encode gives the same bytes"
    );
    assert_ne!(loaded, loaded.clone(), "NaN is not equal to itself");

    let program = Arc::new(Program::new(loaded.module).expect("a program"));
    let target = Target::parse(program.module(), "composition:pick").unwrap();
    let mut run = Run::new(program, target, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start), Ok(Need::Caller));
    assert_eq!(
        run.resume(Input::Turn(json!({"score": 0.1}))),
        Ok(Need::Calls)
    );
    let call = run.pending().next().expect("one call");
    assert_eq!(call.prompt_task(), Some("high"), "0.1 < NaN is false");
}

/// FNV-1a 64 of the bytes before a snapshot's last eight, written there (the snapshot
/// trailer, `packc_vm::snapshot`), so that damage reaches the decoder.
fn fix_snapshot_trailer(bytes: &mut [u8]) {
    let end = bytes.len() - 8;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &bytes[..end] {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    bytes[end..].copy_from_slice(&h.to_le_bytes());
}

/// `host_answers` and `artifact_mutate_run` (long runs): a damaged snapshot of a run
/// inside an agent's tool loop restored with the loop's block index past its transcript,
/// and answering the pending tool call then indexed out of bounds. Restore now checks
/// that a tool call of a model turn names a request that exists. Every one-byte change
/// of such a snapshot (checksum fixed) is refused or runs; none panics.
#[test]
fn damaged_tool_loop_snapshot_is_refused_or_runs() {
    let program = example("rfc0010-ex3.pack.yaml");
    let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start), Ok(Need::Caller));
    let mut need = run.resume(Input::Turn(json!({"text": "a paper"}))).unwrap();
    // Answer the four parallel branches, then make the agent ask for a tool.
    let mut model_turns = 0;
    while need != Need::Done {
        let call = run.pending().next().expect("a call is outstanding");
        let (id, is_model, prompt) = (call.id(), call.is_model(), call.prompt_task());
        if is_model && prompt == Some("doc_analyzer") {
            model_turns += 1;
            let answer = Answer::ToolCalls(vec![packc_vm::ToolRequest {
                name: "kb.lookup".into(),
                args: json!({"q": "residual"}),
            }]);
            assert_eq!(run.resume(Input::Answer(id, answer)), Ok(Need::Calls));
            break;
        }
        let answer = Answer::Output {
            output: json!({"title": "t"}),
            event: None,
        };
        need = run.resume(Input::Answer(id, answer)).unwrap();
    }
    assert_eq!(model_turns, 1);
    let tool = run.pending().next().expect("the agent's tool call");
    assert_eq!(tool.tool(), Some("kb.lookup"));

    let snapshot = run.snapshot();
    let mut restored_some = 0;
    for i in 0..snapshot.len() - 8 {
        for b in [0u8, 1, 2, 44, 127, 255] {
            let mut bytes = snapshot.clone();
            bytes[i] = b;
            fix_snapshot_trailer(&mut bytes);
            let Ok(mut r) = Run::restore(program.clone(), &bytes) else {
                continue;
            };
            restored_some += 1;
            for _ in 0..8 {
                let input = match r.pending().next().map(|c| c.id()) {
                    Some(id) => Input::Answer(
                        id,
                        Answer::Output {
                            output: json!(null),
                            event: None,
                        },
                    ),
                    None => Input::Clock(0),
                };
                if r.resume(input).is_err() {
                    break;
                }
            }
        }
    }
    // The unchanged bytes among them restore, so the loop did reach the driving.
    assert!(restored_some > 0);
}
