//! The sans-IO VM from Python: `Program`, `Run`, `Need`, `Call` and `Outcome`.
//!
//! A `Run` wraps a [`packc_vm::Run`]; `resume(...)` and `answer(...)` hand it one input
//! and return what it needs next. A `Call` is a handle on one outstanding call: its
//! id, kind, prompt or tool are copied when it is listed; everything else (input,
//! system prompt, history, offered tools, output schema) is read from the run on first
//! access and kept, so read what a host needs before answering the call.

use std::sync::Arc;

use packc_vm::{Answer, CallId, CallView, Input, RunOptions, Target, ToolRequest};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};
use serde_json::Value;

use crate::convert::{from_py, to_py};
use crate::errors;
use crate::front::Artifact;

mod call;

pub use call::Call;

/// Registers the VM's classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_class::<Run>()?;
    m.add_class::<Need>()?;
    m.add_class::<Call>()?;
    m.add_class::<Outcome>()?;
    Ok(())
}

/// What a run needs next, returned by `Run.resume` and `Run.answer`.
///
/// - `CALLS`: new calls were issued (`run.issued`; all outstanding: `run.pending`);
///   answer each, one at a time, in any order.
/// - `WAIT`: nothing new; answer one of the calls still outstanding.
/// - `CLOCK`: resume with `clock=<milliseconds>` before anything else.
/// - `CALLER`: the run is idle; resume with `turn=`, `event=` or `finish=True`.
/// - `DONE`: the run ended without error; read `run.outcome`.
#[pyclass(frozen, eq, eq_int, hash, module = "packc")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Need {
    /// New calls were issued.
    #[pyo3(name = "CALLS")]
    Calls,
    /// Answer one of the outstanding calls.
    #[pyo3(name = "WAIT")]
    Wait,
    /// Read the clock.
    #[pyo3(name = "CLOCK")]
    Clock,
    /// The caller's next turn, event or finish.
    #[pyo3(name = "CALLER")]
    Caller,
    /// The run ended.
    #[pyo3(name = "DONE")]
    Done,
}

#[pymethods]
impl Need {
    /// Pickled by name, as a Python `enum` member is (`getattr(Need, "CALLS")`).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let name = match *slf.get() {
            Need::Calls => "CALLS",
            Need::Wait => "WAIT",
            Need::Clock => "CLOCK",
            Need::Caller => "CALLER",
            Need::Done => "DONE",
        };
        let py = slf.py();
        let getattr = py.import("builtins")?.getattr("getattr")?;
        Ok((getattr, (py.get_type::<Need>(), name))
            .into_pyobject(py)?
            .into_any())
    }
}

impl From<packc_vm::Need> for Need {
    fn from(n: packc_vm::Need) -> Need {
        match n {
            packc_vm::Need::Calls => Need::Calls,
            packc_vm::Need::Wait => Need::Wait,
            packc_vm::Need::Clock => Need::Clock,
            packc_vm::Need::Caller => Need::Caller,
            packc_vm::Need::Done => Need::Done,
        }
    }
}

/// A checked, precomputed module, shared by runs (and threads): build it once per
/// artifact, then `start` as many runs as you like.
#[pyclass(frozen, module = "packc")]
pub struct Program {
    inner: Arc<packc_vm::Program>,
}

#[pymethods]
impl Program {
    /// Program(artifact): checks the module once.
    #[new]
    fn new(py: Python<'_>, artifact: &Artifact) -> PyResult<Program> {
        let module = artifact.inner.module.clone();
        match py.detach(move || packc_vm::Program::new(module)) {
            Ok(p) => Ok(Program { inner: Arc::new(p) }),
            Err(e) => Err(errors::run_error(py, &e)),
        }
    }

    /// start(target="workflow", *, variables=None, record_calls=False, ...) -> Run
    ///
    /// A new run of `target` (`"workflow"`, `"composition:NAME"` or `"agent:NAME"`).
    /// `variables` are the host variables (template variables the host supplies);
    /// `record_calls=True` keeps the call log (`run.calls`). The embedder's limits
    /// (`max_host_calls`, `max_value_bytes`, `max_value_depth`, `max_snapshot_bytes`,
    /// `max_built_bytes`) default to the VM's. An unknown target raises
    /// `packc.ProtocolError`.
    #[pyo3(signature = (target="workflow", *, variables=None, record_calls=false,
        max_host_calls=None, max_value_bytes=None, max_value_depth=None,
        max_snapshot_bytes=None, max_built_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        target: &str,
        variables: Option<&Bound<'_, PyAny>>,
        record_calls: bool,
        #[pyo3(from_py_with = crate::args::max_host_calls)] max_host_calls: Option<u64>,
        #[pyo3(from_py_with = crate::args::max_value_bytes)] max_value_bytes: Option<usize>,
        #[pyo3(from_py_with = crate::args::max_value_depth)] max_value_depth: Option<usize>,
        #[pyo3(from_py_with = crate::args::max_snapshot_bytes)] max_snapshot_bytes: Option<usize>,
        #[pyo3(from_py_with = crate::args::max_built_bytes)] max_built_bytes: Option<usize>,
    ) -> PyResult<Run> {
        let target =
            Target::parse(self.inner.module(), target).map_err(|e| errors::run_error(py, &e))?;
        let options = run_options(
            variables,
            record_calls,
            Limits {
                max_host_calls,
                max_value_bytes,
                max_value_depth,
                max_snapshot_bytes,
                max_built_bytes,
            },
        )?;
        packc_vm::Run::new(self.inner.clone(), target, options)
            .map(|inner| Run { inner, error: None })
            .map_err(|e| errors::run_error(py, &e))
    }

    /// restore(data, *, variables=None, record_calls=False, max_host_calls=None, ...) -> Run
    ///
    /// Continues a run from `Run.snapshot()` bytes, in this process or another: the same
    /// trace, call log and outstanding calls, under the same ids. The snapshot holds the
    /// run's state, its host variables included (so a snapshot is as secret as they
    /// are): `variables` other than `None` raise `ValueError`, as the run keeps the ones
    /// it started with. The other options (`record_calls` and the limits, as for `start`)
    /// are this call's, never the snapshot's. Damaged bytes, or a snapshot of another
    /// module, raise `packc.SnapshotError`.
    #[pyo3(signature = (data, *, variables=None, record_calls=false,
        max_host_calls=None, max_value_bytes=None, max_value_depth=None,
        max_snapshot_bytes=None, max_built_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn restore(
        &self,
        py: Python<'_>,
        data: &[u8],
        variables: Option<&Bound<'_, PyAny>>,
        record_calls: bool,
        #[pyo3(from_py_with = crate::args::max_host_calls)] max_host_calls: Option<u64>,
        #[pyo3(from_py_with = crate::args::max_value_bytes)] max_value_bytes: Option<usize>,
        #[pyo3(from_py_with = crate::args::max_value_depth)] max_value_depth: Option<usize>,
        #[pyo3(from_py_with = crate::args::max_snapshot_bytes)] max_snapshot_bytes: Option<usize>,
        #[pyo3(from_py_with = crate::args::max_built_bytes)] max_built_bytes: Option<usize>,
    ) -> PyResult<Run> {
        if variables.is_some_and(|v| !v.is_none()) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a restored run keeps the host variables it started with (they are in the snapshot): leave out `variables`",
            ));
        }
        let options = run_options(
            None,
            record_calls,
            Limits {
                max_host_calls,
                max_value_bytes,
                max_value_depth,
                max_snapshot_bytes,
                max_built_bytes,
            },
        )?;
        let program = self.inner.clone();
        let data = data.to_vec();
        match py.detach(move || packc_vm::Run::restore_with(program, &data, &options)) {
            Ok(inner) => Ok(Run { inner, error: None }),
            Err(e) => Err(errors::snapshot_error(py, format!("cannot restore: {e}"))),
        }
    }

    fn __repr__(&self) -> String {
        format!("<Program {}>", self.inner.module().id)
    }
}

/// One run of a program: plain data that the host drives.
///
/// ```python
/// need = run.resume()                  # the first resume
/// need = run.resume(turn={"text": ""}) # after Need.CALLER (or event="name", finish=True)
/// need = run.answer(call, output=...)  # after Need.CALLS / Need.WAIT
/// need = run.resume(clock=ms)          # after Need.CLOCK
/// ```
///
/// A run is driven by one thread at a time. Protocol misuse (an answer to a call that
/// is not outstanding, a turn while calls are out, any input to a finished run) raises
/// `packc.ProtocolError` and leaves the run exactly as it was.
#[pyclass(module = "packc")]
pub struct Run {
    inner: packc_vm::Run,
    /// The exception that ended the run, as it was raised, for `Run.error`.
    error: Option<Py<PyAny>>,
}

impl Run {
    fn step(&mut self, py: Python<'_>, input: Input) -> PyResult<Need> {
        let was_finished = self.inner.is_finished();
        self.inner.resume(input).map(Need::from).map_err(|e| {
            let err = errors::run_error(py, &e);
            // Misuse leaves the run as it was, and a refused turn leaves it waiting:
            // only an error that ended a running run is the run's own.
            if !was_finished && self.inner.is_finished() {
                self.error = Some(err.value(py).clone().into_any().unbind());
            }
            err
        })
    }

    fn calls_of(
        slf: &Bound<'_, Self>,
        list: impl Fn(&packc_vm::Run) -> Vec<CallView<'_>>,
    ) -> PyResult<Vec<Py<Call>>> {
        let py = slf.py();
        // Another thread inside the run (or a `__repr__` called while it converts an
        // answer) holds it mutably: the RuntimeError any other getter raises then.
        let this = slf.try_borrow()?;
        let owner = slf.clone().unbind();
        list(&this.inner)
            .iter()
            .map(|v| Py::new(py, Call::of(v, owner.clone_ref(py))))
            .collect()
    }
}

#[pymethods]
impl Run {
    /// resume(*, turn=..., event=..., finish=True, clock=...) -> Need
    ///
    /// With no argument: the first resume (a run's start). Then, after `Need.CALLER`,
    /// one of `turn=value`, `event="name"` or `finish=True`; after `Need.CLOCK`,
    /// `clock=milliseconds`. Answers go through `answer`.
    #[pyo3(signature = (**kwargs))]
    fn resume(&mut self, py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Need> {
        let input = match kwargs {
            None => Input::Start,
            Some(kw) if kw.is_empty() => Input::Start,
            Some(kw) if kw.len() > 1 => {
                return Err(PyTypeError::new_err(
                    "resume takes at most one of turn=, event=, finish=True or clock=",
                ))
            }
            Some(kw) => {
                let (key, value) = kw
                    .iter()
                    .next()
                    .ok_or_else(|| PyTypeError::new_err("resume: no argument"))?;
                let key: String = key.extract()?;
                match key.as_str() {
                    "turn" => Input::Turn(from_py(&value, "turn")?),
                    "event" => Input::Event(
                        value
                            .extract()
                            .map_err(|_| PyTypeError::new_err("event must be a str"))?,
                    ),
                    "finish" => {
                        if !value.is_truthy()? {
                            return Err(PyValueError::new_err(
                                "finish=True ends the caller's turns; finish=False means nothing",
                            ));
                        }
                        Input::Finish
                    }
                    "clock" => Input::Clock(value.extract().map_err(|_| {
                        PyTypeError::new_err("clock must be a non-negative int (milliseconds)")
                    })?),
                    other => {
                        return Err(PyTypeError::new_err(format!(
                            "resume got an unexpected keyword argument {other:?} \
                             (turn=, event=, finish=True or clock=; answers go through answer())"
                        )))
                    }
                }
            }
        };
        self.step(py, input)
    }

    /// answer(call, *, output=None, tool_calls=None, event=None, error=None) -> Need
    ///
    /// Answers the outstanding `call` (a `Call` of this run, or its id) with one of: `output` (and,
    /// for a prompt state, the `event` it names), `tool_calls` (a model asking for
    /// tools: a list of `{"name": key, "args": {...}}` or `(key, args)` pairs), or
    /// `error` (the call failed, with this message). With none of them, the answer is the
    /// output `None` (JSON `null`). An `event` counts only where a prompt state's
    /// transitions read it (`call.events` lists them); elsewhere it is ignored.
    #[pyo3(signature = (call, *, output=None, tool_calls=None, event=None, error=None))]
    fn answer(
        mut slf: PyRefMut<'_, Self>,
        py: Python<'_>,
        call: &Bound<'_, PyAny>,
        output: Option<&Bound<'_, PyAny>>,
        tool_calls: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::args::event)] event: Option<String>,
        #[pyo3(from_py_with = crate::args::error)] error: Option<String>,
    ) -> PyResult<Need> {
        let id = match call.cast::<Call>() {
            // Ids start at 0 in every run: another run's call would name one of this
            // run's calls.
            Ok(c) if !c.get().belongs_to(slf.as_ptr()) => {
                return Err(errors::run_error(
                    py,
                    &packc_vm::RunError::new(
                        packc_vm::ErrorKind::Protocol,
                        format!(
                            "this call belongs to another run: {} was issued by another \
                             Run than the one answering it",
                            c.get().describe()
                        ),
                    ),
                ))
            }
            Ok(c) => c.get().id,
            Err(_) => call.extract::<u64>().map_err(|_| {
                PyTypeError::new_err(
                    "answer: `call` must be a packc.Call or its id (an int, 0 or more)",
                )
            })?,
        };
        let answer = match (error, tool_calls) {
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err(
                    "answer with error= or tool_calls=, not both",
                ))
            }
            (Some(message), None) => {
                if output.is_some() || event.is_some() {
                    return Err(PyValueError::new_err(
                        "an error= answer carries no output= or event=",
                    ));
                }
                Answer::Error(message)
            }
            (None, Some(calls)) => {
                if output.is_some() || event.is_some() {
                    return Err(PyValueError::new_err(
                        "a tool_calls= answer carries no output= or event=",
                    ));
                }
                Answer::ToolCalls(tool_requests(calls)?)
            }
            (None, None) => Answer::Output {
                output: match output {
                    Some(o) => from_py(o, "output")?,
                    None => Value::Null,
                },
                event,
            },
        };
        slf.step(py, Input::Answer(CallId(id), answer))
    }

    /// Every outstanding call, in issue order.
    #[getter]
    fn pending(slf: &Bound<'_, Self>) -> PyResult<Vec<Py<Call>>> {
        Run::calls_of(slf, |r| r.pending().collect())
    }

    /// The outstanding call a host answering one call at a time answers next: the
    /// lowest parallel branch's, then the oldest (the VM's default pick,
    /// `packc_vm::driver::next_call`, as the conformance runner does); `None` when no
    /// call is outstanding.
    #[getter]
    fn next_call(slf: &Bound<'_, Self>) -> PyResult<Option<Py<Call>>> {
        Ok(Run::calls_of(slf, |r| {
            packc_vm::driver::next_call(r).into_iter().collect()
        })?
        .pop())
    }

    /// The calls issued by the last resume (those `Need.CALLS` announced).
    #[getter]
    fn issued(slf: &Bound<'_, Self>) -> PyResult<Vec<Py<Call>>> {
        Run::calls_of(slf, |r| r.issued().collect())
    }

    /// How the run ended (`output`, `state`), once it is done; `None` before.
    #[getter]
    fn outcome(&self, py: Python<'_>) -> PyResult<Option<Outcome>> {
        self.inner
            .outcome()
            .map(|o| {
                Ok(Outcome {
                    output: to_py(py, o.output)?.unbind(),
                    state: o.state.map(str::to_owned),
                })
            })
            .transpose()
    }

    /// What the run waits for now, as the last `resume` said (`Need.CALLS` while calls
    /// are outstanding): a run restored from a snapshot, or left by a host that stopped
    /// partway, is picked up from here. `None` before the first `resume()` and after the
    /// run failed.
    #[getter]
    fn waiting_for(&self) -> Option<Need> {
        self.inner.waiting_for().map(Need::from)
    }

    /// The events the caller may send now (`resume(event=...)`): while the run waits for
    /// the caller in a workflow state the caller drives, that state's event names; else
    /// empty. Any other event ends the run (`InvalidEvent`, or `TerminalState`).
    #[getter]
    fn caller_events(&self) -> Vec<String> {
        self.inner
            .caller_events()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// The error that ended the run (a `packc.RunError` subclass, as `resume` or
    /// `answer` raised it); `None` while it runs and when it finished with an output.
    #[getter]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.error.as_ref().map(|e| e.clone_ref(py))
    }

    /// Whether the run has ended (done or failed).
    #[getter]
    fn finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// The trace lines (`enter main`, `step classify`, …), as `packc run --trace` prints.
    #[getter]
    fn trace(&self) -> Vec<String> {
        self.inner.trace_lines()
    }

    /// The call log in the case format (`{prompt, input, system}` / `{tool, args}`);
    /// empty unless the run was started with `record_calls=True`.
    #[getter]
    fn calls<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .calls()
            .iter()
            .map(|c| to_py(py, &c.to_json()))
            .collect()
    }

    /// The run's state as bytes, to continue later with `Program.restore` (in this
    /// process or another). Past `max_snapshot_bytes` raises `packc.SnapshotError`.
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.try_snapshot() {
            Ok(bytes) => Ok(PyBytes::new(py, &bytes)),
            Err(e) => Err(errors::snapshot_error(py, format!("cannot snapshot: {e}"))),
        }
    }

    fn __repr__(&self) -> String {
        let state = if self.inner.is_finished() {
            "finished"
        } else {
            "running"
        };
        format!(
            "<Run of {} ({state}, {} call(s) outstanding)>",
            self.inner.program().module().id,
            self.inner.pending().count()
        )
    }
}

/// `tool_calls=`: a list of `{"name": key, "args": {...}}` or `(key, args)`.
fn tool_requests(calls: &Bound<'_, PyAny>) -> PyResult<Vec<ToolRequest>> {
    let Value::Array(items) = from_py(calls, "tool_calls")? else {
        return Err(PyTypeError::new_err(
            "tool_calls must be a list of {\"name\": ..., \"args\": ...} dicts or (name, args) pairs",
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let bad = || {
                PyTypeError::new_err(format!(
                    "tool_calls[{i}] is not {{\"name\": str, \"args\": ...}} or (name, args)"
                ))
            };
            match item {
                Value::Object(mut m) => {
                    let name = match m.remove("name") {
                        Some(Value::String(s)) => s,
                        _ => return Err(bad()),
                    };
                    let args = m
                        .remove("args")
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    if let Some(k) = m.keys().next() {
                        return Err(PyTypeError::new_err(format!(
                            "tool_calls[{i}] has an unknown member {k:?} (name, args)"
                        )));
                    }
                    Ok(ToolRequest { name, args })
                }
                Value::Array(mut pair) if pair.len() == 2 => {
                    let args = pair.pop().unwrap_or_default();
                    match pair.pop() {
                        Some(Value::String(name)) => Ok(ToolRequest { name, args }),
                        _ => Err(bad()),
                    }
                }
                _ => Err(bad()),
            }
        })
        .collect()
}

/// How a run ended without error: its last `output` and the workflow `state` it ended
/// in (`None` without a workflow).
#[pyclass(frozen, module = "packc", get_all)]
pub struct Outcome {
    output: Py<PyAny>,
    state: Option<String>,
}

#[pymethods]
impl Outcome {
    /// An outcome with this `output` and `state` (what `run.outcome` gives; made by hand
    /// in a host's tests, and by `pickle`).
    #[new]
    #[pyo3(signature = (output, state=None))]
    fn new(output: Py<PyAny>, state: Option<String>) -> Outcome {
        Outcome { output, state }
    }

    /// Pickled as its fields (a process pool or Ray sends an outcome back whole).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> (Bound<'py, PyType>, (Py<PyAny>, Option<String>)) {
        let o = slf.get();
        (
            slf.get_type(),
            (o.output.clone_ref(slf.py()), o.state.clone()),
        )
    }

    /// Equal when the outputs are equal (`==`) and the states are the same.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, Self>) -> PyResult<bool> {
        let other = other.get();
        Ok(self.state == other.state && self.output.bind(py).eq(other.output.bind(py))?)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let out = crate::convert::repr(py, &self.output);
        match &self.state {
            Some(state) => format!("<Outcome state={state:?} output={out}>"),
            None => format!("<Outcome output={out}>"),
        }
    }
}

/// The embedder's limits a Python caller may set; `None` keeps the VM's default.
struct Limits {
    max_host_calls: Option<u64>,
    max_value_bytes: Option<usize>,
    max_value_depth: Option<usize>,
    max_snapshot_bytes: Option<usize>,
    max_built_bytes: Option<usize>,
}

/// The run options of `Program.start` and `Program.restore`.
fn run_options(
    variables: Option<&Bound<'_, PyAny>>,
    record_calls: bool,
    limits: Limits,
) -> PyResult<RunOptions> {
    let defaults = RunOptions::default();
    let host_variables = match variables {
        None => serde_json::Map::new(),
        Some(v) => match from_py(v, "variables")? {
            Value::Object(m) => m,
            _ => return Err(PyTypeError::new_err("variables must be a dict")),
        },
    };
    Ok(RunOptions {
        host_variables,
        max_host_calls: limits.max_host_calls,
        max_value_bytes: limits.max_value_bytes.unwrap_or(defaults.max_value_bytes),
        max_value_depth: limits.max_value_depth.unwrap_or(defaults.max_value_depth),
        max_snapshot_bytes: limits
            .max_snapshot_bytes
            .unwrap_or(defaults.max_snapshot_bytes),
        max_built_bytes: limits.max_built_bytes.unwrap_or(defaults.max_built_bytes),
        record_calls,
        ..defaults
    })
}
