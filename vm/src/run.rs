//! [`Run`]: one execution of a module, driven by the host through [`Run::resume`].

use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use ir_spec::Module;
use serde_json::{Map, Value};

use crate::api::{CallRecord, ErrorKind, EvalRequest, Input, Need, Outcome, RunError, Target};
use crate::exec::{BoxFut, Core, Entry, Lane, Sink};

/// One run of a module against a [`Target`].
///
/// A run is a value: it does nothing until the host calls [`Run::resume`], and each
/// `resume` returns what the run needs next. The trace, the call log and the eval
/// requests can be read at any time. A run is single-threaded (`!Send`): a host that
/// runs calls concurrently keeps the run on one thread and feeds answers back to it.
pub struct Run {
    core: Rc<Core>,
    sink: Sink,
    fut: Option<BoxFut<'static, Result<Outcome, RunError>>>,
    started: bool,
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
        })
    }

    /// Hands the run `input` and runs it until it needs something else.
    ///
    /// The first call must be [`Input::Start`]. After a run-time error or [`Need::Done`]
    /// the run is over and every further call is a `protocol` error. An input the run did
    /// not ask for (an answer to no outstanding call, a turn while calls are outstanding,
    /// anything but a clock reading after [`Need::Clock`]) is a `protocol` error that
    /// leaves the run as it was.
    pub fn resume(&mut self, input: Input) -> Result<Need, RunError> {
        let protocol = |m: &str| Err(RunError::new(ErrorKind::Protocol, m));
        let Some(fut) = self.fut.as_mut() else {
            return protocol("the run is over");
        };
        if !self.started {
            if input != Input::Start {
                return protocol("the first input must be Start");
            }
            self.started = true;
        } else {
            self.core.io.borrow_mut().deliver(input)?;
        }
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
                    protocol("the run stalled")
                }
            }
        }
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
