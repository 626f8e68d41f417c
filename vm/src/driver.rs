//! A blocking driver for simple embedders: a [`Host`] answers every import, and
//! [`drive`] runs a script of caller turns and events to the end.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::{Answer, CallId, HostCall, Input, Need, Outcome, RunError};
use crate::run::Run;

/// What the caller does, in order (`workflow.md` §2).
#[derive(Clone, Debug, PartialEq)]
pub enum ScriptItem {
    /// One turn with this input.
    Turn(Value),
    /// One caller event.
    Event(String),
}

/// A host that answers the VM's imports one at a time.
pub trait Host {
    /// Answers a model or tool call.
    fn call(&mut self, call: &HostCall) -> Answer;
    /// Reads the clock, in milliseconds.
    fn clock(&mut self) -> u64;
    /// Picks which outstanding call to answer next (called with at least one). The
    /// default answers the lowest-numbered parallel branch first, then the oldest call.
    fn pick(&mut self, outstanding: &[HostCall]) -> usize {
        outstanding
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| (c.branch.unwrap_or(0), c.id))
            .map_or(0, |(i, _)| i)
    }
}

/// Runs `run` with `host` answering, the caller doing `script`, then finishing.
pub fn drive(
    run: &mut Run,
    host: &mut dyn Host,
    script: &[ScriptItem],
) -> Result<Outcome, RunError> {
    let mut outstanding: BTreeMap<CallId, HostCall> = BTreeMap::new();
    let mut script = script.iter();
    let mut input = Input::Start;
    loop {
        let need = run.resume(input)?;
        input = match need {
            Need::Done(outcome) => return Ok(outcome),
            Need::Clock => Input::Clock(host.clock()),
            Need::Caller => match script.next() {
                Some(ScriptItem::Turn(v)) => Input::Turn(v.clone()),
                Some(ScriptItem::Event(e)) => Input::Event(e.clone()),
                None => Input::Finish,
            },
            Need::Calls(calls) => {
                outstanding.extend(calls.into_iter().map(|c| (c.id, c)));
                answer_one(host, &mut outstanding)?
            }
            Need::Wait => answer_one(host, &mut outstanding)?,
        };
    }
}

fn answer_one(
    host: &mut dyn Host,
    outstanding: &mut BTreeMap<CallId, HostCall>,
) -> Result<Input, RunError> {
    let list: Vec<HostCall> = outstanding.values().cloned().collect();
    if list.is_empty() {
        return Err(RunError::new(
            crate::ErrorKind::Protocol,
            "no outstanding call to answer",
        ));
    }
    let i = host.pick(&list).min(list.len() - 1);
    let call = &list[i];
    outstanding.remove(&call.id);
    Ok(Input::Answer(call.id, host.call(call)))
}
