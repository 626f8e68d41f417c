//! Lanes: the executions that issue host calls.
//!
//! A lane runs one *job*: a composition leaf step with its retry modifier
//! (`compositions.md` §6, §9.1), or one prompt execution of a prompt state or a plain
//! agent member (`workflow.md` §6). Agent steps and prompt executions share the
//! model/tool loop. A leaf step runs in one lane; a parallel step runs one lane per
//! branch, and [`pump`] advances them in declaration order (`compositions.md` §8.1), so
//! every branch's first call is issued in that order and each later call as the answer
//! to its branch's previous call arrives.
//!
//! Each lane is an explicit state machine ([`Phase`]); nothing is boxed and nothing is
//! allocated on the way from an answer to the next call, beyond what the answer holds.

use ir_spec::text_form::Meter;
use ir_spec::{
    Bind, Budget, Check, CompId, Composition, PromptId, StateId, StepId, StepKind, ToolId, ToolRef,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::{Answer, CallId, CallRecord, ErrorKind, RunError, ToolRequest};
use crate::guard::{GuardAction, Verdict};
use crate::program::{Program, SystemLen};
use crate::render::{Artifact, Env};
use crate::trace::{At, Io, TraceEvent};
use crate::value::{string_rule, BVal, Scope, VRef};

/// `compositions.md` 6.3.4 step 6: turns of an agent step without `max_steps`.
const AGENT_HARD_CAP: u32 = 50;

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
    fn is_tool(self) -> bool {
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
    Output(#[serde(with = "crate::snapshot::value_text")] Value),
    Error(String),
    /// A tool the call may not use (`tool not available`).
    NotAvailable,
    /// Past `max_tool_calls_per_turn`.
    LimitReached,
}

/// An entry of a loop's transcript: a model turn's requests, or one request's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum TEntry {
    Requests(#[serde(with = "crate::snapshot::requests_text")] Vec<ToolRequest>),
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
    #[serde(with = "crate::snapshot::opt_result_text")]
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

/// An exchange of the conversation history (`workflow.md` §12).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Exchange {
    #[serde(with = "crate::snapshot::value_text")]
    pub input: Value,
    #[serde(with = "crate::snapshot::value_text")]
    pub output: Value,
}

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
    pub budget: Option<Budget>,
    pub record_calls: bool,
    pub max_host_calls: Option<u64>,
    /// [`RunOptions::max_built_bytes`](crate::RunOptions::max_built_bytes).
    pub max_built: usize,
    /// [`RunOptions::max_tool_calls_per_answer`](crate::RunOptions::max_tool_calls_per_answer).
    pub max_answer_tools: usize,
    pub start_ms: u64,
    /// The prompt state executing, when a prompt state is.
    pub state: Option<StateId>,
}

/// The loop parameters of a job (`None`: a prompt or tool step, one call per attempt).
struct LoopSpec<'a> {
    prompt: PromptId,
    tools: &'a [ToolRef],
    max_turns: u32,
    cap_is_error: bool,
    max_tool_calls: Option<u32>,
    tool_called: Option<ToolId>,
    schema: bool,
    /// A prompt execution (keeps the answer's event; no string rule).
    prompt_exec: bool,
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

    fn loop_spec(&self, job: Job) -> Option<LoopSpec<'a>> {
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

/// What [`pump`] left the lanes waiting for.
pub(crate) enum Pumped {
    /// Every lane is done.
    AllDone,
    /// The lanes wait for answers.
    Waiting,
    /// A lane waits for a clock reading.
    Clock,
}

/// Advances every lane as far as it goes without a host input, in declaration order.
/// A run-wide failure (`budget_exhausted`, `limit_exceeded`) is returned at once.
pub(crate) fn pump(ctx: &Ctx<'_>, lanes: &mut [Lane], io: &mut Io) -> Result<Pumped, RunError> {
    let mut all_done = true;
    for i in 0..lanes.len() {
        loop {
            match &lanes[i].phase {
                Phase::Start => start(ctx, &mut lanes[i], io),
                Phase::Issue(..) => {
                    if issue(ctx, lanes, i, io)? {
                        return Ok(Pumped::Clock);
                    }
                }
                Phase::Waiting(..) => {
                    all_done = false;
                    break;
                }
                Phase::Done => break,
            }
        }
    }
    Ok(if all_done {
        Pumped::AllDone
    } else {
        Pumped::Waiting
    })
}

fn first_call(ctx: &Ctx<'_>, job: Job) -> Call {
    match job {
        Job::Step(s) => match ctx.step_kind(s) {
            StepKind::Tool { .. } => Call::ToolStep,
            StepKind::Extension { .. } => Call::Extension,
            _ => Call::Model,
        },
        Job::Prompt { .. } => Call::Model,
    }
}

/// Starts a lane: the `step` line, then bindings and the prompt, resolved and checked
/// once before the first attempt (`compositions.md` §9.1).
#[inline]
fn start(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io) {
    let measuring = ctx.max_built != usize::MAX;
    // The text length of a step's built input, when it was measured.
    let mut input_len = None;
    if let Job::Step(s) = lane.job {
        if let Some(cid) = ctx.cid {
            io.trace(lane.branch, TraceEvent::Step(cid, s));
        }
        let scope = ctx.scope();
        let bind = match ctx.step_kind(s) {
            StepKind::Prompt { input, .. } | StepKind::Agent { input, .. } => input,
            StepKind::Tool { args, .. } => args,
            StepKind::Extension { input, .. } => input,
            _ => {
                lane.done(
                    Err(RunError::new(ErrorKind::Protocol, "not a leaf step")),
                    None,
                );
                return;
            }
        };
        if let Some(r) = scope.first_unresolved(bind) {
            let step = ctx.cid.map_or("", |c| {
                ctx.prog
                    .m
                    .str(ctx.prog.m.compositions[c.index()].steps[s.index()].id)
            });
            let what = match ctx.step_kind(s) {
                StepKind::Tool { .. } => "args",
                _ => "input",
            };
            let e = RunError::new(
                ErrorKind::UnresolvedBinding,
                format!(
                    "`{}` in the {what} of step `{step}` does not resolve",
                    scope.ref_text(r)
                ),
            );
            lane.done(Err(e), None);
            return;
        }
        let builds = matches!(bind, Bind::Interp(_) | Bind::Array(_) | Bind::Object(_));
        if builds && measuring {
            let mut m = Meter::new(ctx.max_built);
            BVal::Bind(bind, scope).write_text(&mut m);
            if m.over() {
                let what = match ctx.step_kind(s) {
                    StepKind::Tool { .. } => "args",
                    _ => "input",
                };
                let step = ctx.cid.map_or("", |c| {
                    ctx.prog
                        .m
                        .str(ctx.prog.m.compositions[c.index()].steps[s.index()].id)
                });
                return built_past_limit(ctx, lane, io, format!("the {what} of step `{step}`"));
            }
            input_len = Some(m.len());
        }
    }
    if let Some(prompt) = ctx.model_prompt(lane.job) {
        let p = prompt.index();
        // Built only when a check or a measure needs it.
        let env = || ctx.model_env(lane.job);
        let shape = ctx.prog.system_len[p];
        let len = match shape {
            SystemLen::Rendered if measuring => {
                // The check and the measurement in one walk.
                let mut m = Meter::new(ctx.max_built);
                if let Some(Err(e)) = env().map(|env| env.run(Some(&mut m))) {
                    return lane.done(Err(e), None);
                }
                Some(m.len())
            }
            _ => {
                if !ctx.prog.render_infallible[p] {
                    if let Some(Err(e)) = env().map(|env| env.run(None::<&mut Meter>)) {
                        return lane.done(Err(e), None);
                    }
                }
                match shape {
                    SystemLen::Fixed(n) => Some(n),
                    SystemLen::Inputs { text, inputs } if measuring => {
                        let each = input_len.unwrap_or_else(|| {
                            let mut m = Meter::new(ctx.max_built);
                            if let Some(env) = env() {
                                env.input.write_text(&mut m);
                            }
                            m.len()
                        });
                        Some(text.saturating_add(inputs.saturating_mul(each)))
                    }
                    _ => None,
                }
            }
        };
        if len.is_some_and(|n| n > ctx.max_built) {
            let what = format!("the system prompt of `{}`", ctx.prog.prompt_key(prompt));
            return built_past_limit(ctx, lane, io, what);
        }
        if ctx.prog.input_guards[p] {
            return input_chain(ctx, lane, io, 0);
        }
    }
    lane.phase = Phase::Issue(Stage::Budget, first_call(ctx, lane.job));
}

/// `what` would build more than `max_built_bytes`: the run fails (run-wide, as past any
/// embedder's limit) when the lane would issue its call.
#[cold]
fn built_past_limit(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, what: String) {
    io.set_fatal(RunError::new(
        ErrorKind::LimitExceeded,
        format!(
            "{what} builds more text than the embedder's limit of {} bytes (`max_built_bytes`)",
            ctx.max_built
        ),
    ));
    lane.phase = Phase::Issue(Stage::Budget, first_call(ctx, lane.job));
}

/// Runs the checks before lane `i`'s call and issues it. `Ok(true)`: the lane waits
/// for a clock reading.
#[inline]
fn issue(ctx: &Ctx<'_>, lanes: &mut [Lane], i: usize, io: &mut Io) -> Result<bool, RunError> {
    let Phase::Issue(mut stage, call) = lanes[i].phase else {
        return Ok(false);
    };
    if let Some(e) = &io.fatal {
        return Err(e.clone());
    }
    if stage == Stage::Budget {
        if call.is_tool() {
            if let Some(limit) = ctx.budget.and_then(|b| b.max_tool_calls) {
                if io.tool_calls.saturating_add(1) > limit {
                    return Err(io.set_fatal(RunError::new(
                        ErrorKind::BudgetExhausted,
                        format!("max_tool_calls {limit} reached"),
                    )));
                }
            }
            io.tool_calls += 1;
        }
        stage = Stage::Clock;
    }
    if stage == Stage::Clock {
        if let Some(limit) = ctx.budget.and_then(|b| b.max_wall_time_sec) {
            let Some(now) = io.clock.take() else {
                lanes[i].phase = Phase::Issue(Stage::Clock, call);
                io.clock_wanted = true;
                return Ok(true);
            };
            if now.saturating_sub(ctx.start_ms) >= limit.saturating_mul(1000) {
                return Err(io.set_fatal(RunError::new(
                    ErrorKind::BudgetExhausted,
                    format!("max_wall_time_sec {limit} reached"),
                )));
            }
        }
    }
    if let Some(max) = ctx.max_host_calls.filter(|max| io.next_id >= *max) {
        return Err(io.set_fatal(RunError::new(
            ErrorKind::LimitExceeded,
            format!("the embedder's limit of {max} host calls was reached (`max_host_calls`)"),
        )));
    }
    let id = CallId(io.next_id);
    io.next_id = io.next_id.saturating_add(1);
    lanes[i].phase = Phase::Waiting(id, call);
    if ctx.record_calls {
        let view = crate::view::CallView::new(*ctx, &lanes[i], id, call);
        let record = view.record();
        let tag = io.tag(lanes[i].branch);
        io.calls.push((tag, record));
    }
    io.issued += 1;
    Ok(false)
}

fn host_error(m: String) -> RunError {
    RunError::new(ErrorKind::HostError, m)
}

/// Processes the answer to the call `call` lane was waiting for. Every other lane is
/// waiting or done at that moment (a lane with work left is advanced before the run
/// returns to the host), so processing it at once keeps the issue order of §8.1.
pub(crate) fn process(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, call: Call, answer: Answer) {
    // The common case first: a prompt step's model call answered with an output.
    if let (Call::Model, Job::Step(s), Answer::Output { .. }) = (call, lane.job, &answer) {
        if let StepKind::Prompt {
            output_schema,
            prompt,
            ..
        } = ctx.step_kind(s)
        {
            let schema = output_schema.is_some();
            if let Answer::Output { output, .. } = answer {
                if ctx.prog.guards[prompt.index()].is_empty() {
                    lane.done(Ok(string_rule(schema, output)), None);
                } else {
                    guard_answer(ctx, lane, io, output, None);
                }
            }
            return;
        }
    }
    if let Call::Guard { guard, input } = call {
        return guard_answered(ctx, lane, io, guard, input, answer);
    }
    let spec = ctx.loop_spec(lane.job);
    match (call, spec) {
        (Call::Model, None) => {
            // A prompt step: one model call per attempt.
            let Job::Step(s) = lane.job else { return };
            let (prompt, schema) = match ctx.step_kind(s) {
                StepKind::Prompt {
                    prompt,
                    output_schema,
                    ..
                } => (*prompt, output_schema.is_some()),
                _ => return,
            };
            match answer {
                Answer::Output { output, .. } => {
                    if ctx.prog.guards[prompt.index()].is_empty() {
                        lane.done(Ok(string_rule(schema, output)), None);
                    } else {
                        guard_answer(ctx, lane, io, output, None);
                    }
                }
                Answer::Error(e) => {
                    let key = ctx.prog.prompt_key(prompt);
                    failed(
                        ctx,
                        lane,
                        io,
                        host_error(format!("model call `{key}` failed: {e}")),
                    );
                }
                Answer::ToolCalls(_) => {
                    let key = ctx.prog.prompt_key(prompt);
                    failed(
                        ctx,
                        lane,
                        io,
                        host_error(format!("prompt step answered `{key}` with tool calls")),
                    );
                }
            }
        }
        (Call::Extension, _) => match answer {
            Answer::Output { output, .. } => lane.done(Ok(output), None),
            Answer::Error(e) => {
                let kind = extension_kind(ctx, lane.job);
                failed(
                    ctx,
                    lane,
                    io,
                    host_error(format!("extension call `{kind}` failed: {e}")),
                );
            }
            Answer::ToolCalls(_) => {
                let kind = extension_kind(ctx, lane.job);
                failed(
                    ctx,
                    lane,
                    io,
                    host_error(format!("extension `{kind}` answered with tool calls")),
                );
            }
        },
        (Call::ToolStep, _) => match answer {
            Answer::Output { output, .. } => lane.done(Ok(output), None),
            Answer::Error(e) => {
                let key = tool_step_key(ctx, lane.job);
                failed(
                    ctx,
                    lane,
                    io,
                    host_error(format!("tool call `{key}` failed: {e}")),
                );
            }
            Answer::ToolCalls(_) => {
                let key = tool_step_key(ctx, lane.job);
                failed(
                    ctx,
                    lane,
                    io,
                    host_error(format!("tool `{key}` answered with tool calls")),
                );
            }
        },
        (Call::Model, Some(spec)) => match answer {
            Answer::Error(e) => {
                let key = ctx.prog.prompt_key(spec.prompt);
                failed(
                    ctx,
                    lane,
                    io,
                    host_error(format!("model call `{key}` failed: {e}")),
                );
            }
            Answer::Output { output, event } => {
                if !ctx.prog.guards[spec.prompt.index()].is_empty() {
                    guard_answer(ctx, lane, io, output, event.filter(|_| spec.prompt_exec));
                } else if spec.prompt_exec {
                    lane.done(Ok(output), event);
                } else {
                    lane.done(Ok(string_rule(spec.schema, output)), None);
                }
            }
            Answer::ToolCalls(reqs) if reqs.is_empty() => {
                let key = ctx.prog.prompt_key(spec.prompt);
                failed(
                    ctx,
                    lane,
                    io,
                    host_error(format!("model call `{key}`: empty `tool_calls`")),
                );
            }
            Answer::ToolCalls(reqs) => {
                lane.lp.block = lane.lp.transcript.len() as u32;
                lane.lp.next_req = 0;
                lane.lp.transcript.push(TEntry::Requests(reqs));
                requests(ctx, lane, io, &spec);
            }
        },
        (Call::LoopTool { block, req, finish }, Some(spec)) => {
            let result = match answer {
                Answer::Output { output, .. } => {
                    if finish {
                        lane.lp.finished = Some(lane.lp.transcript.len() as u32);
                    }
                    ToolResult::Output(output)
                }
                Answer::Error(e) => ToolResult::Error(e),
                Answer::ToolCalls(_) => ToolResult::Error("malformed tool answer".to_owned()),
            };
            lane.lp
                .transcript
                .push(TEntry::Result { block, req, result });
            lane.lp.next_req = req + 1;
            requests(ctx, lane, io, &spec);
        }
        (Call::LoopTool { .. }, None) | (Call::Guard { .. }, _) => {}
    }
}

/// Whether a model answer of `job` must keep its JSON shape: the call has an
/// `output_schema`.
fn has_schema(ctx: &Ctx<'_>, job: Job) -> bool {
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
fn at(ctx: &Ctx<'_>, lane: &Lane, prompt: PromptId) -> At {
    match (lane.job, ctx.cid, ctx.state) {
        (Job::Step(s), Some(c), _) => At::Step(c, s),
        (Job::Prompt { .. }, _, Some(state)) => At::State(state),
        _ => At::Prompt(prompt),
    }
}

/// A model answer of a prompt with guards: held in the lane while its output guards
/// run (`later-versions.md` §4).
#[cold]
fn guard_answer(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, output: Value, event: Option<String>) {
    lane.result = Some(Ok(output));
    lane.event = event;
    output_chain(ctx, lane, io, 0);
}

/// Records guard `g` of `prompt` firing with `action` on a text of `length` characters.
fn record_guard(
    ctx: &Ctx<'_>,
    lane: &Lane,
    io: &mut Io,
    prompt: PromptId,
    g: usize,
    action: GuardAction,
    length: u64,
) {
    let at = at(ctx, lane, prompt);
    io.trace(
        lane.branch,
        TraceEvent::Guardrail {
            prompt,
            guard: g as u32,
            at,
        },
    );
    if ctx.record_calls {
        let m = &ctx.prog.m;
        let record = CallRecord::Guardrail {
            validator: m.prompts[prompt.index()].guards[g].name.clone(),
            at: at.name(m).to_owned(),
            action,
            length,
        };
        let tag = io.tag(lane.branch);
        io.calls.push((tag, record));
    }
}

/// Runs the output guards of the lane's prompt from guard `from` over the answer held in
/// [`Lane::result`], in declaration order: a truncation lets the chain go on, a
/// replacement ends it, a structured answer that triggers one fails the attempt with
/// `guardrail_blocked`. A host guard issues a `guard` call and the chain resumes at
/// its answer ([`guard_answered`]).
fn output_chain(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, from: usize) {
    let Some(prompt) = ctx.model_prompt(lane.job) else {
        return;
    };
    let guards = &ctx.prog.m.prompts[prompt.index()].guards;
    let schema = has_schema(ctx, lane.job);
    for (g, guard) in guards.iter().enumerate().skip(from) {
        if !guard.direction.output() {
            continue;
        }
        let Some(Ok(v)) = &lane.result else { return };
        if v.is_null() {
            break;
        }
        if let Check::Host { .. } = guard.check {
            let call = Call::Guard {
                guard: g as u32,
                input: false,
            };
            lane.phase = Phase::Issue(Stage::Budget, call);
            return;
        }
        let m = &ctx.prog.guards[prompt.index()][g];
        let verdict = match v {
            Value::String(s) => crate::guard::judge(guard, m, s),
            other => crate::guard::judge(guard, m, &other.to_string()),
        };
        if !apply_verdict(ctx, lane, io, prompt, g, verdict, schema) {
            return;
        }
    }
    finish_answer(ctx, lane, schema);
}

/// The chain is over: the held answer is the lane's output.
fn finish_answer(_ctx: &Ctx<'_>, lane: &mut Lane, schema: bool) {
    let result = lane
        .result
        .take()
        .map(|r| r.map(|v| string_rule(schema, v)));
    let event = lane.event.take();
    lane.result = result;
    lane.event = event;
    lane.phase = Phase::Done;
}

/// Applies guard `g`'s verdict to the held answer. `false`: the chain stops (replaced,
/// or the attempt failed).
fn apply_verdict(
    ctx: &Ctx<'_>,
    lane: &mut Lane,
    io: &mut Io,
    prompt: PromptId,
    g: usize,
    verdict: Verdict,
    schema: bool,
) -> bool {
    if verdict == Verdict::Pass {
        return true;
    }
    let Some(Ok(v)) = &mut lane.result else {
        return false;
    };
    let structured = schema || !v.is_string();
    let length = match &*v {
        Value::String(s) => s.chars().count(),
        other => other.to_string().chars().count(),
    } as u64;
    if structured {
        record_guard(ctx, lane, io, prompt, g, GuardAction::Blocked, length);
        let guard = &ctx.prog.m.prompts[prompt.index()].guards[g];
        let e = RunError::new(
            ErrorKind::GuardrailBlocked,
            format!(
                "validator `{}` blocked the structured answer of `{}`",
                guard.name,
                at(ctx, lane, prompt).name(&ctx.prog.m)
            ),
        );
        lane.result = None;
        lane.event = None;
        failed(ctx, lane, io, e);
        return false;
    }
    match verdict {
        Verdict::Truncate(cut) => {
            if let Value::String(s) = v {
                s.truncate(cut);
            }
            record_guard(ctx, lane, io, prompt, g, GuardAction::Truncated, length);
            true
        }
        _ => {
            let message = ctx.prog.m.prompts[prompt.index()].guards[g].message.clone();
            *v = Value::String(message);
            record_guard(ctx, lane, io, prompt, g, GuardAction::Replaced, length);
            let schema = has_schema(ctx, lane.job);
            finish_answer(ctx, lane, schema);
            false
        }
    }
}

/// The input a model call of the lane would read, when it is a string.
fn input_text<'a>(ctx: &Ctx<'a>, lane: &Lane) -> Option<std::borrow::Cow<'a, str>> {
    let env = ctx.model_env(lane.job)?;
    match env.input.as_cow() {
        std::borrow::Cow::Borrowed(Value::String(s)) => Some(std::borrow::Cow::Borrowed(s)),
        std::borrow::Cow::Owned(Value::String(s)) => Some(std::borrow::Cow::Owned(s)),
        _ => None,
    }
}

/// Runs the input guards of the lane's prompt from guard `from` over the call's input,
/// before the call: on a trigger the call is not made and the output is the guard's
/// message. Then the lane issues its first call.
fn input_chain(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, from: usize) {
    let Some(prompt) = ctx.model_prompt(lane.job) else {
        return;
    };
    let guards = &ctx.prog.m.prompts[prompt.index()].guards;
    if let Some(text) = input_text(ctx, lane) {
        for (g, guard) in guards.iter().enumerate().skip(from) {
            if !guard.direction.input() {
                continue;
            }
            if let Check::Host { .. } = guard.check {
                let call = Call::Guard {
                    guard: g as u32,
                    input: true,
                };
                lane.phase = Phase::Issue(Stage::Budget, call);
                return;
            }
            let m = &ctx.prog.guards[prompt.index()][g];
            if crate::guard::judge(guard, m, &text) != Verdict::Pass {
                let length = text.chars().count() as u64;
                return input_blocked(ctx, lane, io, prompt, g, length);
            }
        }
    }
    lane.phase = Phase::Issue(Stage::Budget, first_call(ctx, lane.job));
}

/// Guard `g` triggered on the input: the lane's output is its message.
fn input_blocked(
    ctx: &Ctx<'_>,
    lane: &mut Lane,
    io: &mut Io,
    prompt: PromptId,
    g: usize,
    length: u64,
) {
    record_guard(ctx, lane, io, prompt, g, GuardAction::Replaced, length);
    let message = ctx.prog.m.prompts[prompt.index()].guards[g].message.clone();
    lane.done(Ok(Value::String(message)), None);
}

/// The answer to a host validator's `guard` call: `{pass: bool}` (an output that is
/// `true`/`false` alone is read the same way). A failed or malformed answer fails
/// closed: the validator counts as triggered.
fn guard_answered(
    ctx: &Ctx<'_>,
    lane: &mut Lane,
    io: &mut Io,
    g: u32,
    input: bool,
    answer: Answer,
) {
    let Some(prompt) = ctx.model_prompt(lane.job) else {
        return;
    };
    let pass = match &answer {
        Answer::Output { output, .. } => match output {
            Value::Bool(b) => *b,
            other => other.get("pass").and_then(Value::as_bool).unwrap_or(false),
        },
        _ => false,
    };
    let g = g as usize;
    if input {
        if pass {
            return input_chain(ctx, lane, io, g + 1);
        }
        let length = input_text(ctx, lane).map_or(0, |t| t.chars().count() as u64);
        return input_blocked(ctx, lane, io, prompt, g, length);
    }
    let verdict = if pass {
        Verdict::Pass
    } else {
        Verdict::Replace
    };
    let schema = has_schema(ctx, lane.job);
    if apply_verdict(ctx, lane, io, prompt, g, verdict, schema) {
        output_chain(ctx, lane, io, g + 1);
    }
}

fn extension_kind<'a>(ctx: &Ctx<'a>, job: Job) -> &'a str {
    match job {
        Job::Step(s) => match ctx.step_kind(s) {
            StepKind::Extension { kind, .. } => kind,
            _ => "",
        },
        Job::Prompt { .. } => "",
    }
}

fn tool_step_key<'a>(ctx: &Ctx<'a>, job: Job) -> &'a str {
    match job {
        Job::Step(s) => match ctx.step_kind(s) {
            StepKind::Tool { tool, .. } => ctx.prog.m.str(ctx.prog.m.tools[tool.index()].key),
            _ => "",
        },
        Job::Prompt { .. } => "",
    }
}

/// Handles the remaining requests of the current model turn, then ends the turn
/// (`compositions.md` 6.3.4 steps 3–7, `workflow.md` §6 steps 4–5).
fn requests(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, spec: &LoopSpec<'_>) {
    let block = lane.lp.block;
    loop {
        let Some(TEntry::Requests(reqs)) = lane.lp.transcript.get(block as usize) else {
            return;
        };
        let req = lane.lp.next_req;
        let Some(r) = reqs.get(req as usize) else {
            break;
        };
        let offered = spec
            .tools
            .iter()
            .find(|t| ctx.prog.tool_key(t) == r.name.as_str());
        let result = match offered {
            _ if req as usize >= ctx.max_answer_tools => ToolResult::Error(format!(
                "not called: the answer asked for more than {} tool calls (max_tool_calls_per_answer)",
                ctx.max_answer_tools
            )),
            None => ToolResult::NotAvailable,
            Some(_) if spec.max_tool_calls.is_some_and(|cap| lane.lp.made >= cap) => {
                ToolResult::LimitReached
            }
            Some(t) => {
                lane.lp.made += 1;
                let finish = matches!(t, ToolRef::Tool(id) if Some(*id) == spec.tool_called);
                lane.phase = Phase::Issue(Stage::Budget, Call::LoopTool { block, req, finish });
                return;
            }
        };
        lane.lp
            .transcript
            .push(TEntry::Result { block, req, result });
        lane.lp.next_req = req + 1;
    }
    if let Some(at) = lane.lp.finished {
        let v = match lane.lp.transcript.get_mut(at as usize) {
            Some(TEntry::Result {
                result: ToolResult::Output(v),
                ..
            }) => std::mem::take(v),
            _ => Value::Null,
        };
        lane.done(Ok(v), None);
        return;
    }
    if lane.lp.turn >= spec.max_turns {
        if spec.cap_is_error {
            let key = ctx.prog.prompt_key(spec.prompt);
            let e = RunError::new(
                ErrorKind::AgentStepLimit,
                format!(
                    "`{key}` still asked for tools after {} model calls",
                    spec.max_turns
                ),
            );
            failed(ctx, lane, io, e);
        } else {
            lane.done(Ok(Value::Null), None);
        }
        return;
    }
    lane.lp.turn += 1;
    lane.phase = Phase::Issue(Stage::Budget, Call::Model);
}

/// An attempt failed: retry it when the step's modifier allows (`compositions.md` §9.1),
/// else the lane is done with the error.
fn failed(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, e: RunError) {
    let retryable = matches!(
        e.kind,
        ErrorKind::HostError | ErrorKind::AgentStepLimit | ErrorKind::GuardrailBlocked
    );
    if let (Job::Step(s), Some(cid), true) = (lane.job, ctx.cid, retryable) {
        let comp = &ctx.prog.m.compositions[cid.index()];
        if lane.attempt < comp.steps[s.index()].max_attempts {
            lane.attempt += 1;
            io.trace(lane.branch, TraceEvent::Retry(cid, s, lane.attempt));
            lane.lp.turn = 1;
            lane.lp.made = 0;
            lane.lp.transcript.clear();
            lane.lp.finished = None;
            lane.phase = Phase::Issue(Stage::Budget, first_call(ctx, lane.job));
            return;
        }
    }
    lane.done(Err(e), None);
}

/// A call's record for the call log.
pub(crate) fn record_of(view: &crate::view::CallView<'_>) -> CallRecord {
    if let Some((kind, params)) = view.extension() {
        return CallRecord::Extension {
            extension: kind.to_owned(),
            input: view.input().to_value(),
            params: params.parse(),
        };
    }
    if let Some(g) = view.guard() {
        return CallRecord::Guard {
            validator: g.validator.to_owned(),
            params: g.params.parse(),
            text: g.text.into_owned(),
        };
    }
    match view.prompt_task() {
        Some(prompt) => {
            let mut system = String::new();
            view.write_system(&mut system);
            CallRecord::Model {
                prompt: prompt.to_owned(),
                input: view.input().to_value(),
                system,
                provider: view
                    .provider()
                    .filter(|p| *p != "default")
                    .map(str::to_owned),
            }
        }
        None => CallRecord::Tool {
            tool: view.tool().unwrap_or_default().to_owned(),
            args: view.input().to_value(),
        },
    }
}
