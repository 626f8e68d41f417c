//! Host misbehaviour: protocol misuse (answering a call twice, answering a call that was
//! never issued, a turn, event or finish while calls are outstanding, a clock reading
//! nobody asked for, anything but a clock reading after `Need::Clock`, a second start,
//! resuming a finished or failed run) is a `protocol` error from `resume` that leaves
//! the run exactly as it was: the same snapshot bytes, pending and issued calls, trace
//! and outcome. Each test injects every misuse that is wrong at each point of a run,
//! then snapshots, restores and answers correctly, and must end exactly as the
//! uninterrupted run. Malformed answer bodies are a `host_error` of their step.

mod common;

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use common::{compile, out, parallel_comp, prompts, tool_defs, Queues, HEAD};
use packc_vm::driver::{drive, drive_with, Host, ScriptItem};
use packc_vm::{
    Answer, CallId, CallView, ErrorKind, Input, Need, OwnedOutcome, Program, Run, RunError,
    RunOptions, Target, ToolRequest,
};
use serde_json::{json, Value};

/// Answers every call with a value naming it; the first model call offered tools asks
/// for its first tool instead.
#[derive(Clone, Default)]
struct Generic {
    clock: u64,
    asked_tools: bool,
}

impl Host for Generic {
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        if let Some(tool) = call.offered_tools().next() {
            if call.is_model() && !self.asked_tools {
                self.asked_tools = true;
                return Answer::ToolCalls(vec![ToolRequest {
                    name: tool.key.to_owned(),
                    args: json!({"q": 1}),
                }]);
            }
        }
        let key = call.prompt_task().or(call.tool()).unwrap_or_default();
        out(json!({"from": key, "id": call.id().0}))
    }

    fn clock(&mut self) -> u64 {
        self.clock += 10;
        self.clock
    }
}

/// What a run left: its result, trace and calls.
#[derive(Debug, PartialEq)]
struct Ended {
    result: Result<OwnedOutcome, RunError>,
    trace: Vec<String>,
    calls: Vec<Value>,
}

fn ended(run: &Run, result: Result<OwnedOutcome, RunError>) -> Ended {
    Ended {
        result,
        trace: run.trace_lines(),
        calls: run.calls().iter().map(|c| c.to_json()).collect(),
    }
}

/// Everything a protocol error must leave as it was.
#[derive(Debug, PartialEq)]
struct Seen {
    snapshot: Vec<u8>,
    pending: Vec<CallId>,
    issued: Vec<CallId>,
    finished: bool,
    trace: Vec<String>,
    output: Option<Value>,
}

fn seen(run: &Run) -> Seen {
    Seen {
        snapshot: run.snapshot(),
        pending: run.pending().map(|c| c.id()).collect(),
        issued: run.issued().map(|c| c.id()).collect(),
        finished: run.is_finished(),
        trace: run.trace_lines(),
        output: run.outcome().map(|o| o.output.clone()),
    }
}

/// Where a run is, for choosing the inputs that are wrong there.
#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    Fresh,
    Need(Need),
    Failed,
}

/// Every input that is wrong at `at`, with a word its error message must hold.
fn misuses(run: &Run, at: At, answered: &[CallId]) -> Vec<(Input, &'static str)> {
    let never = CallId(1_000_000);
    let answer = |id| Input::Answer(id, out(json!("x")));
    let pending: Vec<CallId> = run.pending().map(|c| c.id()).collect();
    let mut list = vec![];
    match at {
        At::Fresh => {
            list.push((Input::Turn(json!(1)), "Start"));
            list.push((Input::Finish, "Start"));
            list.push((answer(CallId(0)), "Start"));
            list.push((Input::Clock(1), "Start"));
        }
        At::Need(Need::Done) | At::Failed => {
            for input in [
                Input::Start,
                Input::Turn(json!(1)),
                Input::Event("Next".into()),
                Input::Finish,
                Input::Clock(1),
                answer(CallId(0)),
                answer(never),
            ] {
                list.push((input, "over"));
            }
        }
        At::Need(Need::Clock) => {
            for input in [
                Input::Start,
                Input::Turn(json!(1)),
                Input::Finish,
                answer(never),
            ] {
                list.push((input, "clock"));
            }
            if let Some(&id) = pending.first() {
                list.push((answer(id), "clock"));
            }
        }
        At::Need(need) => {
            list.push((Input::Start, "already started"));
            list.push((Input::Clock(1), "did not ask"));
            list.push((answer(never), "never issued"));
            if let Some(&id) = answered.iter().find(|id| !pending.contains(id)) {
                list.push((answer(id), "answered already"));
            }
            if need != Need::Caller {
                list.push((Input::Turn(json!(1)), "busy"));
                list.push((Input::Event("Next".into()), "busy"));
                list.push((Input::Finish, "busy"));
            }
        }
    }
    list
}

/// Each misuse at `at` is a protocol error that changes nothing; then the run is
/// replaced by a copy restored from its snapshot.
fn try_misuses(program: &Arc<Program>, run: &mut Run, at: At, answered: &[CallId]) {
    for (input, word) in misuses(run, at, answered) {
        let before = seen(run);
        let shown = format!("{input:?}");
        let err = run.resume(input).expect_err(&shown);
        assert_eq!(err.kind, ErrorKind::Protocol, "{shown} at {at:?}: {err}");
        assert!(err.message.contains(word), "{shown} at {at:?}: {err}");
        assert_eq!(seen(run), before, "{shown} at {at:?} changed the run");
    }
    let bytes = run.snapshot();
    let options = RunOptions {
        record_calls: true,
        ..RunOptions::default()
    };
    *run = Run::restore_with(program.clone(), &bytes, &options).expect("restores");
    assert_eq!(run.snapshot(), bytes);
}

/// Runs to the end, answering with `host`; with `misuse`, every wrong input is tried
/// (and the run restored from a snapshot) before each right one.
fn play(
    program: &Arc<Program>,
    target: Target,
    host: &mut dyn Host,
    script: &[ScriptItem],
    misuse: bool,
) -> Ended {
    let options = RunOptions {
        record_calls: true,
        ..RunOptions::default()
    };
    let mut run = Run::new(program.clone(), target, options).unwrap();
    let mut script = script.iter();
    let mut answered = Vec::new();
    let drove = drive_with(
        &mut run,
        host,
        |_| Ok(ScriptItem::input(script.next())),
        |_, run, last, input| {
            if misuse {
                let at = last.map_or(At::Fresh, At::Need);
                try_misuses(program, run, at, &answered);
            }
            if let Input::Answer(id, _) = input {
                answered.push(*id);
            }
            Ok::<_, Infallible>(())
        },
    );
    let result = match drove {
        Ok(result) => result,
        Err(never) => match never {},
    };
    if misuse {
        let at = match result {
            Ok(_) => At::Need(Need::Done),
            Err(_) => At::Failed,
        };
        try_misuses(program, &mut run, at, &answered);
    }
    ended(&run, result)
}

/// The run with every misuse tried at every point ends as the plain run.
fn misuse_changes_nothing(
    program: &Arc<Program>,
    target: Target,
    host: &(impl Host + Clone),
    script: &[ScriptItem],
) -> Ended {
    let plain = play(program, target, &mut host.clone(), script, false);
    let abused = play(program, target, &mut host.clone(), script, true);
    assert_eq!(abused, plain);
    // The plain run agrees with the blocking driver.
    let mut run = Run::new(
        program.clone(),
        target,
        RunOptions {
            record_calls: true,
            ..RunOptions::default()
        },
    )
    .unwrap();
    let result = drive(&mut run, &mut host.clone(), script);
    assert_eq!(ended(&run, result), plain);
    plain
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn program(yaml: &str) -> Arc<Program> {
    Arc::new(Program::new(compile(yaml)).unwrap())
}

#[test]
fn parallel_agent_and_tools_of_example_3() {
    let program = common::program(&root().join("examples/rfc0010-ex3.pack.yaml"));
    let script = [ScriptItem::Turn(json!({"text": "doc"}))];
    let e = misuse_changes_nothing(&program, Target::Workflow, &Generic::default(), &script);
    assert!(e.result.is_ok(), "{:?}", e.result);
    assert!(e.calls.len() >= 6, "{:?}", e.calls);
}

#[test]
fn two_turns_and_an_event_of_example_2() {
    let program = common::program(&root().join("examples/rfc0010-ex2.pack.yaml"));
    let script = [
        ScriptItem::Turn(json!({"text": "one"})),
        ScriptItem::Turn(json!({"text": "two"})),
    ];
    let e = misuse_changes_nothing(&program, Target::Workflow, &Generic::default(), &script);
    assert!(e.result.is_ok(), "{:?}", e.result);
}

#[test]
fn clock_readings_of_a_wall_time_budget() {
    let program = program(&common::two_state_pack("{max_wall_time_sec: 60}"));
    let host = Queues::default()
        .with(
            "p",
            vec![Answer::Output {
                output: json!(1),
                event: Some("Next".into()),
            }],
        )
        .with("q", vec![out(json!(2))]);
    let e = misuse_changes_nothing(
        &program,
        Target::Workflow,
        &host,
        &[ScriptItem::Turn(json!(0))],
    );
    assert_eq!(e.result.unwrap().output, json!(2));
    assert_eq!(
        e.trace,
        ["enter one", "transition one -> two on Next", "enter two"]
    );
}

/// Inputs after a run error are `protocol` errors, and the failed run stays as it was.
#[test]
fn a_failed_run_stays_failed() {
    let comp = parallel_comp(
        "append",
        &[
            "{id: b1, kind: tool, tool: u, modifiers: {retry: {max_attempts: 2}}}",
            "{id: b2, kind: prompt, prompt_task: w, input: '${input}'}",
        ],
        &[],
    );
    let program = program(&format!(
        "{HEAD}{}{}{comp}",
        prompts(&["w"], ""),
        tool_defs(&["u"])
    ));
    let target = Target::parse(program.module(), "composition:c").unwrap();
    let host = Queues::default()
        .with("u", vec![Answer::Error("down".into())])
        .with("w", vec![out(json!(1))]);
    let e = misuse_changes_nothing(&program, target, &host, &[ScriptItem::Turn(json!(0))]);
    assert_eq!(e.result.unwrap_err().kind, ErrorKind::HostError);
    assert_eq!(e.trace, ["step p", "step b1", "retry b1 2", "step b2"]);
}

/// Answering every outstanding call of a parallel step twice, in both orders.
#[test]
fn answering_twice_inside_a_parallel_step() {
    let program = common::program(&root().join("examples/rfc0010-ex3.pack.yaml"));
    let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    assert_eq!(
        run.resume(Input::Turn(json!({"text": "doc"}))).unwrap(),
        Need::Calls
    );
    let ids: Vec<CallId> = run.pending().map(|c| c.id()).collect();
    assert_eq!(ids.len(), 4);
    for (n, &id) in ids.iter().rev().enumerate() {
        let need = run.resume(Input::Answer(id, out(json!(n)))).unwrap();
        let before = seen(&run);
        let err = run
            .resume(Input::Answer(id, out(json!("again"))))
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Protocol);
        assert_eq!(
            err.message,
            "an answer to a call that is not outstanding (it was answered already)"
        );
        assert_eq!(seen(&run), before);
        // The announcement of the last good resume still holds.
        if n < 3 {
            assert_eq!(need, Need::Wait);
        } else {
            assert_eq!(need, Need::Calls);
            assert_eq!(run.issued().count(), 1);
        }
    }
}

/// Malformed answer bodies are a `host_error` of the step (retried like any failed
/// call), never a panic or a protocol error: tool calls answering a prompt step or a
/// tool step, an empty `tool_calls` list. Inside a tool loop a tool answered with tool
/// calls is a failed tool call that goes back to the model.
#[test]
fn malformed_answers_are_host_errors_of_the_step() {
    let program = program(&format!(
        "{HEAD}{}{}compositions:
  prompt:
    version: 1
    steps:
      - {{id: s, kind: prompt, prompt_task: w, input: '${{input}}', modifiers: {{retry: {{max_attempts: 2}}}}}}
  tool:
    version: 1
    steps:
      - {{id: s, kind: tool, tool: u}}
  agent:
    version: 1
    steps:
      - {{id: s, kind: agent, prompt_task: a, tools: [u], termination: {{max_steps: 3}}}}
",
        prompts(&["w", "a"], ""),
        tool_defs(&["u"])
    ));
    let asks = |reqs: Vec<ToolRequest>| Answer::ToolCalls(reqs);
    let req = || ToolRequest {
        name: "u".into(),
        args: json!({}),
    };
    let run_with = |target: &str, host: Queues| {
        let target = Target::parse(program.module(), target).unwrap();
        misuse_changes_nothing(&program, target, &host, &[ScriptItem::Turn(json!(0))])
    };
    // A prompt step answered with tool calls: a host error, retried, then an output.
    let e = run_with(
        "composition:prompt",
        Queues::default().with("w", vec![asks(vec![req()]), out(json!("ok"))]),
    );
    assert_eq!(e.result.unwrap().output, json!("ok"));
    assert_eq!(e.trace, ["step s", "retry s 2"]);
    // Twice: the step fails with host_error.
    let e = run_with(
        "composition:prompt",
        Queues::default().with("w", vec![asks(vec![req()]), asks(vec![])]),
    );
    let err = e.result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::HostError, "{err}");
    // A tool step answered with tool calls.
    let e = run_with(
        "composition:tool",
        Queues::default().with("u", vec![asks(vec![req()])]),
    );
    let err = e.result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::HostError);
    assert!(err.message.contains("answered with tool calls"), "{err}");
    // An agent's model turn with an empty `tool_calls` list.
    let e = run_with(
        "composition:agent",
        Queues::default().with("a", vec![asks(vec![])]),
    );
    let err = e.result.unwrap_err();
    assert_eq!(err.kind, ErrorKind::HostError);
    assert!(err.message.contains("empty `tool_calls`"), "{err}");
    // Inside the loop, a tool answered with tool calls is a tool error for the model.
    let e = run_with(
        "composition:agent",
        Queues::default()
            .with("a", vec![asks(vec![req()]), out(json!("done"))])
            .with("u", vec![asks(vec![req()])]),
    );
    assert_eq!(e.result.unwrap().output, json!("done"));
    assert_eq!(e.calls.len(), 3);
}
