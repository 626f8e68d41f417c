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
/// What [`pump`] left the lanes waiting for.
pub(crate) enum Pumped {
    /// Every lane is done.
    AllDone,
    /// The lanes wait for answers.
    Waiting,
    /// A lane waits for a clock reading.
    Clock,
}

mod attempt;
mod guards;

use ir_spec::text_form::Meter;
use ir_spec::{Bind, StepId, StepKind, ToolRef};
use serde_json::Value;

use crate::api::{Answer, CallId};
use crate::ctx::{extension_kind, tool_step_key, Ctx, LoopSpec};
use crate::error::{ErrorKind, RunError};
use crate::job::{Call, Job, Lane, Phase, Stage, TEntry, ToolResult};
use crate::lane::attempt::{failed, first_call};
use crate::lane::guards::{guard_answer, guard_answered, input_chain};
use crate::program::SystemLen;
use crate::trace::{Io, TraceEvent};
use crate::value::BVal;

/// Advances every lane as far as it goes without a host input, in declaration order.
/// A run-wide failure (`budget_exhausted`, `limit_exceeded`) is returned at once.
pub(crate) fn pump(ctx: &Ctx<'_>, lanes: &mut [Lane], io: &mut Io) -> Result<Pumped, RunError> {
    let mut all_done = true;
    for i in 0..lanes.len() {
        loop {
            match &lanes[i].phase {
                Phase::Start => start(ctx, &mut lanes[i], io),
                Phase::Issue(..) => {
                    let issued = issue(ctx, lanes, i, io).inspect_err(|_| {
                        // The run-wide failure ends the run at this lane's call.
                        if let (Job::Step(s), Some(c)) = (lanes[i].job, ctx.cid) {
                            io.failed_step.get_or_insert((c, s));
                        }
                    })?;
                    if issued {
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

/// Starts a lane: the `step` line, then bindings and the prompt, resolved and checked
/// once before the first attempt (`compositions.md` §9.1).
#[inline]
fn start(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io) {
    let measuring = ctx.config.limits.max_built_bytes != usize::MAX;
    // The text length of a step's built input, when it was measured.
    let mut input_len = None;
    // A step input that is one whole reference: the value the check below resolved it
    // to, kept for measuring the text the prompt places.
    let mut whole = None;
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
                    Err(RunError::new(ErrorKind::Internal, "not a leaf step")),
                    None,
                );
                return;
            }
        };
        match scope.check(bind) {
            Ok(value) => whole = value,
            Err(r) => {
                let e = unresolved(ctx, s, r);
                lane.done(Err(e), None);
                return;
            }
        }
        let builds = matches!(bind, Bind::Interp(_) | Bind::Array(_) | Bind::Object(_));
        if builds && measuring {
            let mut m = Meter::new(ctx.config.limits.max_built_bytes);
            BVal::Bind(bind, scope).write_text(&mut m);
            if m.over() {
                let (what, step) = bound_name(ctx, s);
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
                let mut m = Meter::new(ctx.config.limits.max_built_bytes);
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
                            let mut m = Meter::new(ctx.config.limits.max_built_bytes);
                            // The step's input, as the prompt renders it.
                            match whole {
                                Some(v) => v.write_text(&mut m),
                                None => {
                                    if let Some(env) = env() {
                                        env.input.write_text(&mut m);
                                    }
                                }
                            }
                            m.len()
                        });
                        Some(text.saturating_add(inputs.saturating_mul(each)))
                    }
                    _ => None,
                }
            }
        };
        if len.is_some_and(|n| n > ctx.config.limits.max_built_bytes) {
            let what = format!("the system prompt of `{}`", ctx.prog.prompt_key(prompt));
            return built_past_limit(ctx, lane, io, what);
        }
        if ctx.prog.input_guards[p] {
            return input_chain(ctx, lane, io, 0);
        }
    }
    lane.phase = Phase::Issue(Stage::Budget, first_call(ctx, lane.job));
}

/// What leaf step `s`'s bound value is called in messages (`args` of a tool step, the
/// `input` of the others), and the step's id.
#[cold]
fn bound_name<'a>(ctx: &Ctx<'a>, s: StepId) -> (&'static str, &'a str) {
    let what = match ctx.step_kind(s) {
        StepKind::Tool { .. } => "args",
        _ => "input",
    };
    let step = ctx.cid.map_or("", |c| {
        ctx.prog
            .m
            .str(ctx.prog.m.compositions[c.index()].steps[s.index()].id)
    });
    (what, step)
}

/// The `unresolved_binding` of step `s`, whose reference `r` does not resolve. A
/// reference to a step the walk skipped says so, and how to skip this step with it
/// (`compositions.md` §4.2–4.4): a skip never travels along the step order alone.
#[cold]
fn unresolved(ctx: &Ctx<'_>, s: StepId, r: &ir_spec::Ref) -> RunError {
    let (what, step) = bound_name(ctx, s);
    let at = ctx.scope().ref_text(r);
    let skipped = match (r.root, ctx.comp()) {
        // Compile-time checks let a step read only steps before it, so a step with no
        // output slot is one the walk skipped.
        (ir_spec::Root::Step(t), Some(c))
            if ctx.slots.get(t.index()).is_some_and(Option::is_none) =>
        {
            Some(ctx.prog.m.str(c.steps[t.index()].id))
        }
        _ => None,
    };
    let message = match skipped {
        Some(t) => format!(
            "`{at}` in the {what} of step `{step}` does not resolve: step `{t}` was skipped, so it has no output (give `{step}` `depends_on: [{t}]` to skip it too)"
        ),
        None => format!("`{at}` in the {what} of step `{step}` does not resolve"),
    };
    RunError::new(ErrorKind::UnresolvedBinding, message)
}

/// `what` would build more than `max_built_bytes`: the run fails (run-wide, as past any
/// embedder's limit) when the lane would issue its call.
#[cold]
fn built_past_limit(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, what: String) {
    io.set_fatal(RunError::new(
        ErrorKind::LimitExceeded,
        format!(
            "{what} builds more text than the embedder's limit of {} bytes (`max_built_bytes`)",
            ctx.config.limits.max_built_bytes
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
            if let Some(limit) = ctx.config.budget.and_then(|b| b.max_tool_calls) {
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
        if let Some(limit) = ctx.config.budget.and_then(|b| b.max_wall_time_sec) {
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
    if let Some(max) = ctx.config.max_host_calls.filter(|max| io.next_id >= *max) {
        return Err(io.set_fatal(RunError::new(
            ErrorKind::LimitExceeded,
            format!(
                "the embedder's limit of {max} host call{} was reached (`max_host_calls`)",
                if max == 1 { "" } else { "s" }
            ),
        )));
    }
    let id = CallId(io.next_id);
    io.next_id = io.next_id.saturating_add(1);
    lanes[i].phase = Phase::Waiting(id, call);
    if ctx.config.record_calls {
        let view = crate::view::CallView::new(*ctx, &lanes[i], id, call);
        let record = view.record();
        let tag = io.tag(lanes[i].branch);
        io.calls.push((tag, record));
    }
    io.issued += 1;
    Ok(false)
}

/// The host's answer fails the lane's call with `host_error` `m` (a `retry` may ask again).
fn host_failed(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, m: String) {
    failed(ctx, lane, io, RunError::new(ErrorKind::HostError, m));
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
                guard_answer(ctx, lane, io, *prompt, schema, output, None);
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
                    guard_answer(ctx, lane, io, prompt, schema, output, None);
                }
                Answer::Error(e) => {
                    let key = ctx.prog.prompt_key(prompt);
                    host_failed(ctx, lane, io, format!("model call `{key}` failed: {e}"));
                }
                Answer::ToolCalls(_) => {
                    let key = ctx.prog.prompt_key(prompt);
                    host_failed(
                        ctx,
                        lane,
                        io,
                        format!("model call `{key}` answered with tool calls, but a prompt step takes an output (tools run in agent steps)"),
                    );
                }
            }
        }
        (Call::Extension | Call::ToolStep, _) => match answer {
            Answer::Output { output, .. } => lane.done(Ok(output), None),
            refused => {
                let (what, key) = match call {
                    Call::Extension => ("extension", extension_kind(ctx, lane.job)),
                    _ => ("tool", tool_step_key(ctx, lane.job)),
                };
                let m = match refused {
                    Answer::Error(e) => format!("{what} call `{key}` failed: {e}"),
                    _ => format!("{what} `{key}` answered with tool calls"),
                };
                host_failed(ctx, lane, io, m);
            }
        },
        (Call::Model, Some(spec)) => match answer {
            Answer::Error(e) => {
                let key = ctx.prog.prompt_key(spec.prompt);
                host_failed(ctx, lane, io, format!("model call `{key}` failed: {e}"));
            }
            Answer::Output { output, event } => {
                if spec.prompt_exec && ctx.prog.guards[spec.prompt.index()].is_empty() {
                    lane.done(Ok(output), event);
                } else {
                    guard_answer(
                        ctx,
                        lane,
                        io,
                        spec.prompt,
                        spec.schema,
                        output,
                        event.filter(|_| spec.prompt_exec),
                    );
                }
            }
            Answer::ToolCalls(reqs) if reqs.is_empty() => {
                let key = ctx.prog.prompt_key(spec.prompt);
                host_failed(
                    ctx,
                    lane,
                    io,
                    format!("model call `{key}`: empty `tool_calls`"),
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
            _ if req as usize >= ctx.config.limits.max_tool_calls_per_answer => ToolResult::Error(format!(
                "not called: the answer asked for more than {} tool calls (max_tool_calls_per_answer)",
                ctx.config.limits.max_tool_calls_per_answer
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
