//! The drive loop: a [`Host`] answers every call and reads the clock, a caller gives
//! the turns and events, and [`drive_with`] resumes the run until it ends. Every host
//! in the workspace (the scripted case host, the live host, the differential suite,
//! the protocol tests, the fuzz host) runs this one loop; [`drive`] is the plain form,
//! with a script of turns.

use std::convert::Infallible;

use serde_json::Value;

use crate::api::{Answer, Input, Need, OwnedOutcome};
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

impl ScriptItem {
    /// The input for the caller's next move: this item, or [`Input::Finish`] when the
    /// script is over.
    pub fn input(item: Option<&ScriptItem>) -> Input {
        match item {
            Some(ScriptItem::Turn(v)) => Input::Turn(v.clone()),
            Some(ScriptItem::Event(e)) => Input::Event(e.clone()),
            None => Input::Finish,
        }
    }
}

/// A host that answers the VM's imports one at a time.
pub trait Host {
    /// Answers a model, tool, guard or extension call.
    fn call(&mut self, call: &CallView<'_>) -> Answer;
    /// Reads the clock, in milliseconds.
    fn clock(&mut self) -> u64;
    /// Picks which outstanding call to answer next (called with at least one, in issue
    /// order). The default is [`lowest_branch_first`].
    fn pick(&mut self, outstanding: &[CallView<'_>]) -> usize {
        lowest_branch_first(outstanding)
    }
}

/// The default pick: the call of the lowest-numbered parallel branch, then the oldest
/// call (what the case format's scripted host does, conformance README).
pub fn lowest_branch_first(outstanding: &[CallView<'_>]) -> usize {
    outstanding
        .iter()
        .enumerate()
        .min_by_key(|(_, c)| (c.branch().unwrap_or(0), c.id()))
        .map_or(0, |(i, _)| i)
}

/// Runs `run` with `host` answering, the caller doing `script`, then finishing; returns
/// a copy of the outcome (the run keeps its own, [`Run::outcome`]).
pub fn drive(
    run: &mut Run,
    host: &mut dyn Host,
    script: &[ScriptItem],
) -> Result<OwnedOutcome, RunError> {
    let mut script = script.iter();
    let caller = |_: &mut _| Ok::<_, Infallible>(ScriptItem::input(script.next()));
    match drive_with(run, host, caller, |_, _, _, _| Ok(())) {
        Ok(end) => end,
        Err(never) => match never {},
    }
}

/// The drive loop. Before every resume, `hook` sees the host, the run, what the last
/// resume needed (`None` before the first) and the input about to be handed in: it may
/// replace the run (a snapshot round trip), try inputs of its own, or stop the drive
/// with its error. When the run waits for the caller, `caller` gives a turn, an event
/// or [`Input::Finish`]. Outstanding calls are answered one at a time, in the order
/// [`Host::pick`] chooses.
///
/// `Ok(Ok(outcome))`: the run ended; `Ok(Err(e))`: the run failed with `e` (the run
/// keeps its log); `Err(e)`: `caller` or `hook` stopped the drive.
pub fn drive_with<H: Host + ?Sized, E>(
    run: &mut Run,
    host: &mut H,
    mut caller: impl FnMut(&mut H) -> Result<Input, E>,
    mut hook: impl FnMut(&mut H, &mut Run, Option<Need>, &Input) -> Result<(), E>,
) -> Result<Result<OwnedOutcome, RunError>, E> {
    let mut input = Input::Start;
    let mut last = None;
    loop {
        hook(host, run, last, &input)?;
        let need = match run.resume(input) {
            Ok(need) => need,
            Err(e) => return Ok(Err(e)),
        };
        last = Some(need);
        input = match need {
            Need::Done => {
                return Ok(run.outcome().map(|o| o.into_owned()).ok_or_else(|| {
                    RunError::new(ErrorKind::Internal, "the run is done without an outcome")
                }))
            }
            Need::Clock => Input::Clock(host.clock()),
            Need::Caller => caller(host)?,
            Need::Calls | Need::Wait => {
                let views: Vec<CallView<'_>> = run.pending().collect();
                if views.is_empty() {
                    return Ok(Err(RunError::new(
                        ErrorKind::Internal,
                        "the run waits but no call is outstanding",
                    )));
                }
                let i = host.pick(&views).min(views.len() - 1);
                let call = views[i];
                Input::Answer(call.id(), host.call(&call))
            }
        };
    }
}
