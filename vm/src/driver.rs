//! The drive loop: a [`Host`] answers every call and reads the clock, a caller gives
//! the turns and events, and [`drive_with`] resumes the run until it ends. Every host
//! in the workspace that answers one call at a time runs this one loop: the scripted
//! case host, the differential suite, the protocol tests, the fuzz host,
//! `packc run --save` / `packc resume` / `--interactive` ([`drive_from`]: from a turn,
//! stopping when the caller has nothing to give) and the benchmarks' drive. [`drive`]
//! is the plain form, with a script of turns.
//!
//! The default pick ([`lowest_branch_first`], [`next_call`]) is also what the Python
//! package's `drive` answers next (`Run.next_call`). A host that runs calls concurrently
//! (the live host's thread pool, Python's `drive_async`) keeps a loop of its own: it answers
//! whichever call finishes first, not the one a pick chooses.

use std::convert::Infallible;

use serde_json::Value;

use crate::api::{Answer, CallId, Input, Need, OwnedOutcome};
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
        .min_by_key(|(_, c)| pick_order(c))
        .map_or(0, |(i, _)| i)
}

/// The outstanding call [`lowest_branch_first`] picks, found without collecting the
/// calls: what a host answering one call at a time answers next. `None` when no call is
/// outstanding.
pub fn next_call(run: &Run) -> Option<CallView<'_>> {
    run.pending().min_by_key(pick_order)
}

fn pick_order(c: &CallView<'_>) -> (u32, CallId) {
    (c.branch().unwrap_or(0), c.id())
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
    caller: impl FnMut(&mut H) -> Result<Input, E>,
    hook: impl FnMut(&mut H, &mut Run, Option<Need>, &Input) -> Result<(), E>,
) -> Result<Result<OwnedOutcome, RunError>, E> {
    Ok(
        drive_from(run, host, Input::Start, caller, hook)?.and_then(|()| {
            run.outcome().map(|o| o.into_owned()).ok_or_else(|| {
                RunError::new(ErrorKind::Internal, "the run is done without an outcome")
            })
        }),
    )
}

/// [`drive_with`] from `first` rather than [`Input::Start`] (a restored run continued
/// with a turn, say), leaving the outcome in the run: `Ok(Ok(()))` when the run is done,
/// to be read from [`Run::outcome`] without a copy.
pub fn drive_from<H: Host + ?Sized, E>(
    run: &mut Run,
    host: &mut H,
    first: Input,
    mut caller: impl FnMut(&mut H) -> Result<Input, E>,
    mut hook: impl FnMut(&mut H, &mut Run, Option<Need>, &Input) -> Result<(), E>,
) -> Result<Result<(), RunError>, E> {
    let mut input = first;
    let mut last = None;
    loop {
        hook(host, run, last, &input)?;
        let need = match run.resume(input) {
            Ok(need) => need,
            Err(e) => return Ok(Err(e)),
        };
        last = Some(need);
        input = match need {
            Need::Done => return Ok(Ok(())),
            Need::Clock => Input::Clock(host.clock()),
            Need::Caller => caller(host)?,
            Need::Calls | Need::Wait => {
                // One call outstanding (outside parallel steps, always) is offered
                // without collecting the calls.
                let mut pending = run.pending();
                let (Some(first), second) = (pending.next(), pending.next()) else {
                    return Ok(Err(RunError::new(
                        ErrorKind::Internal,
                        "the run waits but no call is outstanding",
                    )));
                };
                let call = match second {
                    None => {
                        host.pick(std::slice::from_ref(&first));
                        first
                    }
                    Some(second) => {
                        let views: Vec<CallView<'_>> =
                            [first, second].into_iter().chain(pending).collect();
                        views[host.pick(&views).min(views.len() - 1)]
                    }
                };
                Input::Answer(call.id(), host.call(&call))
            }
        };
    }
}
