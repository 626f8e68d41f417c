//! Validators (guardrails) around a model call (`later-versions.md` §4): the input
//! chain before the call, the output chain over the answer held in the lane, and the
//! answers to host validators' `guard` calls.

use ir_spec::{Check, Guard, PromptId};
use serde_json::Value;

use crate::api::{Answer, CallRecord};
use crate::ctx::{at, has_schema, Ctx};
use crate::error::{ErrorKind, RunError};
use crate::guard::{GuardAction, Verdict};
use crate::job::{Call, Lane, Phase, Stage};
use crate::lane::attempt::{failed, first_call};
use crate::trace::{Io, TraceEvent};
use crate::value::string_rule;

/// A model answer of a prompt: the lane's output at once when the prompt has no guards,
/// else held in the lane while its output guards run (`later-versions.md` §4). A text
/// answer that every output guard passes, all of them built-in (nearly every answer), is
/// the lane's output at once too: the chain, which records and rewrites, runs only when
/// one triggers (judging again from the first) or a host validator judges.
///
/// `prompt` is the call's prompt and `schema` whether it has an `output_schema`, which
/// the caller has already looked up.
///
/// Always inlined: it is every prompt answer's path, and a prompt without guards (nearly
/// every one) pays only the test; the guards' work ([`all_pass`], [`output_chain`]) is
/// out of line.
#[inline(always)]
pub(crate) fn guard_answer(
    ctx: &Ctx<'_>,
    lane: &mut Lane,
    io: &mut Io,
    prompt: PromptId,
    schema: bool,
    output: Value,
    event: Option<String>,
) {
    let at_once = ctx.prog.guards[prompt.index()].is_empty()
        || matches!(&output, Value::String(text) if all_pass(ctx, prompt, text));
    if at_once {
        lane.done(Ok(string_rule(schema, output)), event);
    } else {
        lane.result = Some(Ok(output));
        lane.event = event;
        output_chain(ctx, lane, io, prompt, schema, 0);
    }
}

/// Whether every output guard of `prompt` is built-in and passes `text`.
#[inline(never)]
fn all_pass(ctx: &Ctx<'_>, prompt: PromptId, text: &str) -> bool {
    let guards = &ctx.prog.m.prompts[prompt.index()].guards;
    let matchers = &ctx.prog.guards[prompt.index()];
    guards.iter().zip(matchers).all(|(guard, m)| {
        !guard.direction.output()
            || (!matches!(guard.check, Check::Host { .. })
                && crate::guard::judge(guard, m, text) == Verdict::Pass)
    })
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
    if ctx.config.record_calls {
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
/// its answer ([`guard_answered`]). `prompt` is the call's prompt and `schema` whether
/// it has an `output_schema`.
#[inline(never)]
fn output_chain(
    ctx: &Ctx<'_>,
    lane: &mut Lane,
    io: &mut Io,
    prompt: PromptId,
    schema: bool,
    from: usize,
) {
    let guards = &ctx.prog.m.prompts[prompt.index()].guards;
    // A structured answer is never rewritten, so its text is rendered once for the chain.
    let mut rendered: Option<String> = None;
    for (g, guard) in guards.iter().enumerate().skip(from) {
        if !guard.direction.output() {
            continue;
        }
        let Some(Ok(v)) = &lane.result else { return };
        if v.is_null() {
            break;
        }
        if issue_host_guard(&mut lane.phase, g, guard, false) {
            return;
        }
        let m = &ctx.prog.guards[prompt.index()][g];
        let verdict = match v {
            Value::String(s) => crate::guard::judge(guard, m, s),
            other => {
                crate::guard::judge(guard, m, rendered.get_or_insert_with(|| other.to_string()))
            }
        };
        if verdict != Verdict::Pass && !apply_verdict(ctx, lane, io, prompt, g, verdict, schema) {
            return;
        }
    }
    finish_answer(lane, schema);
}

/// A host validator's check is a `guard` call: when guard `g` is one, the lane issues
/// it (on the call's input or on the answer) and the chain waits; `false` otherwise.
fn issue_host_guard(phase: &mut Phase, g: usize, guard: &Guard, input: bool) -> bool {
    let Check::Host { .. } = guard.check else {
        return false;
    };
    let call = Call::Guard {
        guard: g as u32,
        input,
    };
    *phase = Phase::Issue(Stage::Budget, call);
    true
}

/// The chain is over: the held answer is the lane's output.
fn finish_answer(lane: &mut Lane, schema: bool) {
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
            finish_answer(lane, schema);
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
pub(crate) fn input_chain(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, from: usize) {
    let Some(prompt) = ctx.model_prompt(lane.job) else {
        return;
    };
    let guards = &ctx.prog.m.prompts[prompt.index()].guards;
    if let Some(text) = input_text(ctx, lane) {
        for (g, guard) in guards.iter().enumerate().skip(from) {
            if !guard.direction.input() {
                continue;
            }
            if issue_host_guard(&mut lane.phase, g, guard, true) {
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
pub(crate) fn guard_answered(
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
        output_chain(ctx, lane, io, prompt, schema, g + 1);
    }
}
