//! Snapshots of suspended runs of `examples/rfc0010-ex1..ex4`: at every point where the
//! run waits for answers, the snapshot is at most 512 bytes plus the JSON text of the
//! values it holds (the turn input and the outputs stored so far), and a run restored
//! from it ends exactly as the original.

mod common;

use std::path::PathBuf;

use packc_vm_next::{Answer, Input, Need, Run, RunOptions, Target};
use serde_json::{json, Value};

#[test]
fn suspended_runs_are_small_and_resume_identically() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    let model = json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
                       "flagged_terms": [], "risk": 0.2});
    let tool = json!({"ok": true});
    for name in ["rfc0010-ex1", "rfc0010-ex2", "rfc0010-ex3", "rfc0010-ex4"] {
        let program = common::program(&root.join(format!("examples/{name}.pack.yaml")));
        let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
        let mut next = Input::Start;
        let mut turned = false;
        // The JSON text of the values the run holds: the input, then each answer.
        let mut values = input.to_string().len();
        let mut largest = 0;
        loop {
            let need = run.resume(next).unwrap();
            if need == Need::Calls || need == Need::Wait {
                let bytes = run.snapshot();
                let overhead = bytes.len().saturating_sub(values);
                largest = largest.max(overhead);
                assert!(
                    overhead <= 512,
                    "{name}: a snapshot of {} bytes holds {values} bytes of values",
                    bytes.len()
                );
                // Continue on the restored run: it must behave as the original.
                run = Run::restore(program.clone(), &bytes).unwrap();
            }
            next = match need {
                Need::Done => break,
                Need::Caller if !turned => {
                    turned = true;
                    Input::Turn(input.clone())
                }
                Need::Caller => Input::Finish,
                Need::Clock => Input::Clock(0),
                Need::Calls | Need::Wait => {
                    let call = common::pick(&run).unwrap();
                    let output: Value = if call.is_model() {
                        model.clone()
                    } else {
                        tool.clone()
                    };
                    values += output.to_string().len();
                    Input::Answer(
                        call.id(),
                        Answer::Output {
                            output,
                            event: None,
                        },
                    )
                }
            };
        }
        let out = run.outcome().unwrap();
        assert_eq!(out.state, Some("main"), "{name}");
        println!("{name}: snapshots at most {largest} bytes beyond their values");
    }
}

#[test]
fn damaged_or_foreign_snapshots_are_refused_never_a_panic() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ex3 = common::program(&root.join("examples/rfc0010-ex3.pack.yaml"));
    let ex2 = common::program(&root.join("examples/rfc0010-ex2.pack.yaml"));
    let mut run = Run::new(ex3.clone(), Target::Workflow, RunOptions::default()).unwrap();
    run.resume(Input::Start).unwrap();
    run.resume(Input::Turn(json!({"text": "doc"}))).unwrap();
    let bytes = run.snapshot();
    assert!(Run::restore(ex3.clone(), &bytes).is_ok());
    assert!(matches!(
        Run::restore(ex2, &bytes),
        Err(packc_vm_next::SnapshotError::OtherModule { .. })
    ));
    for len in 0..bytes.len() {
        assert!(
            Run::restore(ex3.clone(), &bytes[..len]).is_err(),
            "cut {len}"
        );
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            assert!(Run::restore(ex3.clone(), &b).is_err(), "flip {i}:{bit}");
        }
    }
}
