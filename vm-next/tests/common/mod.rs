//! Shared by the test binaries: loading packs, a scripted host for the next VM, and a
//! driver that runs a script to the end.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use packc_host::RunSpec;
use packc_vm::driver::ScriptItem;
use packc_vm_next::{Answer, CallView, Input, Need, Program, Run, RunError, ToolRequest};
use serde_json::Value;

/// Compiles the pack file at `path` into a program.
pub fn program(path: &Path) -> Arc<Program> {
    let bytes = std::fs::read(path).unwrap();
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    let module = packc_compiler::lower(&checked, &options).unwrap();
    Arc::new(Program::new(module).unwrap())
}

/// Answers calls from a case's `run.host` (`workflow.md` §1, "Under `packc test`").
#[derive(Debug, Clone, Default)]
pub struct ScriptedHost {
    prompts: BTreeMap<String, VecDeque<Value>>,
    tools: BTreeMap<String, VecDeque<Value>>,
    clock: Vec<u64>,
    reads: usize,
}

impl ScriptedHost {
    /// A host answering from `spec`'s queues.
    pub fn new(spec: &RunSpec) -> Self {
        ScriptedHost {
            prompts: spec.prompts.clone(),
            tools: spec.tools.clone(),
            clock: spec.clock.clone(),
            reads: 0,
        }
    }

    /// Answers a model or tool call from its queue.
    pub fn answer(&mut self, call: &CallView<'_>) -> Answer {
        let (queues, what, name) = match call.prompt_task() {
            Some(p) => (&mut self.prompts, "prompt", p),
            None => (&mut self.tools, "tool", call.tool().unwrap_or_default()),
        };
        match queues.get_mut(name).and_then(VecDeque::pop_front) {
            Some(answer) => parse_answer(&answer),
            None => Answer::Error(format!("no scripted answer for {what} {name}")),
        }
    }

    /// The next clock reading.
    pub fn clock(&mut self) -> u64 {
        let i = self.reads.min(self.clock.len().saturating_sub(1));
        self.reads += 1;
        self.clock.get(i).copied().unwrap_or(0)
    }
}

/// Reads one scripted answer; a malformed one becomes an error answer.
pub fn parse_answer(v: &Value) -> Answer {
    let malformed = |why: &str| Answer::Error(format!("malformed answer: {why}"));
    let Some(obj) = v.as_object() else {
        return malformed("not an object");
    };
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "output" | "event" | "tool_calls" | "error"))
    {
        return malformed(&format!("unknown member `{k}`"));
    }
    if let Some(e) = obj.get("error") {
        return Answer::Error(e.as_str().map_or_else(|| e.to_string(), str::to_owned));
    }
    if let Some(calls) = obj.get("tool_calls") {
        let Some(calls) = calls.as_array() else {
            return malformed("`tool_calls` is not a list");
        };
        let mut out = Vec::new();
        for c in calls {
            let Some(name) = c.get("name").and_then(Value::as_str) else {
                return malformed("a tool call without a `name`");
            };
            out.push(ToolRequest {
                name: name.to_owned(),
                args: c
                    .get("args")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default())),
            });
        }
        return Answer::ToolCalls(out);
    }
    let event = match obj.get("event") {
        None => None,
        Some(Value::String(e)) => Some(e.clone()),
        Some(_) => return malformed("`event` is not a string"),
    };
    Answer::Output {
        output: obj.get("output").cloned().unwrap_or(Value::Null),
        event,
    }
}

/// The outstanding call to answer next: the lowest branch first, then the oldest.
pub fn pick<'r>(run: &'r Run) -> Option<CallView<'r>> {
    run.pending()
        .min_by_key(|c| (c.branch().unwrap_or(0), c.id()))
}

/// Runs `run` with `host` answering and the caller doing `script`, then finishing.
pub fn drive(
    run: &mut Run,
    host: &mut ScriptedHost,
    script: &[ScriptItem],
) -> Result<(), RunError> {
    let mut script = script.iter();
    let mut input = Input::Start;
    loop {
        input = match run.resume(input)? {
            Need::Done => return Ok(()),
            Need::Clock => Input::Clock(host.clock()),
            Need::Caller => match script.next() {
                Some(ScriptItem::Turn(v)) => Input::Turn(v.clone()),
                Some(ScriptItem::Event(e)) => Input::Event(e.clone()),
                None => Input::Finish,
            },
            Need::Calls | Need::Wait => {
                let call = pick(run).expect("an outstanding call");
                Input::Answer(call.id(), host.answer(&call))
            }
        };
    }
}
