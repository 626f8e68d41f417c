//! Workflow moves (`workflow.md` §5–§11): what follows a state's execution, artifacts,
//! caller events, transitions and entering a state.

use ir_spec::{EventId, Orchestration, StateId};

use crate::api::{ErrorKind, RunError};
use crate::render::Artifact;
use crate::run::{err, protocol, Run, Top};
use crate::trace::TraceEvent;

impl Run {
    /// Whether state `s`'s own answer may move the run (`workflow.md` §5): not a
    /// terminal or external state.
    pub(crate) fn may_transition(&self, s: StateId) -> bool {
        self.prog.m.workflow.as_ref().is_some_and(|w| {
            let state = &w.states[s.index()];
            !state.terminal && state.mode != Orchestration::External
        })
    }

    /// The event `name` of state `s`'s `on_event`.
    pub(crate) fn event_id(&self, s: StateId, name: &str) -> Result<EventId, RunError> {
        let m = &self.prog.m;
        let wf = m.workflow.as_ref().ok_or_else(|| protocol("no workflow"))?;
        let state = &wf.states[s.index()];
        state
            .on_event
            .iter()
            .find(|(e, _)| m.event(*e) == name)
            .map(|(e, _)| *e)
            .ok_or_else(|| {
                err(
                    ErrorKind::InvalidEvent,
                    format!("state `{}` has no event `{name}`", m.str(state.key)),
                )
            })
    }

    /// After state `s` executed (`workflow.md` §5): artifacts, then its event.
    pub(crate) fn after_state(
        &mut self,
        s: StateId,
        event: Option<EventId>,
    ) -> Result<(), RunError> {
        self.write_artifacts(s);
        match event {
            Some(e) if self.may_transition(s) => self.transition(s, e, true),
            _ => {
                self.end_turn();
                Ok(())
            }
        }
    }

    /// Writes the artifacts state `s` declares from its output's `artifacts` member
    /// (`workflow.md` §11).
    pub(crate) fn write_artifacts(&mut self, s: StateId) {
        let declares = self
            .prog
            .m
            .workflow
            .as_ref()
            .is_some_and(|w| !w.states[s.index()].artifacts.is_empty());
        if !declares {
            return;
        }
        let prog = self.prog.clone();
        let Some(wf) = prog.m.workflow.as_ref() else {
            return;
        };
        let declared = &wf.states[s.index()].artifacts;
        if declared.is_empty() {
            return;
        }
        let Some(written) = self.state_output().and_then(|o| o.member("artifacts")) else {
            return;
        };
        let written = written.as_cow().into_owned();
        let Some(written) = written.as_object() else {
            return;
        };
        for (aid, mode) in declared {
            let name = prog.m.str(wf.artifacts[aid.index()]);
            let Some(v) = written.get(name).filter(|v| !v.is_null()) else {
                continue;
            };
            Artifact::write(&mut self.wf.artifacts[aid.index()], *mode, v);
        }
    }

    /// A caller event (`workflow.md` §9).
    pub(crate) fn caller_event(&mut self, event: &str) -> Result<(), RunError> {
        let m = &self.prog.m;
        let (Some(wf), Some(s), true) = (m.workflow.as_ref(), self.wf.current, self.workflow_run)
        else {
            return Err(err(
                ErrorKind::InvalidEvent,
                format!("event `{event}` sent to a run without a workflow"),
            ));
        };
        let state = &wf.states[s.index()];
        let name = m.str(state.key);
        if state.terminal {
            return Err(err(
                ErrorKind::TerminalState,
                format!("event `{event}` sent to terminal state `{name}`"),
            ));
        }
        if matches!(
            state.mode,
            Orchestration::Internal | Orchestration::Composition
        ) {
            return Err(err(
                ErrorKind::InvalidEvent,
                format!("caller event `{event}` sent to state `{name}`, which the model drives"),
            ));
        }
        let e = self.event_id(s, event)?;
        self.transition(s, e, false)
    }

    /// `transition(S, E)` (`workflow.md` §7), up to its clock reading.
    pub(crate) fn transition(
        &mut self,
        from: StateId,
        event: EventId,
        mid_turn: bool,
    ) -> Result<(), RunError> {
        let m = &self.prog.m;
        let wf = m.workflow.as_ref().ok_or_else(|| protocol("no workflow"))?;
        let s = &wf.states[from.index()];
        let target = s
            .on_event
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                err(
                    ErrorKind::InvalidEvent,
                    format!("state `{}` has no event `{}`", m.str(s.key), m.event(event)),
                )
            })?;
        let t = &wf.states[target.index()];
        let mut dest = target;
        let mut redirected = None;
        if let Some(max) = t.max_visits {
            if self.wf.visits[target.index()] >= max {
                match t.on_max_visits {
                    Some(alt) => {
                        dest = alt;
                        redirected = Some(target);
                    }
                    None => {
                        return Err(err(
                            ErrorKind::MaxVisitsExceeded,
                            format!("state `{}` reached max_visits {max}", m.str(t.key)),
                        ))
                    }
                }
            }
        }
        if let Some(limit) = self.budget.and_then(|b| b.max_total_visits) {
            if self.wf.total_visits >= limit {
                return Err(self.io.set_fatal(err(
                    ErrorKind::BudgetExhausted,
                    format!("max_total_visits {limit} reached"),
                )));
            }
        }
        if self.wall_limit().is_some() {
            self.top = Top::Transition {
                from,
                to: dest,
                event,
                redirected,
                mid_turn,
            };
            return Ok(());
        }
        self.enter(from, dest, event, redirected, mid_turn);
        Ok(())
    }

    /// Step 4 of a transition: enter the destination, then run it in this turn or wait
    /// for the caller.
    pub(crate) fn enter(
        &mut self,
        from: StateId,
        to: StateId,
        event: EventId,
        redirected: Option<StateId>,
        mid_turn: bool,
    ) {
        self.io.trace(
            None,
            TraceEvent::Transition {
                from,
                to,
                event,
                redirected,
            },
        );
        self.io.trace(None, TraceEvent::Enter(to));
        self.wf.current = Some(to);
        self.wf.visits[to.index()] += 1;
        self.wf.total_visits += 1;
        let Some((persistent, external)) = self.prog.m.workflow.as_ref().map(|w| {
            let dest = &w.states[to.index()];
            (dest.persistent, dest.mode == Orchestration::External)
        }) else {
            return;
        };
        if !persistent {
            // A turn that ended before this caller event belongs to the cleared history.
            self.wf.history.clear();
            self.wf.exchange_pending = false;
        }
        if !mid_turn {
            self.top = Top::Idle;
        } else if external || self.prog.m.spec.holds_turn(to) {
            // An external destination, or (level 1.8 and above) a `control: user`
            // non-terminal one, runs on the next turn (RFC 0014 rule 3).
            self.end_turn();
        } else {
            self.begin_state(to);
        }
    }
}
