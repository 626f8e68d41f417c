//! The embedder's limits of `RunOptions`, each at its edge: exactly at the limit the run
//! goes on as without it; one past, it ends with `limit_exceeded` naming the limit (or,
//! for snapshots, `SnapshotError::TooLarge`). The compiler's and the artifact reader's
//! limits are tested in the root `tests/limits.rs`.

mod common;

use std::sync::Arc;

use common::{compile, out, prompts, tool_defs, HEAD};
use packc_vm::limits::{value_size, DEFAULT_MAX_SNAPSHOT_BYTES};
use packc_vm::{
    Answer, ErrorKind, Input, Need, Program, Run, RunError, RunOptions, SnapshotError, Target,
    ToolRequest,
};
use serde_json::{json, Map, Value};

fn program(yaml: &str) -> Arc<Program> {
    Arc::new(Program::new(compile(yaml)).unwrap())
}

/// `composition:c`: a prompt step `s` (retried up to 3 times), then an agent step `g`
/// that may call tool `t`.
fn pack() -> Arc<Program> {
    program(&format!(
        "{HEAD}{}{}compositions:
  c:
    version: 1
    steps:
      - {{id: s, kind: prompt, prompt_task: w, input: '${{input}}', modifiers: {{retry: {{max_attempts: 3}}}}}}
      - {{id: g, kind: agent, prompt_task: a, input: '${{s.output}}', tools: [t], termination: {{max_steps: 3}}}}
",
        prompts(&["w", "a"], ""),
        tool_defs(&["t"])
    ))
}

fn size(v: &Value) -> usize {
    value_size(v, usize::MAX).unwrap()
}

fn start(program: &Arc<Program>, options: RunOptions) -> Run {
    let target = Target::parse(program.module(), "composition:c").unwrap();
    let mut run = Run::new(program.clone(), target, options).unwrap();
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    run
}

fn bytes(max: usize) -> RunOptions {
    RunOptions {
        max_value_bytes: max,
        ..RunOptions::default()
    }
}

fn depth(max: usize) -> RunOptions {
    RunOptions {
        max_value_depth: max,
        ..RunOptions::default()
    }
}

/// The error ends the run, names the limit, and leaves nothing outstanding.
fn assert_limit(run: &Run, r: Result<Need, RunError>, limit: &str) {
    let e = r.expect_err("past the limit");
    assert_eq!(e.kind, ErrorKind::LimitExceeded, "{e}");
    assert!(e.message.contains(&format!("`{limit}`")), "{e}");
    assert!(run.is_finished());
    assert_eq!(run.pending().count(), 0);
}

/// The id of the one outstanding call.
fn the_call(run: &Run) -> packc_vm::CallId {
    let ids: Vec<_> = run.pending().map(|c| c.id()).collect();
    assert_eq!(ids.len(), 1);
    ids[0]
}

#[test]
fn value_sizes_are_one_per_value_plus_string_bytes() {
    assert_eq!(size(&json!({"a": [1, "xy"]})), 7);
    assert_eq!(size(&json!(null)), 1);
    assert_eq!(size(&json!({})), 1);
    assert_eq!(size(&json!("é")), 3);
    // The walk stops at the limit: a million-element array costs no more to refuse.
    let big = Value::Array(vec![Value::Null; 1_000_000]);
    assert_eq!(value_size(&big, 10), None);
    assert_eq!(value_size(&big, 1_000_001), Some(1_000_001));
}

#[test]
fn turn_input_bytes() {
    let input = json!({"text": "some words", "n": [1, 2, 3]});
    let n = size(&input);
    for max in [n, n + 1] {
        let mut run = start(&pack(), bytes(max));
        assert_eq!(run.resume(Input::Turn(input.clone())).unwrap(), Need::Calls);
    }
    let mut run = start(&pack(), bytes(n - 1));
    let before = run.snapshot();
    let r = run.resume(Input::Turn(input));
    assert_refused(&run, r, "max_value_bytes");
    assert!(run.trace_lines().is_empty());
    assert_eq!(run.snapshot(), before, "the refused turn changed the run");
    // The run waits on: a turn within the limit goes ahead.
    assert_eq!(run.resume(Input::Turn(json!(1))).unwrap(), Need::Calls);
}

/// A caller's input past a limit is refused: the error names the limit, and the run
/// still waits for the caller.
fn assert_refused(run: &Run, r: Result<Need, RunError>, limit: &str) {
    let e = r.expect_err("past the limit");
    assert_eq!(e.kind, ErrorKind::LimitExceeded, "{e}");
    assert!(e.message.contains(&format!("`{limit}`")), "{e}");
    assert!(!run.is_finished());
    assert_eq!(run.waiting_for(), Some(Need::Caller));
}

#[test]
fn turn_input_depth() {
    let input = json!({"a": [[{"b": [1]}]]}); // 5 levels
    for max in [5, 6] {
        let mut run = start(&pack(), depth(max));
        assert_eq!(run.resume(Input::Turn(input.clone())).unwrap(), Need::Calls);
    }
    let mut run = start(&pack(), depth(4));
    let r = run.resume(Input::Turn(input));
    assert_refused(&run, r, "max_value_depth");
    // Scalars have no depth.
    let mut run = start(&pack(), depth(0));
    assert_eq!(run.resume(Input::Turn(json!("flat"))).unwrap(), Need::Calls);
}

/// Runs `c` to the model call of `s` and answers it with `answer` under `options`.
fn answer_s(options: RunOptions, answer: Answer) -> (Run, Result<Need, RunError>) {
    let mut run = start(&pack(), options);
    assert_eq!(run.resume(Input::Turn(json!("x"))).unwrap(), Need::Calls);
    let id = the_call(&run);
    let r = run.resume(Input::Answer(id, answer));
    (run, r)
}

#[test]
fn answer_output_and_event_bytes() {
    let output = json!({"summary": "done", "tags": ["a", "b"]});
    let n = size(&output);
    let plain = Answer::Output {
        output: output.clone(),
        event: None,
    };
    for max in [n, n + 1] {
        let (run, r) = answer_s(bytes(max), plain.clone());
        // Step `s` is done: the agent step's model call is out.
        assert_eq!(r.unwrap(), Need::Calls);
        assert_eq!(run.trace_lines(), ["step s", "step g"]);
    }
    let (run, r) = answer_s(bytes(n - 1), plain);
    assert_limit(&run, r, "max_value_bytes");
    // Not a host error of the step: no retry was spent on it.
    assert_eq!(run.trace_lines(), ["step s"]);
    // An event counts as a string: its bytes and one.
    let with_event = Answer::Output {
        output,
        event: Some("Next".into()),
    };
    let (_, r) = answer_s(bytes(n + 5), with_event.clone());
    assert_eq!(r.unwrap(), Need::Calls);
    let (run, r) = answer_s(bytes(n + 4), with_event);
    assert_limit(&run, r, "max_value_bytes");
}

#[test]
fn answer_output_depth() {
    let output = json!([[[1]]]);
    let answer = out(output);
    for max in [3, 4] {
        let (_, r) = answer_s(depth(max), answer.clone());
        assert_eq!(r.unwrap(), Need::Calls);
    }
    let (run, r) = answer_s(depth(2), answer);
    assert_limit(&run, r, "max_value_depth");
}

#[test]
fn answer_error_bytes() {
    // An error message counts as a string. At the limit it is the step's host error,
    // retried as usual.
    let answer = Answer::Error("provider timeout".into());
    let n = "provider timeout".len() + 1;
    let (run, r) = answer_s(bytes(n), answer.clone());
    assert_eq!(r.unwrap(), Need::Calls);
    assert_eq!(run.trace_lines(), ["step s", "retry s 2"]);
    let (run, r) = answer_s(bytes(n - 1), answer);
    assert_limit(&run, r, "max_value_bytes");
    assert_eq!(run.trace_lines(), ["step s"]);
}

#[test]
fn tool_request_bytes_and_depth() {
    let args = json!({"q": {"deep": [1]}}); // 3 levels
    let request = Answer::ToolCalls(vec![ToolRequest {
        name: "t".into(),
        args: args.clone(),
    }]);
    // The list, then per request its name (1 byte + 1) and its arguments.
    let n = 1 + 2 + size(&args);
    // Runs to the agent's model call and answers it with `request`.
    let ask = |options: RunOptions| {
        let (mut run, r) = answer_s(options, out(json!("s out")));
        assert_eq!(r.unwrap(), Need::Calls);
        let id = the_call(&run);
        let r = run.resume(Input::Answer(id, request.clone()));
        (run, r)
    };
    for max in [n, n + 1] {
        let (run, r) = ask(bytes(max));
        assert_eq!(r.unwrap(), Need::Calls);
        let call = run.pending().next().unwrap();
        assert_eq!(call.tool(), Some("t"));
        assert_eq!(call.input().to_value(), args);
    }
    let (run, r) = ask(bytes(n - 1));
    assert_limit(&run, r, "max_value_bytes");
    let (_, r) = ask(depth(3));
    assert_eq!(r.unwrap(), Need::Calls);
    let (run, r) = ask(depth(2));
    assert_limit(&run, r, "max_value_depth");
}

#[test]
fn caller_event_bytes() {
    let program = program(&format!(
        "{HEAD}{}workflow:
  version: 1
  entry: one
  states:
    one: {{prompt_task: p, orchestration: external, on_event: {{Go: two}}}}
    two: {{prompt_task: q, terminal: true}}
",
        prompts(&["p", "q"], "")
    ));
    let run_with = |max: usize| {
        let mut run = Run::new(program.clone(), Target::Workflow, bytes(max)).unwrap();
        assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
        let r = run.resume(Input::Event("Go".into()));
        (run, r)
    };
    // `Go`: 2 bytes and 1.
    for max in [3, 4] {
        let (run, r) = run_with(max);
        assert_eq!(r.unwrap(), Need::Caller);
        assert_eq!(
            run.trace_lines(),
            ["enter one", "transition one -> two on Go", "enter two"]
        );
    }
    let (mut run, r) = run_with(2);
    assert_refused(&run, r, "max_value_bytes");
    assert_eq!(run.trace_lines(), ["enter one"]);
    assert_eq!(run.caller_events(), ["Go"]);
    assert_eq!(run.resume(Input::Finish).unwrap(), Need::Done);
}

#[test]
fn host_variable_bytes_and_depth() {
    let mut vars = Map::new();
    vars.insert("v".into(), json!({"w": "abc"}));
    vars.insert("x".into(), json!(1));
    // Each variable is a value of its own: the object, `w`, the string and its 3 bytes.
    let n = 1 + 1 + 4;
    let target = |p: &Program| Target::parse(p.module(), "composition:c").unwrap();
    let p = pack();
    let with = |options: RunOptions| {
        Run::new(
            p.clone(),
            target(&p),
            RunOptions {
                host_variables: vars.clone(),
                ..options
            },
        )
    };
    assert!(with(bytes(n)).is_ok());
    assert!(with(bytes(n + 1)).is_ok());
    let e = with(bytes(n - 1)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LimitExceeded);
    assert!(
        e.message.contains("host variable `v`") && e.message.contains("`max_value_bytes`"),
        "{e}"
    );
    assert!(with(depth(1)).is_ok());
    let e = with(depth(0)).unwrap_err();
    assert!(e.message.contains("`max_value_depth`"), "{e}");
}

#[test]
fn host_calls() {
    // Three calls: s, g's model turn asking for t, t, g's second turn: four.
    let run_with = |max: Option<u64>| {
        let options = RunOptions {
            max_host_calls: max,
            ..RunOptions::default()
        };
        let mut run = start(&pack(), options);
        let mut r = run.resume(Input::Turn(json!("x")));
        let mut answers = vec![
            out(json!("s")),
            Answer::ToolCalls(vec![ToolRequest {
                name: "t".into(),
                args: json!({}),
            }]),
            out(json!("t")),
            out(json!("g")),
        ]
        .into_iter();
        while let Ok(Need::Calls | Need::Wait) = r {
            let id = the_call(&run);
            r = run.resume(Input::Answer(id, answers.next().unwrap()));
        }
        (run, r)
    };
    for max in [None, Some(4), Some(5)] {
        let (mut run, r) = run_with(max);
        assert_eq!(r.unwrap(), Need::Caller);
        assert_eq!(run.resume(Input::Finish).unwrap(), Need::Done);
        assert_eq!(run.outcome().unwrap().output, &json!("g"));
    }
    let (run, r) = run_with(Some(3));
    assert_limit(&run, r, "max_host_calls");
    // The fourth call was never issued.
    assert_eq!(run.trace_lines(), ["step s", "step g"]);
    let (run, r) = run_with(Some(0));
    assert_limit(&run, r, "max_host_calls");
}

/// A run suspended at `s`'s call, holding a turn input of `n` bytes of text.
fn suspended(options: RunOptions, n: usize) -> Run {
    let mut run = start(&pack(), options);
    let input = json!("i".repeat(n));
    assert_eq!(run.resume(Input::Turn(input)).unwrap(), Need::Calls);
    run
}

#[test]
fn snapshot_bytes() {
    let with = |max: usize| RunOptions {
        max_snapshot_bytes: max,
        ..RunOptions::default()
    };
    // The limit is part of the snapshot (a varint): every limit below is written in two
    // bytes, so every run below has the same size.
    let len = suspended(with(10_000), 1000).snapshot().len();
    assert!((1000..10_000).contains(&len), "{len}");
    // Writing: the run's own limit.
    for max in [len, len + 1] {
        let run = suspended(with(max), 1000);
        let bytes = run.try_snapshot().unwrap();
        assert_eq!(bytes, run.snapshot());
        assert_eq!(bytes.len(), len);
    }
    let run = suspended(with(len - 1), 1000);
    let e = run.try_snapshot().unwrap_err();
    assert_eq!(e, SnapshotError::TooLarge { limit: len - 1 });
    assert!(e.to_string().contains("`max_snapshot_bytes`"), "{e}");
    // Far past the limit, writing stops early; the run is untouched and can go on.
    let run = suspended(with(100), 1000);
    assert_eq!(
        run.try_snapshot(),
        Err(SnapshotError::TooLarge { limit: 100 })
    );
    assert!(run.pending().next().is_some());

    // Reading: the restorer's limit.
    let bytes = suspended(with(10_000), 1000).snapshot();
    assert_eq!(bytes.len(), len);
    let program = pack();
    for max in [len, len + 1] {
        let run = Run::restore_with_limit(program.clone(), &bytes, max).unwrap();
        assert_eq!(run.snapshot(), bytes);
    }
    assert_eq!(
        Run::restore_with_limit(program.clone(), &bytes, len - 1).unwrap_err(),
        SnapshotError::TooLarge { limit: len - 1 }
    );
    // `restore` reads at most the default, whatever the bytes.
    let huge = vec![0u8; DEFAULT_MAX_SNAPSHOT_BYTES + 1];
    assert_eq!(
        Run::restore(program.clone(), &huge).unwrap_err(),
        SnapshotError::TooLarge {
            limit: DEFAULT_MAX_SNAPSHOT_BYTES
        }
    );
    assert!(matches!(
        Run::restore(program, &huge[..DEFAULT_MAX_SNAPSHOT_BYTES]),
        Err(SnapshotError::BadMagic)
    ));
}

/// Every limit of `RunOptions` lifted, as an attacker writing a snapshot would set them.
fn unlimited() -> RunOptions {
    RunOptions {
        max_host_calls: Some(u64::MAX),
        max_value_bytes: usize::MAX,
        max_value_depth: usize::MAX,
        max_snapshot_bytes: usize::MAX,
        max_built_bytes: usize::MAX,
        max_tool_calls_per_answer: usize::MAX,
        record_calls: true,
        ..RunOptions::default()
    }
}

#[test]
fn a_restored_run_takes_the_restorers_limits() {
    let output = json!("four");
    let n = size(&output);
    // A snapshot written by a run with every limit lifted...
    let snapshot = suspended(unlimited(), 1).snapshot();
    // ...restored under tight limits: the restorer's hold.
    let mut restored = Run::restore_with(pack(), &snapshot, &bytes(n - 1)).unwrap();
    let id = the_call(&restored);
    let r = restored.resume(Input::Answer(id, out(output.clone())));
    assert_limit(&restored, r, "max_value_bytes");
    let mut restored = Run::restore_with(pack(), &snapshot, &bytes(n)).unwrap();
    let id = the_call(&restored);
    assert_eq!(
        restored
            .resume(Input::Answer(id, out(output.clone())))
            .unwrap(),
        Need::Calls
    );
    // `restore` takes the defaults, not the snapshot's: the log of the calls made so
    // far is state and stays, but no further call is logged; the default limits hold.
    let mut restored = Run::restore(pack(), &snapshot).unwrap();
    assert_eq!(restored.calls().len(), 1);
    let id = the_call(&restored);
    let r = restored.resume(Input::Answer(id, out(json!("s"))));
    assert_eq!(r.unwrap(), Need::Calls);
    assert_eq!(restored.calls().len(), 1);
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let mut restored = Run::restore(pack(), &snapshot).unwrap();
    let id = the_call(&restored);
    let r = restored.resume(Input::Answer(id, out(deep)));
    assert_limit(&restored, r, "max_value_depth");

    // The host-call cap counts the calls made before the snapshot: `s` is outstanding,
    // so a cap of 1 lets its answer in and refuses `g`'s call.
    let capped = RunOptions {
        max_host_calls: Some(1),
        ..RunOptions::default()
    };
    let mut restored = Run::restore_with(pack(), &snapshot, &capped).unwrap();
    let id = the_call(&restored);
    let r = restored.resume(Input::Answer(id, out(output)));
    assert_limit(&restored, r, "max_host_calls");

    // The snapshot's own size limit is the restorer's too.
    let small = RunOptions {
        max_snapshot_bytes: snapshot.len() - 1,
        ..RunOptions::default()
    };
    assert_eq!(
        Run::restore_with(pack(), &snapshot, &small).unwrap_err(),
        SnapshotError::TooLarge {
            limit: snapshot.len() - 1
        }
    );
    // The snapshot of a run is the same whatever its limits: it holds state only.
    let logged = RunOptions {
        record_calls: true,
        ..RunOptions::default()
    };
    assert_eq!(suspended(logged, 1).snapshot(), snapshot);
}

/// `composition:c`: one agent step `g` offered tools `t` and `u`, up to 3 model turns.
fn agent_pack() -> Arc<Program> {
    program(&format!(
        "{HEAD}{}{}compositions:
  c:
    version: 1
    steps:
      - {{id: g, kind: agent, prompt_task: a, input: '${{input}}', tools: [t, u], termination: {{max_steps: 3}}}}
",
        prompts(&["a"], ""),
        tool_defs(&["t", "u"])
    ))
}

/// Runs `agent_pack` with `options`: the model asks for `asked` calls of `t` in one
/// answer, then answers "done". Returns the tool calls issued and the tool results the
/// model read on its second turn.
fn one_answer_asking(options: RunOptions, asked: usize) -> (usize, Vec<Value>) {
    let program = agent_pack();
    let mut run = start(&program, options);
    let mut r = run.resume(Input::Turn(json!("x")));
    let requests: Vec<ToolRequest> = (0..asked)
        .map(|i| ToolRequest {
            name: if i % 2 == 0 { "t" } else { "u" }.into(),
            args: json!({"i": i}),
        })
        .collect();
    let mut tool_calls = 0;
    let mut history = Vec::new();
    let mut turns = 0;
    while let Ok(Need::Calls | Need::Wait) = r {
        let call = run.pending().next().unwrap();
        let (id, answer) = if call.is_model() {
            turns += 1;
            if turns == 2 {
                history = call.history();
            }
            let a = if turns == 1 {
                Answer::ToolCalls(requests.clone())
            } else {
                out(json!("done"))
            };
            (call.id(), a)
        } else {
            tool_calls += 1;
            (call.id(), out(json!("ok")))
        };
        r = run.resume(Input::Answer(id, answer));
    }
    assert_eq!(r.unwrap(), Need::Caller);
    let results = history
        .into_iter()
        .filter_map(|e| e.get("tool_result").cloned())
        .collect();
    (tool_calls, results)
}

#[test]
fn tool_calls_per_answer() {
    // 5,000 requests in one answer start 64 calls by default; the rest read an error.
    let (made, results) = one_answer_asking(RunOptions::default(), 5000);
    assert_eq!(made, 64);
    assert_eq!(results.len(), 5000);
    assert!(results[..64].iter().all(|r| r["output"] == "ok"));
    let e = results[64]["error"].as_str().unwrap();
    assert!(e.contains("more than 64 tool calls"), "{e}");
    assert!(e.contains("max_tool_calls_per_answer"), "{e}");
    assert!(results[64..].iter().all(|r| r.get("error").is_some()));
    // At the edge: exactly the cap are all made; one past, the last is refused.
    let cap = |n| RunOptions {
        max_tool_calls_per_answer: n,
        ..RunOptions::default()
    };
    assert_eq!(one_answer_asking(cap(3), 3).0, 3);
    let (made, results) = one_answer_asking(cap(3), 4);
    assert_eq!(made, 3);
    assert!(results[3]["error"]
        .as_str()
        .unwrap()
        .contains("more than 3"));
    assert_eq!(one_answer_asking(cap(0), 2).0, 0);
}

#[test]
fn both_value_limits_at_usize_max_walk_nothing() {
    // Off, a value nested far past the default depth goes in untouched.
    let mut deep = json!(1);
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let off = RunOptions {
        max_value_bytes: usize::MAX,
        max_value_depth: usize::MAX,
        ..RunOptions::default()
    };
    let mut run = start(&pack(), off);
    assert_eq!(run.resume(Input::Turn(deep.clone())).unwrap(), Need::Calls);
    // With the defaults the same value is refused.
    let mut run = start(&pack(), RunOptions::default());
    let r = run.resume(Input::Turn(deep));
    assert_refused(&run, r, "max_value_depth");
}

fn built(max: usize) -> RunOptions {
    RunOptions {
        max_built_bytes: max,
        ..RunOptions::default()
    }
}

/// `composition:c` over prompts with `system_templates` and one step per `(id, kind,
/// body)`.
fn built_pack(templates: &[(&str, &str)], steps: &[&str]) -> Arc<Program> {
    let mut yaml = format!("{HEAD}prompts:\n");
    for (k, t) in templates {
        yaml.push_str(&format!(
            "  {k}: {{id: {k}, name: {k}, version: 1.0.0, system_template: '{t}'}}\n"
        ));
    }
    yaml.push_str(&tool_defs(&["t"]));
    yaml.push_str("compositions:\n  c:\n    version: 1\n    steps:\n");
    for s in steps {
        yaml.push_str(&format!("      - {s}\n"));
    }
    program(&yaml)
}

/// Runs `composition:c` on `input` answering every call with `{"ok": "yes"}`; returns
/// the end and the system prompts and inputs the host built.
fn run_built(
    program: &Arc<Program>,
    options: RunOptions,
    input: Value,
) -> (Result<Need, RunError>, Vec<String>, Vec<String>) {
    let mut run = start(program, options);
    let mut systems = Vec::new();
    let mut inputs = Vec::new();
    let mut r = run.resume(Input::Turn(input));
    while let Ok(Need::Calls | Need::Wait) = r {
        let ids: Vec<_> = run.pending().map(|c| c.id()).collect();
        for call in run.pending() {
            if call.is_model() {
                systems.push(call.system());
            }
            let mut text = String::new();
            call.input().write_text(&mut text);
            inputs.push(text);
        }
        for id in ids {
            r = run.resume(Input::Answer(id, out(json!({"ok": "yes"}))));
        }
    }
    (r, systems, inputs)
}

#[test]
fn built_system_prompt_bytes() {
    let p = built_pack(
        &[("w", "Read {{input}} and {{input.t}}; {{input}}")],
        &["{id: s, kind: prompt, prompt_task: w, input: '${input}'}"],
    );
    let input = json!({"t": "abc\ndef", "n": [1, 2.5, -3e-7, null, true]});
    let (r, systems, _) = run_built(&p, built(usize::MAX), input.clone());
    assert_eq!(r.unwrap(), Need::Caller);
    let len = systems[0].len();
    assert!(len > 40, "{}", systems[0]);
    // At the limit the call is made; one below it, the run fails before issuing it.
    let (r, systems, _) = run_built(&p, built(len), input.clone());
    assert_eq!(r.unwrap(), Need::Caller);
    assert_eq!(systems[0].len(), len);
    let (r, systems, _) = run_built(&p, built(len - 1), input);
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::LimitExceeded, "{e}");
    assert!(e.message.contains("`max_built_bytes`"), "{e}");
    assert!(e.message.contains("system prompt of `w`"), "{e}");
    assert!(systems.is_empty());
}

#[test]
fn built_system_prompt_of_a_whole_reference_input() {
    // A template that only places the whole input, bound to one reference: a string, an
    // object, an array, a parallel step's merged output. The value the check resolves
    // is the one measured.
    for (binding, first) in [
        ("${input.t}", None),
        ("${input}", None),
        ("${input.n}", None),
        (
            "${par.output}",
            Some("{id: par, kind: parallel, branches: [{id: a, kind: prompt, prompt_task: w}, {id: b, kind: tool, tool: t}], reduce: {strategy: barrier, into: m}}"),
        ),
    ] {
        let step = format!("{{id: s, kind: prompt, prompt_task: x, input: '{binding}'}}");
        let steps: Vec<&str> = first.into_iter().chain([step.as_str()]).collect();
        let p = built_pack(&[("w", "W"), ("x", "Doc: {{input}} / {{input}}")], &steps);
        let input = json!({"t": "a\"b\u{1}é", "n": [1, 2.5, {"k": null}]});
        let (r, systems, _) = run_built(&p, built(usize::MAX), input.clone());
        assert_eq!(r.unwrap(), Need::Caller, "{binding}");
        let len = systems.last().unwrap().len();
        let (r, systems, _) = run_built(&p, built(len), input.clone());
        assert_eq!(r.unwrap(), Need::Caller, "{binding}");
        assert_eq!(systems.last().unwrap().len(), len, "{binding}");
        let (r, _, _) = run_built(&p, built(len - 1), input);
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::LimitExceeded, "{binding}: {e}");
        assert!(e.message.contains("system prompt of `x`"), "{e}");
    }
    // A whole reference that does not resolve is still refused before any call.
    let p = built_pack(
        &[("x", "Doc: {{input}}")],
        &["{id: s, kind: prompt, prompt_task: x, input: '${input.missing}'}"],
    );
    let (r, systems, _) = run_built(&p, built(usize::MAX), json!({"t": 1}));
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnresolvedBinding);
    assert_eq!(
        e.message,
        "`${input.missing}` in the input of step `s` does not resolve"
    );
    assert!(systems.is_empty());
}

#[test]
fn built_system_prompt_without_placeholders() {
    let p = built_pack(
        &[("w", "Twelve bytes")],
        &["{id: s, kind: prompt, prompt_task: w}"],
    );
    assert_eq!(run_built(&p, built(12), json!(1)).0.unwrap(), Need::Caller);
    let e = run_built(&p, built(11), json!(1)).0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::LimitExceeded, "{e}");
}

#[test]
fn built_input_bytes_of_interpolations_arrays_and_objects() {
    for (what, step) in [
        ("input", "{id: s, kind: prompt, prompt_task: w, input: '${input.t}-${input.t}'}"),
        (
            "input",
            "{id: s, kind: prompt, prompt_task: w, input: ['${input}', '${input.t}!', 7, {z: '${input.n}', a: x}]}",
        ),
        ("args", "{id: s, kind: tool, tool: t, args: {q: '${input.t}', all: '${input}', k: 2.5}}"),
    ] {
        let p = built_pack(&[("w", "W")], &[step]);
        let input = json!({"t": "a\"b\u{1}é", "n": [1, 1e21, {"k": false}]});
        let (r, _, inputs) = run_built(&p, built(usize::MAX), input.clone());
        assert_eq!(r.unwrap(), Need::Caller, "{step}");
        let len = inputs[0].len();
        let (r, _, inputs) = run_built(&p, built(len), input.clone());
        assert_eq!(r.unwrap(), Need::Caller, "{step}");
        assert_eq!(inputs[0].len(), len);
        let (r, _, inputs) = run_built(&p, built(len - 1), input);
        let e = r.unwrap_err();
        assert_eq!(e.kind, ErrorKind::LimitExceeded, "{step}: {e}");
        assert!(e.message.contains(&format!("the {what} of step `s`")), "{e}");
        assert!(inputs.is_empty(), "{step}");
    }
}

#[test]
fn built_merged_parallel_output_is_measured_exactly() {
    // A barrier and an append reducer, read whole by a template and a binding.
    let p = built_pack(
        &[("w", "W"), ("m", "All: {{input}}")],
        &[
            "{id: par, kind: parallel, branches: [{id: a, kind: prompt, prompt_task: w}, {id: b, kind: tool, tool: t}], reduce: {strategy: barrier, into: m}}",
            "{id: par2, kind: parallel, branches: [{id: c, kind: prompt, prompt_task: w}, {id: d, kind: prompt, prompt_task: w}], reduce: {strategy: append, into: l}}",
            "{id: s, kind: prompt, prompt_task: m, input: ['${par.output}', '${par2.output}']}",
        ],
    );
    let (r, systems, inputs) = run_built(&p, built(usize::MAX), json!(0));
    assert_eq!(r.unwrap(), Need::Caller);
    let (system, input) = (systems.last().unwrap().len(), inputs.last().unwrap().len());
    assert!(system > input, "{systems:?}");
    assert_eq!(
        run_built(&p, built(system), json!(0)).0.unwrap(),
        Need::Caller
    );
    let e = run_built(&p, built(system - 1), json!(0)).0.unwrap_err();
    assert!(e.message.contains("system prompt of `m`"), "{e}");
}

#[test]
fn a_template_repeating_a_large_input_fails_without_building_it() {
    // 10,000 copies of a 1 MiB input would be 10 GB of text.
    let template = "{{input}}".repeat(10_000);
    let p = built_pack(
        &[("w", &template)],
        &["{id: s, kind: prompt, prompt_task: w, input: '${input}'}"],
    );
    let (r, systems, _) = run_built(&p, RunOptions::default(), json!("x".repeat(1 << 20)));
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::LimitExceeded, "{e}");
    assert!(systems.is_empty());
    // So does a binding repeating it.
    let binding = format!("[{}]", vec!["'${input}'"; 10_000].join(", "));
    let step = format!("{{id: s, kind: tool, tool: t, args: {{a: {binding}}}}}");
    let p = built_pack(&[("w", "W")], &[&step]);
    let e = run_built(&p, RunOptions::default(), json!("x".repeat(1 << 20)))
        .0
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::LimitExceeded, "{e}");
}

#[test]
fn a_repeated_eval_id_does_not_repeat_the_output_copy() {
    // One step naming the same eval 2,000 times; its 20 KB output is kept once.
    let ids = vec!["q"; 2_000].join(", ");
    let p = program(&format!(
        "{HEAD}{}evals:\n  - {{id: q, type: llm_judge, trigger: every_turn, params: {{judge_prompt: J}}}}\ncompositions:
  c:
    version: 1
    steps:
      - {{id: s, kind: prompt, prompt_task: w, modifiers: {{eval: [{ids}]}}}}
      - {{id: t, kind: prompt, prompt_task: w}}
",
        prompts(&["w"], ""),
    ));
    let big = json!("x".repeat(20_000));
    let mut run = start(&p, RunOptions::default());
    assert_eq!(run.resume(Input::Turn(json!(1))).unwrap(), Need::Calls);
    let s = the_call(&run);
    assert_eq!(
        run.resume(Input::Answer(s, out(big.clone()))).unwrap(),
        Need::Calls
    );
    let t = the_call(&run);
    assert_eq!(
        run.resume(Input::Answer(t, out(json!("done")))).unwrap(),
        Need::Caller
    );
    // The next turn reuses the slots: the eval output is copied out of them, once.
    assert_eq!(run.resume(Input::Turn(json!(2))).unwrap(), Need::Calls);
    let snapshot = run.try_snapshot().unwrap();
    assert!(snapshot.len() < 2 * 20_000, "{} bytes", snapshot.len());
    let evals = run.evals();
    assert_eq!(evals.len(), 2_000);
    assert!(evals
        .iter()
        .all(|e| e.step == "s" && e.eval == "q" && e.output == big));
}
