//! The run-time rules that are easy to get wrong, each on a small pack: skip propagation,
//! retry, parallel issue order and budgets, eval requests, tool-loop caps, the wall clock;
//! plus the determinism property (same module + same answers → same trace and calls) and
//! a postcard round trip of a lowered module.

mod common;

use std::sync::Arc;

use common::{compile, out, parallel_comp, prompts, tool_defs, Queues, HEAD};
use ir_spec::Module;
use packc_vm::driver::{drive, ScriptItem};
use packc_vm::{
    Answer, CallRecord, ErrorKind, Input, Need, OwnedOutcome, Program, Run, RunError, RunOptions,
    Target, ToolRequest,
};
use proptest::prelude::*;
use serde_json::{json, Value};

fn err() -> Answer {
    Answer::Error("boom".into())
}

fn tools(calls: &[(&str, Value)]) -> Answer {
    Answer::ToolCalls(
        calls
            .iter()
            .map(|(n, a)| ToolRequest {
                name: (*n).into(),
                args: a.clone(),
            })
            .collect(),
    )
}

struct Ran {
    result: Result<OwnedOutcome, RunError>,
    trace: Vec<String>,
    calls: Vec<CallRecord>,
}

/// Runs with the call log on (`calls` is compared).
fn recording() -> RunOptions {
    RunOptions {
        record_calls: true,
        ..RunOptions::default()
    }
}

fn program(module: &Module) -> Arc<Program> {
    Arc::new(Program::new(module.clone()).expect("program"))
}

fn run(module: &Module, target: &str, host: &mut Queues, input: Value) -> Ran {
    let program = program(module);
    let target = Target::parse(program.module(), target).expect("target");
    let mut r = Run::new(program, target, recording()).expect("run");
    let result = drive(&mut r, host, &[ScriptItem::Turn(input)]);
    Ran {
        result,
        trace: r.trace_lines(),
        calls: r.calls(),
    }
}

#[test]
fn skips_propagate_along_depends_on_but_not_the_backbone() {
    let pack = format!(
        "{HEAD}{}compositions:
  c:
    version: 1
    steps:
      - {{id: gate, kind: branch, predicate: {{path: '${{input.go}}', op: equals, value: true}}, then: a}}
      - {{id: a, kind: prompt, prompt_task: p, input: x}}
      - {{id: b, kind: prompt, prompt_task: p, input: x, depends_on: [a]}}
      - {{id: c2, kind: prompt, prompt_task: p, input: x, depends_on: [b]}}
      - {{id: d, kind: prompt, prompt_task: q, input: x}}
      - {{id: e, kind: prompt, prompt_task: q, input: x, depends_on: [c2, d]}}
",
        prompts(&["p", "q"], "")
    );
    let m = compile(&pack);
    let mut host = Queues::default().with("q", vec![out(json!(1)), out(json!(2))]);
    let r = run(&m, "composition:c", &mut host, json!({"go": false}));
    assert_eq!(
        r.trace,
        [
            "branch gate -> -",
            "skip a",
            "skip b",
            "skip c2",
            "step d",
            "step e"
        ]
    );
    assert_eq!(r.result.expect("ok").output, json!(2));
}

#[test]
fn retry_counts_attempts_and_reruns_host_calls() {
    let pack = format!(
        "{HEAD}{}{}compositions:
  c:
    version: 1
    steps:
      - {{id: s, kind: tool, tool: t, modifiers: {{retry: {{max_attempts: 3}}}}}}
",
        prompts(&["p"], ""),
        tool_defs(&["t"])
    );
    let m = compile(&pack);
    let mut host = Queues::default().with("t", vec![err(), err(), out(json!("ok"))]);
    let r = run(&m, "composition:c", &mut host, json!(null));
    assert_eq!(r.trace, ["step s", "retry s 2", "retry s 3"]);
    assert_eq!(r.calls.len(), 3);
    assert_eq!(r.result.expect("ok").output, json!("ok"));

    let mut host = Queues::default().with("t", vec![err(), err(), err(), out(json!("late"))]);
    let r = run(&m, "composition:c", &mut host, json!(null));
    assert_eq!(r.result.expect_err("fails").kind, ErrorKind::HostError);
}

/// A workflow whose one state runs composition `c`, prompts `a` and `w` and `tools` in
/// parallel `branches` (reduced by `barrier`) under `max_tool_calls: 1`; `extra` comes
/// before the workflow.
fn tool_budget_pack(tools: &[&str], extra: &str, branches: &[&str]) -> String {
    format!(
        "{HEAD}{}{}{extra}workflow:
  version: 1
  entry: main
  engine: {{budget: {{max_tool_calls: 1}}}}
  states:
    main: {{orchestration: composition, composition: c, terminal: true}}
{}",
        prompts(&["a", "w"], ""),
        tool_defs(tools),
        parallel_comp("barrier", branches, &[])
    )
}

/// The example of `compositions.md` §8.1: `max_tool_calls: 1`, branch 1 an agent whose
/// first turn asks for a tool, branch 2 a tool step, branch 3 a prompt step.
#[test]
fn parallel_budget_follows_issue_order() {
    let pack = tool_budget_pack(
        &["t", "u"],
        "",
        &[
            "{id: b1, kind: agent, prompt_task: a, tools: [t], termination: {max_steps: 3}}",
            "{id: b2, kind: tool, tool: u}",
            "{id: b3, kind: prompt, prompt_task: w}",
        ],
    );
    let m = compile(&pack);
    let mut host = Queues::default()
        .with("a", vec![tools(&[("t", json!({}))]), out(json!("never"))])
        .with("t", vec![out(json!(1))])
        .with("u", vec![out(json!(2))])
        .with("w", vec![out(json!(3))]);
    let r = run(&m, "workflow", &mut host, json!(null));
    assert_eq!(
        r.result.expect_err("budget").kind,
        ErrorKind::BudgetExhausted
    );
    assert_eq!(
        r.trace,
        ["enter main", "step p", "step b1", "step b2", "step b3"]
    );
    let shown: Vec<String> = r.calls.iter().map(|c| c.to_json().to_string()).collect();
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert!(shown[0].contains("\"prompt\":\"a\""));
    assert!(shown[1].contains("\"tool\":\"u\""));
    assert!(shown[2].contains("\"prompt\":\"w\""));
}

/// The step a failed run names: the parallel branch that failed first in declaration
/// order (not the last branch the trace entered), a failed leaf step, and the branch
/// whose call a run-wide limit stopped; nothing for a run that did not fail.
#[test]
fn the_failed_step_is_the_step_whose_failure_ended_the_run() {
    let failed_step = |pack: &str, host: &mut Queues| {
        let program = program(&compile(pack));
        let mut r = Run::new(program, Target::Workflow, recording()).expect("run");
        let result = drive(&mut r, host, &[ScriptItem::Turn(json!(null))]);
        (
            result.err().map(|e| e.kind),
            r.failed_step().map(str::to_owned),
        )
    };
    let workflow = "workflow:
  version: 1
  entry: main
  states:
    main: {orchestration: composition, composition: c, terminal: true}
";
    let pack = format!(
        "{HEAD}{}{workflow}{}",
        prompts(&["a", "w", "x"], ""),
        parallel_comp(
            "barrier",
            &[
                "{id: b1, kind: prompt, prompt_task: a}",
                "{id: b2, kind: prompt, prompt_task: w}",
                "{id: b3, kind: prompt, prompt_task: x}",
            ],
            &["{id: last, kind: prompt, prompt_task: a}"],
        )
    );
    let answered = |w: Answer, x: Answer, last: Answer| {
        Queues::default()
            .with("a", vec![out(json!(1)), last])
            .with("w", vec![w])
            .with("x", vec![x])
    };
    let host_error = Some(ErrorKind::HostError);
    assert_eq!(
        failed_step(&pack, &mut answered(err(), err(), out(json!(2)))),
        (host_error, Some("b2".into()))
    );
    assert_eq!(
        failed_step(&pack, &mut answered(out(json!(2)), err(), out(json!(2)))),
        (host_error, Some("b3".into()))
    );
    assert_eq!(
        failed_step(&pack, &mut answered(out(json!(2)), out(json!(3)), err())),
        (host_error, Some("last".into()))
    );
    assert_eq!(
        failed_step(
            &pack,
            &mut answered(out(json!(2)), out(json!(3)), out(json!(4)))
        ),
        (None, None)
    );
    // The budget stops b1's tool call, the first issued past it (§8.1).
    let pack = tool_budget_pack(
        &["t", "u"],
        "",
        &[
            "{id: b1, kind: agent, prompt_task: a, tools: [t], termination: {max_steps: 3}}",
            "{id: b2, kind: tool, tool: u}",
            "{id: b3, kind: prompt, prompt_task: w}",
        ],
    );
    let mut host = Queues::default()
        .with("a", vec![tools(&[("t", json!({}))]), out(json!("never"))])
        .with("t", vec![out(json!(1))])
        .with("u", vec![out(json!(2))])
        .with("w", vec![out(json!(3))]);
    assert_eq!(
        failed_step(&pack, &mut host),
        (Some(ErrorKind::BudgetExhausted), Some("b1".into()))
    );
}

/// A branch that completed before a run-wide failure ended the run during its parallel
/// step keeps its eval request (`compositions.md` §9.2: a step that completes requests
/// its evals; only failed or skipped steps request nothing), as it does when a sibling
/// branch fails. Found by the differential test (`tests/differential.rs`).
#[test]
fn completed_branch_keeps_its_eval_request_when_the_budget_ends_the_run() {
    let pack = tool_budget_pack(
        &["t"],
        "evals: [{id: e, type: llm_judge, trigger: every_turn}]\n",
        &[
            "{id: b1, kind: prompt, prompt_task: a, modifiers: {eval: [e]}}",
            "{id: b2, kind: agent, prompt_task: w, tools: [t], termination: {max_steps: 3}}",
        ],
    );
    let m = compile(&pack);
    let mut host = Queues::default()
        .with("a", vec![out(json!("done"))])
        .with("w", vec![tools(&[("t", json!({})), ("t", json!({}))])])
        .with("t", vec![out(json!(1)), out(json!(2))]);
    let program = program(&m);
    let mut r = Run::new(program, Target::Workflow, recording()).expect("run");
    let result = drive(&mut r, &mut host, &[ScriptItem::Turn(json!(null))]);
    assert_eq!(result.expect_err("budget").kind, ErrorKind::BudgetExhausted);
    let evals: Vec<Value> = r
        .evals()
        .into_iter()
        .map(|e| json!({"step": e.step, "eval": e.eval, "output": e.output}))
        .collect();
    assert_eq!(
        evals,
        [json!({"step": "b1", "eval": "e", "output": "done"})]
    );
}

fn parallel_pack() -> Module {
    compile(&common::parallel_pack(""))
}

#[test]
fn parallel_logs_branch_by_branch_whatever_the_answer_order() {
    let m = parallel_pack();
    let host = Queues::default()
        .with(
            "a",
            vec![tools(&[("t", json!({"k": 1}))]), out(json!([1, 2]))],
        )
        .with("t", vec![out(json!("t1"))])
        .with("u", vec![err(), out(json!(3))])
        .with("w", vec![out(json!(null))])
        .with("v", vec![out(json!("done"))]);
    let forward = run(&m, "composition:c", &mut host.clone(), json!(5));
    let backward = run(
        &m,
        "composition:c",
        &mut Queues {
            reverse: true,
            ..host
        },
        json!(5),
    );
    assert_eq!(
        forward.trace,
        [
            "step p",
            "step b1",
            "step b2",
            "retry b2 2",
            "step b3",
            "step after"
        ]
    );
    assert_eq!(forward.trace, backward.trace);
    assert_eq!(forward.calls, backward.calls);
    assert_eq!(
        forward.calls.last().map(CallRecord::to_json),
        Some(json!({"tool": "v", "args": {"all": [1, 2, 3, null]}}))
    );
    assert_eq!(forward.result, backward.result);
}

#[test]
fn wall_clock_budget_reads_the_host_clock_before_calls() {
    let pack = common::two_state_pack("{max_wall_time_sec: 1}");
    let m = compile(&pack);
    let answers = |h: Queues| {
        h.with(
            "p",
            vec![Answer::Output {
                output: json!(1),
                event: Some("Next".into()),
            }],
        )
        .with("q", vec![out(json!(2))])
    };
    // Start 0, before p 10, before entering two 999, before q 1000: the limit is reached.
    let mut host = answers(Queues {
        clock: vec![0, 10, 999, 1000],
        ..Queues::default()
    });
    let r = run(&m, "workflow", &mut host, json!(null));
    assert_eq!(r.result.expect_err("late").kind, ErrorKind::BudgetExhausted);
    assert_eq!(r.calls.len(), 1);
    assert_eq!(
        r.trace,
        ["enter one", "transition one -> two on Next", "enter two"]
    );
    let mut host = answers(Queues {
        clock: vec![0, 10, 999],
        ..Queues::default()
    });
    assert!(run(&m, "workflow", &mut host, json!(null)).result.is_ok());
}

#[test]
fn prompt_state_tool_loop_applies_the_policy() {
    let pack = format!(
        "{HEAD}{}prompts:
  p:
    id: p
    name: p
    version: 1.0.0
    system_template: Go.
    tools: [t, banned]
    tool_policy: {{max_rounds: 2, max_tool_calls_per_turn: 1, blocklist: [banned]}}
workflow:
  version: 1
  entry: s
  states:
    s: {{prompt_task: p, terminal: true}}
",
        tool_defs(&["t", "banned"])
    );
    let m = compile(&pack);
    let mut host = Queues::default()
        .with(
            "p",
            vec![
                tools(&[("banned", json!({})), ("t", json!({})), ("t", json!({}))]),
                tools(&[("t", json!({}))]),
            ],
        )
        .with("t", vec![out(json!(1)), out(json!(2))]);
    let r = run(&m, "workflow", &mut host, json!(null));
    // Round 1: `banned` refused, one `t` made, the second past the per-turn cap refused.
    // Round 2 is the last allowed: its call is refused by the cap, then the loop fails.
    assert_eq!(r.result.expect_err("cap").kind, ErrorKind::AgentStepLimit);
    let kinds: Vec<Value> = r.calls.iter().map(CallRecord::to_json).collect();
    assert_eq!(kinds.len(), 3);
    assert_eq!(kinds[1]["tool"], json!("t"));
}

#[test]
fn lowered_module_survives_postcard() {
    let m = parallel_pack();
    let bytes = postcard::to_allocvec(&m).expect("encodes");
    let back: Module = postcard::from_bytes(&bytes).expect("decodes");
    assert_eq!(m, back);
}

fn any_answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        (0..5i64).prop_map(|n| out(json!(n))),
        Just(err()),
        Just(tools(&[("t", json!({"x": 1}))])),
        Just(Answer::ToolCalls(Vec::new())),
    ]
}

proptest! {
    /// Same module, same answers: identical trace, calls and result, and the order in
    /// which a host answers parallel branches changes none of them.
    #[test]
    fn runs_are_deterministic(
        a in proptest::collection::vec(any_answer(), 0..6),
        t in proptest::collection::vec(any_answer(), 0..4),
        u in proptest::collection::vec(any_answer(), 0..3),
        w in proptest::collection::vec(any_answer(), 0..2),
        v in proptest::collection::vec(any_answer(), 0..2),
    ) {
        let m = parallel_pack();
        let host = Queues::default().with("a", a).with("t", t).with("u", u).with("w", w).with("v", v);
        let first = run(&m, "composition:c", &mut host.clone(), json!(1));
        let again = run(&m, "composition:c", &mut host.clone(), json!(1));
        let reversed = run(&m, "composition:c", &mut Queues { reverse: true, ..host }, json!(1));
        prop_assert_eq!(&first.trace, &again.trace);
        prop_assert_eq!(&first.calls, &again.calls);
        prop_assert_eq!(&first.result, &again.result);
        prop_assert_eq!(&first.trace, &reversed.trace);
        prop_assert_eq!(&first.calls, &reversed.calls);
        prop_assert_eq!(&first.result, &reversed.result);
    }
}

#[test]
fn embedder_call_limit_is_limit_exceeded() {
    let program = program(&parallel_pack());
    let target = Target::parse(program.module(), "composition:c").expect("target");
    let options = RunOptions {
        max_host_calls: Some(2),
        ..recording()
    };
    let mut r = Run::new(program, target, options).expect("run");
    let mut host = Queues::default();
    let e = drive(&mut r, &mut host, &[ScriptItem::Turn(json!(1))]).expect_err("capped");
    assert_eq!(e.kind, ErrorKind::LimitExceeded);
    // The first two branches issued their calls; the third was refused.
    assert_eq!(r.calls().len(), 2);
    assert_eq!(r.trace_lines(), ["step p", "step b1", "step b2", "step b3"]);
}

#[test]
fn the_resume_protocol_rejects_misuse() {
    let program = program(&parallel_pack());
    let target = Target::parse(program.module(), "composition:c").expect("target");
    let mut r = Run::new(program.clone(), target, RunOptions::default()).expect("run");
    let kind = |res: Result<Need, RunError>| res.map_err(|e| e.kind);
    assert_eq!(kind(r.resume(Input::Finish)), Err(ErrorKind::Protocol));
    let mut r2 = Run::new(program, target, RunOptions::default()).expect("run");
    assert_eq!(r2.resume(Input::Start), Ok(Need::Caller));
    let bogus = Input::Answer(packc_vm::CallId(99), out(json!(1)));
    assert_eq!(kind(r2.resume(bogus)), Err(ErrorKind::Protocol));
    assert!(Target::parse(&parallel_pack(), "composition:nope").is_err());
    assert!(Target::parse(&parallel_pack(), "agent:nope").is_err());
}
