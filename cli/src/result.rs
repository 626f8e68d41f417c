//! How a run is reported: why it stopped, its error line, its reply, and (`packc run --format json`) the whole result as one JSON object.
//!
//! ```json
//! {
//!   "status": "done",                      // or "failed", "waiting"
//!   "stopped": "done",                     // or "waiting for an event in state editor: Approve | Reject"
//!   "output": {"summary": "..."},          // the last output (null when nothing ran)
//!   "state": "closing",                    // the workflow state (a failed run's: where it failed); null without a workflow
//!   "error": null,                         // {"kind": "host_error", "message": "..."} when failed
//!   "trace": ["enter main", "step classify", "..."],
//!   "calls": [                             // as `packc test` compares them:
//!     {"prompt": "classify", "input": "...", "system": "...", "answer": {"output": {...}}},
//!     {"guardrail": "max_length", "at": "classify", "action": "truncated", "length": 80},
//!     {"tool": "lookup", "args": {...}, "answer": {"error": "..."}}
//!   ],
//!   "tokens": 0                            // as the model API reported them (live runs)
//! }
//! ```
//!
//! A step's input is its call's `input` (a tool step's: `args`) and its output the
//! call's `answer`; branch and parallel steps show in `trace`.

use packc_compiler::render::escape_control;

use packc_vm::{Run, RunError};
use serde_json::{json, Map, Value};

/// The result object. `ended`: the outcome's output and state, or the error; `None`
/// while the run waits for the caller (its output so far is read from the run).
/// `stopped`: why the run stopped, when it is not what the run says now (a run that
/// waited for an event, then was finished).
pub fn to_json(
    run: &Run,
    ended: Option<Result<(&Value, Option<&str>), &RunError>>,
    stopped: Option<String>,
    calls: Vec<Value>,
    tokens: u64,
) -> Value {
    let stopped = stopped.unwrap_or_else(|| why(run));
    let (status, output, state, error) = match ended {
        Some(Ok((output, state))) => ("done", output.clone(), state.map(str::to_owned), None),
        Some(Err(e)) => (
            "failed",
            Value::Null,
            run.workflow_state().map(str::to_owned),
            Some(json!({"kind": e.kind.as_str(), "message": e.message})),
        ),
        None => {
            let idle = run.idle();
            (
                "waiting",
                idle.as_ref().map_or(Value::Null, |o| o.output.clone()),
                idle.and_then(|o| o.state).map(str::to_owned),
                None,
            )
        }
    };
    let mut m = Map::new();
    m.insert("status".into(), json!(status));
    m.insert(
        "stopped".into(),
        json!(if status == "failed" {
            "failed"
        } else {
            &stopped
        }),
    );
    m.insert("output".into(), output);
    // The last turn's reply (RFC 0014 reply assembly): what a user is shown when several
    // states spoke in one turn; `null` for a failed run.
    let reply = match status {
        "done" => run.outcome().map(|o| o.reply),
        "waiting" => run.idle().map(|o| o.reply),
        _ => None,
    };
    m.insert("reply".into(), json!(reply));
    m.insert("state".into(), json!(state));
    m.insert("error".into(), error.unwrap_or(Value::Null));
    m.insert("trace".into(), json!(run.trace_lines()));
    m.insert("calls".into(), Value::Array(calls));
    m.insert("tokens".into(), json!(tokens));
    Value::Object(m)
}

/// One call of the JSON result as one line for a person: `prompt classify: "input" ->
/// {"type": ...}`, its input and answer each cut to `width` characters, its control
/// characters escaped.
pub fn call_line(call: &Value, width: usize) -> String {
    let short = |v: Option<&Value>| {
        let text = v.map_or_else(|| "null".to_owned(), Value::to_string);
        if text.chars().count() > width {
            format!("{}…", text.chars().take(width).collect::<String>())
        } else {
            text
        }
    };
    let (what, name, input) = match call.get("prompt") {
        Some(p) => ("prompt", p, call.get("input")),
        None => (
            "tool",
            call.get("tool").unwrap_or(&Value::Null),
            call.get("args"),
        ),
    };
    let name = name.as_str().unwrap_or_default();
    let answer = call.get("answer");
    let out = match answer.and_then(|a| a.get("error")) {
        Some(e) => format!("error {}", short(Some(e))),
        None => short(answer.and_then(|a| a.get("output").or(a.get("tool_calls")))),
    };
    let line = format!("  {what} {name}: {} -> {out}", short(input));
    escape_control(&line).into_owned()
}

/// The error line of a failed run; past `max_host_calls`, with the flag that raises it;
/// for a call the host script had no answer for, where the answers come from.
pub(crate) fn error_line(e: &packc_vm::RunError) -> String {
    let hint = if e.message.contains("`max_host_calls`") {
        " (raise it with --max-host-calls N)"
    } else if e.message.contains(packc_host::scripted::NO_ANSWER) {
        " (no scripted answer is left for this call: give it one under `host:` in the --host \
         script, or run live with --provider)"
    } else {
        ""
    };
    let message = escape_control(&e.message);
    format!("error[{}]: {message}{hint}", e.kind.as_str())
}

/// The pack source a run was compiled from (its name and text), kept by
/// [`remember_source`] so that a run's error can point into it.
static SOURCE: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();

/// Keeps the source of the pack being run (not an artifact's: it has none).
pub(crate) fn remember_source(name: String, text: String) {
    let _ = SOURCE.set((name, text));
}

/// Where a failed run failed, in the pack's source, as a line to print under its error:
/// `  --> pack.yaml:12:9: step `b` of composition `c`` (or a workflow state). `None`
/// for an artifact, or when the run failed nowhere in particular.
pub(crate) fn place_line(run: &packc_vm::Run) -> Option<String> {
    let (name, text) = SOURCE.get()?;
    let loaded = packc_compiler::load::load_str(text, &Default::default()).ok()?;
    let value = loaded.value();
    let join = packc_compiler::diag::join;
    let (pointer, what) = match run.failed_step_in() {
        Some((comp, step)) => {
            let steps = value["compositions"][comp]["steps"].as_array()?;
            let is = |s: &serde_json::Value| s["id"].as_str() == Some(step);
            let base = join("/compositions", &[comp, "steps"]);
            let pointer = steps.iter().enumerate().find_map(|(i, s)| {
                let i = i.to_string();
                if is(s) {
                    return Some(join(&base, &[&i]));
                }
                let branches = s["branches"].as_array()?;
                let j = branches.iter().position(is)?.to_string();
                Some(join(&base, &[&i, "branches", &j]))
            })?;
            (pointer, format!("step `{step}` of composition `{comp}`"))
        }
        None => {
            let state = run.workflow_state()?;
            (
                join("/workflow/states", &[state]),
                format!("state `{state}`"),
            )
        }
    };
    let at = loaded.spans.key_or_value(&pointer)?.start;
    let (line, column) = packc_compiler::render::TextIndex::new(text).line_col(at);
    Some(format!(
        "  --> {}:{line}:{column}: {}",
        escape_control(name),
        escape_control(&what)
    ))
}

/// The last turn's reply (RFC 0014 reply assembly), on stderr, when it says more than the
/// output: several states contributed text, or the output is not that text.
pub(crate) fn print_reply(outcome: &packc_vm::OwnedOutcome, quiet: bool) {
    if quiet || outcome.reply.is_empty() || outcome.output.as_str() == Some(&outcome.reply) {
        return;
    }
    eprintln!("reply:");
    for line in outcome.reply.lines() {
        eprintln!("  {}", escape_control(line));
    }
}

/// The run's trace lines on stderr, one a line (`--trace`).
pub(crate) fn print_trace(run: &Run) {
    print_trace_from(run, 0);
}

/// Prints the trace lines after the first `printed` (those already printed) to stderr,
/// and returns how many lines the trace has now.
pub(crate) fn print_trace_from(run: &Run, printed: usize) -> usize {
    let lines = run.trace_lines();
    for line in lines.iter().skip(printed) {
        eprintln!("{}", escape_control(line));
    }
    lines.len()
}

/// Why a run stopped, in words: `done`, `waiting for a turn in state X`, `waiting for an
/// event: Approve | Reject`.
pub fn why(run: &Run) -> String {
    let Some(idle) = run.idle() else {
        return if run.is_finished() {
            "done".into()
        } else {
            "running".into()
        };
    };
    let Some(state) = idle.state else {
        return "waiting for a turn".into();
    };
    let m = run.program().module();
    let external = m.workflow.as_ref().is_some_and(|w| {
        w.states
            .iter()
            .any(|s| m.str(s.key) == state && s.mode == ir_spec::Orchestration::External)
    });
    match run.caller_events() {
        events if external && !events.is_empty() => {
            format!(
                "waiting for an event in state {state}: {}",
                events.join(" | ")
            )
        }
        _ => {
            let terminal = m
                .workflow
                .as_ref()
                .is_some_and(|w| w.states.iter().any(|s| m.str(s.key) == state && s.terminal));
            let kind = if terminal { "terminal state" } else { "state" };
            format!("waiting for a turn in {kind} {state}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_lines_are_shortened() {
        let call = json!({"prompt": "classify", "input": "x".repeat(300), "answer": {"output": {"type": "memo"}}});
        let line = call_line(&call, 10);
        assert_eq!(
            line,
            format!("  prompt classify: \"{}… -> {{\"type\":\"m…", "x".repeat(9))
        );
        let failed = json!({"tool": "kb", "args": {}, "answer": {"error": "down"}});
        assert_eq!(call_line(&failed, 100), "  tool kb: {} -> error \"down\"");
    }
}
