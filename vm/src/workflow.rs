//! The workflow's part of a run (`workflow.md` §5–§12): the current state, visit
//! counts, artifacts, the conversation history, the last output and the turn's reply;
//! and its moves: events, transitions, entering a state. Each move changes this part
//! (and the log) only and returns what the run does next.

use ir_spec::{Budget, EventId, Module, Orchestration, StateId, StepId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ErrorKind, RunError};
use crate::memory::{Artifact, Exchange};
use crate::small::Fixed;
use crate::trace::{Io, TraceEvent};

/// Visit counts kept inside the run (workflows of up to this many states).
pub(crate) const VISITS_INLINE: usize = 8;

/// The workflow run's counters and data (`workflow.md` §2), also used by plain agents
/// (history, last output).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Wf {
    pub current: Option<StateId>,
    pub visits: Fixed<u64, VISITS_INLINE>,
    pub total_visits: u64,
    pub artifacts: Vec<Option<Artifact>>,
    pub history: Vec<Exchange>,
    pub start_ms: u64,
    /// The last output, unless `last_slot` says it is still in a composition slot.
    #[serde(with = "crate::text::value_text")]
    pub last: Value,
    pub last_slot: Option<StepId>,
    /// The turn ended: its input and last output go to the history when the next turn
    /// starts (the history is read only by later turns).
    pub exchange_pending: bool,
    /// The turn's reply so far: the non-empty string outputs of the states executed in
    /// it, joined with a blank line (RFC 0014 reply assembly).
    pub reply: String,
}

/// A transition decided and waiting to be entered (`workflow.md` §7): after the clock
/// reading when the workflow has a wall-time budget, at once otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Move {
    pub from: StateId,
    pub to: StateId,
    pub event: EventId,
    /// The state `max_visits` redirected from.
    pub redirected: Option<StateId>,
    /// The destination then runs in this turn.
    pub mid_turn: bool,
}

/// What the run does after entering a state.
pub(crate) enum Entered {
    /// Wait for the caller.
    Idle,
    /// The turn ends.
    EndTurn,
    /// Run the state in this turn.
    Run(StateId),
}

/// Whether state `s`'s own answer may move the run (`workflow.md` §5): not a terminal
/// or external state.
pub(crate) fn may_transition(m: &Module, s: StateId) -> bool {
    m.workflow.as_ref().is_some_and(|w| {
        let state = &w.states[s.index()];
        !state.terminal && state.mode != Orchestration::External
    })
}

/// The event `name` of state `s`'s `on_event`.
pub(crate) fn event_id(m: &Module, s: StateId, name: &str) -> Result<EventId, RunError> {
    let Some(wf) = m.workflow.as_ref() else {
        return Err(no_workflow());
    };
    let state = &wf.states[s.index()];
    state
        .on_event
        .iter()
        .find(|(e, _)| m.event(*e) == name)
        .map(|(e, _)| *e)
        .ok_or_else(|| {
            let events = event_names(m, s);
            RunError::new(
                ErrorKind::InvalidEvent,
                format!(
                    "state `{}` has no event `{name}`; {}",
                    m.str(state.key),
                    crate::suggest::choices("events of this state", name, events)
                ),
            )
        })
}

/// The `on_event` names of state `s`, in declaration order.
fn event_names(m: &Module, s: StateId) -> Vec<&str> {
    m.workflow.as_ref().map_or_else(Vec::new, |wf| {
        let state = &wf.states[s.index()];
        state.on_event.iter().map(|(e, _)| m.event(*e)).collect()
    })
}

/// Why the caller may send no event now ([`Wf::caller_state`]), with the current state's
/// name.
enum NoCallerEvent<'m> {
    /// The run has no workflow, or is not a workflow run.
    NoWorkflow,
    /// The current state is terminal.
    Terminal(&'m str),
    /// The current state is driven by the model (`internal`, `composition`).
    ModelDriven(&'m str),
}

fn no_workflow() -> RunError {
    RunError::new(ErrorKind::Internal, "no workflow")
}

impl Wf {
    /// The workflow part of a new run of `m`.
    // Inlined so that `Run::new` builds this part in place rather than copying it.
    #[inline]
    pub fn new(m: &Module) -> Wf {
        let n_states = m.workflow.as_ref().map_or(0, |w| w.states.len());
        let n_artifacts = m.workflow.as_ref().map_or(0, |w| w.artifacts.len());
        Wf {
            visits: Fixed::new(n_states, 0),
            // Not `vec![None; n]`, whose fill loop runs even for no artifacts.
            artifacts: if n_artifacts == 0 {
                Vec::new()
            } else {
                vec![None; n_artifacts]
            },
            ..Wf::default()
        }
    }

    /// Back to a new run's, keeping the buffers.
    pub fn reset(&mut self) {
        self.current = None;
        self.visits.fill(0);
        self.total_visits = 0;
        self.artifacts.fill(None);
        self.history.clear();
        self.start_ms = 0;
        self.last = Value::Null;
        self.last_slot = None;
        self.exchange_pending = false;
        self.reply.clear();
    }

    /// Enters the start state `s` (`workflow.md` §3).
    pub fn start(&mut self, s: StateId, io: &mut Io) {
        self.current = Some(s);
        self.visits[s.index()] = 1;
        self.total_visits = 1;
        io.trace(None, TraceEvent::Enter(s));
    }

    /// Writes the artifacts state `s` declares from `written`, its output's `artifacts`
    /// member (`workflow.md` §11).
    pub fn write_artifacts(&mut self, m: &Module, s: StateId, written: &Map<String, Value>) {
        let Some(wf) = m.workflow.as_ref() else {
            return;
        };
        for (aid, mode) in &wf.states[s.index()].artifacts {
            let name = m.str(wf.artifacts[aid.index()]);
            let Some(v) = written.get(name).filter(|v| !v.is_null()) else {
                continue;
            };
            Artifact::write(&mut self.artifacts[aid.index()], *mode, v);
        }
    }

    /// The current state, when the caller may send it an event: a state of a workflow
    /// run that is neither terminal nor driven by the model.
    fn caller_state<'m>(
        &self,
        m: &'m Module,
        workflow_run: bool,
    ) -> Result<StateId, NoCallerEvent<'m>> {
        let (Some(wf), Some(s), true) = (m.workflow.as_ref(), self.current, workflow_run) else {
            return Err(NoCallerEvent::NoWorkflow);
        };
        let state = &wf.states[s.index()];
        if state.terminal {
            return Err(NoCallerEvent::Terminal(m.str(state.key)));
        }
        if matches!(
            state.mode,
            Orchestration::Internal | Orchestration::Composition
        ) {
            return Err(NoCallerEvent::ModelDriven(m.str(state.key)));
        }
        Ok(s)
    }

    /// A caller event (`workflow.md` §9): the state it leaves and the event, checked.
    pub fn caller_event(
        &self,
        m: &Module,
        workflow_run: bool,
        event: &str,
    ) -> Result<(StateId, EventId), RunError> {
        match self.caller_state(m, workflow_run) {
            Ok(s) => Ok((s, event_id(m, s, event)?)),
            Err(NoCallerEvent::NoWorkflow) => Err(RunError::new(
                ErrorKind::InvalidEvent,
                format!("event `{event}` sent to a run without a workflow"),
            )),
            Err(NoCallerEvent::Terminal(name)) => Err(RunError::new(
                ErrorKind::TerminalState,
                format!("event `{event}` sent to terminal state `{name}`"),
            )),
            Err(NoCallerEvent::ModelDriven(name)) => Err(RunError::new(
                ErrorKind::InvalidEvent,
                format!("caller event `{event}` sent to state `{name}`, which the model drives"),
            )),
        }
    }

    /// The events [`Wf::caller_event`] takes now: the `on_event` names of the current
    /// state, when it is a state the caller drives (not terminal, not driven by the
    /// model) of a workflow run; none otherwise.
    pub fn caller_events<'m>(&self, m: &'m Module, workflow_run: bool) -> Vec<&'m str> {
        self.caller_state(m, workflow_run)
            .map_or_else(|_| Vec::new(), |s| event_names(m, s))
    }

    /// `transition(S, E)` (`workflow.md` §7) up to its clock reading: where the run
    /// goes. A budget past its limit is a run-wide failure, recorded in `io`.
    pub fn transition(
        &self,
        m: &Module,
        budget: Option<Budget>,
        io: &mut Io,
        from: StateId,
        event: EventId,
        mid_turn: bool,
    ) -> Result<Move, RunError> {
        let wf = m.workflow.as_ref().ok_or_else(no_workflow)?;
        let s = &wf.states[from.index()];
        let target = s
            .on_event
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                RunError::new(
                    ErrorKind::InvalidEvent,
                    format!("state `{}` has no event `{}`", m.str(s.key), m.event(event)),
                )
            })?;
        let t = &wf.states[target.index()];
        let mut to = target;
        let mut redirected = None;
        if let Some(max) = t.max_visits {
            if self.visits[target.index()] >= max {
                match t.on_max_visits {
                    Some(alt) => {
                        to = alt;
                        redirected = Some(target);
                    }
                    None => {
                        return Err(RunError::new(
                            ErrorKind::MaxVisitsExceeded,
                            format!("state `{}` reached max_visits {max}", m.str(t.key)),
                        ))
                    }
                }
            }
        }
        if let Some(limit) = budget.and_then(|b| b.max_total_visits) {
            if self.total_visits >= limit {
                return Err(io.set_fatal(RunError::new(
                    ErrorKind::BudgetExhausted,
                    format!("max_total_visits {limit} reached"),
                )));
            }
        }
        Ok(Move {
            from,
            to,
            event,
            redirected,
            mid_turn,
        })
    }

    /// Step 4 of a transition: enters the destination; the run then waits for the
    /// caller, ends the turn, or runs the destination in this turn.
    pub fn enter(&mut self, m: &Module, io: &mut Io, mv: Move) -> Entered {
        let Move {
            from,
            to,
            event,
            redirected,
            mid_turn,
        } = mv;
        io.trace(
            None,
            TraceEvent::Transition {
                from,
                to,
                event,
                redirected,
            },
        );
        io.trace(None, TraceEvent::Enter(to));
        self.current = Some(to);
        self.visits[to.index()] += 1;
        self.total_visits += 1;
        let Some((persistent, external)) = m.workflow.as_ref().map(|w| {
            let dest = &w.states[to.index()];
            (dest.persistent, dest.mode == Orchestration::External)
        }) else {
            return Entered::Idle;
        };
        if !persistent {
            // A turn that ended before this caller event belongs to the cleared history.
            self.history.clear();
            self.exchange_pending = false;
        }
        if !mid_turn {
            Entered::Idle
        } else if external || m.spec.holds_turn(to) {
            // An external destination, or (level 1.8 and above) a `control: user`
            // non-terminal one, runs on the next turn (RFC 0014 rule 3).
            Entered::EndTurn
        } else {
            Entered::Run(to)
        }
    }
}
