//! An attempt of a lane's job: its first call, and what a failed attempt does
//! (`compositions.md` §9.1: retried while the step's modifier allows).

use ir_spec::StepKind;

use crate::ctx::Ctx;
use crate::error::{ErrorKind, RunError};
use crate::job::{Call, Job, Lane, Phase, Stage};
use crate::trace::{Io, TraceEvent};

/// The first call of an attempt of `job`.
pub(crate) fn first_call(ctx: &Ctx<'_>, job: Job) -> Call {
    match job {
        Job::Step(s) => match ctx.step_kind(s) {
            StepKind::Tool { .. } => Call::ToolStep,
            StepKind::Extension { .. } => Call::Extension,
            _ => Call::Model,
        },
        Job::Prompt { .. } => Call::Model,
    }
}

/// An attempt failed: retry it when the step's modifier allows (`compositions.md` §9.1),
/// else the lane is done with the error.
pub(crate) fn failed(ctx: &Ctx<'_>, lane: &mut Lane, io: &mut Io, e: RunError) {
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
