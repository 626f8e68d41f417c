//! [`Run`]: one execution of a [`Program`], an explicit state machine the host drives
//! through [`Run::resume`].
//!
//! A run is its program, its configuration ([`Config`], set once) and its [`State`],
//! plain data in parts: where the top level is ([`Top`]: idle, running a prompt state,
//! walking a composition, waiting for a transition's clock reading…), the workflow's
//! part ([`Wf`], `workflow.rs`), the composition walk ([`Walk`], `walk.rs`), the lanes
//! issuing host calls ([`Lane`], `lane/`) and the log ([`Io`], `trace.rs`). Each part
//! changes itself and says what the run does next; this file only routes the host's
//! inputs and the parts' answers. Every buffer is sized at [`Run::new`] from the
//! program's static counts, so the way from a host answer to the next call allocates
//! nothing beyond the answer itself.

use std::sync::Arc;

use ir_spec::{AgentStart, CompId, EventId, Orchestration, StateBody, StateId};
use serde_json::Value;

use crate::api::{Input, Need, Target};
use crate::config::Config;
use crate::ctx::Ctx;
use crate::error::{ErrorKind, RunError};
use crate::job::{set_lanes, Job, Phase};
use crate::lane::{process, pump, Pumped};
use crate::limits::Limits;
use crate::memory::Exchange;
use crate::options::RunOptions;
use crate::program::Program;
use crate::state::{base, State, Top};
use crate::trace::Io;
use crate::value::{Scope, VRef};
use crate::walk::{Walk, Walked};
use crate::workflow::{event_id, may_transition, Entered, Move, Wf};

/// One run of a [`Program`] against a [`Target`].
///
/// A run is a value: it does nothing until the host calls [`Run::resume`], and each
/// `resume` returns what the run needs next. The outstanding calls are read with
/// [`Run::pending`]; the trace, the call log and the eval requests at any time.
pub struct Run {
    pub(crate) prog: Arc<Program>,
    /// What the run was given once: the embedder's options it keeps and the budget.
    pub(crate) config: Config,
    /// Everything that changes, in parts: saved and restored as it is.
    pub(crate) state: State,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("top", &self.state.top)
            .finish_non_exhaustive()
    }
}

pub(crate) fn err(kind: ErrorKind, m: String) -> RunError {
    RunError::new(kind, m)
}

pub(crate) fn protocol(m: &str) -> RunError {
    RunError::new(ErrorKind::Protocol, m)
}

/// A promise of the VM's own broken: a bug, not the host's or the pack's doing.
fn internal(m: &str) -> RunError {
    RunError::new(ErrorKind::Internal, m)
}

impl Run {
    /// A new run of `program` against `target`. Host variables past the options' value
    /// limits are a `limit_exceeded` error; a target outside the module an `invalid_target`
    /// one.
    pub fn new(
        program: Arc<Program>,
        target: Target,
        options: RunOptions,
    ) -> Result<Run, RunError> {
        let m = &program.m;
        let in_range = match target {
            Target::Workflow => m.workflow.is_some(),
            Target::Agent(a) => a.index() < m.agents.len(),
            Target::Composition(c) => c.index() < m.compositions.len(),
        };
        if !in_range {
            return Err(RunError::new(
                ErrorKind::InvalidTarget,
                "the target is not in this module",
            ));
        }
        let limits = Limits::of(&options);
        limits.variables(&options.host_variables)?;
        let workflow_run = match target {
            Target::Workflow => true,
            Target::Agent(a) => matches!(m.agents[a.index()].start, AgentStart::State(_)),
            Target::Composition(_) => false,
        };
        let budget = program.budget(workflow_run);
        let config = Config {
            limits,
            ..Config::new(&options, budget)
        };
        let state = State {
            target,
            host_vars: options.host_variables,
            workflow_run,
            top: Top::NotStarted,
            input: Value::Null,
            wf: Wf::new(m),
            walk: Walk::new(program.max_steps),
            lanes: Vec::with_capacity(program.max_lanes),
            io: Io::new(program.trace_hint, program.eval_hint),
        };
        Ok(Run {
            config,
            prog: program,
            state,
        })
    }

    /// Makes this run a fresh run of the same program, target and options, keeping its
    /// buffers: a host running many runs of one program reuses one `Run` and allocates
    /// nothing per run beyond its values.
    pub fn reset(&mut self) {
        let s = &mut self.state;
        s.top = Top::NotStarted;
        s.input = Value::Null;
        s.wf.reset();
        s.walk.reset();
        s.io.reset();
        for lane in &mut s.lanes {
            lane.park();
        }
    }

    /// The program this run executes.
    pub fn program(&self) -> &Arc<Program> {
        &self.prog
    }

    /// Hands the run `input` and runs it until it needs something else.
    ///
    /// The first call must be [`Input::Start`]. After a run-time error or [`Need::Done`]
    /// the run is over and every further call is a `protocol` error. An input the run did
    /// not ask for (an answer to a call that was never issued or was answered already; a
    /// turn, event or finish while calls are outstanding; anything but a clock reading
    /// after [`Need::Clock`]; a second start) is a `protocol` error that leaves the run
    /// exactly as it was: the same pending and issued calls, the same snapshot.
    ///
    /// A value past the embedder's limits ([`RunOptions::max_value_bytes`],
    /// [`RunOptions::max_value_depth`]) is `limit_exceeded`: in an answer it ends the
    /// run; a turn or an event past them is refused and leaves the run as it was,
    /// waiting for the caller.
    ///
    /// [`RunOptions::max_value_bytes`]: crate::RunOptions::max_value_bytes
    /// [`RunOptions::max_value_depth`]: crate::RunOptions::max_value_depth
    pub fn resume(&mut self, input: Input) -> Result<Need, RunError> {
        match self.state.top {
            Top::Done | Top::Failed => return Err(protocol("the run is over")),
            Top::NotStarted => {
                if input != Input::Start {
                    return Err(protocol(
                        "the run has not started: its first input is the start (Input::Start)",
                    ));
                }
                self.state.io.issued = 0;
                let r = self.start().and_then(|()| self.advance());
                return self.settle(r);
            }
            _ => {}
        }
        if self.state.io.clock_wanted && !matches!(input, Input::Clock(_)) {
            return Err(protocol("the run asked for a clock reading first"));
        }
        // Nothing changes before the input is known to be one the run asked for.
        let r = match input {
            Input::Start => {
                return Err(protocol(match self.waiting_for() {
                    Some(Need::Calls | Need::Wait) => {
                        "the run has already started; it waits for answers to its outstanding calls"
                    }
                    Some(Need::Caller) => {
                        "the run has already started; it waits for a turn, an event or the finish"
                    }
                    _ => "the run has already started",
                }))
            }
            Input::Answer(id, answer) => {
                // The outstanding calls are the lanes waiting for an answer.
                let found = self
                    .state
                    .lanes
                    .iter()
                    .position(|l| matches!(l.phase, Phase::Waiting(c, _) if c == id));
                let Some((lane, Phase::Waiting(_, call))) =
                    found.map(|i| (i, self.state.lanes[i].phase))
                else {
                    return Err(protocol(if id.0 < self.state.io.next_id {
                        "an answer to a call that is not outstanding (it was answered already)"
                    } else {
                        "an answer to a call that was never issued"
                    }));
                };
                self.state.io.issued = 0;
                match self.config.limits.answer(&answer, "the answer") {
                    Ok(()) => {
                        let top = self.state.top;
                        let (base, walk, lanes, io) = self.state.split(&self.prog, &self.config);
                        let ctx = Ctx::new(base, walk.id, &walk.slots, top.prompt_state());
                        process(&ctx, &mut lanes[lane], io, call, answer);
                        self.advance()
                    }
                    Err(e) => Err(self.state.io.set_fatal(e)),
                }
            }
            // A clock reading continues the resume that asked for it: calls issued before
            // the request (another parallel branch's) are announced with those issued
            // after, so `issued` is not reset.
            Input::Clock(ms) => {
                if !self.state.io.clock_wanted {
                    return Err(protocol("a clock reading the run did not ask for"));
                }
                self.state.io.clock_wanted = false;
                self.state.io.clock = Some(ms);
                self.advance()
            }
            caller => {
                if self.state.top != Top::Idle {
                    return Err(protocol(
                        "a turn, event or finish while the run is busy (calls are outstanding)",
                    ));
                }
                // A turn or event past the embedder's limits is refused before anything
                // changes: the run waits on for the caller, as it was (a service keeps
                // its conversation when one message is too large).
                match &caller {
                    Input::Turn(v) => self.config.limits.value(v, "the turn input")?,
                    Input::Event(e) => self.config.limits.string(e, "the event name")?,
                    _ => {}
                }
                self.state.io.issued = 0;
                match caller {
                    Input::Turn(v) => self.begin_turn(v).and_then(|()| self.advance()),
                    Input::Event(e) => self.caller_event(&e).and_then(|()| self.advance()),
                    _ => {
                        self.finish();
                        Ok(Need::Done)
                    }
                }
            }
        };
        self.settle(r)
    }

    fn settle(&mut self, r: Result<Need, RunError>) -> Result<Need, RunError> {
        match &r {
            Err(_) => {
                // A failed run has nothing outstanding; its log stays readable.
                self.state.top = Top::Failed;
            }
            Ok(Need::Clock) => self.state.io.clock_wanted = true,
            Ok(_) => {}
        }
        r
    }

    /// `Input::Start` (`workflow.md` §3).
    fn start(&mut self) -> Result<(), RunError> {
        let m = &self.prog.m;
        let start = match self.state.target {
            Target::Workflow => m.workflow.as_ref().map(|w| w.entry),
            Target::Agent(a) => match m.agents[a.index()].start {
                AgentStart::State(s) => Some(s),
                AgentStart::Plain(None) => {
                    return Err(err(
                        ErrorKind::InvalidTarget,
                        format!(
                            "agent member `{}` has no prompt",
                            m.str(m.agents[a.index()].key)
                        ),
                    ))
                }
                AgentStart::Plain(Some(_)) => None,
            },
            Target::Composition(_) => None,
        };
        self.state.top = Top::Idle;
        if let Some(s) = start {
            self.state.wf.start(s, &mut self.state.io);
            if self.wall_limit().is_some() {
                self.state.top = Top::StartClock;
            }
        }
        Ok(())
    }

    pub(crate) fn wall_limit(&self) -> Option<u64> {
        self.config.budget.and_then(|b| b.max_wall_time_sec)
    }

    /// Runs until the run needs an input.
    fn advance(&mut self) -> Result<Need, RunError> {
        loop {
            match self.state.top {
                Top::NotStarted | Top::Failed => return Err(internal("the run is not running")),
                Top::Done => return Ok(Need::Done),
                Top::Idle => return Ok(Need::Caller),
                Top::StartClock => {
                    let Some(now) = self.state.io.clock.take() else {
                        return Ok(Need::Clock);
                    };
                    self.state.wf.start_ms = now;
                    self.state.top = Top::Idle;
                }
                Top::Transition(mv) => {
                    let Some(now) = self.state.io.clock.take() else {
                        return Ok(Need::Clock);
                    };
                    if let Some(limit) = self.wall_limit() {
                        if now.saturating_sub(self.state.wf.start_ms) >= limit.saturating_mul(1000)
                        {
                            return Err(self.state.io.set_fatal(err(
                                ErrorKind::BudgetExhausted,
                                format!("max_wall_time_sec {limit} reached"),
                            )));
                        }
                    }
                    self.enter(mv);
                }
                Top::StatePrompt(_) | Top::PlainAgent(_) => {
                    match self.pump_lanes()? {
                        Pumped::AllDone => {}
                        Pumped::Waiting => return Ok(self.waiting()),
                        Pumped::Clock => return Ok(Need::Clock),
                    }
                    let Some((Some(result), event)) = self
                        .state
                        .lanes
                        .first_mut()
                        .map(|l| (l.result.take(), l.event.take()))
                    else {
                        return Err(internal("a prompt execution ended without a result"));
                    };
                    let output = result?;
                    self.state.wf.last = output;
                    self.state.wf.last_slot = None;
                    self.push_reply();
                    match self.state.top {
                        Top::StatePrompt(s) => {
                            let event = match event {
                                Some(name) if may_transition(&self.prog.m, s) => {
                                    Some(event_id(&self.prog.m, s, &name)?)
                                }
                                _ => None,
                            };
                            self.after_state(s, event)?;
                        }
                        _ => self.end_turn(),
                    }
                }
                Top::StateComp(_) | Top::CompTarget(_) => {
                    let (base, walk, lanes, io) = self.state.split(&self.prog, &self.config);
                    let out = match walk.advance(base, lanes, io)? {
                        Walked::Pending(need) => return Ok(need),
                        Walked::Finished(o) => o,
                    };
                    self.state.wf.last_slot = Some(out);
                    self.push_reply();
                    match self.state.top {
                        Top::StateComp(s) => {
                            let name = self.state_output().and_then(|o| match o.member("event") {
                                Some(VRef::Val(Value::String(e))) => Some(e.as_str()),
                                _ => None,
                            });
                            let event = match name {
                                Some(name) if may_transition(&self.prog.m, s) => {
                                    Some(event_id(&self.prog.m, s, name)?)
                                }
                                _ => None,
                            };
                            self.after_state(s, event)?;
                        }
                        _ => self.end_turn(),
                    }
                }
            }
        }
    }

    pub(crate) fn waiting(&self) -> Need {
        if self.state.io.issued > 0 {
            Need::Calls
        } else {
            Need::Wait
        }
    }

    /// The lanes' view of the run.
    pub(crate) fn ctx(&self) -> Ctx<'_> {
        let s = &self.state;
        let base = base(&self.prog, &self.config, &s.input, &s.host_vars, &s.wf);
        Ctx::new(base, s.walk.id, &s.walk.slots, s.top.prompt_state())
    }

    pub(crate) fn pump_lanes(&mut self) -> Result<Pumped, RunError> {
        let top = self.state.top;
        let (base, walk, lanes, io) = self.state.split(&self.prog, &self.config);
        let ctx = Ctx::new(base, walk.id, &walk.slots, top.prompt_state());
        pump(&ctx, lanes, io)
    }

    pub(crate) fn scope(&self) -> Scope<'_> {
        self.state.walk.scope(&self.prog.m, &self.state.input)
    }

    /// Appends the output of what executed last to the turn's reply, when it is a
    /// non-empty string (`later-versions.md` §2: non-string outputs contribute nothing).
    /// Allocates only for a string output.
    pub(crate) fn push_reply(&mut self) {
        let mut reply = std::mem::take(&mut self.state.wf.reply);
        if let Some(VRef::Val(Value::String(text))) = self.state_output() {
            if !text.is_empty() {
                if !reply.is_empty() {
                    reply.push_str("\n\n");
                }
                reply.push_str(text);
            }
        }
        self.state.wf.reply = reply;
    }

    /// The output of the state (or agent turn, or composition) that executed last.
    pub(crate) fn state_output(&self) -> Option<VRef<'_>> {
        match self.state.wf.last_slot {
            Some(o) => self.scope().step(o),
            None => Some(VRef::Val(&self.state.wf.last)),
        }
    }

    /// Moves the last output out of the composition slots, and copies the eval
    /// requests' outputs, before the slots are reused or the run ends.
    pub(crate) fn settle_slots(&mut self) {
        let scope = self.state.walk.scope(&self.prog.m, &self.state.input);
        for (_, e) in &mut self.state.io.evals {
            if e.output.is_none() && Some(e.comp) == self.state.walk.id {
                e.output = Some(scope.step(e.step).map_or(Value::Null, VRef::to_value));
            }
        }
        if let Some(o) = self.state.wf.last_slot.take() {
            let real = scope.step(o).and_then(VRef::real).is_some();
            self.state.wf.last = if real {
                self.state.walk.slots[o.index()]
                    .take()
                    .unwrap_or(Value::Null)
            } else {
                scope.step(o).map_or(Value::Null, VRef::to_value)
            };
        }
    }

    /// The caller's turn (`workflow.md` §5).
    fn begin_turn(&mut self, input: Value) -> Result<(), RunError> {
        self.state.wf.reply.clear();
        if self.state.wf.exchange_pending {
            self.settle_slots();
            self.state.wf.exchange_pending = false;
            let input = std::mem::replace(&mut self.state.input, Value::Null);
            self.state.wf.history.push(Exchange {
                input,
                output: self.state.wf.last.clone(),
            });
        }
        self.state.input = input;
        match self.state.target {
            Target::Composition(c) => {
                self.begin_comp(c);
                self.state.top = Top::CompTarget(c);
            }
            Target::Agent(a) if !self.state.workflow_run => {
                let AgentStart::Plain(Some(p)) = self.prog.m.agents[a.index()].start else {
                    return Err(internal("agent member has no prompt"));
                };
                set_lanes(
                    &mut self.state.lanes,
                    std::iter::once((
                        Job::Prompt {
                            prompt: p,
                            events: None,
                        },
                        None,
                    )),
                );
                self.state.top = Top::PlainAgent(p);
            }
            _ => {
                let s = self
                    .state
                    .wf
                    .current
                    .ok_or_else(|| internal("no current state"))?;
                self.begin_state(s);
            }
        }
        Ok(())
    }

    /// The turn ended.
    pub(crate) fn end_turn(&mut self) {
        self.state.top = Top::Idle;
        if !matches!(self.state.target, Target::Composition(_)) {
            self.state.wf.exchange_pending = true;
        }
    }

    /// Starts executing state `s` with the turn input.
    pub(crate) fn begin_state(&mut self, s: StateId) {
        let Some(wf) = self.prog.m.workflow.as_ref() else {
            return;
        };
        let state = &wf.states[s.index()];
        match state.body {
            StateBody::Prompt(p) => {
                let may_name = !state.terminal && state.mode != Orchestration::External;
                set_lanes(
                    &mut self.state.lanes,
                    std::iter::once((
                        Job::Prompt {
                            prompt: p,
                            events: may_name.then_some(s),
                        },
                        None,
                    )),
                );
                self.state.top = Top::StatePrompt(s);
            }
            StateBody::Composition(c) => {
                self.begin_comp(c);
                self.state.top = Top::StateComp(s);
            }
        }
    }

    /// Starts composition `c`, moving the outputs still wanted out of the previous
    /// walk's slots first.
    pub(crate) fn begin_comp(&mut self, c: CompId) {
        self.settle_slots();
        let n = self.prog.m.compositions[c.index()].steps.len();
        self.state.walk.begin(c, n, &mut self.state.lanes);
    }

    /// After state `s` executed (`workflow.md` §5): artifacts, then its event.
    fn after_state(&mut self, s: StateId, event: Option<EventId>) -> Result<(), RunError> {
        self.write_artifacts(s);
        match event {
            Some(e) if may_transition(&self.prog.m, s) => self.transition(s, e, true),
            _ => {
                self.end_turn();
                Ok(())
            }
        }
    }

    /// Writes the artifacts state `s` declares from its output's `artifacts` member
    /// (`workflow.md` §11).
    fn write_artifacts(&mut self, s: StateId) {
        let m = &self.prog.m;
        let declares = m
            .workflow
            .as_ref()
            .is_some_and(|w| !w.states[s.index()].artifacts.is_empty());
        if !declares {
            return;
        }
        let Some(written) = self.state_output().and_then(|o| o.member("artifacts")) else {
            return;
        };
        if let Value::Object(written) = written.as_cow().into_owned() {
            self.state.wf.write_artifacts(m, s, &written);
        }
    }

    /// A caller event (`workflow.md` §9).
    fn caller_event(&mut self, event: &str) -> Result<(), RunError> {
        let (s, e) = self
            .state
            .wf
            .caller_event(&self.prog.m, self.state.workflow_run, event)?;
        self.transition(s, e, false)
    }

    /// `transition(S, E)` (`workflow.md` §7): entered at once, or after the clock
    /// reading when the workflow has a wall-time budget.
    fn transition(
        &mut self,
        from: StateId,
        event: EventId,
        mid_turn: bool,
    ) -> Result<(), RunError> {
        let s = &mut self.state;
        let mv = s.wf.transition(
            &self.prog.m,
            self.config.budget,
            &mut s.io,
            from,
            event,
            mid_turn,
        )?;
        if self.wall_limit().is_some() {
            self.state.top = Top::Transition(mv);
        } else {
            self.enter(mv);
        }
        Ok(())
    }

    /// Step 4 of a transition: enter the destination, then run it in this turn or wait
    /// for the caller.
    fn enter(&mut self, mv: Move) {
        match self.state.wf.enter(&self.prog.m, &mut self.state.io, mv) {
            Entered::Idle => self.state.top = Top::Idle,
            Entered::EndTurn => self.end_turn(),
            Entered::Run(s) => self.begin_state(s),
        }
    }

    /// `Input::Finish`.
    fn finish(&mut self) {
        // A real composition output stays in its slot, where `outcome` borrows it; a
        // parallel step's merged output is built now.
        if self.state_output().and_then(VRef::real).is_none() {
            self.settle_slots();
        }
        self.state.top = Top::Done;
    }
}
