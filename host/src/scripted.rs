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
    /// The length of each queue of `prompts`, `tools`, `guards` and `extensions` when
    /// the host was made: what a queue is shorter by now is what was used of it
    /// ([`ScriptedHost::used`]), with no counting per call.
    initial: [BTreeMap<String, usize>; 4],
}

/// The queues' kinds as [`ScriptedHost::used`] names them, in the order of `initial`.
const KINDS: [&str; 4] = ["prompt", "tool", "guard", "extension"];

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
            initial: [&spec.prompts, &spec.tools, &spec.guards, &spec.extensions]
                .map(|queues| queues.iter().map(|(k, q)| (k.clone(), q.len())).collect()),
        }
    }

    /// The queues of each kind of [`KINDS`], in that order.
    fn queues_mut(&mut self) -> [&mut BTreeMap<String, VecDeque<Value>>; 4] {
        [
            &mut self.prompts,
            &mut self.tools,
            &mut self.guards,
            &mut self.extensions,
        ]
    }

    /// The answers taken so far, by queue (`prompt NAME`, `tool NAME`, `guard NAME`,
    /// `extension NAME`), those of [`ScriptedHost::skip`] included: what a run continued
    /// later, from the same script, has used of it.
    pub fn used(&self) -> BTreeMap<String, u64> {
        let queues = [&self.prompts, &self.tools, &self.guards, &self.extensions];
        let mut out = BTreeMap::new();
        for ((what, queues), initial) in KINDS.iter().zip(queues).zip(&self.initial) {
            for (name, q) in queues {
                let used = initial.get(name).map_or(0, |n| n.saturating_sub(q.len()));
                if used > 0 {
                    out.insert(format!("{what} {name}"), used as u64);
                }
            }
        }
        out
    }

    /// Drops the answers `used` (as [`ScriptedHost::used`] gives them) from the front of
    /// their queues: a run resumed with the script it started with goes on where it was
    /// rather than taking the first answers again.
    pub fn skip(&mut self, used: &BTreeMap<String, u64>) {
        for (queue, &n) in used {
            let Some((what, name)) = queue.split_once(' ') else {
                continue;
            };
            let kind = KINDS.iter().position(|k| *k == what);
            let Some(queues) = kind.and_then(|k| self.queues_mut().into_iter().nth(k)) else {
                continue;
            };
            if let Some(q) = queues.get_mut(name) {
                let n = usize::try_from(n).unwrap_or(usize::MAX).min(q.len());
                q.drain(..n);
            }
        }
    }
}

/// How the error answer of a call the script has no answer left for begins (followed by
/// `prompt NAME`, `tool NAME`, …), for hosts that explain it.
pub const NO_ANSWER: &str = "no scripted answer for";

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
            None => Answer::Error(format!("{NO_ANSWER} {what} {name}")),
        }
    }

    /// The readings of `host.clock` in order, the last repeated; 0 without any.
    fn clock(&mut self) -> u64 {
        let i = self.reads.min(self.clock.len().saturating_sub(1));
        self.reads += 1;
        self.clock.get(i).copied().unwrap_or(0)
    }
}

/// The members a scripted answer may have.
pub(crate) const ANSWER_MEMBERS: &[&str] = &["output", "event", "tool_calls", "error"];

/// Reads one scripted answer. A malformed one (`malformed`) becomes an error answer,
/// so the run sees a `host_error`.
pub fn parse_answer(v: &Value) -> Answer {
    if let Some((_, why)) = malformed(v) {
        return Answer::Error(format!("malformed answer: {why}"));
    }
    let obj = v.as_object().expect("a well-formed answer is an object");
    if let Some(e) = obj.get("error") {
        return Answer::Error(e.as_str().map_or_else(|| e.to_string(), str::to_owned));
    }
    if let Some(calls) = obj.get("tool_calls").and_then(Value::as_array) {
        let out = calls
            .iter()
            .map(|c| ToolRequest {
                name: c["name"].as_str().unwrap_or_default().to_owned(),
                args: c
                    .get("args")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default())),
            })
            .collect();
        return Answer::ToolCalls(out);
    }
    Answer::Output {
        output: obj.get("output").cloned().unwrap_or(Value::Null),
        event: obj.get("event").and_then(Value::as_str).map(str::to_owned),
    }
}

/// What makes a scripted answer malformed, and the member at fault (`None`: the answer
/// itself): not an object, a member other than output/event/tool_calls/error, or (in
/// an answer that is not an `error`) a `tool_calls` that is not a list of calls with a
/// string `name`, or else an `event` that is not a string.
pub(crate) fn malformed(v: &Value) -> Option<(Option<&str>, String)> {
    let Some(obj) = v.as_object() else {
        let shown = v.to_string();
        let shown = if shown.chars().count() > 40 {
            "VALUE"
        } else {
            shown.as_str()
        };
        return Some((
            None,
            format!(
                "not an object; write the answer as `{{output: {shown}}}` (with `event: NAME` for a workflow state)"
            ),
        ));
    };
    if let Some(k) = obj.keys().find(|k| !ANSWER_MEMBERS.contains(&k.as_str())) {
        let help = match ir_spec::suggest::suggest(k, ANSWER_MEMBERS.iter().copied()) {
            Some(near) => format!("did you mean `{near}`?"),
            None => "an answer has `output`, `event`, `tool_calls` or `error`".to_owned(),
        };
        return Some((Some(k), format!("unknown member `{k}`; {help}")));
    }
    if obj.contains_key("error") {
        return None;
    }
    if let Some(calls) = obj.get("tool_calls") {
        let Some(calls) = calls.as_array() else {
            return Some((Some("tool_calls"), "`tool_calls` is not a list".into()));
        };
        if calls
            .iter()
            .any(|c| c.get("name").and_then(Value::as_str).is_none())
        {
            return Some((Some("tool_calls"), "a tool call without a `name`".into()));
        }
        return None;
    }
    match obj.get("event") {
        Some(e) if !e.is_string() => Some((Some("event"), "`event` is not a string".into())),
        _ => None,
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
            parse_answer(&json!({"ouput": 1})),
            Answer::Error(
                "malformed answer: unknown member `ouput`; did you mean `output`?".into()
            )
        );
        assert_eq!(
            parse_answer(&json!({"error": "down", "event": 3})),
            Answer::Error("down".into())
        );
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
