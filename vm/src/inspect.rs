//! What a host reads from a [`Run`] between resumes: the outstanding calls, the
//! outcome, the trace, the call log and the eval requests.

use std::borrow::Cow;

use serde_json::Value;

use crate::api::{CallId, CallRecord, EvalRequest, Need, Outcome};
use crate::job::Phase;
use crate::run::Run;
use crate::state::Top;
use crate::trace::{grouped, TraceEvent};
use crate::value::VRef;
use crate::view::CallView;

impl Run {
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
                .state
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

    /// The calls the last [`Run::resume`] issued (what [`Need::Calls`](crate::Need::Calls) announced), in
    /// issue order: the newest of [`Run::pending`]. After [`Need::Clock`](crate::Need::Clock), the calls
    /// issued before the request are announced by the next resume, with the rest.
    pub fn issued(&self) -> impl Iterator<Item = CallView<'_>> + '_ {
        let first = CallId(
            self.state
                .io
                .next_id
                .saturating_sub(u64::from(self.state.io.issued)),
        );
        self.pending().filter(move |c| c.id() >= first)
    }

    /// The outstanding call `id`.
    pub fn call(&self, id: CallId) -> Option<CallView<'_>> {
        self.pending().find(|c| c.id() == id)
    }

    /// How the run ended, once [`Resume`](Run::resume) returned [`Need::Done`](crate::Need::Done).
    pub fn outcome(&self) -> Option<Outcome<'_>> {
        (self.state.top == Top::Done).then(|| self.outcome_now())
    }

    /// Between two turns (the last `resume` said [`Need::Caller`](crate::Need::Caller)): the output so far
    /// and the workflow state the run waits in, shaped as an [`Outcome`]; `None` at any
    /// other time. A host that hands the caller control (a chat, an approval queue) shows
    /// this, then sends a turn, an event or `Finish`.
    pub fn idle(&self) -> Option<Outcome<'_>> {
        (self.state.top == Top::Idle).then(|| self.outcome_now())
    }

    /// The events the caller may send now ([`Input::Event`](crate::Input::Event)): while
    /// the run is idle ([`Run::idle`]) in a workflow state the caller drives (one with
    /// `on_event`, neither terminal nor driven by the model), that state's event names in
    /// declaration order; empty otherwise. Any other event ends the run with
    /// `invalid_event` (`terminal_state` in a terminal state), as `workflow.md` §7 rules,
    /// so a host that takes event names from people checks them here first.
    pub fn caller_events(&self) -> Vec<&str> {
        if self.state.top != Top::Idle {
            return Vec::new();
        }
        self.state
            .wf
            .caller_events(&self.prog.m, self.state.workflow_run)
    }

    /// The key of the workflow state the run is in: the state it waits in, ended in, or
    /// failed in (where [`Run::outcome`] of a failed run has none). `None` when the run
    /// is not a workflow run (a composition, or an agent that is not a state) and before
    /// it enters its first state.
    pub fn workflow_state(&self) -> Option<&str> {
        let m = &self.prog.m;
        match (self.state.workflow_run, &m.workflow, self.state.wf.current) {
            (true, Some(w), Some(s)) => Some(m.str(w.states[s.index()].key)),
            _ => None,
        }
    }

    /// The output so far and the workflow state the run is in, as an [`Outcome`].
    fn outcome_now(&self) -> Outcome<'_> {
        let state = self.workflow_state();
        Outcome {
            output: self
                .state_output()
                .and_then(VRef::real)
                .unwrap_or(&self.state.wf.last),
            reply: &self.state.wf.reply,
            state,
        }
    }

    /// What the run waits for now, read from the run's state, so a host can pick up a run
    /// it did not resume itself (one restored from a snapshot, or left by a host that
    /// stopped partway): [`Need::Calls`] whenever calls are outstanding (where the last
    /// [`Run::resume`] may have said [`Need::Wait`]: answer any of [`Run::pending`]),
    /// otherwise what the last resume returned. `None` before the first resume (with
    /// [`Input::Start`](crate::Input::Start)) and after the run failed.
    pub fn waiting_for(&self) -> Option<Need> {
        match self.state.top {
            Top::NotStarted | Top::Failed => None,
            Top::Done => Some(Need::Done),
            _ if self.state.io.clock_wanted => Some(Need::Clock),
            Top::Idle => Some(Need::Caller),
            _ if self.pending().next().is_some() => Some(Need::Calls),
            _ => Some(Need::Wait),
        }
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        matches!(self.state.top, Top::Done | Top::Failed)
    }

    /// The trace entries so far, parallel branches one after another.
    pub fn trace(&self) -> Vec<TraceEvent> {
        grouped(&self.state.io.trace).into_iter().copied().collect()
    }

    /// The id of the step whose failure ended the run: a failed leaf step (a prompt,
    /// agent, tool or extension step, after its retries), the branch of a parallel step
    /// that failed first in declaration order (`compositions.md` §9.2), a branch step
    /// whose predicate failed, or the step whose call a run-wide limit stopped. `None`
    /// while the run has not failed, when it failed outside any step (a workflow rule,
    /// a prompt state, `no_output`), and in a run restored from a snapshot.
    pub fn failed_step(&self) -> Option<&str> {
        self.failed_step_in().map(|(_, step)| step)
    }

    /// [`Run::failed_step`] with the key of its composition: `(composition, step id)`.
    pub fn failed_step_in(&self) -> Option<(&str, &str)> {
        if self.state.top != Top::Failed {
            return None;
        }
        let (c, s) = self.state.io.failed_step?;
        let m = &self.prog.m;
        let comp = m.compositions.get(c.index())?;
        let step = comp.steps.get(s.index())?;
        Some((m.str(comp.key), m.str(step.id)))
    }

    /// The trace lines so far (conformance README, "Trace lines"), parallel branches
    /// one after another.
    pub fn trace_lines(&self) -> Vec<String> {
        grouped(&self.state.io.trace)
            .into_iter()
            .map(|e| e.line(&self.prog.m))
            .collect()
    }

    /// The host calls so far, in walk order (parallel branches one after another);
    /// empty unless [`RunOptions::record_calls`](crate::RunOptions::record_calls) is on.
    pub fn calls(&self) -> Vec<CallRecord> {
        grouped(&self.state.io.calls).into_iter().cloned().collect()
    }

    /// The eval requests so far (`compositions.md` §9.2).
    pub fn evals(&self) -> Vec<EvalRequest> {
        let m = &self.prog.m;
        let scope = self.scope();
        let mut out = Vec::new();
        for e in grouped(&self.state.io.evals) {
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
