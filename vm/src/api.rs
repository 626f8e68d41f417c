//! The types a host exchanges with a [`Run`](crate::Run): inputs, answers, targets,
//! error kinds, and a [`Need`] that carries no heap data.

use ir_spec::{AgentId, CompId, Module};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a run executes (`workflow.md` §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
        let unknown = |what: &str, name: &str, keys: Vec<&str>| {
            RunError::new(
                ErrorKind::Protocol,
                format!(
                    "no {what} `{name}` in target `{text}`; {}",
                    crate::suggest::choices(&format!("{what}s"), name, keys)
                ),
            )
        };
        if text == "workflow" {
            return Ok(Target::Workflow);
        }
        if let Some(name) = text.strip_prefix("agent:") {
            return module
                .agent_by_name(name)
                .map(Target::Agent)
                .ok_or_else(|| {
                    let keys = module.agents.iter().map(|a| module.str(a.key)).collect();
                    unknown("agent member", name, keys)
                });
        }
        if let Some(name) = text.strip_prefix("composition:") {
            return module
                .composition_by_name(name)
                .map(Target::Composition)
                .ok_or_else(|| {
                    let keys = module.compositions.iter().map(|c| module.str(c.key));
                    unknown("composition", name, keys.collect())
                });
        }
        Err(RunError::new(
            ErrorKind::Protocol,
            format!("target `{text}` is not `workflow`, `agent:<member>` or `composition:<name>`"),
        ))
    }
}

/// How a run starts: host variables, the call log, and the embedder's limits.
///
/// The limits guard a run against a misbehaving or hostile host or caller. Past one, the
/// run fails with `limit_exceeded` and a message naming the field (a run-wide failure,
/// not a step's `host_error`). A restored run keeps the options it started with (its
/// snapshot carries them).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Host variables: template variables the host supplies (`workflow.md` §14). Each is
    /// a value held to `max_value_bytes` and `max_value_depth`
    /// ([`Run::new`](crate::Run::new) refuses one past them with `limit_exceeded`).
    pub host_variables: Map<String, Value>,
    /// The embedder's cap on host calls (model and tool calls) per run: the call past it
    /// fails the run with `limit_exceeded`, as a run-wide failure. `None` (the default):
    /// no cap.
    pub max_host_calls: Option<u64>,
    /// The largest value the host may hand in: a turn's input, an answer (its output and
    /// event, its tool requests, or its error message), an event name, a host
    /// variable. Counted as one per JSON value plus the bytes of every string and object
    /// key, by a walk that stops once past the limit (16 MiB by default,
    /// [`DEFAULT_MAX_VALUE_BYTES`](crate::limits::DEFAULT_MAX_VALUE_BYTES)). The walk
    /// costs about 40 instructions per JSON value; a host that trusts its values sets
    /// this and `max_value_depth` to `usize::MAX`, and nothing is walked.
    pub max_value_bytes: usize,
    /// The deepest nesting of arrays and objects in a value the host hands in (64 by
    /// default). Values are walked, cloned and written to snapshots recursively, and a
    /// snapshot's JSON texts are read back with serde_json's limit of 128 levels: keep
    /// this well below that.
    pub max_value_depth: usize,
    /// The largest snapshot [`Run::try_snapshot`](crate::Run::try_snapshot) writes (64
    /// MiB by default); [`Run::restore_with`](crate::Run::restore_with) refuses larger
    /// bytes by the restorer's own value of it.
    pub max_snapshot_bytes: usize,
    /// The most text a call's input or system prompt may build (16 MiB by default,
    /// [`DEFAULT_MAX_BUILT_BYTES`](crate::limits::DEFAULT_MAX_BUILT_BYTES)): the bytes of
    /// the rendered `system_template`, and of the text form (`compositions.md` §3.6) of a
    /// step's `input` or `args` when the binding builds a value (an interpolation, an
    /// array or object) rather than naming one. A template repeating `{{input}}` or a
    /// binding repeating `${input}` would otherwise build copies of a large value without
    /// bound. Both are measured when the step starts, without building them; past the
    /// limit the run fails with `limit_exceeded` before the call is issued, so a host
    /// never builds more. `usize::MAX` measures nothing.
    pub max_built_bytes: usize,
    /// The most tool calls one model answer may start in an agent step or a prompt
    /// state's tool loop (64 by default,
    /// [`DEFAULT_MAX_TOOL_CALLS_PER_ANSWER`](crate::limits::DEFAULT_MAX_TOOL_CALLS_PER_ANSWER)).
    /// The requests of an answer past this many are not issued: each gets an error
    /// result the model reads on its next turn, so one answer asking for thousands of
    /// calls starts at most this many. The pack's own `max_tool_calls_per_turn` and
    /// `max_tool_calls` budgets apply as well.
    pub max_tool_calls_per_answer: usize,
    /// Keep the call log ([`Run::calls`](crate::Run::calls)): every call's prompt or
    /// tool, its materialized input and rendered system prompt. Off, a run records
    /// nothing per call (what benchmarks and production hosts want).
    pub record_calls: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        use crate::limits::*;
        RunOptions {
            host_variables: Map::new(),
            max_host_calls: None,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            max_value_depth: DEFAULT_MAX_VALUE_DEPTH,
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            max_built_bytes: DEFAULT_MAX_BUILT_BYTES,
            max_tool_calls_per_answer: DEFAULT_MAX_TOOL_CALLS_PER_ANSWER,
            record_calls: false,
        }
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

/// What a run needs next, returned by [`Run::resume`](crate::Run::resume). It carries
/// no data: the host reads the calls with [`Run::pending`](crate::Run::pending) and the
/// outcome with [`Run::outcome`](crate::Run::outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// New calls were issued (they are among [`Run::pending`](crate::Run::pending), in
    /// issue order). Answer each outstanding call, one at a time, in any order.
    Calls,
    /// Nothing new was issued: answer one of the calls still outstanding.
    Wait,
    /// Read the host clock and resume with [`Input::Clock`] before anything else.
    Clock,
    /// The run is idle: resume with the caller's [`Input::Turn`], [`Input::Event`] or
    /// [`Input::Finish`].
    Caller,
    /// The run ended without error; see [`Run::outcome`](crate::Run::outcome).
    Done,
}

/// How a run ended without error, borrowed from the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome<'r> {
    /// The last output: of the last executed state, agent turn or composition
    /// (`null` when nothing executed).
    pub output: &'r Value,
    /// The last turn's reply: the non-empty string outputs of the states (or agent turn,
    /// or composition) executed in it, in order, joined with one blank line (`"\n\n"`);
    /// empty when none was a non-empty string (RFC 0014 reply assembly).
    pub reply: &'r str,
    /// The workflow state the run ended in; `None` without a workflow.
    pub state: Option<&'r str>,
}

impl Outcome<'_> {
    /// An owned copy, to keep beyond the run's borrow.
    pub fn into_owned(self) -> OwnedOutcome {
        OwnedOutcome {
            output: self.output.clone(),
            reply: self.reply.to_owned(),
            state: self.state.map(str::to_owned),
        }
    }
}

/// An owned copy of an [`Outcome`] (what [`drive`](crate::driver::drive) returns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnedOutcome {
    /// The last output (see [`Outcome::output`]).
    pub output: Value,
    /// The last turn's reply (see [`Outcome::reply`]).
    #[serde(default)]
    pub reply: String,
    /// The workflow state the run ended in; `None` without a workflow.
    pub state: Option<String>,
}

/// Identifies an issued host call; answers name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CallId(pub u64);

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

/// A call as the run records it when [`RunOptions::record_calls`] is on, for `calls`
/// (`compositions.md` §12): in walk order, parallel branches one after another.
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
        /// The effective provider key (`later-versions.md` §3); `None` for `default`.
        provider: Option<String>,
    },
    /// A tool call.
    Tool {
        /// The tool key.
        tool: String,
        /// The arguments.
        args: Value,
    },
    /// An extension step's call.
    Extension {
        /// The step's `kind`, `vendor.name`.
        extension: String,
        /// The resolved input.
        input: Value,
        /// The step's other members.
        params: Value,
    },
    /// A host validator's `guard` call.
    Guard {
        /// The validator's `type`.
        validator: String,
        /// Its `params`.
        params: Value,
        /// The text it judges.
        text: String,
    },
    /// Not a host call: a validator fired on the answer of the model call before it (or,
    /// with `direction: input`, on the input of a call that was then not made).
    Guardrail {
        /// The validator's `type`, as written in the pack.
        validator: String,
        /// The step id, the state name, or the plain agent member's key.
        at: String,
        /// What it did.
        action: crate::GuardAction,
        /// The length of the text it read, in characters.
        length: u64,
    },
}

impl CallRecord {
    /// The record as the case format writes it: `{prompt, input, system, provider?}`
    /// (`provider` omitted for `default`), `{tool, args}`, `{extension, input, params}`,
    /// `{guard, params, text}` or `{guardrail, at, action, length}`.
    pub fn to_json(&self) -> Value {
        match self {
            CallRecord::Model {
                prompt,
                input,
                system,
                provider,
            } => {
                let mut v = serde_json::json!({"prompt": prompt, "input": input, "system": system});
                if let Some(p) = provider {
                    v["provider"] = Value::String(p.clone());
                }
                v
            }
            CallRecord::Tool { tool, args } => serde_json::json!({"tool": tool, "args": args}),
            CallRecord::Guard {
                validator,
                params,
                text,
            } => serde_json::json!({"guard": validator, "params": params, "text": text}),
            CallRecord::Extension {
                extension,
                input,
                params,
            } => serde_json::json!({"extension": extension, "input": input, "params": params}),
            CallRecord::Guardrail {
                validator,
                at,
                action,
                length,
            } => serde_json::json!({
                "guardrail": validator, "at": at, "action": action.as_str(), "length": length
            }),
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
    /// `guardrail_blocked`: a validator triggered on a structured answer (the call has an
    /// `output_schema`, or the answer is JSON), which is never rewritten. Retried by a
    /// `retry` modifier like a host error.
    GuardrailBlocked,
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
            ErrorKind::GuardrailBlocked => "guardrail_blocked",
            ErrorKind::Protocol => "protocol",
        }
    }
}

/// A run-time error: the run has ended (except for `protocol` errors, which leave the
/// run as it was).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
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
