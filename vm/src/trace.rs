//! The run's log: compact trace entries, the optional call log, eval requests, and the
//! bookkeeping of issued calls ([`Io`]).
//!
//! Entries are written in the order things happen. Inside a parallel step the branches
//! interleave, so each entry carries its branch; [`grouped`] lists a parallel's entries
//! branch by branch, in declaration order, as the conformance README wants. Text is
//! made only when [`Run::trace_lines`](crate::Run::trace_lines) asks.

use ir_spec::{CompId, EventId, Module, PromptId, StateId, StepId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::CallRecord;
use crate::error::RunError;

/// One trace entry (conformance README, "Trace lines").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TraceEvent {
    /// `enter <state>`
    Enter(StateId),
    /// `step <id>` of a step of composition `CompId`.
    Step(CompId, StepId),
    /// `branch <id> -> <target>` (`-> -` for `None`).
    Branch(CompId, StepId, Option<StepId>),
    /// `skip <id>`
    Skip(CompId, StepId),
    /// `retry <id> <attempt>`
    Retry(CompId, StepId, u32),
    /// `guardrail <type> <where>`: guard `guard` of prompt `prompt` fired.
    Guardrail {
        /// The prompt whose guard fired.
        prompt: PromptId,
        /// The guard's index in the prompt's guards.
        guard: u32,
        /// Where the answer was made.
        at: At,
    },
    /// `transition <from> -> <to> on <event>`, with ` (redirected from <original>)`.
    Transition {
        /// The state left.
        from: StateId,
        /// The state entered.
        to: StateId,
        /// The event.
        event: EventId,
        /// The original target of a `max_visits` redirect.
        redirected: Option<StateId>,
    },
}

/// Where a model answer was made: what a `guardrail` line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum At {
    /// A composition step: its id.
    Step(CompId, StepId),
    /// A prompt state (of the workflow or a state-backed agent): its name.
    State(StateId),
    /// A plain agent member: its key (the prompt's).
    Prompt(PromptId),
}

impl At {
    /// The name the trace and the call record use.
    pub fn name<'m>(&self, m: &'m Module) -> &'m str {
        match *self {
            At::Step(c, s) => m.str(m.compositions[c.index()].steps[s.index()].id),
            At::State(s) => m
                .workflow
                .as_ref()
                .map_or("", |w| m.str(w.states[s.index()].key)),
            At::Prompt(p) => m.str(m.prompts[p.index()].key),
        }
    }
}

impl TraceEvent {
    /// The trace line.
    pub fn line(&self, m: &Module) -> String {
        let state = |s: StateId| {
            m.workflow
                .as_ref()
                .map_or("", |w| m.str(w.states[s.index()].key))
        };
        let step = |c: CompId, s: StepId| m.str(m.compositions[c.index()].steps[s.index()].id);
        match *self {
            TraceEvent::Enter(s) => format!("enter {}", state(s)),
            TraceEvent::Step(c, s) => format!("step {}", step(c, s)),
            TraceEvent::Branch(c, s, t) => {
                format!("branch {} -> {}", step(c, s), t.map_or("-", |t| step(c, t)))
            }
            TraceEvent::Skip(c, s) => format!("skip {}", step(c, s)),
            TraceEvent::Retry(c, s, n) => format!("retry {} {n}", step(c, s)),
            TraceEvent::Guardrail { prompt, guard, at } => {
                let g = &m.prompts[prompt.index()].guards[guard as usize];
                format!("guardrail {} {}", g.name, at.name(m))
            }
            TraceEvent::Transition {
                from,
                to,
                event,
                redirected,
            } => {
                let mut line = format!(
                    "transition {} -> {} on {}",
                    state(from),
                    state(to),
                    m.event(event)
                );
                if let Some(orig) = redirected {
                    line.push_str(" (redirected from ");
                    line.push_str(state(orig));
                    line.push(')');
                }
                line
            }
        }
    }
}

/// The eval requests of one completion of a step, one per id of its `modifiers.eval`
/// (expanded by [`Run::evals`](crate::Run::evals)): the output is read from the step's
/// slot while the composition's slots live, and copied once before they are reused, so
/// repeating an eval id does not repeat the copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct EvalRec {
    pub comp: CompId,
    pub step: StepId,
    #[serde(with = "crate::text::opt_value_text")]
    pub output: Option<Value>,
}

/// Issued calls, clock requests, run-wide failures and the log.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Io {
    pub next_id: u64,
    /// Calls issued since the current `resume` began.
    pub issued: u32,
    pub clock_wanted: bool,
    /// A clock reading not yet used.
    pub clock: Option<u64>,
    /// A run-wide failure: once set, nothing more is issued.
    pub fatal: Option<RunError>,
    /// The step whose failure ended the run ([`Run::failed_step`](crate::Run::failed_step)).
    /// Not saved: a snapshot of a failed run is never resumed.
    #[serde(skip)]
    pub failed_step: Option<(CompId, StepId)>,
    /// Host tool calls so far (`max_tool_calls`).
    pub tool_calls: u64,
    /// The number of parallel steps started so far: a branch's entries are tagged with
    /// it, so two parallel steps in a row stay apart.
    pub group: u32,
    pub trace: Vec<(Tag, TraceEvent)>,
    #[serde(with = "crate::text::calls_text")]
    pub calls: Vec<(Tag, CallRecord)>,
    pub evals: Vec<(Tag, EvalRec)>,
}

/// A log entry's parallel step and branch; `None` outside parallel steps.
pub(crate) type Tag = Option<(u32, u32)>;

impl Io {
    /// The log of a new run, with room for `trace` entries and `evals` eval requests.
    // Inlined so that `Run::new` builds this part in place rather than copying it.
    #[inline]
    pub fn new(trace: usize, evals: usize) -> Io {
        Io {
            trace: Vec::with_capacity(trace),
            evals: Vec::with_capacity(evals),
            ..Io::default()
        }
    }

    /// Back to a new run's, keeping the buffers.
    pub fn reset(&mut self) {
        self.next_id = 0;
        self.issued = 0;
        self.clock_wanted = false;
        self.clock = None;
        self.fatal = None;
        self.failed_step = None;
        self.tool_calls = 0;
        self.group = 0;
        self.trace.clear();
        self.calls.clear();
        self.evals.clear();
    }

    #[inline]
    pub fn trace(&mut self, branch: Option<u32>, e: TraceEvent) {
        let tag = self.tag(branch);
        self.trace.push((tag, e));
    }

    /// The tag of an entry written by `branch` of the running parallel step.
    #[inline]
    pub fn tag(&self, branch: Option<u32>) -> Tag {
        branch.map(|b| (self.group, b))
    }

    pub fn set_fatal(&mut self, e: RunError) -> RunError {
        self.fatal = Some(e.clone());
        e
    }
}

/// The items in log order, each parallel step's branch entries (a maximal run of
/// entries carrying a branch) stably ordered by branch.
pub(crate) fn grouped<T>(items: &[(Tag, T)]) -> Vec<&T> {
    let mut out: Vec<&T> = Vec::with_capacity(items.len());
    let mut i = 0;
    while i < items.len() {
        if items[i].0.is_none() {
            out.push(&items[i].1);
            i += 1;
            continue;
        }
        let start = i;
        while i < items.len() && items[i].0.is_some() {
            i += 1;
        }
        let mut run: Vec<&(Tag, T)> = items[start..i].iter().collect();
        run.sort_by_key(|(b, _)| *b);
        out.extend(run.into_iter().map(|(_, t)| t));
    }
    out
}
