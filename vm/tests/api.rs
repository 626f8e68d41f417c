//! The host-facing API of the next VM beyond the conformance cases: answer order inside
//! a parallel step, borrowed call views, protocol errors, and `Run::reset`.

mod common;

use std::path::PathBuf;

use packc_vm::{Answer, CallId, ErrorKind, Input, Need, Run, RunOptions, Target};
use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn answer(call: &packc_vm::CallView<'_>) -> Answer {
    let output = match (call.prompt_task(), call.tool()) {
        (Some(p), _) => json!({"from": p}),
        (_, Some(t)) => json!({"tool": t}),
        _ => Value::Null,
    };
    Answer::Output {
        output,
        event: None,
    }
}

/// Runs ex3 answering the outstanding call chosen by `pick` (an index into `pending`).
fn run_ex3(pick: impl Fn(usize) -> usize) -> (Vec<String>, Vec<Value>, Value, Vec<Need>) {
    let program = common::program(&root().join("examples/rfc0010-ex3.pack.yaml"));
    let options = RunOptions {
        record_calls: true,
        ..RunOptions::default()
    };
    let mut run = Run::new(program, Target::Workflow, options).unwrap();
    let mut next = Input::Start;
    let mut turned = false;
    let mut needs = Vec::new();
    loop {
        let need = run.resume(next).unwrap();
        needs.push(need);
        next = match need {
            Need::Done => break,
            Need::Caller if !turned => {
                turned = true;
                Input::Turn(json!({"text": "doc"}))
            }
            Need::Caller => Input::Finish,
            Need::Clock => Input::Clock(0),
            Need::Calls | Need::Wait => {
                let pending: Vec<_> = run.pending().collect();
                let call = pending[pick(pending.len()).min(pending.len() - 1)];
                Input::Answer(call.id(), answer(&call))
            }
        };
    }
    let output = run.outcome().unwrap().output.clone();
    let calls = run.calls().iter().map(|c| c.to_json()).collect();
    (run.trace_lines(), calls, output, needs)
}

#[test]
fn parallel_answers_in_any_order_give_the_same_run() {
    let (trace, calls, output, needs) = run_ex3(|_| 0);
    let (trace2, calls2, output2, needs2) = run_ex3(|n| n - 1);
    assert_eq!(trace, trace2);
    assert_eq!(calls, calls2);
    assert_eq!(output, output2);
    assert_eq!(
        trace,
        [
            "enter main",
            "step extract_metadata",
            "step title",
            "step keywords",
            "step structure",
            "step citations",
            "step synthesize"
        ]
    );
    // Four calls issued at once, then three answers that issue nothing new.
    assert_eq!(
        &needs[..6],
        [
            Need::Caller,
            Need::Calls,
            Need::Wait,
            Need::Wait,
            Need::Wait,
            Need::Calls
        ]
    );
    assert_eq!(needs, needs2);
    // The agent's input is the barrier's merged object, built only when asked.
    assert_eq!(
        calls[4]["input"],
        json!({"title": {"from": "title_extractor"}, "keywords": {"from": "keyword_extractor"},
               "structure": {"tool": "doc.parse_structure"},
               "citations": {"tool": "doc.extract_citations"}})
    );
}

#[test]
fn call_views_borrow_and_protocol_errors_leave_the_run_as_it_was() {
    let program = common::program(&root().join("examples/rfc0010-ex3.pack.yaml"));
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(
        run.resume(Input::Turn(Value::Null)).unwrap_err().kind,
        ErrorKind::Protocol
    );
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    let input = json!({"text": "doc"});
    assert_eq!(run.resume(Input::Turn(input.clone())).unwrap(), Need::Calls);
    let calls: Vec<_> = run.pending().collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(run.issued().count(), 4);
    assert_eq!(calls[0].prompt_task(), Some("title_extractor"));
    assert_eq!(calls[0].branch(), Some(0));
    // A whole reference is borrowed from the turn input, not copied.
    assert_eq!(calls[0].input().borrowed(), Some(&input["text"]));
    assert_eq!(calls[2].tool(), Some("doc.parse_structure"));
    assert_eq!(calls[2].input().to_value(), json!({"content": "doc"}));
    assert!(calls[2].input().borrowed().is_none());
    let mut system = String::new();
    calls[0].write_system(&mut system);
    assert!(system.ends_with("Document:\ndoc"), "{system}");
    assert!(calls[0].offered_tools().next().is_none());
    let ids: Vec<CallId> = calls.iter().map(|c| c.id()).collect();
    // An answer to no outstanding call, and a turn while busy, change nothing.
    let bogus = Input::Answer(CallId(99), Answer::Error("x".into()));
    assert_eq!(run.resume(bogus).unwrap_err().kind, ErrorKind::Protocol);
    assert_eq!(
        run.resume(Input::Turn(Value::Null)).unwrap_err().kind,
        ErrorKind::Protocol
    );
    assert_eq!(run.pending().map(|c| c.id()).collect::<Vec<_>>(), ids);
    // An error answer fails that branch only; the parallel reports it after all ran.
    let err = Input::Answer(ids[1], Answer::Error("down".into()));
    assert_eq!(run.resume(err).unwrap(), Need::Wait);
    assert_eq!(run.issued().count(), 0);
    assert_eq!(run.pending().count(), 3);
    for id in [ids[0], ids[2]] {
        let ok = Input::Answer(
            id,
            Answer::Output {
                output: json!(1),
                event: None,
            },
        );
        assert_eq!(run.resume(ok).unwrap(), Need::Wait);
    }
    let last = Input::Answer(
        ids[3],
        Answer::Output {
            output: json!(1),
            event: None,
        },
    );
    assert_eq!(run.resume(last).unwrap_err().kind, ErrorKind::HostError);
    assert!(run.is_finished());
}

#[test]
fn a_reset_run_runs_again() {
    let program = common::program(&root().join("examples/rfc0010-ex2.pack.yaml"));
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    for _ in 0..3 {
        run.reset();
        let mut next = Input::Start;
        let mut turn = Some(json!({"text": "doc"}));
        loop {
            let need = run.resume(next).unwrap();
            let answer =
                |call: &packc_vm::CallView<'_>| json!({"type": "manual", "n": call.id().0});
            let Some(input) = common::next_input(&run, need, &mut turn, answer) else {
                break;
            };
            next = input;
        }
        assert_eq!(
            run.outcome().unwrap().output,
            &json!({"type": "manual", "n": 1})
        );
        assert_eq!(
            run.trace_lines(),
            [
                "enter main",
                "step classify",
                "branch route -> extract_general",
                "skip extract_paper",
                "step extract_general"
            ]
        );
    }
}

/// A model call carries what a real host needs beyond the VM's own use: the prompt's
/// `parameters` (here RFC 0010 example 2's `temperature: 0.0`).
#[test]
fn model_calls_expose_prompt_parameters() {
    let program = common::program(&root().join("examples/rfc0010-ex2.pack.yaml"));
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    let need = run.resume(Input::Turn(json!({"text": "doc"}))).unwrap();
    assert_eq!(need, Need::Calls);
    let call = run.pending().next().unwrap();
    assert_eq!(call.prompt_task(), Some("doc_classifier"));
    assert_eq!(
        call.parameters().map(ir_spec::JsonText::parse),
        Some(json!({"temperature": 0.0}))
    );
}

#[test]
fn an_unknown_target_is_invalid_target() {
    let m = common::compile(
        &std::fs::read_to_string(root().join("examples/rfc0010-ex3.pack.yaml")).unwrap(),
    );
    for text in ["agent:nope", "composition:nope", "nothing"] {
        let e = Target::parse(&m, text).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidTarget, "{text}: {e}");
    }
    // A composition's bare name gets the target to write.
    let e = Target::parse(&m, "deep_analyze").unwrap_err();
    assert!(
        e.message
            .ends_with("did you mean `composition:deep_analyze`?"),
        "{e}"
    );
    // A target of another module's shape: an agent index this module does not have.
    let program = std::sync::Arc::new(packc_vm::Program::new(m).unwrap());
    let far = Target::Agent(ir_spec::AgentId(1000));
    let e = Run::new(program, far, RunOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidTarget, "{e}");
}

#[test]
fn workflow_in_a_pack_without_one_names_what_to_run() {
    let m = common::compile(
        "id: d\nname: D\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\ncompositions:\n  flow:\n    version: 1\n    steps:\n      - {id: a, kind: prompt, prompt_task: p}\n",
    );
    let e = Target::parse(&m, "workflow").unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidTarget);
    assert_eq!(
        e.message,
        "the target is `workflow`, but this pack has no workflow; run `composition:flow` instead"
    );
}

#[test]
fn an_invalid_module_is_refused_once() {
    let mut m = common::compile(
        &std::fs::read_to_string(root().join("examples/rfc0010-ex2.pack.yaml")).unwrap(),
    );
    let wf = m.workflow.as_mut().expect("ex2 has a workflow");
    wf.entry = ir_spec::StateId(1000);
    let e = packc_vm::Program::new(m).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidModule, "{e}");
}

#[test]
fn a_program_loads_from_artifact_bytes_once_verified() {
    let m = common::compile(
        &std::fs::read_to_string(root().join("examples/rfc0010-ex1.pack.yaml")).unwrap(),
    );
    let artifact = ir_spec::Artifact {
        source_hash: [0; 32],
        compiler: "test".to_owned(),
        module: m.clone(),
    };
    let bytes = artifact.encode();
    let limits = ir_spec::DecodeLimits::default();
    let program = packc_vm::Program::load(&bytes, &limits).unwrap();
    assert_eq!(program.module(), &m);
    let mut cut = bytes.clone();
    cut.truncate(bytes.len() / 2);
    assert!(matches!(
        packc_vm::Program::load(&cut, &limits),
        Err(packc_vm::LoadError::Artifact(_))
    ));
}

/// `driver::next_call` is the default pick without collecting: the lowest branch still
/// waiting, whatever order the others were answered in; `None` with nothing outstanding.
#[test]
fn next_call_is_the_default_pick() {
    use packc_vm::driver::{lowest_branch_first, next_call};
    let program = common::program(&root().join("examples/rfc0010-ex3.pack.yaml"));
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    assert!(next_call(&run).is_none());
    assert_eq!(
        run.resume(Input::Turn(json!({"text": "doc"}))).unwrap(),
        Need::Calls
    );
    let mut seen = Vec::new();
    while run.pending().count() > 1 {
        let pending: Vec<_> = run.pending().collect();
        let next = next_call(&run).unwrap();
        assert_eq!(next.id(), pending[lowest_branch_first(&pending)].id());
        seen.push(next.branch());
        // Answer the highest branch, so the lowest stays next.
        let last = *pending.iter().max_by_key(|c| c.branch()).unwrap();
        let input = Input::Answer(last.id(), answer(&last));
        run.resume(input).unwrap();
    }
    assert_eq!(seen, [Some(0), Some(0), Some(0)]);
}

/// `driver::drive_from` continues a run from any input and stops when the caller does;
/// the outcome stays in the run.
#[test]
fn drive_from_continues_a_run_and_the_caller_may_stop_it() {
    use packc_vm::driver::drive_from;
    let program = common::program(&root().join("examples/rfc0010-ex2.pack.yaml"));
    let mut host = common::Queues::default()
        .with("doc_classifier", vec![out(json!({"type": "manual"}))])
        .with("general_doc_extractor", vec![out(json!({"summary": "s"}))]);
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    // The caller stops the drive at the first turn: nothing was handed in.
    let stopped = drive_from(
        &mut run,
        &mut host,
        Input::Start,
        |_| Err("stop"),
        |_, _, _, _| Ok(()),
    );
    assert_eq!(stopped, Err("stop"));
    assert!(run.outcome().is_none() && run.pending().count() == 0);
    // Continued with the turn the caller would have given, then finished.
    let first = Input::Turn(json!({"text": "doc"}));
    let caller = |_: &mut _| Ok::<_, &str>(Input::Finish);
    let ended = drive_from(&mut run, &mut host, first, caller, |_, _, _, _| Ok(()));
    assert_eq!(ended, Ok(Ok(())));
    assert_eq!(run.outcome().unwrap().output, &json!({"summary": "s"}));
}

fn out(output: Value) -> Answer {
    Answer::Output {
        output,
        event: None,
    }
}

/// `caller_events` lists what the caller may send while the run is idle in a state the
/// caller drives (external or hybrid), in declaration order, and nothing otherwise: the
/// event not listed is the one that ends the run.
#[test]
fn caller_events_are_those_of_the_idle_callers_state() {
    let yaml = format!(
        "{}{}workflow:\n  version: 1\n  entry: drafting\n  states:\n    \
         drafting: {{prompt_task: draft, on_event: {{Submit: editor}}}}\n    \
         editor: {{prompt_task: wait, orchestration: external, on_event: {{Reject: drafting, Approve: both}}}}\n    \
         both: {{prompt_task: wait, orchestration: hybrid, on_event: {{Close: done}}}}\n    \
         done: {{prompt_task: publish, terminal: true}}\n",
        common::HEAD,
        common::prompts(&["draft", "wait", "publish"], "")
    );
    let program = std::sync::Arc::new(packc_vm::Program::new(common::compile(&yaml)).unwrap());
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    let none: Vec<&str> = Vec::new();
    assert_eq!(run.caller_events(), none, "before the start");
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    // Idle in `drafting`, which the model drives.
    assert_eq!(run.caller_events(), none);
    assert_eq!(
        run.resume(Input::Turn(json!("draft it"))).unwrap(),
        Need::Calls
    );
    assert_eq!(run.caller_events(), none, "while a call is out");
    let id = run.pending().next().unwrap().id();
    let answer = Answer::Output {
        output: json!("a draft"),
        event: Some("Submit".into()),
    };
    assert_eq!(run.resume(Input::Answer(id, answer)).unwrap(), Need::Caller);
    assert_eq!(run.idle().unwrap().state, Some("editor"));
    assert_eq!(run.caller_events(), ["Reject", "Approve"]);
    assert_eq!(
        run.resume(Input::Event("Approve".into())).unwrap(),
        Need::Caller
    );
    assert_eq!(run.idle().unwrap().state, Some("both"));
    assert_eq!(run.caller_events(), ["Close"]);
    assert_eq!(
        run.resume(Input::Event("Close".into())).unwrap(),
        Need::Caller
    );
    assert_eq!(run.idle().unwrap().state, Some("done"));
    assert_eq!(run.caller_events(), none, "a terminal state takes no event");
    let err = run.resume(Input::Event("Close".into())).unwrap_err();
    assert_eq!(err.kind.as_str(), "terminal_state");
}
