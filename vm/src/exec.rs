//! The execution core: the run's shared state, the host-call futures, and the join of
//! parallel branches.
//!
//! The interpreter is written as ordinary `async` Rust and driven by hand: every host
//! import (model call, tool call, clock, the caller's next turn) is a future that
//! registers its request here and stays pending until [`Run::resume`](crate::Run::resume)
//! delivers the answer. Nothing is spawned and no waker is ever woken: `resume` polls the
//! one root future with a no-op waker after each delivery. So the VM does no I/O and reads
//! no clock, and the order of everything it does depends only on the answers — exactly
//! the sans-IO contract, without hand-writing the interpreter as a state machine.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use ir_spec::{Budget, Module, StateId};
use serde_json::{Map, Value};

use crate::api::{
    Answer, Call, CallId, CallRecord, ErrorKind, EvalRequest, HostCall, Input, RunError,
};

/// A boxed future of the interpreter.
pub(crate) type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// What every part of a run shares.
pub(crate) struct Core {
    pub m: Arc<Module>,
    pub host_vars: Map<String, Value>,
    /// The workflow budget; `None` outside workflow runs (`workflow.md` §10).
    pub budget: Option<Budget>,
    pub io: RefCell<Io>,
    pub wf: RefCell<WfState>,
}

/// Requests and answers in flight between the interpreter and the host.
#[derive(Default)]
pub(crate) struct Io {
    next_id: u64,
    /// Issued since the last `resume` returned.
    pub issued: Vec<HostCall>,
    /// Issued and not yet answered, by id (so in issue order).
    pub outstanding: BTreeMap<CallId, HostCall>,
    answers: HashMap<CallId, Answer>,
    pub clock_wanted: bool,
    clock: Option<u64>,
    pub caller_wanted: bool,
    caller: Option<Input>,
    /// A run-wide failure (`budget_exhausted`): once set, nothing more is issued.
    pub fatal: Option<RunError>,
    /// The embedder's cap on host calls ([`RunOptions::max_host_calls`](crate::RunOptions)).
    pub max_host_calls: Option<u64>,
}

impl Io {
    /// Hands a host input to the waiting future; an input nobody asked for is an error.
    pub fn deliver(&mut self, input: Input) -> Result<(), RunError> {
        let protocol = |m: &str| Err(RunError::new(ErrorKind::Protocol, m));
        if self.clock_wanted && !matches!(input, Input::Clock(_)) {
            return protocol("the run asked for a clock reading first");
        }
        match input {
            Input::Start => protocol("the run has already started"),
            Input::Answer(id, answer) => {
                if self.outstanding.remove(&id).is_none() {
                    return protocol("an answer to a call that is not outstanding");
                }
                self.answers.insert(id, answer);
                Ok(())
            }
            Input::Clock(ms) => {
                self.clock_wanted = false;
                self.clock = Some(ms);
                Ok(())
            }
            caller => {
                if !self.caller_wanted {
                    return protocol("a turn or event while the run is busy");
                }
                self.caller_wanted = false;
                self.caller = Some(caller);
                Ok(())
            }
        }
    }
}

/// An artifact value (`workflow.md` §11).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Artifact {
    /// Set by a `replace` writer.
    Value(Value),
    /// The entries written by `append` writers.
    List(Vec<Value>),
}

impl Artifact {
    /// The value as JSON: a list of entries is an array.
    pub fn to_json(&self) -> Value {
        match self {
            Artifact::Value(v) => v.clone(),
            Artifact::List(l) => Value::Array(l.clone()),
        }
    }
}

/// The workflow run's counters and data (`workflow.md` §2).
#[derive(Default)]
pub(crate) struct WfState {
    pub current: Option<StateId>,
    pub visits: Vec<u64>,
    pub total_visits: u64,
    pub tool_calls: u64,
    pub artifacts: Vec<Option<Artifact>>,
    pub history: Vec<Value>,
    pub start_ms: u64,
    pub last_output: Value,
}

impl Core {
    pub fn new(m: Arc<Module>, host_vars: Map<String, Value>, budget: Option<Budget>) -> Self {
        let n_states = m.workflow.as_ref().map_or(0, |w| w.states.len());
        let n_artifacts = m.workflow.as_ref().map_or(0, |w| w.artifacts.len());
        Core {
            m,
            host_vars,
            budget,
            io: RefCell::new(Io::default()),
            wf: RefCell::new(WfState {
                visits: vec![0; n_states],
                artifacts: vec![None; n_artifacts],
                last_output: Value::Null,
                ..WfState::default()
            }),
        }
    }

    /// Records a run-wide failure and returns it.
    pub fn fatal(&self, err: RunError) -> RunError {
        self.io.borrow_mut().fatal = Some(err.clone());
        err
    }

    fn check_fatal(&self) -> Result<(), RunError> {
        match &self.io.borrow().fatal {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Reads the host clock.
    pub fn read_clock(&self) -> impl Future<Output = u64> + '_ {
        ClockFut {
            core: self,
            asked: false,
        }
    }

    /// Waits for the caller's next turn, event or finish.
    pub fn next_caller_input(&self) -> impl Future<Output = Input> + '_ {
        CallerFut {
            core: self,
            asked: false,
        }
    }

    /// The wall-clock checkpoint of `workflow.md` §10: reads the clock when
    /// `max_wall_time_sec` is set and fails the run once the limit is reached.
    pub async fn check_wall_clock(&self) -> Result<(), RunError> {
        let Some(limit) = self.budget.and_then(|b| b.max_wall_time_sec) else {
            return Ok(());
        };
        let now = self.read_clock().await;
        let start = self.wf.borrow().start_ms;
        if now.saturating_sub(start) >= limit.saturating_mul(1000) {
            return Err(self.fatal(RunError::new(
                ErrorKind::BudgetExhausted,
                format!("max_wall_time_sec {limit} reached"),
            )));
        }
        Ok(())
    }

    /// Issues one host call (`workflow.md` §10 order: tool-call budget, then the clock,
    /// then the call) and waits for its answer.
    pub async fn host_call(
        &self,
        lane: &Lane,
        call: Call,
        record: CallRecord,
    ) -> Result<Answer, RunError> {
        self.check_fatal()?;
        if matches!(call, Call::Tool(_)) {
            if let Some(limit) = self.budget.and_then(|b| b.max_tool_calls) {
                let count = self.wf.borrow().tool_calls;
                if count.saturating_add(1) > limit {
                    return Err(self.fatal(RunError::new(
                        ErrorKind::BudgetExhausted,
                        format!("max_tool_calls {limit} reached"),
                    )));
                }
            }
            self.wf.borrow_mut().tool_calls += 1;
        }
        self.check_wall_clock().await?;
        self.check_fatal()?;
        let cap = {
            let io = self.io.borrow();
            io.max_host_calls.filter(|max| io.next_id >= *max)
        };
        if let Some(max) = cap {
            return Err(self.fatal(RunError::new(
                ErrorKind::LimitExceeded,
                format!("the embedder's limit of {max} host calls was reached"),
            )));
        }
        lane.sink.push(Entry::Call(record));
        let id = {
            let mut io = self.io.borrow_mut();
            let id = CallId(io.next_id);
            io.next_id = io.next_id.saturating_add(1);
            let call = HostCall {
                id,
                branch: lane.branch,
                call,
            };
            io.outstanding.insert(id, call.clone());
            io.issued.push(call);
            id
        };
        Ok(AnswerFut { core: self, id }.await)
    }
}

struct AnswerFut<'a> {
    core: &'a Core,
    id: CallId,
}

impl Future for AnswerFut<'_> {
    type Output = Answer;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Answer> {
        match self.core.io.borrow_mut().answers.remove(&self.id) {
            Some(a) => Poll::Ready(a),
            None => Poll::Pending,
        }
    }
}

struct ClockFut<'a> {
    core: &'a Core,
    asked: bool,
}

impl Future for ClockFut<'_> {
    type Output = u64;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u64> {
        let mut io = self.core.io.borrow_mut();
        if self.asked {
            if let Some(ms) = io.clock.take() {
                return Poll::Ready(ms);
            }
        } else {
            io.clock_wanted = true;
            drop(io);
            self.asked = true;
        }
        Poll::Pending
    }
}

struct CallerFut<'a> {
    core: &'a Core,
    asked: bool,
}

impl Future for CallerFut<'_> {
    type Output = Input;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Input> {
        let mut io = self.core.io.borrow_mut();
        if self.asked {
            if let Some(input) = io.caller.take() {
                return Poll::Ready(input);
            }
        } else {
            io.caller_wanted = true;
            drop(io);
            self.asked = true;
        }
        Poll::Pending
    }
}

/// Runs the branches of a parallel step together (`compositions.md` §8.1): each poll
/// walks the branches in declaration order, so every branch issues its first call in
/// that order and later calls as their answers arrive. A clock request or a run-wide
/// failure stops the walk at once, so clock readings follow the issue order and nothing
/// is issued after a failure.
pub(crate) struct Join<'a> {
    core: &'a Core,
    futs: Vec<Option<BoxFut<'a, Result<Value, RunError>>>>,
    done: Vec<Option<Result<Value, RunError>>>,
}

impl<'a> Join<'a> {
    pub fn new(core: &'a Core, futs: Vec<BoxFut<'a, Result<Value, RunError>>>) -> Self {
        let n = futs.len();
        Join {
            core,
            futs: futs.into_iter().map(Some).collect(),
            done: (0..n).map(|_| None).collect(),
        }
    }
}

impl Future for Join<'_> {
    /// Every branch's result in declaration order, or the run-wide failure.
    type Output = Result<Vec<Result<Value, RunError>>, RunError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        for i in 0..this.futs.len() {
            if let Some(fut) = &mut this.futs[i] {
                if let Poll::Ready(r) = fut.as_mut().poll(cx) {
                    this.done[i] = Some(r);
                    this.futs[i] = None;
                }
            }
            let io = this.core.io.borrow();
            if let Some(e) = &io.fatal {
                return Poll::Ready(Err(e.clone()));
            }
            if io.clock_wanted {
                return Poll::Pending;
            }
        }
        if this.done.iter().all(Option::is_some) {
            let results = this.done.iter_mut().filter_map(Option::take).collect();
            return Poll::Ready(Ok(results));
        }
        Poll::Pending
    }
}

/// An entry of the run's log.
#[derive(Clone)]
pub(crate) enum Entry {
    Trace(String),
    Call(CallRecord),
    Eval(EvalRequest),
    /// A parallel branch's own log, kept in declaration order however the branches
    /// interleave.
    Sub(Sink),
}

/// Where trace lines, call records and eval requests go. A parallel step gives each
/// branch a child sink, so `trace` and `calls` read branch by branch.
#[derive(Clone, Default)]
pub(crate) struct Sink(Rc<RefCell<Vec<Entry>>>);

impl Sink {
    pub fn push(&self, e: Entry) {
        self.0.borrow_mut().push(e);
    }

    pub fn trace(&self, line: String) {
        self.push(Entry::Trace(line));
    }

    /// A child sink, placed here in the log.
    pub fn child(&self) -> Sink {
        let child = Sink::default();
        self.push(Entry::Sub(child.clone()));
        child
    }

    /// Visits every entry in log order, branches flattened.
    pub fn visit(&self, f: &mut dyn FnMut(&Entry)) {
        for e in self.0.borrow().iter() {
            match e {
                Entry::Sub(s) => s.visit(f),
                other => f(other),
            }
        }
    }
}

/// Where an execution writes, and which parallel branch it is.
#[derive(Clone)]
pub(crate) struct Lane {
    pub sink: Sink,
    pub branch: Option<u32>,
}
