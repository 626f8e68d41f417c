//! `Call`: a handle on one outstanding host call, read from its run on access.

use std::sync::OnceLock;

use packc_vm::{CallId, CallView};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use serde_json::json;

use super::Run;
use crate::convert::to_py;

/// What kind of host call a view is, as `Call.kind` names it. New kinds of call are
/// added here (and in `packc/_packc.pyi`'s `CallKind`).
fn kind_of(view: &CallView<'_>) -> &'static str {
    if view.is_model() {
        "model"
    } else if view.guard().is_some() {
        "guard"
    } else if view.extension().is_some() {
        "extension"
    } else {
        "tool"
    }
}

/// One outstanding host call of a run.
///
/// `kind` is `"model"`, `"tool"`, `"guard"` or `"extension"`; a model call has a
/// `prompt_task`, a tool call a `tool` (a tool key, or an agent member used as a tool), a
/// guard call (a host validator) its `guard`, an extension step its `extension`. Inside a parallel step,
/// `branch` is the 0-based index of the branch that issued it. The other fields are
/// read from the run on first access and then kept: read them before answering.
#[pyclass(frozen, module = "packc")]
pub struct Call {
    run: Py<Run>,
    pub(super) id: u64,
    kind: &'static str,
    prompt_task: Option<String>,
    tool: Option<String>,
    provider: Option<String>,
    branch: Option<u32>,
    input: PyOnceLock<Py<PyAny>>,
    system: OnceLock<String>,
}

impl Call {
    pub(super) fn of(view: &CallView<'_>, run: Py<Run>) -> Call {
        Call {
            run,
            id: view.id().0,
            kind: kind_of(view),
            prompt_task: view.prompt_task().map(str::to_owned),
            tool: view.tool().map(str::to_owned),
            provider: view.provider().map(str::to_owned),
            branch: view.branch(),
            input: PyOnceLock::new(),
            system: OnceLock::new(),
        }
    }

    /// Whether this call was issued by the run object `run`.
    pub(super) fn belongs_to(&self, run: *mut pyo3::ffi::PyObject) -> bool {
        self.run.as_ptr() == run
    }

    /// `call 3 (model doc_classifier)`: what an error names it by.
    pub(super) fn describe(&self) -> String {
        let what = self.what();
        format!("call {} ({} {what})", self.id, self.kind)
    }

    fn what(&self) -> &str {
        self.prompt_task
            .as_deref()
            .or(self.tool.as_deref())
            .unwrap_or("?")
    }

    /// Runs `f` on this call's view, borrowed from its run.
    fn with_view<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&CallView<'_>) -> PyResult<R>,
    ) -> PyResult<R> {
        let run = self.run.bind(py).try_borrow().map_err(|_| {
            PyRuntimeError::new_err("the run is in use elsewhere (drive a Run from one thread)")
        })?;
        let view = run.inner.call(CallId(self.id)).ok_or_else(|| {
            let message = format!(
                "call {} is no longer outstanding: read its fields before answering it",
                self.id
            );
            crate::errors::run_error(
                py,
                &packc_vm::RunError::new(packc_vm::ErrorKind::Protocol, message),
            )
        })?;
        f(&view)
    }

    /// What `read` finds in this call's view, as a new Python object (`None` when it
    /// finds nothing).
    fn json_of<'py>(
        &self,
        py: Python<'py>,
        read: impl FnOnce(&CallView<'_>) -> Option<serde_json::Value>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with_view(py, |view| read(view).map(|v| to_py(py, &v)).transpose())
    }
}

#[pymethods]
impl Call {
    /// The id `Run.answer` names.
    #[getter]
    fn id(&self) -> u64 {
        self.id
    }

    /// `"model"` or `"tool"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// A model call's prompt key; `None` for a tool call.
    #[getter]
    fn prompt_task(&self) -> Option<&str> {
        self.prompt_task.as_deref()
    }

    /// A tool call's tool key (or agent member key); `None` for a model call.
    #[getter]
    fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// A model call's effective provider key (RFC 0017: the step's `provider`, else its
    /// prompt's, else `"default"`), resolved at compile time; `None` for a tool call.
    #[getter]
    fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }

    /// Inside a parallel step, the 0-based branch index; `None` elsewhere.
    #[getter]
    fn branch(&self) -> Option<u32> {
        self.branch
    }

    /// The model call's input, or the tool call's arguments, as a Python value.
    #[getter]
    fn input(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(v) = self.input.get(py) {
            return Ok(v.clone_ref(py));
        }
        let v = self.with_view(py, |view| Ok(to_py(py, &view.input().as_value())?.unbind()))?;
        Ok(self.input.get_or_init(py, || v).clone_ref(py))
    }

    /// The rendered system prompt of a model call (`""` for a tool call), rendered on
    /// first access.
    #[getter]
    fn system(&self, py: Python<'_>) -> PyResult<String> {
        if let Some(s) = self.system.get() {
            return Ok(s.clone());
        }
        let s = self.with_view(py, |view| Ok(view.system()))?;
        Ok(self.system.get_or_init(|| s).clone())
    }

    /// A model call's history (`{input, output}` exchanges, then this execution's
    /// `{tool_calls}` and `{tool_result}` entries).
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.with_view(py, |view| {
            view.history().iter().map(|h| to_py(py, h)).collect()
        })
    }

    /// The tools offered to a model call: `{"key", "name", "description",
    /// "parameters"}` dicts (`parameters` is `None` for an agent member).
    #[getter]
    fn offered_tools<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.with_view(py, |view| {
            view.offered_tools()
                .map(|t| {
                    let parameters = t.parameters.map(|p| p.parse());
                    let d = json!({"key": t.key, "name": t.name, "description": t.description,
                                   "parameters": parameters});
                    to_py(py, &d)
                })
                .collect()
        })
    }

    /// A composition step's output schema, `{"name", "schema"}` (`schema` is `None`
    /// when the file was not embedded); `None` when the step declares none.
    #[getter]
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.json_of(py, |view| {
            let s = view.output_schema()?;
            let schema = s.schema.as_ref().map(|j| j.parse());
            Some(json!({"name": s.name, "schema": schema}))
        })
    }

    /// The events a model call's answer may name (a prompt state's `on_event` keys).
    #[getter]
    fn events(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with_view(py, |view| Ok(view.events().map(str::to_owned).collect()))
    }

    /// A host validator's call: `{"type", "params", "text"}` (the validator's type as
    /// written, its params, the text to judge); answer with the output `{"pass": bool}`.
    /// `None` for other calls.
    #[getter]
    fn guard<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.json_of(py, |view| {
            let g = view.guard()?;
            Some(json!({"type": g.validator, "params": g.params.parse(), "text": g.text}))
        })
    }

    /// An extension step's call: `{"kind", "params"}` (the vendor kind and the step's
    /// other members); its resolved input is `input`, and the answer's output is the
    /// step's output. `None` for other calls.
    #[getter]
    fn extension<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.json_of(py, |view| {
            let (kind, params) = view.extension()?;
            Some(json!({"kind": kind, "params": params.parse()}))
        })
    }

    /// A model call's prompt `parameters` (temperature, …); `None` for a tool call.
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.json_of(py, |view| view.parameters().map(|p| p.parse()))
    }

    fn __repr__(&self) -> String {
        let what = self.what();
        match self.branch {
            Some(b) => format!("<Call {} {} {what} (branch {b})>", self.id, self.kind),
            None => format!("<Call {} {} {what}>", self.id, self.kind),
        }
    }
}
