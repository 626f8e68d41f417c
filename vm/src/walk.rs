//! The composition walk (`compositions.md` §4–§10): skip rules, branch steps, the lanes
//! of leaf and parallel steps, storing outputs, the composition output.

use ir_spec::{CompId, StepId, StepKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Need;
use crate::ctx::{Base, Ctx};
use crate::error::{ErrorKind, RunError};
use crate::job::{set_lanes, Job, Lane, Phase};
use crate::lane::{pump, Pumped};
use crate::small::Fixed;
use crate::trace::{EvalRec, Io, TraceEvent};
use crate::value::Scope;

/// Step flags kept inside the run (compositions of up to this many steps).
pub(crate) const FLAGS_INLINE: usize = 32;

/// A step flag: the walk skipped the step.
pub(crate) const SKIPPED: u8 = 1;
/// A step flag: a branch step that ran selected the step.
pub(crate) const SELECTED: u8 = 2;

/// The composition walk (`compositions.md` §4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Walk {
    pub id: Option<CompId>,
    /// The next index into `walk`.
    pub pos: u32,
    /// Output slots by step id. A parallel step that ran holds a `null` marker: its
    /// output is walked over its branches' slots (`value::Par`).
    #[serde(with = "crate::text::slots_text")]
    pub slots: Vec<Option<Value>>,
    /// Per step: [`SKIPPED`] and [`SELECTED`] (a branch that ran selected it).
    pub flags: Fixed<u8, FLAGS_INLINE>,
    /// The last step that ran and produced an output.
    pub last: Option<StepId>,
    /// The step whose lanes are running.
    pub active: Option<StepId>,
}

/// What the composition walk reached.
pub(crate) enum Walked {
    Pending(Need),
    /// The walk ended; the composition output is the output of this step.
    Finished(StepId),
}

fn internal(m: &str) -> RunError {
    RunError::new(ErrorKind::Internal, m)
}

impl Walk {
    /// The walk of a new run: `n` slots, for the program's largest composition.
    // Inlined so that `Run::new` builds this part in place rather than copying it.
    #[inline]
    pub fn new(n: usize) -> Walk {
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, || None);
        Walk {
            slots,
            flags: Fixed::new(n, 0),
            ..Walk::default()
        }
    }

    /// Back to a new run's, keeping the buffers.
    pub fn reset(&mut self) {
        self.id = None;
        self.pos = 0;
        self.slots.fill(None);
        self.flags.fill(0);
        self.last = None;
        self.active = None;
    }

    /// Starts composition `c` of `n` steps (the outputs still wanted from the previous
    /// walk were moved out first), with no lane running.
    pub fn begin(&mut self, c: CompId, n: usize, lanes: &mut Vec<Lane>) {
        self.id = Some(c);
        self.pos = 0;
        self.last = None;
        self.active = None;
        for s in &mut self.slots[..n] {
            *s = None;
        }
        self.flags[..n].fill(0);
        lanes.clear();
    }

    /// The composition input and this walk's output slots, as references resolve them.
    #[inline]
    pub fn scope<'a>(&'a self, m: &'a ir_spec::Module, input: &'a Value) -> Scope<'a> {
        Scope {
            m,
            comp: self.id.map(|c| &m.compositions[c.index()]),
            input,
            slots: &self.slots,
        }
    }

    /// Walks the composition until a step waits for the host, or the walk ends.
    pub fn advance(
        &mut self,
        base: Base<'_>,
        lanes: &mut Vec<Lane>,
        io: &mut Io,
    ) -> Result<Walked, RunError> {
        let walk = self;
        let prog = base.prog;
        let Some(cid) = walk.id else {
            return Err(internal("no composition is running"));
        };
        let comp = &prog.m.compositions[cid.index()];
        loop {
            if let Some(active) = walk.active {
                // The lane that took the answer may already be done (the common case of a
                // one-lane step); otherwise advance the lanes.
                let done = lanes.iter().all(|l| l.phase == Phase::Done);
                if !done {
                    let ctx = Ctx::new(base, walk.id, &walk.slots, None);
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
                    None => Err(RunError::new(
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
                        .ok_or_else(|| internal("a branch step without a predicate"))?;
                    let scope = walk.scope(&prog.m, base.input);
                    let holds = pred.eval(&scope).map_err(|mut e| {
                        io.failed_step = Some((cid, sid));
                        e.message = format!("branch step `{}`: {}", prog.m.str(step.id), e.message);
                        e
                    })?;
                    let target = if holds { Some(*then) } else { *otherwise };
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
fn finish_step(
    comp: &ir_spec::Composition,
    cid: CompId,
    sid: StepId,
    walk: &mut Walk,
    lanes: &mut [Lane],
    io: &mut Io,
) -> Result<(), RunError> {
    walk.active = None;
    let step = &comp.steps[sid.index()];
    match &step.kind {
        StepKind::Parallel { .. } => {
            if let Some((b, e)) = store_completed_branches(comp, cid, sid, walk, lanes, io) {
                io.failed_step = Some((cid, b));
                return Err(e);
            }
            walk.slots[sid.index()] = Some(Value::Null);
        }
        _ => match lanes.first_mut().and_then(|l| l.result.take()) {
            Some(Ok(v)) => walk.slots[sid.index()] = Some(v),
            Some(Err(e)) => {
                io.failed_step = Some((cid, sid));
                return Err(e);
            }
            None => return Err(internal("a step ended without a result")),
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

/// Stores the outputs of parallel step `sid`'s branches that completed and makes their
/// eval requests; returns the first failed branch and its failure, in declaration
/// order. When every
/// lane is done, that ends the step; when a run-wide failure (`budget_exhausted`,
/// `limit_exceeded`) ended the run during the step, the branches that completed still
/// store their outputs, as they do when a sibling branch fails (`compositions.md` §9.2).
fn store_completed_branches(
    comp: &ir_spec::Composition,
    cid: CompId,
    sid: StepId,
    walk: &mut Walk,
    lanes: &mut [Lane],
    io: &mut Io,
) -> Option<(StepId, RunError)> {
    let StepKind::Parallel { branches, .. } = &comp.steps[sid.index()].kind else {
        return None;
    };
    let mut first_err = None;
    for (lane, b) in lanes.iter_mut().zip(branches) {
        match lane.result.take() {
            Some(Ok(v)) => store_branch(comp, cid, *b, lane.branch, v, walk, io),
            Some(Err(e)) => {
                first_err.get_or_insert((*b, e));
            }
            None => {}
        }
    }
    first_err
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
