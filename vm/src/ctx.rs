//! [`Ctx`]: everything a lane reads, borrowed from the run and never written while the
//! lanes run, and the questions about a job that the lane machine asks of it.

use ir_spec::{CompId, Composition, PromptId, StateId, StepId, StepKind, ToolId, ToolRef};
use serde_json::{Map, Value};

use crate::config::Config;
use crate::job::{Job, Lane};
use crate::memory::{Artifact, Exchange};
use crate::program::Program;
use crate::render::Env;
use crate::trace::At;
use crate::value::{BVal, Scope, VRef};

/// `compositions.md` 6.3.4 step 6: turns of an agent step without `max_steps`.
const AGENT_HARD_CAP: u32 = 50;

/// Everything a lane reads: borrowed from the run, never written while lanes run.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub prog: &'a Program,
    pub cid: Option<CompId>,
    pub input: &'a Value,
    pub slots: &'a [Option<Value>],
    pub artifacts: &'a [Option<Artifact>],
    pub history: &'a [Exchange],
    pub host_vars: &'a Map<String, Value>,
    /// The run's configuration: the budget, the call log, the embedder's limits.
    pub config: &'a Config,
    pub start_ms: u64,
    /// The prompt state executing, when a prompt state is.
    pub state: Option<StateId>,
}

/// What every lane reads besides the composition: the program, the run's
/// configuration, the turn input and the workflow's memory. [`Ctx::new`] adds the
/// composition running, its output slots and the prompt state executing.
#[derive(Clone, Copy)]
pub(crate) struct Base<'a> {
    pub prog: &'a Program,
    pub config: &'a Config,
    pub input: &'a Value,
    pub host_vars: &'a Map<String, Value>,
    pub artifacts: &'a [Option<Artifact>],
    pub history: &'a [Exchange],
    pub start_ms: u64,
}

impl<'a> Ctx<'a> {
    /// The lanes' view of a run: `base`, composition `cid` with its output `slots`, and
    /// the prompt state executing.
    #[inline]
    pub fn new(
        base: Base<'a>,
        cid: Option<CompId>,
        slots: &'a [Option<Value>],
        state: Option<StateId>,
    ) -> Ctx<'a> {
        Ctx {
            prog: base.prog,
            cid,
            input: base.input,
            slots,
            artifacts: base.artifacts,
            history: base.history,
            host_vars: base.host_vars,
            config: base.config,
            start_ms: base.start_ms,
            state,
        }
    }
}

/// The loop parameters of a job (`None`: a prompt or tool step, one call per attempt).
pub(crate) struct LoopSpec<'a> {
    pub prompt: PromptId,
    pub tools: &'a [ToolRef],
    pub max_turns: u32,
    pub cap_is_error: bool,
    pub max_tool_calls: Option<u32>,
    pub tool_called: Option<ToolId>,
    pub schema: bool,
    /// A prompt execution (keeps the answer's event; no string rule).
    pub prompt_exec: bool,
}

impl<'a> Ctx<'a> {
    pub fn comp(&self) -> Option<&'a Composition> {
        self.cid.map(|c| &self.prog.m.compositions[c.index()])
    }

    pub fn scope(&self) -> Scope<'a> {
        Scope {
            m: &self.prog.m,
            comp: self.comp(),
            input: self.input,
            slots: self.slots,
        }
    }

    /// The effective provider key of a model call made by `job` (`later-versions.md` §3),
    /// resolved at compile time: the step's, else its prompt's, else `default`.
    pub fn provider(&self, job: Job) -> &'a str {
        let spec = &self.prog.m.spec;
        let index = match (job, self.cid) {
            (Job::Prompt { prompt, .. }, _) => spec.prompt_provider(prompt),
            (Job::Step(s), Some(c)) => match self.step_kind(s) {
                StepKind::Prompt { prompt, .. } | StepKind::Agent { prompt, .. } => {
                    spec.step_provider(c, s, *prompt)
                }
                _ => 0,
            },
            (Job::Step(_), None) => 0,
        };
        spec.provider_key(index)
    }

    pub fn step_kind(&self, s: StepId) -> &'a StepKind {
        let comp = self.comp().expect("a step job runs inside a composition");
        &comp.steps[s.index()].kind
    }

    pub(crate) fn loop_spec(&self, job: Job) -> Option<LoopSpec<'a>> {
        match job {
            Job::Prompt { prompt, .. } => {
                let p = &self.prog.m.prompts[prompt.index()];
                Some(LoopSpec {
                    prompt,
                    tools: &p.tools,
                    max_turns: p
                        .policy
                        .max_rounds
                        .unwrap_or(ir_spec::bounds::DEFAULT_MAX_ROUNDS),
                    cap_is_error: true,
                    max_tool_calls: Some(
                        p.policy
                            .max_tool_calls_per_turn
                            .unwrap_or(ir_spec::bounds::DEFAULT_MAX_TOOL_CALLS_PER_TURN),
                    ),
                    tool_called: None,
                    schema: false,
                    prompt_exec: true,
                })
            }
            Job::Step(s) => match self.step_kind(s) {
                StepKind::Agent {
                    prompt,
                    output_schema,
                    tools,
                    max_tool_calls_per_turn,
                    max_steps,
                    tool_called,
                    ..
                } => Some(LoopSpec {
                    prompt: *prompt,
                    tools,
                    max_turns: max_steps.unwrap_or(AGENT_HARD_CAP),
                    cap_is_error: max_steps.is_none(),
                    max_tool_calls: *max_tool_calls_per_turn,
                    tool_called: *tool_called,
                    schema: output_schema.is_some(),
                    prompt_exec: false,
                }),
                _ => None,
            },
        }
    }

    /// The prompt a model call of `job` renders.
    #[inline]
    pub fn model_prompt(&self, job: Job) -> Option<PromptId> {
        match job {
            Job::Prompt { prompt, .. } => Some(prompt),
            Job::Step(s) => match self.step_kind(s) {
                StepKind::Prompt { prompt, .. } | StepKind::Agent { prompt, .. } => Some(*prompt),
                _ => None,
            },
        }
    }

    /// The prompt a model call of `job` renders, and the input it renders with.
    pub fn model_env(&self, job: Job) -> Option<Env<'a>> {
        let (prompt, input) = match job {
            Job::Prompt { prompt, .. } => (prompt, BVal::V(VRef::Val(self.input))),
            Job::Step(s) => match self.step_kind(s) {
                StepKind::Prompt { prompt, input, .. } | StepKind::Agent { prompt, input, .. } => {
                    (*prompt, BVal::Bind(input, self.scope()))
                }
                _ => return None,
            },
        };
        Some(Env {
            prog: self.prog,
            prompt,
            input,
            artifacts: self.artifacts,
            host_vars: self.host_vars,
        })
    }
}

/// Whether a model answer of `job` must keep its JSON shape: the call has an
/// `output_schema`.
pub(crate) fn has_schema(ctx: &Ctx<'_>, job: Job) -> bool {
    match job {
        Job::Step(s) => matches!(
            ctx.step_kind(s),
            StepKind::Prompt {
                output_schema: Some(_),
                ..
            } | StepKind::Agent {
                output_schema: Some(_),
                ..
            }
        ),
        Job::Prompt { .. } => false,
    }
}

/// Where `lane`'s answers are made, for the trace and the call record.
pub(crate) fn at(ctx: &Ctx<'_>, lane: &Lane, prompt: PromptId) -> At {
    match (lane.job, ctx.cid, ctx.state) {
        (Job::Step(s), Some(c), _) => At::Step(c, s),
        (Job::Prompt { .. }, _, Some(state)) => At::State(state),
        _ => At::Prompt(prompt),
    }
}

pub(crate) fn extension_kind<'a>(ctx: &Ctx<'a>, job: Job) -> &'a str {
    match job {
        Job::Step(s) => match ctx.step_kind(s) {
            StepKind::Extension { kind, .. } => kind,
            _ => "",
        },
        Job::Prompt { .. } => "",
    }
}

pub(crate) fn tool_step_key<'a>(ctx: &Ctx<'a>, job: Job) -> &'a str {
    match job {
        Job::Step(s) => match ctx.step_kind(s) {
            StepKind::Tool { tool, .. } => ctx.prog.m.str(ctx.prog.m.tools[tool.index()].key),
            _ => "",
        },
        Job::Prompt { .. } => "",
    }
}
