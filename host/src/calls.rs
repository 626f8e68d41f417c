//! The calls a host answered, each with its answer: what `packc run --format json`
//! prints as `calls` and what `packc test` compares with a case's `expect.calls`, whose
//! items may carry the `answer` a call got (`{output, event?}`, `{tool_calls}` or
//! `{error}`, as a host script writes it).

use std::collections::{HashMap, VecDeque};

use packc_vm::driver::Host;
use packc_vm::{Answer, CallId, CallRecord, CallView};
use serde_json::{json, Map, Value};

/// A call a host answered: its id, its call-log record (`{prompt, input, system}` /
/// `{tool, args}` / ...) and its answer in the case format.
pub struct AnsweredCall {
    /// The call's id.
    pub id: CallId,
    /// Its record, as [`CallRecord::to_json`] writes it.
    pub record: Value,
    /// Its answer (`{output}`, `{tool_calls}`, `{error}`).
    pub answer: Value,
}

impl AnsweredCall {
    /// `call`'s record with `answer`.
    pub fn of(call: &CallView<'_>, answer: &Answer) -> AnsweredCall {
        AnsweredCall {
            id: call.id(),
            record: call.record().to_json(),
            answer: answer_json(answer),
        }
    }

    /// The record with its `answer` member.
    pub fn to_json(&self) -> Value {
        let mut record = self.record.clone();
        if let Value::Object(m) = &mut record {
            m.insert("answer".into(), self.answer.clone());
        }
        record
    }
}

/// A host that keeps every call it answers with its answer, for the JSON result.
pub struct Recorder<'h> {
    /// The host answering.
    pub inner: &'h mut dyn Host,
    /// The calls answered, in the order answered.
    pub calls: Vec<AnsweredCall>,
}

impl Host for Recorder<'_> {
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        let answer = self.inner.call(call);
        self.calls.push(AnsweredCall::of(call, &answer));
        answer
    }

    fn clock(&mut self) -> u64 {
        self.inner.clock()
    }

    fn pick(&mut self, outstanding: &[CallView<'_>]) -> usize {
        self.inner.pick(outstanding)
    }
}

/// The `calls` of the JSON result: the run's call log `log`
/// ([`Run::calls`](packc_vm::Run::calls), kept with `RunOptions::record_calls`), which
/// is what `packc test` compares with a case's `expect.calls`, each host call with the
/// answer `answered` holds for it. A built-in
/// validator's firing (`{guardrail, at, action, length}`) is no host call and has no
/// answer; nor has a call the run issued and never got the answer to (it failed first).
pub fn calls_json(log: &[CallRecord], answered: Vec<AnsweredCall>) -> Vec<Value> {
    // The log lists a parallel step's calls branch by branch, the host answers them in
    // its own order: each logged call takes the answer of the lowest-numbered call with
    // the same record, which is the call itself unless two calls are exactly alike.
    let mut answered = answered;
    answered.sort_by_key(|c| c.id);
    let mut answers: HashMap<String, VecDeque<Value>> = HashMap::new();
    for call in answered {
        answers
            .entry(call.record.to_string())
            .or_default()
            .push_back(call.answer);
    }
    log.iter()
        .map(|record| {
            let mut value = record.to_json();
            if matches!(record, CallRecord::Guardrail { .. }) {
                return value;
            }
            let answer = answers
                .get_mut(&value.to_string())
                .and_then(VecDeque::pop_front);
            if let (Value::Object(m), Some(answer)) = (&mut value, answer) {
                m.insert("answer".into(), answer);
            }
            value
        })
        .collect()
}

/// An answer in the case format: `{output, event?}`, `{tool_calls}` or `{error}`.
pub fn answer_json(a: &Answer) -> Value {
    match a {
        Answer::Output { output, event } => {
            let mut m = Map::new();
            m.insert("output".into(), output.clone());
            if let Some(e) = event {
                m.insert("event".into(), json!(e));
            }
            Value::Object(m)
        }
        Answer::ToolCalls(calls) => json!({"tool_calls": calls
            .iter()
            .map(|c| json!({"name": c.name, "args": c.args}))
            .collect::<Vec<_>>()}),
        Answer::Error(e) => json!({"error": e}),
    }
}
