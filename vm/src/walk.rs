//! The composition walk (`compositions.md` §4–§10): skip rules, branch steps, the lanes
//! of leaf and parallel steps, storing outputs, the composition output.

use ir_spec::{CompId, StepId, StepKind};
use serde_json::Value;

use crate::api::{ErrorKind, Need, RunError};
use crate::lane::{pump, Ctx, Job, Lane, Phase, Pumped};
use crate::program::Program;
use crate::run::{err, protocol, Run, Walk, Walked, SELECTED, SKIPPED};
use crate::trace::{EvalRec, Io, TraceEvent};
use crate::value::Scope;

impl Run {
    pub(crate) fn begin_comp(&mut self, c: CompId) {
        self.settle_slots();
        let n = self.prog.m.compositions[c.index()].steps.len();
        let w = &mut self.walk;
        w.id = Some(c);
        w.pos = 0;
        w.last = None;
        w.active = None;
        for s in &mut w.slots[..n] {
            *s = None;
        }
        w.flags[..n].fill(0);
        self.lanes.clear();
    }

    /// Walks the composition until a step waits for the host, or the walk ends.
    ///
    /// The run is borrowed field by field, so the program needs no reference count
    /// traffic on this path.
    pub(crate) fn walk_comp(&mut self) -> Result<Walked, RunError> {
        let Run {
            prog,
            walk,
            lanes,
            io,
            input,
            wf,
            host_vars,
            budget,
            record_calls,
            max_host_calls,
            limits,
            ..
        } = self;
        let prog: &Program = prog;
        let Some(cid) = walk.id else {
            return Err(protocol("no composition is running"));
        };
        let comp = &prog.m.compositions[cid.index()];
        loop {
            if let Some(active) = walk.active {
                // The lane that took the answer may already be done (the common case of a
                // one-lane step); otherwise advance the lanes.
                let done = lanes.iter().all(|l| l.phase == Phase::Done);
                if !done {
                    let ctx = Ctx {
                        prog,
                        cid: walk.id,
                        input,
                        slots: &walk.slots,
                        artifacts: &wf.artifacts,
                        history: &wf.history,
                        host_vars,
                        budget: *budget,
                        record_calls: *record_calls,
                        max_host_calls: *max_host_calls,
                        max_built: limits.max_built_bytes,
                        max_answer_tools: limits.max_tool_calls_per_answer,
                        start_ms: wf.start_ms,
                        state: None,
                    };
                    let pumped = match pump(&ctx, lanes, io) {
                        Ok(pumped) => pumped,
                        Err(e) => {
                            // A run-wide failure ends the run inside the step: the
                            // parallel branches that completed keep their outputs and
                            // eval requests (`compositions.md` §9.2).
                            store_completed_branches(comp, cid, active, walk, lanes, io);
                            return Err(e);
                        }
                    };
                    match pumped {
                        Pumped::AllDone => {}
                        Pumped::Waiting => {
                            return Ok(Walked::Pending(if io.issued > 0 {
                                Need::Calls
                            } else {
                                Need::Wait
                            }))
                        }
                        Pumped::Clock => return Ok(Walked::Pending(Need::Clock)),
                    }
                }
                finish_step(comp, cid, active, walk, lanes, io)?;
            }
            let Some(&sid) = comp.walk.get(walk.pos as usize) else {
                let out = comp.output.or(walk.last);
                return match out.filter(|o| walk.slots[o.index()].is_some()) {
                    Some(o) => Ok(Walked::Finished(o)),
                    None => Err(err(
                        ErrorKind::NoOutput,
                        format!("composition `{}` produced no output", prog.m.str(comp.key)),
                    )),
                };
            };
            walk.pos += 1;
            let step = &comp.steps[sid.index()];
            let flags = &walk.flags;
            let guarded = !step.guarded_by.is_empty() && flags[sid.index()] & SELECTED == 0;
            let joined = !step.depends_on.is_empty()
                && step
                    .depends_on
                    .iter()
                    .all(|d| flags[d.index()] & SKIPPED != 0);
            if guarded || joined {
                io.trace(None, TraceEvent::Skip(cid, sid));
                walk.flags[sid.index()] |= SKIPPED;
                continue;
            }
            match &step.kind {
                StepKind::Branch {
                    then, otherwise, ..
                } => {
                    let pred = prog.preds[cid.index()][sid.index()]
                        .as_ref()
                        .ok_or_else(|| protocol("a branch step without a predicate"))?;
                    let scope = Scope {
                        m: &prog.m,
                        comp: Some(comp),
                        input,
                        slots: &walk.slots,
                    };
                    let target = if pred.eval(&scope)? {
                        Some(*then)
                    } else {
                        *otherwise
                    };
                    io.trace(None, TraceEvent::Branch(cid, sid, target));
                    if let Some(t) = target {
                        walk.flags[t.index()] |= SELECTED;
                    }
                }
                StepKind::Parallel { branches, .. } => {
                    io.trace(None, TraceEvent::Step(cid, sid));
                    io.group += 1;
                    set_lanes(
                        lanes,
                        branches
                            .iter()
                            .enumerate()
                            .map(|(j, b)| (Job::Step(*b), Some(j as u32))),
                    );
                    walk.active = Some(sid);
                }
                _ => {
                    match lanes.first_mut() {
                        Some(lane) => {
                            lane.reset(Job::Step(sid), None);
                            lanes.truncate(1);
                        }
                        None => lanes.push(Lane::new(Job::Step(sid), None)),
                    }
                    walk.active = Some(sid);
                }
            }
        }
    }
}

/// The active step's lanes are all done: store the outputs (`compositions.md` §8.2).
pub(crate) fn finish_step(
    comp: &ir_spec::Composition,
    cid: CompId,
    sid: StepId,
    walk: &mut Walk,
    lanes: &mut [Lane],
    io: &mut Io,
) -> Result<(), RunError> {
    walk.active = None;
    let step = &comp.steps[sid.index()];
    let mut first_err = None;
    match &step.kind {
        StepKind::Parallel { branches, .. } => {
            for (lane, b) in lanes.iter_mut().zip(branches) {
                match lane.result.take() {
                    Some(Ok(v)) => store_branch(comp, cid, *b, lane.branch, v, walk, io),
                    Some(Err(e)) => {
                        first_err.get_or_insert(e);
                    }
                    _ => {}
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
            walk.slots[sid.index()] = Some(Value::Null);
        }
        _ => match lanes.first_mut().and_then(|l| l.result.take()) {
            Some(Ok(v)) => walk.slots[sid.index()] = Some(v),
            Some(Err(e)) => return Err(e),
            None => return Err(protocol("a step ended without a result")),
        },
    }
    if !step.evals.is_empty() {
        io.evals.push((None, eval_rec(cid, sid)));
    }
    walk.last = Some(sid);
    Ok(())
}

/// Stores a completed parallel branch's output and makes its eval requests.
fn store_branch(
    comp: &ir_spec::Composition,
    cid: CompId,
    b: StepId,
    branch: Option<u32>,
    v: Value,
    walk: &mut Walk,
    io: &mut Io,
) {
    walk.slots[b.index()] = Some(v);
    let tag = io.tag(branch);
    if !comp.steps[b.index()].evals.is_empty() {
        io.evals.push((tag, eval_rec(cid, b)));
    }
}

/// A run-wide failure (`budget_exhausted`, `limit_exceeded`) ended the run during step
/// `sid`: if it is a parallel step, its branches that completed still store their
/// outputs and make their eval requests, as they do when a sibling branch fails.
fn store_completed_branches(
    comp: &ir_spec::Composition,
    cid: CompId,
    sid: StepId,
    walk: &mut Walk,
    lanes: &mut [Lane],
    io: &mut Io,
) {
    let StepKind::Parallel { branches, .. } = &comp.steps[sid.index()].kind else {
        return;
    };
    for (lane, b) in lanes.iter_mut().zip(branches) {
        if let Some(Ok(v)) = lane.result.take_if(|r| r.is_ok()) {
            store_branch(comp, cid, *b, lane.branch, v, walk, io);
        }
    }
}

/// Makes the lanes `jobs`, reusing the lanes (and their buffers) already there.
pub(crate) fn set_lanes(
    lanes: &mut Vec<Lane>,
    jobs: impl ExactSizeIterator<Item = (Job, Option<u32>)>,
) {
    let n = jobs.len();
    for (i, (job, branch)) in jobs.enumerate() {
        match lanes.get_mut(i) {
            Some(lane) => lane.reset(job, branch),
            None => lanes.push(Lane::new(job, branch)),
        }
    }
    lanes.truncate(n);
}

/// The eval requests of one completion of `step`: one record, whatever the number of
/// its eval ids, so its output is copied once.
pub(crate) fn eval_rec(comp: CompId, step: StepId) -> EvalRec {
    EvalRec {
        comp,
        step,
        output: None,
    }
}
