//! The Rust hosts from Python: the conformance case runner (`run_case`) and the live
//! OpenAI-compatible host (`run_live`). Both run with the GIL released.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use packc_host::live::{
    Ended, LiveConfig, LiveHost, ModelEndpoint, ToolBindings, TransportConfig, MAX_CONCURRENCY,
};
use packc_host::RunCaseOptions;
use packc_vm::driver::ScriptItem;
use packc_vm::{RunOptions, Target};
use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;
use serde_json::Value;

use crate::convert::{from_py, to_py};
use crate::errors;
use crate::front::Artifact;

/// Registers the hosts' classes and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CaseResult>()?;
    m.add_class::<LiveResult>()?;
    m.add_function(wrap_pyfunction!(run_case, m)?)?;
    m.add_function(wrap_pyfunction!(run_live, m)?)?;
    Ok(())
}

/// A conformance case's verdict: `passed`, and every difference found (`failures`,
/// one per line of `packc test`'s report; empty when it passed).
#[pyclass(frozen, module = "packc", get_all)]
pub struct CaseResult {
    path: String,
    passed: bool,
    failures: Vec<String>,
}

#[pymethods]
impl CaseResult {
    /// A verdict with these fields (what `run_case` gives; also made by `pickle`).
    #[new]
    #[pyo3(signature = (path, passed, failures=Vec::new()))]
    fn new(path: String, passed: bool, failures: Vec<String>) -> CaseResult {
        CaseResult {
            path,
            passed,
            failures,
        }
    }

    /// Pickled as its fields (a process pool sends a verdict back whole).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> (Bound<'py, PyType>, (String, bool, Vec<String>)) {
        let c = slf.get();
        (
            slf.get_type(),
            (c.path.clone(), c.passed, c.failures.clone()),
        )
    }

    fn __eq__(&self, other: &Bound<'_, Self>) -> bool {
        let other = other.get();
        (&self.path, self.passed, &self.failures) == (&other.path, other.passed, &other.failures)
    }

    fn __bool__(&self) -> bool {
        self.passed
    }

    fn __repr__(&self) -> String {
        if self.passed {
            format!("<CaseResult {} passed>", self.path)
        } else {
            format!(
                "<CaseResult {} failed: {}>",
                self.path,
                self.failures.join("; ")
            )
        }
    }
}

/// run_case(path, *, check_snapshots=False, allow_paths=None) -> CaseResult
///
/// Runs a conformance-format case file (`*.case.yaml`) exactly as `packc test` does:
/// the compile half, then the run against the case's scripted host, compared with
/// `expect`. `check_snapshots=True` also reruns it through a snapshot and restore
/// after every resume, which must end the same. A case's `pack_file` is read only from
/// the case's folder, the current folder or a folder of `allow_paths` (`packc test
/// --allow-path`), which also widens where the pack's own files may be read from. A
/// case file that cannot be read raises `OSError` (`FileNotFoundError` for a missing
/// one), as `check` and `compile` do; a case that is read but malformed fails, with what
/// is wrong in `failures`.
#[pyfunction]
#[pyo3(signature = (path, *, check_snapshots=false, allow_paths=None))]
fn run_case(
    py: Python<'_>,
    path: PathBuf,
    check_snapshots: bool,
    allow_paths: Option<Vec<PathBuf>>,
) -> PyResult<CaseResult> {
    let options = RunCaseOptions {
        check_snapshots,
        allow_paths: allow_paths.unwrap_or_default(),
        ..RunCaseOptions::default()
    };
    py.detach(|| readable(&path))
        .map_err(|e| errors::os_error(&e, &path))?;
    let verdict = py.detach(|| {
        // The error of an unreadable case names its file.
        let case = packc_host::Case::read(&path).map_err(|e| e.to_string())?;
        packc_host::run_case_with(&case, options)
    });
    Ok(CaseResult {
        path: path.display().to_string(),
        passed: verdict.is_ok(),
        failures: match verdict {
            Ok(()) => Vec::new(),
            Err(diffs) => diffs.lines().map(str::to_owned).collect(),
        },
    })
}

/// Whether a case file can be read, with the error `open()` then `read()` would meet: a
/// missing file, no permission, a folder. A device, pipe or socket is not opened (a
/// pipe would block): the case reader refuses it as a failed case.
fn readable(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        // Opening a folder succeeds; reading it fails with EISDIR at once.
        std::fs::read(path).map(drop)
    } else if meta.is_file() {
        std::fs::File::open(path).map(drop)
    } else {
        Ok(())
    }
}

/// A live run's result: the `output` and `state` it ended with, its `trace`, and the
/// counts of `model_calls`, `tool_calls` and `tokens`.
#[pyclass(frozen, module = "packc", get_all)]
pub struct LiveResult {
    output: Py<PyAny>,
    state: Option<String>,
    trace: Vec<String>,
    model_calls: u64,
    tool_calls: u64,
    tokens: u64,
}

/// [`LiveResult`]'s constructor arguments, in order.
type LiveFields = (Py<PyAny>, Option<String>, Vec<String>, u64, u64, u64);

#[pymethods]
impl LiveResult {
    /// A result with these fields (what `run_live` gives; also made by `pickle`).
    #[new]
    #[pyo3(signature = (output, state=None, trace=Vec::new(), model_calls=0, tool_calls=0, tokens=0))]
    fn new(
        output: Py<PyAny>,
        state: Option<String>,
        trace: Vec<String>,
        model_calls: u64,
        tool_calls: u64,
        tokens: u64,
    ) -> LiveResult {
        LiveResult {
            output,
            state,
            trace,
            model_calls,
            tool_calls,
            tokens,
        }
    }

    /// Pickled as its fields (a process pool or Ray sends a result back whole).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, LiveFields) {
        let r = slf.get();
        let fields = (
            r.output.clone_ref(slf.py()),
            r.state.clone(),
            r.trace.clone(),
            r.model_calls,
            r.tool_calls,
            r.tokens,
        );
        (slf.get_type(), fields)
    }

    /// Equal when the outputs are equal (`==`) and every other field is the same.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, Self>) -> PyResult<bool> {
        let o = other.get();
        let same = (
            &self.state,
            &self.trace,
            self.model_calls,
            self.tool_calls,
            self.tokens,
        ) == (&o.state, &o.trace, o.model_calls, o.tool_calls, o.tokens);
        Ok(same && self.output.bind(py).eq(o.output.bind(py))?)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let out = crate::convert::repr(py, &self.output);
        format!(
            "<LiveResult state={} output={out} ({} model call(s), {} tool call(s))>",
            self.state.as_deref().unwrap_or("None"),
            self.model_calls,
            self.tool_calls
        )
    }
}

/// Refuses what no live host can serve: another provider, a timeout that is not a
/// positive number of seconds of at most a day (86400, as `packc run --timeout`).
pub(crate) fn check_live(provider: &str, timeout: f64) -> PyResult<()> {
    if provider != "openai" {
        return Err(PyValueError::new_err(format!(
            "provider={provider:?}: the live host speaks \"openai\" (any OpenAI-compatible server)"
        )));
    }
    packc_host::live::transport::timeout_secs(timeout, "timeout")
        .map(drop)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The `variables=` argument as the run's host variables.
pub(crate) fn host_variables(
    variables: Option<&Bound<'_, PyAny>>,
) -> PyResult<serde_json::Map<String, Value>> {
    match variables {
        None => Ok(serde_json::Map::new()),
        Some(v) => match from_py(v, "variables")? {
            Value::Object(m) => Ok(m),
            _ => Err(PyTypeError::new_err(
                "variables must be a dict (a mapping of str names to JSON values)",
            )),
        },
    }
}

/// The live host's configuration from the keyword arguments `run_live` and `Batch`
/// share, for a run of `module`; the key comes from `api_key`, else from the variable
/// `api_key_env` (the default one, `OPENAI_API_KEY`, only for api.openai.com). What `packc run` refuses before its first call is refused here too
/// (`ValueError`): a base URL that is not one, or that ends in the `/chat/completions`
/// the host adds; api.openai.com without a key; a tool binding that cannot work (a
/// command that does not exist, a URL that does not parse). A binding key that names no
/// tool of the pack is a `UserWarning`.
/// The variable the API key is read from by default; sent to api.openai.com only.
const DEFAULT_KEY_VAR: &str = "OPENAI_API_KEY";

#[allow(clippy::too_many_arguments)]
pub(crate) fn live_config(
    py: Python<'_>,
    module: &ir_spec::Module,
    model: String,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: &str,
    tools: Option<&Bound<'_, PyAny>>,
    timeout: f64,
    retries: u32,
) -> PyResult<LiveConfig> {
    if model.trim().is_empty() {
        return Err(PyValueError::new_err(
            "model= is empty: name the model the server serves (e.g. model=\"gpt-4o-mini\")",
        ));
    }
    // The key in the default variable goes to OpenAI's own API only, as with `packc run`:
    // another server gets a key from `api_key=` or a variable named with `api_key_env=`.
    let openai = base_url.as_deref().is_none_or(|url| {
        packc_host::live::url_host(url)
            .is_some_and(|h| h.eq_ignore_ascii_case(ModelEndpoint::OPENAI_HOST))
    });
    let api_key = api_key.or_else(|| {
        (openai || api_key_env != DEFAULT_KEY_VAR)
            .then(|| std::env::var(api_key_env).ok().filter(|k| !k.is_empty()))
            .flatten()
    });
    if let Some(url) = &base_url {
        let host = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        if host.is_none_or(|h| h.is_empty() || h.starts_with('/')) {
            return Err(PyValueError::new_err(format!(
                "base_url={url:?} is not an http:// or https:// URL of the model API; give \
                 one such as \"http://localhost:8000/v1\" (the calls go to its \
                 /chat/completions)"
            )));
        }
        if let Some(base) = ModelEndpoint::base_of(url) {
            return Err(PyValueError::new_err(format!(
                "base_url={url:?} ends with /chat/completions, which the host adds to it: \
                 give base_url={base:?}"
            )));
        }
    } else if api_key.is_none() {
        return Err(PyValueError::new_err(format!(
            "no API key for {}: pass api_key=, or set {api_key_env} (or name another \
             variable with api_key_env=)",
            ModelEndpoint::OPENAI_HOST
        )));
    }
    let tools = bindings(tools)?;
    let report = tools.check(module);
    if !report.errors.is_empty() {
        return Err(PyValueError::new_err(report.errors.join("; ")));
    }
    for warning in &report.warnings {
        errors::user_warning(py, warning)?;
    }
    Ok(LiveConfig {
        model: Some(ModelEndpoint {
            base_url: base_url.unwrap_or_else(|| ModelEndpoint::OPENAI.to_owned()),
            model,
            api_key,
        }),
        tools,
        transport: TransportConfig {
            timeout: Duration::from_secs_f64(timeout),
            retries,
            ..TransportConfig::default()
        },
        ..LiveConfig::default()
    })
}

/// Tool bindings from `tools=`: a bindings file's path, or the dict such a file holds
/// under `tools` (`{"key": {"command": [...]} | {"http": url}}`).
pub(crate) fn bindings(tools: Option<&Bound<'_, PyAny>>) -> PyResult<ToolBindings> {
    let Some(tools) = tools else {
        return Ok(ToolBindings::default());
    };
    if let Ok(path) = tools.extract::<PathBuf>() {
        return ToolBindings::read(&path).map_err(|e| PyValueError::new_err(e.to_string()));
    }
    let value = from_py(tools, "tools")?;
    if !value.is_object() {
        return Err(PyTypeError::new_err(
            "tools must be a bindings file's path or a dict of bindings by tool key",
        ));
    }
    let text = serde_json::json!({ "tools": value }).to_string();
    // A position in this text would point into JSON the caller never wrote: the error
    // names the binding (`tools.kb: ...`) without it.
    ToolBindings::parse(&text, Path::new(".")).map_err(|e| {
        let e = match e {
            packc_host::live::BindingsError::At { error, .. } => *error,
            other => other,
        };
        PyValueError::new_err(e.to_string())
    })
}

/// run_live(artifact, input=None, *, model, provider="openai", base_url=None, ...)
///
/// Runs `artifact` against a real model (any OpenAI-compatible Chat Completions
/// server) and real tools with the Rust live host, the GIL released: the calls of a
/// parallel step go out concurrently, on up to `concurrency` threads (at most 256;
/// started as calls go out, so a pack making one call at a time uses one), with
/// `timeout` seconds per call (at most 86400) and `retries`. The key is `api_key`, else the environment variable `api_key_env`
/// (none: no key is sent); the default variable, `OPENAI_API_KEY`, is read only when the
/// calls go to api.openai.com, as `packc run` does. `tools` binds tool keys to commands or HTTP endpoints (a
/// bindings file's path or its dict). Returns a `LiveResult`; a failed run raises its
/// `packc.RunError`; Ctrl-C stops the run and raises `KeyboardInterrupt`.
#[pyfunction]
#[pyo3(signature = (artifact, input=None, *, model, provider="openai", base_url=None,
    api_key=None, api_key_env="OPENAI_API_KEY", tools=None, target="workflow",
    variables=None, timeout=120.0, retries=3, concurrency=4))]
#[allow(clippy::too_many_arguments)]
fn run_live(
    py: Python<'_>,
    artifact: &Artifact,
    input: Option<&Bound<'_, PyAny>>,
    model: String,
    provider: &str,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: &str,
    tools: Option<&Bound<'_, PyAny>>,
    target: &str,
    variables: Option<&Bound<'_, PyAny>>,
    timeout: f64,
    #[pyo3(from_py_with = crate::args::retries)] retries: u32,
    #[pyo3(from_py_with = crate::args::concurrency)] concurrency: usize,
) -> PyResult<LiveResult> {
    check_live(provider, timeout)?;
    let input = match input {
        Some(v) => from_py(v, "input")?,
        None => Value::Null,
    };
    let host_variables = host_variables(variables)?;
    if concurrency == 0 {
        return Err(PyValueError::new_err("concurrency must be at least 1"));
    }
    if concurrency > MAX_CONCURRENCY {
        return Err(PyValueError::new_err(format!(
            "concurrency is {concurrency}, above the most threads run_live starts \
             ({MAX_CONCURRENCY}): each call in flight has a thread of its own"
        )));
    }
    let host = LiveHost::new(LiveConfig {
        concurrency,
        ..live_config(
            py,
            &artifact.inner.module,
            model,
            base_url,
            api_key,
            api_key_env,
            tools,
            timeout,
            retries,
        )?
    });
    let program = packc_vm::Program::new(artifact.inner.module.clone())
        .map_err(|e| errors::run_error(py, &e))?;
    let program = Arc::new(program);
    let target = Target::parse(program.module(), target).map_err(|e| errors::run_error(py, &e))?;
    let mut run = packc_vm::Run::new(
        program,
        target,
        RunOptions {
            host_variables,
            ..RunOptions::default()
        },
    )
    .map_err(|e| errors::run_error(py, &e))?;

    // The run goes on in a thread of its own; this one waits with the GIL released and
    // looks for Ctrl-C (Python's signal handlers run only on the main thread, between
    // waits), which sets the host's cancel flag.
    let cancel = host.cancel_flag();
    let (tx, mut rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let live = host.drive(&mut run, &[ScriptItem::Turn(input)], &mut ());
        let _ = tx.send((live, run));
    });
    let (live, run) = loop {
        // A receiver is `Send` but not `Sync`: it moves into the detached closure and back.
        let (back, got) = py.detach(move || {
            let got = rx.recv_timeout(Duration::from_millis(100));
            (rx, got)
        });
        rx = back;
        match got {
            Ok(done) => break done,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    cancel.store(true, Ordering::SeqCst);
                    // The driver stops at its next look at the flag (every 50 ms).
                    let _ = py.detach(move || rx.recv_timeout(Duration::from_secs(5)).is_ok());
                    return Err(e);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(errors::run_error(
                    py,
                    &packc_vm::RunError::new(
                        packc_vm::ErrorKind::HostError,
                        "the live host stopped without a result",
                    ),
                ))
            }
        }
    };
    match live.ended {
        Ended::Done(o) => Ok(LiveResult {
            output: to_py(py, &o.output)?.unbind(),
            state: o.state,
            trace: run.trace_lines(),
            model_calls: live.stats.model_calls,
            tool_calls: live.stats.tool_calls,
            tokens: live.stats.tokens,
        }),
        Ended::Failed(e) => Err(errors::run_error(py, &e)),
        Ended::Interrupted => Err(PyKeyboardInterrupt::new_err("the live run was interrupted")),
    }
}
