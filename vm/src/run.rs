//! [`Run`]: one execution of a module, driven by the host through [`Run::resume`].

use std::cell::OnceCell;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use ir_spec::Module;
use serde_json::{Map, Value};

use crate::api::{
    CallRecord, ErrorKind, EvalRequest, HostCall, Input, Need, Outcome, RunError, Target,
};
use crate::exec::{BoxFut, Core, Entry, Lane, Sink};
use crate::snapshot::{self, SnapshotError, Step};

/// One run of a module against a [`Target`].
///
/// A run is a value: it does nothing until the host calls [`Run::resume`], and each
/// `resume` returns what the run needs next. The trace, the call log and the eval
/// requests can be read at any time. A run is single-threaded (`!Send`): a host that
/// runs calls concurrently keeps the run on one thread and feeds answers back to it.
///
/// Between two resumes a run can be saved with [`Run::snapshot`] and continued elsewhere
/// with [`Run::restore`] (see [`snapshot`](crate::snapshot)).
pub struct Run {
    core: Rc<Core>,
    sink: Sink,
    fut: Option<BoxFut<'static, Result<Outcome, RunError>>>,
    started: bool,
    target: Target,
    /// Every input the run accepted, with what its `resume` returned: the replay log.
    log: Vec<(Input, Step)>,
    /// How the run ended, when it ended without error.
    done: Option<Outcome>,
    /// The module's fingerprint, computed on the first snapshot.
    fingerprint: OnceCell<u64>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("finished", &self.fut.is_none())
            .finish_non_exhaustive()
    }
}

/// How a run starts.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Host variables: template variables the host supplies (`workflow.md` §14).
    pub host_variables: Map<String, Value>,
    /// The embedder's cap on host calls (model and tool calls) per run: the call past it
    /// fails the run with `limit_exceeded`, as a run-wide failure. `None`: no cap. The
    /// pack cannot set it; it bounds runs of packs whose loops have no budget.
    pub max_host_calls: Option<u64>,
}

impl Run {
    /// A new run of `module` (validated here, once) against `target`.
    pub fn new(module: Arc<Module>, target: Target, options: RunOptions) -> Result<Run, RunError> {
        module
            .validate()
            .map_err(|e| RunError::new(ErrorKind::Protocol, e.to_string()))?;
        let in_range = match target {
            Target::Workflow => module.workflow.is_some(),
            Target::Agent(a) => a.index() < module.agents.len(),
            Target::Composition(c) => c.index() < module.compositions.len(),
        };
        if !in_range {
            return Err(RunError::new(
                ErrorKind::Protocol,
                "the target is not in this module",
            ));
        }
        let workflow_run = match target {
            Target::Workflow => true,
            Target::Agent(a) => matches!(
                module.agents[a.index()].start,
                ir_spec::AgentStart::State(_)
            ),
            Target::Composition(_) => false,
        };
        let budget = module
            .workflow
            .as_ref()
            .map(|w| w.budget)
            .filter(|_| workflow_run);
        let core = Rc::new(Core::new(module, options.host_variables, budget));
        core.io.borrow_mut().max_host_calls = options.max_host_calls;
        let sink = Sink::default();
        let fut_core = core.clone();
        let lane = Lane {
            sink: sink.clone(),
            branch: None,
        };
        let fut: BoxFut<'static, Result<Outcome, RunError>> =
            Box::pin(async move { crate::workflow::main(&fut_core, &lane, target).await });
        Ok(Run {
            core,
            sink,
            fut: Some(fut),
            started: false,
            target,
            log: Vec::new(),
            done: None,
            fingerprint: OnceCell::new(),
        })
    }

    /// Hands the run `input` and runs it until it needs something else.
    ///
    /// The first call must be [`Input::Start`]. After a run-time error or [`Need::Done`]
    /// the run is over and every further call is a `protocol` error. An input the run did
    /// not ask for (an answer to no outstanding call, a turn while calls are outstanding,
    /// anything but a clock reading after [`Need::Clock`]) is a `protocol` error that
    /// leaves the run as it was.
    ///
    /// The run keeps a copy of every input it accepts: the replay log behind
    /// [`Run::snapshot`].
    pub fn resume(&mut self, input: Input) -> Result<Need, RunError> {
        let protocol = |m: &str| Err(RunError::new(ErrorKind::Protocol, m));
        if self.fut.is_none() {
            return protocol("the run is over");
        }
        let logged = input.clone();
        if !self.started {
            if input != Input::Start {
                return protocol("the first input must be Start");
            }
            self.started = true;
        } else {
            self.core.io.borrow_mut().deliver(input)?;
        }
        // Only inputs the run accepted reach the log: a refused one changed nothing.
        let result = self.poll();
        self.log.push((logged, Step::of(&result)));
        if let Ok(Need::Done(outcome)) = &result {
            self.done = Some(outcome.clone());
        }
        result
    }

    /// Polls the root future once, after an input was delivered.
    fn poll(&mut self) -> Result<Need, RunError> {
        let Some(fut) = self.fut.as_mut() else {
            return Err(RunError::new(ErrorKind::Protocol, "the run is over"));
        };
        let mut cx = Context::from_waker(Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(r) => {
                self.fut = None;
                r.map(Need::Done)
            }
            Poll::Pending => {
                let mut io = self.core.io.borrow_mut();
                if io.clock_wanted {
                    Ok(Need::Clock)
                } else if !io.issued.is_empty() {
                    Ok(Need::Calls(std::mem::take(&mut io.issued)))
                } else if io.caller_wanted {
                    Ok(Need::Caller)
                } else if !io.outstanding.is_empty() {
                    Ok(Need::Wait)
                } else {
                    drop(io);
                    self.fut = None;
                    Err(RunError::new(ErrorKind::Protocol, "the run stalled"))
                }
            }
        }
    }

    /// The calls issued and not yet answered, in issue order; none once the run is over.
    ///
    /// While the run wants the clock ([`Need::Clock`]) this may include calls issued
    /// just before the request, which the next [`Run::resume`] announces.
    pub fn outstanding(&self) -> Vec<HostCall> {
        if self.fut.is_none() {
            return Vec::new();
        }
        self.core
            .io
            .borrow()
            .outstanding
            .values()
            .cloned()
            .collect()
    }

    /// What the run waits for now, for a host that does not remember what the last
    /// [`Run::resume`] returned (say, after [`Run::restore`]): [`Need::Clock`],
    /// [`Need::Calls`] listing *every* outstanding call (not only the newly issued ones),
    /// [`Need::Caller`] or [`Need::Done`]; never [`Need::Wait`]. `None` before the first
    /// resume (resume with [`Input::Start`]) and after the run failed.
    pub fn pending(&self) -> Option<Need> {
        if !self.started {
            return None;
        }
        if self.fut.is_none() {
            return self.done.clone().map(Need::Done);
        }
        let io = self.core.io.borrow();
        if io.clock_wanted {
            Some(Need::Clock)
        } else if !io.outstanding.is_empty() {
            Some(Need::Calls(io.outstanding.values().cloned().collect()))
        } else if io.caller_wanted {
            Some(Need::Caller)
        } else {
            None
        }
    }

    /// Saves the run to bytes: between two resumes, at any point of its life.
    ///
    /// [`Run::restore`] continues it from these bytes and the same module. The bytes hold
    /// every input the run accepted so far (see [`snapshot`](crate::snapshot) for the
    /// format and the cost).
    pub fn snapshot(&self) -> Vec<u8> {
        let fingerprint = *self
            .fingerprint
            .get_or_init(|| snapshot::fingerprint(&self.core.m));
        let max_host_calls = self.core.io.borrow().max_host_calls;
        snapshot::encode(
            fingerprint,
            self.target,
            &self.core.host_vars,
            max_host_calls,
            &self.log,
        )
    }

    /// Continues a run saved by [`Run::snapshot`], given the module it ran.
    ///
    /// The restored run is where the saved one was: the same trace, call log and eval
    /// requests, the same outstanding calls under the same [`CallId`](crate::CallId)s
    /// (see [`Run::outstanding`] and [`Run::pending`]), and the same answers to every
    /// further input. Bytes that are not an intact snapshot of a run of `module` are an
    /// error, never a panic.
    pub fn restore(module: Arc<Module>, snapshot: &[u8]) -> Result<Run, SnapshotError> {
        snapshot::restore(module, snapshot)
    }

    pub(crate) fn set_fingerprint(&mut self, fingerprint: u64) {
        self.fingerprint = OnceCell::from(fingerprint);
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.fut.is_none()
    }

    /// The trace lines so far (conformance README, "Trace lines"), parallel branches one
    /// after another.
    pub fn trace(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.sink.visit(&mut |e| {
            if let Entry::Trace(t) = e {
                out.push(t.clone());
            }
        });
        out
    }

    /// The host calls so far, in walk order (parallel branches one after another).
    pub fn calls(&self) -> Vec<CallRecord> {
        let mut out = Vec::new();
        self.sink.visit(&mut |e| {
            if let Entry::Call(c) = e {
                out.push(c.clone());
            }
        });
        out
    }

    /// The eval requests so far (`compositions.md` §9.2).
    pub fn evals(&self) -> Vec<EvalRequest> {
        let mut out = Vec::new();
        self.sink.visit(&mut |e| {
            if let Entry::Eval(r) = e {
                out.push(r.clone());
            }
        });
        out
    }
}
