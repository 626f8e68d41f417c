//! The types a host exchanges with a [`Run`](crate::Run): inputs, answers, targets,
//! call records, and a [`Need`] that carries no heap data.

use ir_spec::{AgentId, CompId, Module};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorKind, RunError};

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
                ErrorKind::InvalidTarget,
                format!(
                    "no {what} `{name}` in target `{text}`; {}",
                    crate::suggest::choices(&format!("{what}s"), name, keys)
                ),
            )
        };
        if text == "workflow" {
            if module.workflow.is_none() {
                return Err(no_workflow(module));
            }
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
        // A bare name: the composition or agent member it names, if one does.
        let named = if module.composition_by_name(text).is_some() {
            format!("; did you mean `composition:{text}`?")
        } else if module.agent_by_name(text).is_some() {
            format!("; did you mean `agent:{text}`?")
        } else {
            String::new()
        };
        Err(RunError::new(
            ErrorKind::InvalidTarget,
            format!(
                "target `{text}` is not `workflow`, `agent:<member>` or `composition:<name>`{named}"
            ),
        ))
    }
}

/// `workflow` named as the target of a module without one: what to name instead.
#[cold]
fn no_workflow(module: &Module) -> RunError {
    let names = |prefix: &str, keys: Vec<&str>| {
        keys.into_iter()
            .map(|k| format!("`{prefix}:{k}`"))
            .collect::<Vec<_>>()
    };
    let mut others = names(
        "composition",
        module
            .compositions
            .iter()
            .map(|c| module.str(c.key))
            .collect(),
    );
    others.extend(names(
        "agent",
        module.agents.iter().map(|a| module.str(a.key)).collect(),
    ));
    let hint = match others.len() {
        0 => "it has nothing to run".to_owned(),
        1 => format!("run {} instead", others[0]),
        _ => format!("name one of: {}", others.join(", ")),
    };
    RunError::new(
        ErrorKind::InvalidTarget,
        format!("the target is `workflow`, but this pack has no workflow; {hint}"),
    )
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
    /// The tool key: a key of the pack's `tools` or `agents.members`, as the call offers
    /// it ([`OfferedTool::key`](crate::OfferedTool::key) of
    /// [`CallView::offered_tools`](crate::CallView::offered_tools)), not the function name
    /// a model API shows the model ([`OfferedTool::name`](crate::OfferedTool::name)): a
    /// host maps the model's name back. A name the call did not offer is not called; its
    /// tool result is `{"name", "error": "tool not available"}`, which the model reads on
    /// its next turn.
    pub name: String,
    /// The arguments.
    pub args: Value,
}

/// A call as the run records it when [`RunOptions::record_calls`](crate::RunOptions::record_calls) is on, for `calls`
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
        action: crate::guard::GuardAction,
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
