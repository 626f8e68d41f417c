//! [`CallView`]: an outstanding host call, described by borrowing from the run and the
//! module. Nothing is copied until the host asks: the input is a [`BoundInput`] that
//! borrows a whole referenced value and builds templates or objects only on
//! [`BoundInput::to_value`]; the system prompt renders into the host's buffer.

use std::borrow::Cow;

use ir_spec::{OutputSchema, StepKind, ToolRef};
use serde_json::{json, Value};

use crate::api::{CallId, CallRecord};
use crate::ctx::Ctx;
use crate::job::{Call, Job, Lane, TEntry, ToolResult};
use crate::value::{BVal, VRef};

/// One outstanding host call (`workflow.md` §1), borrowed from the run.
#[derive(Clone, Copy)]
pub struct CallView<'r> {
    ctx: Ctx<'r>,
    lane: &'r Lane,
    id: CallId,
    call: Call,
}

/// A model call's or tool call's input, borrowed from the run.
#[derive(Clone, Copy)]
pub struct BoundInput<'r>(pub(crate) BVal<'r>);

impl<'r> BoundInput<'r> {
    /// The value, borrowed when the input is one value that already exists (a turn
    /// input, a constant, a whole `${...}` reference to a plain value); built otherwise.
    pub fn as_value(&self) -> Cow<'r, Value> {
        self.0.as_cow()
    }

    /// The value, borrowed without building anything; `None` when it must be built.
    pub fn borrowed(&self) -> Option<&'r Value> {
        match self.0.norm() {
            Some(BVal::V(v)) => v.real(),
            _ => None,
        }
    }

    /// A copy of the value.
    pub fn to_value(&self) -> Value {
        self.as_value().into_owned()
    }

    /// Appends the value's text form (`compositions.md` §3.6), as a template would.
    pub fn write_text(&self, out: &mut String) {
        self.0.write_text(out);
    }
}

impl std::fmt::Debug for BoundInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BoundInput({})", self.as_value())
    }
}

/// A host validator's `guard` call, borrowed from the run ([`CallView::guard`]).
#[derive(Clone, Debug)]
pub struct GuardCall<'r> {
    /// The validator's `type`, as written in the pack.
    pub validator: &'r str,
    /// Its `params` as JSON text (`{}` when absent).
    pub params: &'r ir_spec::JsonText,
    /// The text to judge: a string answer (or input) as it is, another answer in
    /// compact JSON.
    pub text: Cow<'r, str>,
    /// Where the answer was made: the step id, state name or agent member key (as in
    /// the trace line `guardrail <type> <where>`).
    pub at: &'r str,
    /// What a failing verdict (or a failed call) does to the run.
    pub effect: crate::GuardEffect,
}

/// A tool offered to a model, borrowed from the module.
#[derive(Clone, Copy, Debug)]
pub struct OfferedTool<'r> {
    /// The key a `tool_calls[].name` must use: a key of `tools` or of `agents.members`.
    pub key: &'r str,
    /// The function name a real model host shows the model.
    pub name: &'r str,
    /// The tool's description.
    pub description: &'r str,
    /// The tool's parameter schema as JSON text; `None` for an agent member.
    pub parameters: Option<&'r ir_spec::JsonText>,
}

impl<'r> CallView<'r> {
    pub(crate) fn new(ctx: Ctx<'r>, lane: &'r Lane, id: CallId, call: Call) -> CallView<'r> {
        CallView {
            ctx,
            lane,
            id,
            call,
        }
    }

    /// The id an answer must name.
    pub fn id(&self) -> CallId {
        self.id
    }

    /// Inside a parallel step, the 0-based declaration index of the branch that issued
    /// the call; `None` elsewhere. Scripted hosts answer the lowest branch first.
    pub fn branch(&self) -> Option<u32> {
        self.lane.branch
    }

    /// Whether this is a model call (else a tool call).
    pub fn is_model(&self) -> bool {
        matches!(self.call, Call::Model)
    }

    /// A model call's `prompt_task` (the prompt's key).
    pub fn prompt_task(&self) -> Option<&'r str> {
        if !self.is_model() {
            return None;
        }
        let p = self.ctx.model_env(self.lane.job)?.prompt;
        Some(self.ctx.prog.prompt_key(p))
    }

    /// A model call's effective provider key (`later-versions.md` §3): the step's
    /// `provider`, else its prompt's, else `default`. Resolved at compile time; reading it
    /// allocates nothing.
    pub fn provider(&self) -> Option<&'r str> {
        if !self.is_model() {
            return None;
        }
        Some(self.ctx.provider(self.lane.job))
    }

    /// A model call's prompt `parameters` (temperature, max_tokens, …; `null` when the
    /// prompt sets none), for a host making the real call.
    pub fn parameters(&self) -> Option<&'r ir_spec::JsonText> {
        if !self.is_model() {
            return None;
        }
        let p = self.ctx.model_env(self.lane.job)?.prompt;
        Some(&self.ctx.prog.module().prompts[p.index()].parameters)
    }

    /// A tool call's tool key (or agent member key).
    pub fn tool(&self) -> Option<&'r str> {
        match self.call {
            Call::Model => None,
            Call::ToolStep => match self.lane.job {
                Job::Step(s) => match self.ctx.step_kind(s) {
                    StepKind::Tool { tool, .. } => {
                        Some(self.ctx.prog.m.str(self.ctx.prog.m.tools[tool.index()].key))
                    }
                    _ => None,
                },
                Job::Prompt { .. } => None,
            },
            Call::LoopTool { block, req, .. } => self.request(block, req).map(|r| r.name.as_str()),
            Call::Guard { .. } | Call::Extension => None,
        }
    }

    /// An extension step's `extension` call (`later-versions.md` §5): its `kind`
    /// (`vendor.name`) and `params` (the step's other members, a JSON object). The
    /// resolved `input` is [`CallView::input`]; the answer's output is the step's output.
    pub fn extension(&self) -> Option<(&'r str, &'r ir_spec::JsonText)> {
        let (Call::Extension, Job::Step(s)) = (self.call, self.lane.job) else {
            return None;
        };
        match self.ctx.step_kind(s) {
            StepKind::Extension { kind, params, .. } => Some((kind, params)),
            _ => None,
        }
    }

    /// A host validator's `guard` call (`later-versions.md` §4): the validator's type,
    /// params and the text to judge. The host answers with the output `{pass: bool}`;
    /// a failed or malformed answer counts as the validator triggering.
    pub fn guard(&self) -> Option<GuardCall<'r>> {
        let Call::Guard { guard, input } = self.call else {
            return None;
        };
        let prompt = self.ctx.model_prompt(self.lane.job)?;
        let g = &self.ctx.prog.m.prompts[prompt.index()].guards[guard as usize];
        let params = match &g.check {
            ir_spec::Check::Host { params } => params,
            _ => return None,
        };
        let structured = crate::ctx::has_schema(&self.ctx, self.lane.job)
            || !matches!(self.lane.result, Some(Ok(Value::String(_))));
        let effect = match (input, structured) {
            (true, _) => crate::GuardEffect::InputReplaced,
            (false, false) => crate::GuardEffect::Replaced,
            (false, true) => crate::GuardEffect::Blocked,
        };
        let at = crate::ctx::at(&self.ctx, self.lane, prompt).name(&self.ctx.prog.m);
        let text = if input {
            self.ctx
                .model_env(self.lane.job)
                .and_then(|env| match env.input.as_cow() {
                    Cow::Borrowed(Value::String(s)) => Some(Cow::Borrowed(s.as_str())),
                    Cow::Owned(Value::String(s)) => Some(Cow::Owned(s)),
                    _ => None,
                })
                .unwrap_or_default()
        } else {
            match &self.lane.result {
                Some(Ok(Value::String(s))) => Cow::Borrowed(s.as_str()),
                Some(Ok(v)) => Cow::Owned(v.to_string()),
                _ => Cow::Borrowed(""),
            }
        };
        Some(GuardCall {
            validator: &g.name,
            params,
            text,
            at,
            effect,
        })
    }

    fn request(&self, block: u32, req: u32) -> Option<&'r crate::api::ToolRequest> {
        match self.lane.lp.transcript.get(block as usize)? {
            TEntry::Requests(reqs) => reqs.get(req as usize),
            TEntry::Result { .. } => None,
        }
    }

    /// The model call's input (the turn input, or the step's resolved input), the tool
    /// call's arguments, or an extension call's resolved input.
    pub fn input(&self) -> BoundInput<'r> {
        let null = BoundInput(BVal::V(VRef::Val(&Value::Null)));
        match self.call {
            Call::Model => self
                .ctx
                .model_env(self.lane.job)
                .map_or(null, |env| BoundInput(env.input)),
            Call::ToolStep => match self.lane.job {
                Job::Step(s) => match self.ctx.step_kind(s) {
                    StepKind::Tool { args, .. } => BoundInput(BVal::Bind(args, self.ctx.scope())),
                    _ => null,
                },
                Job::Prompt { .. } => null,
            },
            Call::LoopTool { block, req, .. } => self
                .request(block, req)
                .map_or(null, |r| BoundInput(BVal::V(VRef::Val(&r.args)))),
            Call::Guard { .. } => null,
            Call::Extension => match self.lane.job {
                Job::Step(s) => match self.ctx.step_kind(s) {
                    StepKind::Extension { input, .. } => {
                        BoundInput(BVal::Bind(input, self.ctx.scope()))
                    }
                    _ => null,
                },
                Job::Prompt { .. } => null,
            },
        }
    }

    /// Renders a model call's `system_template` into `out` (appending). The prompt was
    /// checked before the call was issued, so this cannot fail; a tool call writes
    /// nothing.
    pub fn write_system(&self, out: &mut String) {
        if !self.is_model() {
            return;
        }
        if let Some(env) = self.ctx.model_env(self.lane.job) {
            let mark = out.len();
            if env.run(Some(out)).is_err() {
                out.truncate(mark);
            }
        }
    }

    /// The rendered system prompt, as a new string.
    pub fn system(&self) -> String {
        let mut s = String::new();
        self.write_system(&mut s);
        s
    }

    /// The offered tools of a model call, borrowed from the module (empty for a prompt
    /// step and for tool calls).
    pub fn offered(&self) -> &'r [ToolRef] {
        if !self.is_model() {
            return &[];
        }
        match self.lane.job {
            Job::Prompt { prompt, .. } => &self.ctx.prog.m.prompts[prompt.index()].tools,
            Job::Step(s) => match self.ctx.step_kind(s) {
                StepKind::Agent { tools, .. } => tools,
                _ => &[],
            },
        }
    }

    /// The offered tool definitions of a model call.
    pub fn offered_tools(&self) -> impl Iterator<Item = OfferedTool<'r>> + 'r {
        let m = &self.ctx.prog.m;
        self.offered().iter().map(move |t| match t {
            ToolRef::Tool(id) => {
                let tool = &m.tools[id.index()];
                OfferedTool {
                    key: m.str(tool.key),
                    name: &tool.name,
                    description: &tool.description,
                    parameters: Some(&tool.parameters),
                }
            }
            ToolRef::Member(k) => OfferedTool {
                key: m.str(*k),
                name: m.str(*k),
                description: "",
                parameters: None,
            },
        })
    }

    /// The events the answer may name (a prompt state's `on_event` keys; none elsewhere).
    pub fn events(&self) -> impl Iterator<Item = &'r str> + 'r {
        let m = &self.ctx.prog.m;
        let list: &'r [(ir_spec::EventId, ir_spec::StateId)] = match (self.lane.job, self.call) {
            (
                Job::Prompt {
                    events: Some(s), ..
                },
                Call::Model,
            ) => m
                .workflow
                .as_ref()
                .map_or(&[], |w| w.states[s.index()].on_event.as_slice()),
            _ => &[],
        };
        list.iter().map(move |(e, _)| m.event(*e))
    }

    /// A composition step's output schema.
    pub fn output_schema(&self) -> Option<&'r OutputSchema> {
        if !self.is_model() {
            return None;
        }
        match self.lane.job {
            Job::Step(s) => match self.ctx.step_kind(s) {
                StepKind::Prompt { output_schema, .. } | StepKind::Agent { output_schema, .. } => {
                    output_schema.as_ref()
                }
                _ => None,
            },
            Job::Prompt { .. } => None,
        }
    }

    /// A model call's history (`workflow.md` §12), built on request: earlier exchanges
    /// (`{input, output}`), then this execution's tool requests (`{tool_calls}`) and
    /// results (`{tool_result}`).
    pub fn history(&self) -> Vec<Value> {
        if !self.is_model() {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let Job::Prompt { .. } = self.lane.job {
            for e in self.ctx.history {
                out.push(json!({"input": e.input, "output": e.output}));
            }
        }
        for e in &self.lane.lp.transcript {
            out.push(match e {
                TEntry::Requests(reqs) => json!({"tool_calls": reqs
                    .iter()
                    .map(|r| json!({"name": r.name, "args": r.args}))
                    .collect::<Vec<_>>()}),
                TEntry::Result { block, req, result } => {
                    let name = self.request(*block, *req).map_or("", |r| r.name.as_str());
                    match result {
                        ToolResult::Output(v) => {
                            json!({"tool_result": {"name": name, "output": v}})
                        }
                        ToolResult::Error(e) => json!({"tool_result": {"name": name, "error": e}}),
                        ToolResult::NotAvailable => {
                            json!({"tool_result": {"name": name, "error": "tool not available"}})
                        }
                        ToolResult::LimitReached => json!({"tool_result": {
                            "name": name, "error": "tool call limit for this turn reached"}}),
                    }
                }
            });
        }
        out
    }

    /// The call as the call log records it.
    pub fn record(&self) -> CallRecord {
        if let Some((kind, params)) = self.extension() {
            return CallRecord::Extension {
                extension: kind.to_owned(),
                input: self.input().to_value(),
                params: params.parse(),
            };
        }
        if let Some(g) = self.guard() {
            return CallRecord::Guard {
                validator: g.validator.to_owned(),
                params: g.params.parse(),
                text: g.text.into_owned(),
            };
        }
        match self.prompt_task() {
            Some(prompt) => {
                let mut system = String::new();
                self.write_system(&mut system);
                CallRecord::Model {
                    prompt: prompt.to_owned(),
                    input: self.input().to_value(),
                    system,
                    provider: self
                        .provider()
                        .filter(|p| *p != "default")
                        .map(str::to_owned),
                }
            }
            None => CallRecord::Tool {
                tool: self.tool().unwrap_or_default().to_owned(),
                args: self.input().to_value(),
            },
        }
    }
}

impl std::fmt::Debug for CallView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallView")
            .field("id", &self.id)
            .field("branch", &self.branch())
            .field("prompt", &self.prompt_task())
            .field("tool", &self.tool())
            .field("guard", &self.guard().map(|g| g.validator))
            .field("extension", &self.extension().map(|e| e.0))
            .finish()
    }
}
