//! The scripted host of `packc test`.

use std::collections::{BTreeMap, VecDeque};

use packc_vm::driver::Host;
use packc_vm::{Answer, CallView, ToolRequest};
use serde_json::Value;

use crate::case::RunSpec;

/// Answers calls from a case's `run.host` (`workflow.md` §1, "Under `packc test`").
#[derive(Debug, Clone, Default)]
pub struct ScriptedHost {
    prompts: BTreeMap<String, VecDeque<Value>>,
    tools: BTreeMap<String, VecDeque<Value>>,
    guards: BTreeMap<String, VecDeque<Value>>,
    extensions: BTreeMap<String, VecDeque<Value>>,
    clock: Vec<u64>,
    reads: usize,
}

impl ScriptedHost {
    /// A host answering from `spec`'s queues.
    pub fn new(spec: &RunSpec) -> Self {
        ScriptedHost {
            prompts: spec.prompts.clone(),
            tools: spec.tools.clone(),
            guards: spec.guards.clone(),
            extensions: spec.extensions.clone(),
            clock: spec.clock.clone(),
            reads: 0,
        }
    }
}

impl Host for ScriptedHost {
    /// A model call takes its answers from the queue keyed `provider/prompt_task` when
    /// the script has one (`default/x` included), and from that queue only; otherwise
    /// from the plain `prompt_task` queue (`later-versions.md` §3).
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        let keyed;
        let guard = call.guard();
        let (queues, what, name) = match (call.prompt_task(), &guard, call.extension()) {
            (Some(prompt), _, _) => {
                keyed = format!("{}/{prompt}", call.provider().unwrap_or("default"));
                let name = if self.prompts.contains_key(&keyed) {
                    keyed.as_str()
                } else {
                    prompt
                };
                (&mut self.prompts, "prompt", name)
            }
            (None, Some(g), _) => (&mut self.guards, "guard", g.validator),
            (None, None, Some((kind, _))) => (&mut self.extensions, "extension", kind),
            (None, None, None) => (&mut self.tools, "tool", call.tool().unwrap_or_default()),
        };
        match queues.get_mut(name).and_then(VecDeque::pop_front) {
            Some(answer) => parse_answer(&answer),
            None => Answer::Error(format!("no scripted answer for {what} {name}")),
        }
    }

    /// The readings of `host.clock` in order, the last repeated; 0 without any.
    fn clock(&mut self) -> u64 {
        let i = self.reads.min(self.clock.len().saturating_sub(1));
        self.reads += 1;
        self.clock.get(i).copied().unwrap_or(0)
    }
}

/// Reads one scripted answer. A malformed one (a member other than
/// output/event/tool_calls/error, an `event` that is not a string, a `tool_calls` entry
/// without a string `name`) becomes an error answer, so the run sees a `host_error`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_answers_become_errors() {
        let is_error = |v: Value| matches!(parse_answer(&v), Answer::Error(_));
        assert!(is_error(json!({"output": 1, "confidence": 0.5})));
        assert!(is_error(json!({"output": 1, "event": 3})));
        assert!(is_error(json!({"tool_calls": [{"args": {}}]})));
        assert!(is_error(json!("just text")));
        assert_eq!(
            parse_answer(&json!({"tool_calls": []})),
            Answer::ToolCalls(Vec::new())
        );
        assert_eq!(
            parse_answer(&json!({"event": "Go"})),
            Answer::Output {
                output: Value::Null,
                event: Some("Go".into())
            }
        );
    }

    #[test]
    fn clock_repeats_its_last_reading() {
        let spec = RunSpec {
            clock: vec![5, 7],
            ..RunSpec::default()
        };
        let mut host = ScriptedHost::new(&spec);
        let readings: Vec<u64> = (0..4).map(|_| host.clock()).collect();
        assert_eq!(readings, [5, 7, 7, 7]);
        let mut empty = ScriptedHost::default();
        assert_eq!((empty.clock(), empty.clock()), (0, 0));
    }
}
