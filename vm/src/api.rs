//! The types a host exchanges with a [`Run`](crate::Run).

use ir_spec::{AgentId, CompId, Module, OutputSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a run executes (`workflow.md` §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `workflow`: start at `workflow.entry`.
    Workflow,
    /// `agent:<member>`: a state-backed or plain agent member.
    Agent(AgentId),
    /// `composition:<name>`: the composition alone, each turn anew.
    Composition(CompId),
}

impl Target {
    /// Parses `workflow`, `agent:<member>` or `composition:<name>` against `module`.
    pub fn parse(module: &Module, text: &str) -> Result<Target, RunError> {
        let unknown = |what: &str, name: &str| {
            RunError::new(
                ErrorKind::Protocol,
                format!("unknown {what} `{name}` in target `{text}`"),
            )
        };
        if text == "workflow" {
            return Ok(Target::Workflow);
        }
        if let Some(name) = text.strip_prefix("agent:") {
            return module
                .agent_by_name(name)
                .map(Target::Agent)
                .ok_or_else(|| unknown("agent member", name));
        }
        if let Some(name) = text.strip_prefix("composition:") {
            return module
                .composition_by_name(name)
                .map(Target::Composition)
                .ok_or_else(|| unknown("composition", name));
        }
        Err(RunError::new(
            ErrorKind::Protocol,
            format!("target `{text}` is not `workflow`, `agent:<member>` or `composition:<name>`"),
        ))
    }
}

/// What the host hands a run in [`Run::resume`](crate::Run::resume).
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// The first resume of a run.
    Start,
    /// The caller's next turn, carrying its input (after [`Need::Caller`]).
    Turn(Value),
    /// The caller's next event (after [`Need::Caller`]).
    Event(String),
    /// The caller is done (after [`Need::Caller`]): the run ends with [`Need::Done`].
    Finish,
    /// The answer to the outstanding call `id`.
    Answer(CallId, Answer),
    /// A clock reading in milliseconds (after [`Need::Clock`]).
    Clock(u64),
}

/// What a run needs next, returned by [`Run::resume`](crate::Run::resume).
#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// These calls were just issued, in issue order. Answer each outstanding call, one at
    /// a time, in any order, with [`Input::Answer`].
    Calls(Vec<HostCall>),
    /// Nothing new was issued: answer one of the calls still outstanding.
    Wait,
    /// Read the host clock and resume with [`Input::Clock`] before anything else.
    Clock,
    /// The run is idle: resume with the caller's [`Input::Turn`], [`Input::Event`] or
    /// [`Input::Finish`].
    Caller,
    /// The run ended without error.
    Done(Outcome),
}

/// How a run ended without error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The last output: of the last executed state, agent turn or composition
    /// (`null` when nothing executed).
    pub output: Value,
    /// The workflow state the run ended in; `None` without a workflow.
    pub state: Option<String>,
}

/// Identifies an issued host call; answers name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CallId(pub u64);

/// One host import call (`workflow.md` §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostCall {
    /// The id an answer must name.
    pub id: CallId,
    /// Inside a parallel step, the 0-based declaration index of the branch that issued
    /// the call; `None` elsewhere. Scripted hosts answer the lowest branch first.
    pub branch: Option<u32>,
    /// What is called.
    pub call: Call,
}

/// A model call or a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Call {
    /// A model call.
    Model(ModelCall),
    /// A tool call.
    Tool(ToolCall),
}

/// The model call's arguments (`workflow.md` §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// The `prompt_task` (the prompt's key).
    pub prompt: String,
    /// The rendered `system_template`.
    pub system: String,
    /// The turn input, or a composition step's resolved input.
    pub input: Value,
    /// Earlier exchanges (`{input, output}` pairs), then this execution's tool requests
    /// and results (`{tool_calls}` / `{tool_result}` entries).
    pub history: Vec<Value>,
    /// The offered tools.
    pub tools: Vec<OfferedTool>,
    /// The events the answer may name (empty when it may name none).
    pub events: Vec<String>,
    /// A composition step's output schema.
    pub output_schema: Option<OutputSchema>,
}

/// A tool offered to a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OfferedTool {
    /// The key a `tool_calls[].name` must use: a key of `tools` or of `agents.members`.
    pub key: String,
    /// The function name a real model host shows the model.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// The tool's parameter schema (null for an agent member).
    pub parameters: Value,
}

/// A tool call's arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool key (or agent member key).
    pub tool: String,
    /// The arguments.
    pub args: Value,
}

/// A host's answer to a call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// `output` and, for a model call, maybe an `event`.
    Output {
        /// The value.
        output: Value,
        /// The event named by a prompt state's answer.
        event: Option<String>,
    },
    /// A model turn asking for tools (must be non-empty).
    ToolCalls(Vec<ToolRequest>),
    /// The call failed.
    Error(String),
}

/// One requested tool call in a model answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The tool key.
    pub name: String,
    /// The arguments.
    pub args: Value,
}

/// A call as the run records it, for `calls` (`compositions.md` §12): model calls and
/// tool calls in walk order, parallel branches one after another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CallRecord {
    /// A model call.
    Model {
        /// The prompt key.
        prompt: String,
        /// The input.
        input: Value,
        /// The rendered system template.
        system: String,
    },
    /// A tool call.
    Tool {
        /// The tool key.
        tool: String,
        /// The arguments.
        args: Value,
    },
}

impl CallRecord {
    /// The record as the case format writes it: `{prompt, input, system}` or `{tool, args}`.
    pub fn to_json(&self) -> Value {
        match self {
            CallRecord::Model {
                prompt,
                input,
                system,
            } => {
                serde_json::json!({"prompt": prompt, "input": input, "system": system})
            }
            CallRecord::Tool { tool, args } => serde_json::json!({"tool": tool, "args": args}),
        }
    }
}

/// An eval request (`compositions.md` §9.2): emitted when a step with `modifiers.eval`
/// completes; never a host call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRequest {
    /// The step id.
    pub step: String,
    /// The eval id.
    pub eval: String,
    /// The step output.
    pub output: Value,
}

/// The kinds of run-time error (conformance README, "Runtime error kinds").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorKind {
    /// `host_error`
    HostError,
    /// `unresolved_binding`
    UnresolvedBinding,
    /// `type_error`
    TypeError,
    /// `invalid_event`
    InvalidEvent,
    /// `terminal_state`
    TerminalState,
    /// `max_visits_exceeded`
    MaxVisitsExceeded,
    /// `budget_exhausted`
    BudgetExhausted,
    /// `agent_step_limit`
    AgentStepLimit,
    /// `invalid_variable`
    InvalidVariable,
    /// `no_output`
    NoOutput,
    /// `limit_exceeded`
    LimitExceeded,
    /// Not a pack error: the host broke the resume protocol (an answer to no outstanding
    /// call, an input the run did not ask for), or the module is invalid.
    Protocol,
}

impl ErrorKind {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::HostError => "host_error",
            ErrorKind::UnresolvedBinding => "unresolved_binding",
            ErrorKind::TypeError => "type_error",
            ErrorKind::InvalidEvent => "invalid_event",
            ErrorKind::TerminalState => "terminal_state",
            ErrorKind::MaxVisitsExceeded => "max_visits_exceeded",
            ErrorKind::BudgetExhausted => "budget_exhausted",
            ErrorKind::AgentStepLimit => "agent_step_limit",
            ErrorKind::InvalidVariable => "invalid_variable",
            ErrorKind::NoOutput => "no_output",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::Protocol => "protocol",
        }
    }
}

/// A run-time error: the run has ended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct RunError {
    /// The kind.
    pub kind: ErrorKind,
    /// What happened.
    pub message: String,
}

impl RunError {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        RunError {
            kind,
            message: message.into(),
        }
    }
}
