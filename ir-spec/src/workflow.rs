//! The workflow state machine.

use serde::{Deserialize, Serialize};

use crate::{ArtifactId, CompId, EventId, PromptId, StateId, StrId};

/// The pack's `workflow`.
///
/// ```yaml
/// workflow:
///   entry: triage                                    # -> Workflow::entry
///   engine: {budget: {max_total_visits: 20}}         # -> Workflow::budget
///   states: {triage: {...}, done: {...}}             # -> Workflow::states
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workflow {
    /// `entry`.
    pub entry: StateId,
    /// `states`, in source order.
    pub states: Vec<State>,
    /// `engine.budget` (all `None` when absent).
    pub budget: Budget,
    /// Every artifact name any state declares, workflow-wide, in first-declared order.
    pub artifacts: Vec<StrId>,
}

/// `engine.budget`.
///
/// ```yaml
/// engine:
///   budget: {max_total_visits: 20, max_tool_calls: 5, max_wall_time_sec: 60}
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// `max_total_visits`: state entries per run, the start state included.
    pub max_total_visits: Option<u64>,
    /// `max_tool_calls`: host tool calls per run.
    pub max_tool_calls: Option<u64>,
    /// `max_wall_time_sec`: read against the host clock.
    pub max_wall_time_sec: Option<u64>,
}

/// One state of `workflow.states`.
///
/// ```yaml
/// states:
///   implement:                              # -> State::key
///     prompt_task: coder                    # -> StateBody::Prompt
///     orchestration: internal               # -> State::mode
///     on_event: {CodeReady: test}           # -> State::on_event
///     max_visits: 3                         # -> State::max_visits
///     on_max_visits: review                 # -> State::on_max_visits
///     persistence: transient                # -> State::persistent
///     artifacts: {sha: {mode: replace}}     # -> State::artifacts
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The key in `states`.
    pub key: StrId,
    /// What the state executes.
    pub body: StateBody,
    /// `orchestration` (default internal).
    pub mode: Orchestration,
    /// Terminal: `terminal: true`, or no / an empty `on_event`.
    pub terminal: bool,
    /// `on_event`, in source order.
    pub on_event: Vec<(EventId, StateId)>,
    /// `max_visits`.
    pub max_visits: Option<u64>,
    /// `on_max_visits`.
    pub on_max_visits: Option<StateId>,
    /// `persistence: persistent` (false: transient, the default, clears history on entry).
    pub persistent: bool,
    /// The artifacts this state declares, and may write.
    pub artifacts: Vec<(ArtifactId, ArtifactMode)>,
}

/// What a state executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StateBody {
    /// `prompt_task: <p>` on a non-composition state.
    Prompt(PromptId),
    /// `orchestration: composition` with `composition: <c>`.
    Composition(CompId),
}

/// `orchestration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Orchestration {
    /// `internal` (the default): only the state's own answer moves the run.
    Internal,
    /// `external`: only the caller moves the run.
    External,
    /// `hybrid`: both.
    Hybrid,
    /// `composition`: the composition output's `event` member moves the run.
    Composition,
}

/// `ArtifactDef.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArtifactMode {
    /// `replace` (default): a write replaces the value.
    Replace,
    /// `append`: a write adds an entry to a list.
    Append,
}
