//! A lane's state: its job, where it is ([`Phase`]), and the model/tool loop's
//! transcript. Plain data, saved as it is in a snapshot.

use ir_spec::{PromptId, StateId, StepId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{CallId, ToolRequest};
use crate::error::RunError;

/// What a lane executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Job {
    /// A leaf step of the running composition.
    Step(StepId),
    /// A prompt execution: a prompt state (`events`: the state, when its answer may name
    /// an event) or a plain agent member.
    Prompt {
        prompt: PromptId,
        events: Option<StateId>,
    },
}

/// Which call a lane issues or waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Call {
    /// A model call.
    Model,
    /// A tool step's call.
    ToolStep,
    /// A tool call a model turn requested: request `req` of transcript entry `block`;
    /// `finish`: it names the step's `termination.tool_called`.
    LoopTool { block: u32, req: u32, finish: bool },
    /// An extension step's `extension` call (`later-versions.md` §5).
    Extension,
    /// A host validator's call: guard `guard` of the model call's prompt judges the
    /// answer held in [`Lane::result`], or (`input`) the call's input.
    Guard { guard: u32, input: bool },
}

impl Call {
    pub(crate) fn is_tool(self) -> bool {
        matches!(self, Call::ToolStep | Call::LoopTool { .. })
    }
}

/// The checks before a call is issued (`workflow.md` §10): the tool-call budget, the
/// wall clock, then the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Stage {
    Budget,
    Clock,
    Final,
}

/// Where a lane is. Plain data without drop glue: the values a lane produces live in
/// [`Lane::result`], so moving between phases is a store of a few bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Phase {
    /// Not started: the `step` line, bindings and the prompt check come first.
    Start,
    /// About to issue a call.
    Issue(Stage, Call),
    /// Waiting for the answer to a call.
    Waiting(CallId, Call),
    /// Finished: see [`Lane::result`] and [`Lane::event`].
    Done,
}

/// A tool result fed back to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum ToolResult {
    Output(#[serde(with = "crate::text::value_text")] Value),
    Error(String),
    /// A tool the call may not use (`tool not available`).
    NotAvailable,
    /// Past `max_tool_calls_per_turn`.
    LimitReached,
}

/// An entry of a loop's transcript: a model turn's requests, or one request's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum TEntry {
    Requests(#[serde(with = "crate::text::requests_text")] Vec<ToolRequest>),
    Result {
        block: u32,
        req: u32,
        result: ToolResult,
    },
}

/// The model/tool loop's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoopState {
    /// The model call being made or answered, from 1.
    pub turn: u32,
    /// Host tool calls made in this execution.
    pub made: u32,
    /// This execution's tool requests and results so far.
    pub transcript: Vec<TEntry>,
    /// The transcript entry holding the requests being handled.
    pub block: u32,
    /// The next request of that entry to handle.
    pub next_req: u32,
    /// The transcript index of a successful `tool_called` result.
    pub finished: Option<u32>,
}

/// One lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Lane {
    /// Inside a parallel step, the branch's 0-based declaration index.
    pub branch: Option<u32>,
    pub job: Job,
    /// The attempt, from 1 (retry modifier).
    pub attempt: u32,
    pub phase: Phase,
    /// Once done: the output, or the lane's error.
    #[serde(with = "crate::text::opt_result_text")]
    pub result: Option<Result<Value, RunError>>,
    /// Once done: a prompt state's event.
    pub event: Option<String>,
    pub lp: LoopState,
}

impl Lane {
    /// Makes this lane a fresh one for `job`, keeping its buffers.
    #[inline]
    pub fn reset(&mut self, job: Job, branch: Option<u32>) {
        self.branch = branch;
        self.job = job;
        self.attempt = 1;
        self.phase = Phase::Start;
        self.result = None;
        self.event = None;
        self.lp.turn = 1;
        self.lp.made = 0;
        self.lp.transcript.clear();
        self.lp.block = 0;
        self.lp.next_req = 0;
        self.lp.finished = None;
    }

    /// Finishes the lane with `result` (and a prompt state's `event`).
    #[inline]
    pub fn done(&mut self, result: Result<Value, RunError>, event: Option<String>) {
        self.result = Some(result);
        self.event = event;
        self.phase = Phase::Done;
    }

    /// Keeps the lane's buffers for the next run of a reset [`Run`](crate::Run), waiting
    /// for nothing: a call of the previous run is not outstanding in the next one.
    pub fn park(&mut self) {
        self.reset(self.job, None);
        self.phase = Phase::Done;
    }

    /// A lane for `job`, in a parallel step's `branch`.
    pub fn new(job: Job, branch: Option<u32>) -> Lane {
        Lane {
            branch,
            job,
            attempt: 1,
            phase: Phase::Start,
            result: None,
            event: None,
            lp: LoopState {
                turn: 1,
                ..LoopState::default()
            },
        }
    }
}

/// Makes the lanes `jobs`, reusing the lanes (and their buffers) already there.
pub(crate) fn set_lanes(
    lanes: &mut Vec<Lane>,
    jobs: impl ExactSizeIterator<Item = (Job, Option<u32>)>,
) {
    let n = jobs.len();
    for (i, (job, branch)) in jobs.enumerate() {
        match lanes.get_mut(i) {
            Some(lane) => lane.reset(job, branch),
            None => lanes.push(Lane::new(job, branch)),
        }
    }
    lanes.truncate(n);
}
