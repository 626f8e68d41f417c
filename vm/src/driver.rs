//! A blocking driver for simple embedders: a [`Host`] answers every import, and
//! [`drive`] runs a script of caller turns and events to the end.

use serde_json::Value;

use crate::api::{Input, Need, OwnedOutcome};
use crate::error::{ErrorKind, RunError};
use crate::run::Run;
use crate::view::CallView;

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
    fn call(&mut self, call: &CallView<'_>) -> crate::Answer;
    /// Reads the clock, in milliseconds.
    fn clock(&mut self) -> u64;
    /// Picks which outstanding call to answer next (called with at least one, in issue
    /// order). The default answers the lowest-numbered parallel branch first, then the
    /// oldest call.
    fn pick(&mut self, outstanding: &[CallView<'_>]) -> usize {
        outstanding
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| (c.branch().unwrap_or(0), c.id()))
            .map_or(0, |(i, _)| i)
    }
}

/// Runs `run` with `host` answering, the caller doing `script`, then finishing; returns
/// a copy of the outcome (the run keeps its own, [`Run::outcome`]).
pub fn drive(
    run: &mut Run,
    host: &mut dyn Host,
    script: &[ScriptItem],
) -> Result<OwnedOutcome, RunError> {
    let mut script = script.iter();
    let mut input = Input::Start;
    loop {
        input = match run.resume(input)? {
            Need::Done => {
                return run.outcome().map(|o| o.into_owned()).ok_or_else(|| {
                    RunError::new(ErrorKind::Protocol, "the run is done without an outcome")
                })
            }
            Need::Clock => Input::Clock(host.clock()),
            Need::Caller => match script.next() {
                Some(ScriptItem::Turn(v)) => Input::Turn(v.clone()),
                Some(ScriptItem::Event(e)) => Input::Event(e.clone()),
                None => Input::Finish,
            },
            Need::Calls | Need::Wait => {
                let views: Vec<CallView<'_>> = run.pending().collect();
                if views.is_empty() {
                    return Err(RunError::new(
                        ErrorKind::Protocol,
                        "no outstanding call to answer",
                    ));
                }
                let i = host.pick(&views).min(views.len() - 1);
                let call = views[i];
                let answer = host.call(&call);
                Input::Answer(call.id(), answer)
            }
        };
    }
}
