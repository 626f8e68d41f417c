//! [`Run`]: one execution of a [`Program`], an explicit state machine the host drives
//! through [`Run::resume`].
//!
//! The run's state is plain data: where the top level is ([`Top`]: idle, running a
//! prompt state, walking a composition, waiting for a transition's clock reading…), the
//! composition walk ([`Walk`]: position, statuses, output slots), the lanes issuing host
//! calls ([`Lane`]) and the workflow's counters ([`Wf`]). Every buffer is sized at
//! [`Run::new`] from the program's static counts, so the way from a host answer to the
//! next call allocates nothing beyond the answer itself.

use std::borrow::Cow;
use std::sync::Arc;

use ir_spec::{
    AgentStart, Budget, CompId, EventId, Orchestration, PromptId, StateBody, StateId, StepId,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::{
    CallId, CallRecord, ErrorKind, EvalRequest, Input, Need, Outcome, RunError, RunOptions, Target,
};
use crate::lane::{process, pump, Ctx, Exchange, Job, Lane, Phase, Pumped};
use crate::limits::Limits;
use crate::program::Program;
use crate::render::Artifact;
use crate::small::Fixed;
use crate::trace::{grouped, Io, TraceEvent};
use crate::value::{Scope, VRef};
use crate::view::CallView;

/// Where the run is, at the top level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Top {
    /// Before [`Input::Start`].
    NotStarted,
    /// A workflow run started and waits for the clock reading of its start time.
    StartClock,
    /// Waiting for the caller.
    Idle,
    /// A prompt state executes in lane 0.
    StatePrompt(StateId),
    /// A composition state's composition runs.
    StateComp(StateId),
    /// A transition waits for its clock reading (`workflow.md` §7 step 3); `mid_turn`:
    /// the destination then runs in this turn.
    Transition {
        from: StateId,
        to: StateId,
        event: EventId,
        redirected: Option<StateId>,
        mid_turn: bool,
    },
    /// A `composition:<name>` target's turn.
    CompTarget(CompId),
    /// A plain agent member's turn, in lane 0.
    PlainAgent(PromptId),
    /// The run ended without error.
    Done,
    /// The run ended with an error.
    Failed,
}

/// The composition walk (`compositions.md` §4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Walk {
    pub id: Option<CompId>,
    /// The next index into `walk`.
    pub pos: u32,
    /// Output slots by step id. A parallel step that ran holds a `null` marker: its
    /// output is walked over its branches' slots (`value::Par`).
    #[serde(with = "crate::snapshot::slots_text")]
    pub slots: Vec<Option<Value>>,
    /// Per step: [`SKIPPED`] and [`SELECTED`] (a branch that ran selected it).
    pub flags: Fixed<u8, FLAGS_INLINE>,
    /// The last step that ran and produced an output.
    pub last: Option<StepId>,
    /// The step whose lanes are running.
    pub active: Option<StepId>,
}

/// The workflow run's counters and data (`workflow.md` §2), also used by plain agents
/// (history, last output).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Wf {
    pub current: Option<StateId>,
    pub visits: Fixed<u64, VISITS_INLINE>,
    pub total_visits: u64,
    #[serde(with = "crate::snapshot::artifacts_text")]
    pub artifacts: Vec<Option<Artifact>>,
    pub history: Vec<Exchange>,
    pub start_ms: u64,
    /// The last output, unless `last_slot` says it is still in a composition slot.
    #[serde(with = "crate::snapshot::value_text")]
    pub last: Value,
    pub last_slot: Option<StepId>,
    /// The turn ended: its input and last output go to the history when the next turn
    /// starts (the history is read only by later turns).
    pub exchange_pending: bool,
    /// The turn's reply so far: the non-empty string outputs of the states executed in
    /// it, joined with a blank line (RFC 0014 reply assembly).
    pub reply: String,
}

/// One run of a [`Program`] against a [`Target`].
///
/// A run is a value: it does nothing until the host calls [`Run::resume`], and each
/// `resume` returns what the run needs next. The outstanding calls are read with
/// [`Run::pending`]; the trace, the call log and the eval requests at any time.
pub struct Run {
    pub(crate) prog: Arc<Program>,
    pub(crate) target: Target,
    pub(crate) host_vars: Map<String, Value>,
    pub(crate) record_calls: bool,
    pub(crate) max_host_calls: Option<u64>,
    /// The embedder's limits on values handed in and on snapshots.
    pub(crate) limits: Limits,
    pub(crate) workflow_run: bool,
    /// The workflow budget; `None` outside workflow runs (`workflow.md` §10).
    pub(crate) budget: Option<Budget>,
    pub(crate) top: Top,
    /// The current turn's input.
    pub(crate) input: Value,
    pub(crate) wf: Wf,
    pub(crate) walk: Walk,
    pub(crate) lanes: Vec<Lane>,
    pub(crate) io: Io,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("top", &self.top)
            .finish_non_exhaustive()
    }
}

pub(crate) fn err(kind: ErrorKind, m: String) -> RunError {
    RunError::new(kind, m)
}

pub(crate) fn protocol(m: &str) -> RunError {
    RunError::new(ErrorKind::Protocol, m)
}

/// The lanes' view of a run, borrowing its fields one by one (so that the lanes and
/// the log can be borrowed mutably beside it).
macro_rules! ctx {
    ($run:expr) => {
        Ctx {
            prog: &$run.prog,
            cid: $run.walk.id,
            input: &$run.input,
            slots: &$run.walk.slots,
            artifacts: &$run.wf.artifacts,
            history: &$run.wf.history,
            host_vars: &$run.host_vars,
            budget: $run.budget,
            record_calls: $run.record_calls,
            max_host_calls: $run.max_host_calls,
            max_built: $run.limits.max_built_bytes,
            max_answer_tools: $run.limits.max_tool_calls_per_answer,
            start_ms: $run.wf.start_ms,
            state: match $run.top {
                Top::StatePrompt(s) => Some(s),
                _ => None,
            },
        }
    };
}

/// Step flags kept inside the run (compositions of up to this many steps).
pub(crate) const FLAGS_INLINE: usize = 32;
/// Visit counts kept inside the run (workflows of up to this many states).
pub(crate) const VISITS_INLINE: usize = 8;

/// A step flag: the walk skipped the step.
pub(crate) const SKIPPED: u8 = 1;
/// A step flag: a branch step that ran selected the step.
pub(crate) const SELECTED: u8 = 2;

/// What the composition walk reached.
pub(crate) enum Walked {
    Pending(Need),
    /// The walk ended; the composition output is the output of this step.
    Finished(StepId),
}

impl Run {
    /// A new run of `program` against `target`. Host variables past the options' value
    /// limits are a `limit_exceeded` error; a target outside the module a `protocol` one.
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
            return Err(protocol("the target is not in this module"));
        }
        let limits = Limits::of(&options);
        limits.variables(&options.host_variables)?;
        let workflow_run = match target {
            Target::Workflow => true,
            Target::Agent(a) => matches!(m.agents[a.index()].start, AgentStart::State(_)),
            Target::Composition(_) => false,
        };
        let n_states = m.workflow.as_ref().map_or(0, |w| w.states.len());
        let n_artifacts = m.workflow.as_ref().map_or(0, |w| w.artifacts.len());
        let n = program.max_steps;
        let io = Io {
            trace: Vec::with_capacity(program.trace_hint),
            evals: Vec::with_capacity(program.eval_hint),
            ..Io::default()
        };
        let wf = Wf {
            visits: Fixed::new(n_states, 0),
            artifacts: vec![None; n_artifacts],
            ..Wf::default()
        };
        let walk = Walk {
            slots: {
                let mut slots = Vec::with_capacity(n);
                slots.resize_with(n, || None);
                slots
            },
            flags: Fixed::new(n, 0),
            ..Walk::default()
        };
        let budget = program.budget(workflow_run);
        Ok(Run {
            lanes: Vec::with_capacity(program.max_lanes),
            prog: program,
            target,
            host_vars: options.host_variables,
            record_calls: options.record_calls,
            max_host_calls: options.max_host_calls,
            limits,
            workflow_run,
            budget,
            top: Top::NotStarted,
            input: Value::Null,
            wf,
            walk,
            io,
        })
    }

    /// Makes this run a fresh run of the same program, target and options, keeping its
    /// buffers: a host running many runs of one program reuses one `Run` and allocates
    /// nothing per run beyond its values.
    pub fn reset(&mut self) {
        self.top = Top::NotStarted;
        self.input = Value::Null;
        let wf = &mut self.wf;
        wf.current = None;
        wf.visits.fill(0);
        wf.total_visits = 0;
        wf.artifacts.fill(None);
        wf.history.clear();
        wf.start_ms = 0;
        wf.last = Value::Null;
        wf.last_slot = None;
        wf.exchange_pending = false;
        wf.reply.clear();
        let w = &mut self.walk;
        w.id = None;
        w.pos = 0;
        w.slots.fill(None);
        w.flags.fill(0);
        w.last = None;
        w.active = None;
        let io = &mut self.io;
        io.next_id = 0;
        io.issued = 0;
        io.clock_wanted = false;
        io.clock = None;
        io.fatal = None;
        io.tool_calls = 0;
        io.group = 0;
        io.trace.clear();
        io.calls.clear();
        io.evals.clear();
        // The lanes keep their buffers for the next run, but none of them waits: a call
        // of the previous run is not outstanding in this one (fuzzing found a reset run
        // listing it in `pending()` and taking an answer to it).
        for lane in &mut self.lanes {
            lane.reset(lane.job, None);
            lane.phase = Phase::Done;
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
    /// [`RunOptions::max_value_depth`]) ends the run with `limit_exceeded`.
    ///
    /// [`RunOptions::max_value_bytes`]: crate::RunOptions::max_value_bytes
    /// [`RunOptions::max_value_depth`]: crate::RunOptions::max_value_depth
    pub fn resume(&mut self, input: Input) -> Result<Need, RunError> {
        match self.top {
            Top::Done | Top::Failed => return Err(protocol("the run is over")),
            Top::NotStarted => {
                if input != Input::Start {
                    return Err(protocol("the first input must be Start"));
                }
                self.io.issued = 0;
                let r = self.start().and_then(|()| self.advance());
                return self.settle(r);
            }
            _ => {}
        }
        if self.io.clock_wanted && !matches!(input, Input::Clock(_)) {
            return Err(protocol("the run asked for a clock reading first"));
        }
        // Nothing changes before the input is known to be one the run asked for.
        let r = match input {
            Input::Start => return Err(protocol("the run has already started")),
            Input::Answer(id, answer) => {
                // The outstanding calls are the lanes waiting for an answer.
                let found = self
                    .lanes
                    .iter()
                    .position(|l| matches!(l.phase, Phase::Waiting(c, _) if c == id));
                let Some((lane, Phase::Waiting(_, call))) = found.map(|i| (i, self.lanes[i].phase))
                else {
                    return Err(protocol(if id.0 < self.io.next_id {
                        "an answer to a call that is not outstanding (it was answered already)"
                    } else {
                        "an answer to a call that was never issued"
                    }));
                };
                self.io.issued = 0;
                match self.limits.answer(&answer, "the answer") {
                    Ok(()) => {
                        let ctx = ctx!(self);
                        process(&ctx, &mut self.lanes[lane], &mut self.io, call, answer);
                        self.advance()
                    }
                    Err(e) => Err(self.io.set_fatal(e)),
                }
            }
            // A clock reading continues the resume that asked for it: calls issued before
            // the request (another parallel branch's) are announced with those issued
            // after, so `issued` is not reset.
            Input::Clock(ms) => {
                if !self.io.clock_wanted {
                    return Err(protocol("a clock reading the run did not ask for"));
                }
                self.io.clock_wanted = false;
                self.io.clock = Some(ms);
                self.advance()
            }
            caller => {
                if self.top != Top::Idle {
                    return Err(protocol(
                        "a turn, event or finish while the run is busy (calls are outstanding)",
                    ));
                }
                self.io.issued = 0;
                match caller {
                    Input::Turn(v) => self
                        .limits
                        .value(&v, "the turn input")
                        .and_then(|()| self.begin_turn(v))
                        .and_then(|()| self.advance()),
                    Input::Event(e) => self
                        .limits
                        .string(&e, "the event name")
                        .and_then(|()| self.caller_event(&e))
                        .and_then(|()| self.advance()),
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
                self.top = Top::Failed;
            }
            Ok(Need::Clock) => self.io.clock_wanted = true,
            Ok(_) => {}
        }
        r
    }

    /// `Input::Start` (`workflow.md` §3).
    fn start(&mut self) -> Result<(), RunError> {
        let m = &self.prog.m;
        let start = match self.target {
            Target::Workflow => m.workflow.as_ref().map(|w| w.entry),
            Target::Agent(a) => match m.agents[a.index()].start {
                AgentStart::State(s) => Some(s),
                AgentStart::Plain(None) => {
                    return Err(err(
                        ErrorKind::Protocol,
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
        self.top = Top::Idle;
        if let Some(s) = start {
            self.wf.current = Some(s);
            self.wf.visits[s.index()] = 1;
            self.wf.total_visits = 1;
            self.io.trace(None, TraceEvent::Enter(s));
            if self.wall_limit().is_some() {
                self.top = Top::StartClock;
            }
        }
        Ok(())
    }

    pub(crate) fn wall_limit(&self) -> Option<u64> {
        self.budget.and_then(|b| b.max_wall_time_sec)
    }

    /// Runs until the run needs an input.
    fn advance(&mut self) -> Result<Need, RunError> {
        loop {
            match self.top {
                Top::NotStarted | Top::Failed => return Err(protocol("the run is not running")),
                Top::Done => return Ok(Need::Done),
                Top::Idle => return Ok(Need::Caller),
                Top::StartClock => {
                    let Some(now) = self.io.clock.take() else {
                        return Ok(Need::Clock);
                    };
                    self.wf.start_ms = now;
                    self.top = Top::Idle;
                }
                Top::Transition {
                    from,
                    to,
                    event,
                    redirected,
                    mid_turn,
                } => {
                    let Some(now) = self.io.clock.take() else {
                        return Ok(Need::Clock);
                    };
                    if let Some(limit) = self.wall_limit() {
                        if now.saturating_sub(self.wf.start_ms) >= limit.saturating_mul(1000) {
                            return Err(self.io.set_fatal(err(
                                ErrorKind::BudgetExhausted,
                                format!("max_wall_time_sec {limit} reached"),
                            )));
                        }
                    }
                    self.enter(from, to, event, redirected, mid_turn);
                }
                Top::StatePrompt(_) | Top::PlainAgent(_) => {
                    match self.pump_lanes()? {
                        Pumped::AllDone => {}
                        Pumped::Waiting => return Ok(self.waiting()),
                        Pumped::Clock => return Ok(Need::Clock),
                    }
                    let Some((Some(result), event)) = self
                        .lanes
                        .first_mut()
                        .map(|l| (l.result.take(), l.event.take()))
                    else {
                        return Err(protocol("a prompt execution ended without a result"));
                    };
                    let output = result?;
                    self.wf.last = output;
                    self.wf.last_slot = None;
                    self.push_reply();
                    match self.top {
                        Top::StatePrompt(s) => {
                            let event = match event {
                                Some(name) if self.may_transition(s) => {
                                    Some(self.event_id(s, &name)?)
                                }
                                _ => None,
                            };
                            self.after_state(s, event)?;
                        }
                        _ => self.end_turn(),
                    }
                }
                Top::StateComp(_) | Top::CompTarget(_) => {
                    let out = match self.walk_comp()? {
                        Walked::Pending(need) => return Ok(need),
                        Walked::Finished(o) => o,
                    };
                    self.wf.last_slot = Some(out);
                    self.push_reply();
                    match self.top {
                        Top::StateComp(s) => {
                            let name = self.state_output().and_then(|o| match o.member("event") {
                                Some(VRef::Val(Value::String(e))) => Some(e.as_str()),
                                _ => None,
                            });
                            let event = match name {
                                Some(name) if self.may_transition(s) => {
                                    Some(self.event_id(s, name)?)
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
        if self.io.issued > 0 {
            Need::Calls
        } else {
            Need::Wait
        }
    }

    pub(crate) fn ctx(&self) -> Ctx<'_> {
        ctx!(self)
    }

    pub(crate) fn pump_lanes(&mut self) -> Result<Pumped, RunError> {
        let ctx = ctx!(self);
        pump(&ctx, &mut self.lanes, &mut self.io)
    }

    pub(crate) fn scope(&self) -> Scope<'_> {
        Scope {
            m: &self.prog.m,
            comp: self.walk.id.map(|c| &self.prog.m.compositions[c.index()]),
            input: &self.input,
            slots: &self.walk.slots,
        }
    }

    /// Appends the output of what executed last to the turn's reply, when it is a
    /// non-empty string (`later-versions.md` §2: non-string outputs contribute nothing).
    /// Allocates only for a string output.
    pub(crate) fn push_reply(&mut self) {
        let mut reply = std::mem::take(&mut self.wf.reply);
        if let Some(VRef::Val(Value::String(text))) = self.state_output() {
            if !text.is_empty() {
                if !reply.is_empty() {
                    reply.push_str("\n\n");
                }
                reply.push_str(text);
            }
        }
        self.wf.reply = reply;
    }

    /// The output of the state (or agent turn, or composition) that executed last.
    pub(crate) fn state_output(&self) -> Option<VRef<'_>> {
        match self.wf.last_slot {
            Some(o) => self.scope().step(o),
            None => Some(VRef::Val(&self.wf.last)),
        }
    }

    /// Moves the last output out of the composition slots, and copies the eval
    /// requests' outputs, before the slots are reused or the run ends.
    pub(crate) fn settle_slots(&mut self) {
        let scope = Scope {
            m: &self.prog.m,
            comp: self.walk.id.map(|c| &self.prog.m.compositions[c.index()]),
            input: &self.input,
            slots: &self.walk.slots,
        };
        for (_, e) in &mut self.io.evals {
            if e.output.is_none() && Some(e.comp) == self.walk.id {
                e.output = Some(scope.step(e.step).map_or(Value::Null, VRef::to_value));
            }
        }
        if let Some(o) = self.wf.last_slot.take() {
            let real = scope.step(o).and_then(VRef::real).is_some();
            self.wf.last = if real {
                self.walk.slots[o.index()].take().unwrap_or(Value::Null)
            } else {
                scope.step(o).map_or(Value::Null, VRef::to_value)
            };
        }
    }

    /// The caller's turn (`workflow.md` §5).
    fn begin_turn(&mut self, input: Value) -> Result<(), RunError> {
        self.wf.reply.clear();
        if self.wf.exchange_pending {
            self.settle_slots();
            self.wf.exchange_pending = false;
            let input = std::mem::replace(&mut self.input, Value::Null);
            self.wf.history.push(Exchange {
                input,
                output: self.wf.last.clone(),
            });
        }
        self.input = input;
        match self.target {
            Target::Composition(c) => {
                self.begin_comp(c);
                self.top = Top::CompTarget(c);
            }
            Target::Agent(a) if !self.workflow_run => {
                let AgentStart::Plain(Some(p)) = self.prog.m.agents[a.index()].start else {
                    return Err(protocol("agent member has no prompt"));
                };
                crate::walk::set_lanes(
                    &mut self.lanes,
                    std::iter::once((
                        Job::Prompt {
                            prompt: p,
                            events: None,
                        },
                        None,
                    )),
                );
                self.top = Top::PlainAgent(p);
            }
            _ => {
                let s = self
                    .wf
                    .current
                    .ok_or_else(|| protocol("no current state"))?;
                self.begin_state(s);
            }
        }
        Ok(())
    }

    /// The turn ended.
    pub(crate) fn end_turn(&mut self) {
        self.top = Top::Idle;
        if !matches!(self.target, Target::Composition(_)) {
            self.wf.exchange_pending = true;
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
                crate::walk::set_lanes(
                    &mut self.lanes,
                    std::iter::once((
                        Job::Prompt {
                            prompt: p,
                            events: may_name.then_some(s),
                        },
                        None,
                    )),
                );
                self.top = Top::StatePrompt(s);
            }
            StateBody::Composition(c) => {
                self.begin_comp(c);
                self.top = Top::StateComp(s);
            }
        }
    }

    /// `Input::Finish`.
    fn finish(&mut self) {
        // A real composition output stays in its slot, where `outcome` borrows it; a
        // parallel step's merged output is built now.
        if self.state_output().and_then(VRef::real).is_none() {
            self.settle_slots();
        }
        self.top = Top::Done;
    }

    /// The outstanding calls, in issue order: the lanes waiting for an answer (none once
    /// the run has ended).
    pub fn pending(&self) -> impl Iterator<Item = CallView<'_>> + '_ {
        let ctx = self.ctx();
        let live = !self.is_finished();
        let mut after: Option<CallId> = None;
        std::iter::from_fn(move || {
            if !live {
                return None;
            }
            let (id, lane, call) = self
                .lanes
                .iter()
                .filter_map(|l| match l.phase {
                    Phase::Waiting(id, call) if after.is_none_or(|a| id > a) => Some((id, l, call)),
                    _ => None,
                })
                .min_by_key(|(id, _, _)| *id)?;
            after = Some(id);
            Some(CallView::new(ctx, lane, id, call))
        })
    }

    /// The calls the last [`Run::resume`] issued (what [`Need::Calls`] announced), in
    /// issue order: the newest of [`Run::pending`]. After [`Need::Clock`], the calls
    /// issued before the request are announced by the next resume, with the rest.
    pub fn issued(&self) -> impl Iterator<Item = CallView<'_>> + '_ {
        let first = CallId(self.io.next_id.saturating_sub(u64::from(self.io.issued)));
        self.pending().filter(move |c| c.id() >= first)
    }

    /// The outstanding call `id`.
    pub fn call(&self, id: CallId) -> Option<CallView<'_>> {
        self.pending().find(|c| c.id() == id)
    }

    /// How the run ended, once [`Resume`](Run::resume) returned [`Need::Done`].
    pub fn outcome(&self) -> Option<Outcome<'_>> {
        if self.top != Top::Done {
            return None;
        }
        let m = &self.prog.m;
        let state = match (self.workflow_run, &m.workflow, self.wf.current) {
            (true, Some(w), Some(s)) => Some(m.str(w.states[s.index()].key)),
            _ => None,
        };
        Some(Outcome {
            output: self
                .state_output()
                .and_then(VRef::real)
                .unwrap_or(&self.wf.last),
            reply: &self.wf.reply,
            state,
        })
    }

    /// Between two turns (the last `resume` said [`Need::Caller`]): the output so far
    /// and the workflow state the run waits in, shaped as an [`Outcome`]; `None` at any
    /// other time. A host that hands the caller control (a chat, an approval queue) shows
    /// this, then sends a turn, an event or `Finish`.
    pub fn idle(&self) -> Option<Outcome<'_>> {
        if self.top != Top::Idle {
            return None;
        }
        let m = &self.prog.m;
        let state = match (self.workflow_run, &m.workflow, self.wf.current) {
            (true, Some(w), Some(s)) => Some(m.str(w.states[s.index()].key)),
            _ => None,
        };
        Some(Outcome {
            output: self
                .state_output()
                .and_then(VRef::real)
                .unwrap_or(&self.wf.last),
            state,
            reply: &self.wf.reply,
        })
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        matches!(self.top, Top::Done | Top::Failed)
    }

    /// The trace entries so far, parallel branches one after another.
    pub fn trace(&self) -> Vec<TraceEvent> {
        grouped(&self.io.trace).into_iter().copied().collect()
    }

    /// The trace lines so far (conformance README, "Trace lines"), parallel branches
    /// one after another.
    pub fn trace_lines(&self) -> Vec<String> {
        grouped(&self.io.trace)
            .into_iter()
            .map(|e| e.line(&self.prog.m))
            .collect()
    }

    /// The host calls so far, in walk order (parallel branches one after another);
    /// empty unless [`RunOptions::record_calls`] is on.
    pub fn calls(&self) -> Vec<CallRecord> {
        grouped(&self.io.calls).into_iter().cloned().collect()
    }

    /// The eval requests so far (`compositions.md` §9.2).
    pub fn evals(&self) -> Vec<EvalRequest> {
        let m = &self.prog.m;
        let scope = self.scope();
        let mut out = Vec::new();
        for e in grouped(&self.io.evals) {
            let step = &m.compositions[e.comp.index()].steps[e.step.index()];
            let output = match &e.output {
                Some(v) => Cow::Borrowed(v),
                None => Cow::Owned(scope.step(e.step).map_or(Value::Null, VRef::to_value)),
            };
            out.extend(step.evals.iter().map(|eval| EvalRequest {
                step: m.str(step.id).to_owned(),
                eval: eval.clone(),
                output: output.clone().into_owned(),
            }));
        }
        out
    }
}
