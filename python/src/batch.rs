//! The batch engine from Python: `packc.Batch` runs a block of rows through
//! [`packc_batch::Engine`], each row one run, many in flight on the engine's own tokio
//! runtime, the GIL released. `packc.ray` calls it once per block of a Ray dataset.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use packc_batch::{BatchError, BatchOptions, Engine, Row, RowError, RowResult};
use packc_host::live::LiveConfig;
use packc_vm::{Program, RunOptions, Target};
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMapping, PyString};
use serde_json::Value;

use crate::convert::{from_py, to_py};
use crate::front::Artifact;

/// Registers `Batch`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Batch>()
}

/// Batch(artifact, *, model, provider="openai", base_url=None, ..., concurrency=64,
///       rows_in_flight=0, rpm=None, tpm=None)
///
/// The batch engine of `packc batch`, built once and reused for many blocks of rows:
/// `run(rows)` runs each row (a JSON value: the input of one run; its id is its `id`
/// member when that is a str or a number, else its position from 1, as a line of
/// `packc batch` takes its line number) and returns one dict per row, in the order given,
/// shaped as a line of `packc batch`'s output: `id`, `output` or `error` (`kind`,
/// `message`, `where`), `calls`, `tokens`, `wall_ms`. A row that fails (a malformed
/// row, an input not matching `input_schema`, a run error) is a result with `error`;
/// the other rows go on.
///
/// The live options are `run_live`'s (`model`, `base_url`, `api_key`/`api_key_env`,
/// `tools`, `target`, `variables`, `timeout`, `retries`), plus the batch's limits shared
/// by all rows of a block: `concurrency` (model calls in flight, at most 100000),
/// `rows_in_flight` (0: four times `concurrency`), `tool_concurrency` (at most 100000),
/// `rpm`, `tpm`, `threads` (the engine's worker threads; 0: one per core, at most 4;
/// never more than 256). `timeout` is at most 86400 seconds. `input_schema` (a JSON Schema as a dict)
/// fails the rows that do not match it before any call.
///
/// A `Batch` made before a fork (`multiprocessing`'s fork start method) works in the
/// child too: the child's first use starts an engine of its own, with the same options
/// (the parent's runtime threads do not exist in the child).
#[pyclass(frozen, module = "packc")]
pub struct Batch {
    /// What builds an engine: kept to build another in a forked child.
    build: Build,
    engine: Mutex<Current>,
}

/// The engine of this process: `pid` made it.
struct Current {
    pid: u32,
    engine: Arc<Engine>,
}

/// What [`Engine::new`] takes, kept.
struct Build {
    program: Arc<Program>,
    target: Target,
    live: LiveConfig,
    options: BatchOptions,
}

impl Build {
    fn engine(&self) -> Result<Engine, BatchError> {
        Engine::new(
            self.program.clone(),
            self.target,
            self.live.clone(),
            self.options.clone(),
        )
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let current = self.engine.get_mut().unwrap_or_else(|e| e.into_inner());
        if current.pid != std::process::id() {
            // A forked child's copy of the parent's engine: dropping its runtime would
            // wait for threads that do not exist here.
            std::mem::forget(current.engine.clone());
        }
    }
}

#[pymethods]
impl Batch {
    #[new]
    #[pyo3(signature = (artifact, *, model, provider="openai", base_url=None,
        api_key=None, api_key_env="OPENAI_API_KEY", tools=None, target="workflow",
        variables=None, input_schema=None, timeout=120.0, retries=3, concurrency=64,
        rows_in_flight=0, tool_concurrency=16, rpm=None, tpm=None, threads=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        artifact: &Artifact,
        model: String,
        provider: &str,
        base_url: Option<String>,
        api_key: Option<String>,
        api_key_env: &str,
        tools: Option<&Bound<'_, PyAny>>,
        target: &str,
        variables: Option<&Bound<'_, PyAny>>,
        input_schema: Option<&Bound<'_, PyAny>>,
        timeout: f64,
        #[pyo3(from_py_with = crate::args::retries)] retries: u32,
        #[pyo3(from_py_with = crate::args::concurrency)] concurrency: usize,
        #[pyo3(from_py_with = crate::args::rows_in_flight)] rows_in_flight: usize,
        #[pyo3(from_py_with = crate::args::tool_concurrency)] tool_concurrency: usize,
        #[pyo3(from_py_with = crate::args::rpm)] rpm: Option<u32>,
        #[pyo3(from_py_with = crate::args::tpm)] tpm: Option<u64>,
        #[pyo3(from_py_with = crate::args::threads)] threads: usize,
    ) -> PyResult<Batch> {
        crate::hosts::check_live(provider, timeout)?;
        if concurrency == 0 {
            return Err(PyValueError::new_err("concurrency must be at least 1"));
        }
        if tool_concurrency == 0 {
            return Err(PyValueError::new_err(
                "tool_concurrency must be at least 1 (tool calls in flight at once)",
            ));
        }
        let host_variables = crate::hosts::host_variables(variables)?;
        let input_schema = match input_schema {
            None => None,
            Some(s) => match from_py(s, "input_schema")? {
                v @ (Value::Object(_) | Value::Bool(_)) => Some(v),
                _ => {
                    return Err(PyTypeError::new_err(
                        "input_schema must be a JSON Schema (a dict)",
                    ))
                }
            },
        };
        let live = crate::hosts::live_config(
            py,
            &artifact.inner.module,
            model,
            base_url,
            api_key,
            api_key_env,
            tools,
            timeout,
            retries,
        )?;
        let options = BatchOptions {
            concurrency,
            rows_in_flight,
            tool_concurrency,
            rpm,
            tpm,
            max_failures: None,
            // A block returns one result per row; a Python host sees every failure.
            max_failures_in_a_row: None,
            threads,
            run: RunOptions {
                host_variables,
                ..RunOptions::default()
            },
            input_schema,
        };
        let program = Program::new(artifact.inner.module.clone())
            .map_err(|e| crate::errors::run_error(py, &e))?;
        let program = Arc::new(program);
        let target = Target::parse(program.module(), target)
            .map_err(|e| crate::errors::run_error(py, &e))?;
        let build = Build {
            program,
            target,
            live,
            options,
        };
        let engine = py.detach(|| build.engine()).map_err(batch_error)?;
        Ok(Batch {
            build,
            engine: Mutex::new(Current {
                pid: std::process::id(),
                engine: Arc::new(engine),
            }),
        })
    }

    /// run(rows) -> list of dicts
    ///
    /// Runs every row and returns their results in the order given. Blocks until all
    /// are done, with the GIL released; Ctrl-C cancels the rows in flight and raises
    /// `KeyboardInterrupt`. `rows` is a list (or any iterable) of rows: a dict, a str or
    /// bytes raises `TypeError` (iterating one would run its keys, characters or bytes).
    fn run<'py>(&self, py: Python<'py>, rows: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        // A dict would run its keys as rows, a str its characters.
        let single = if rows.cast::<PyMapping>().is_ok() {
            Some("a dict")
        } else if rows.cast::<PyString>().is_ok() {
            Some("a str")
        } else if rows.cast::<PyBytes>().is_ok() || rows.cast::<PyByteArray>().is_ok() {
            Some("bytes")
        } else {
            None
        };
        if let Some(what) = single {
            return Err(PyTypeError::new_err(format!(
                "rows must be a list (or any iterable) of rows, not {what}: to run one row, \
                 pass [row]"
            )));
        }
        let mut values = Vec::new();
        for (i, row) in rows.try_iter()?.enumerate() {
            values.push(row_of(py, i as u64, &row?)?);
        }
        let results = self.wait(py, values)?;
        let list = PyList::empty(py);
        for result in &results {
            list.append(to_py(py, &result.to_json())?)?;
        }
        Ok(list)
    }

    /// Stops the block running now (from another thread): no further row starts, the
    /// rows in flight stop, and `run` returns at once, still one result per row: a row
    /// that did not finish has the error `{"kind": "cancelled", "message": ...}`.
    fn cancel(&self) {
        self.current().cancel();
    }

    /// The counters of the block running now (or of the last one): `done`, `failed`,
    /// `in_flight`, `calls`, `tokens`.
    #[getter]
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let engine = self.current();
        let p = engine.progress();
        let dict = PyDict::new(py);
        for (key, counter) in [
            ("done", &p.done),
            ("failed", &p.failed),
            ("in_flight", &p.in_flight),
            ("calls", &p.calls),
            ("tokens", &p.tokens),
        ] {
            dict.set_item(key, counter.load(Ordering::Relaxed))?;
        }
        Ok(dict)
    }
}

impl Batch {
    /// The engine as it is now (the parent's, in a forked child that has not used it).
    fn current(&self) -> Arc<Engine> {
        let current = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        current.engine.clone()
    }

    /// The engine to run rows on: in a child forked since it was made, a new one (the
    /// parent's runtime has no threads in the child). The parent's is left alone, never
    /// dropped: dropping it would wait for those threads.
    fn engine(&self, py: Python<'_>) -> PyResult<Arc<Engine>> {
        let mut current = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if current.pid != pid {
            let fresh = py.detach(|| self.build.engine()).map_err(batch_error)?;
            let parents = std::mem::replace(&mut current.engine, Arc::new(fresh));
            std::mem::forget(parents);
            current.pid = pid;
        }
        Ok(current.engine.clone())
    }

    /// Runs the rows on a thread of their own while this one waits with the GIL
    /// released and looks for Ctrl-C (Python runs signal handlers only on the main
    /// thread, between waits), which cancels the engine.
    fn wait(&self, py: Python<'_>, rows: Vec<Row>) -> PyResult<Vec<RowResult>> {
        let engine = self.engine(py)?;
        let engine = &*engine;
        std::thread::scope(|scope| {
            let (tx, mut rx) = mpsc::channel();
            scope.spawn(move || {
                let _ = tx.send(engine.run_rows(rows));
            });
            loop {
                // A receiver is `Send` but not `Sync`: it moves into the detached closure
                // and back.
                let (back, got) = py.detach(move || {
                    let got = rx.recv_timeout(Duration::from_millis(100));
                    (rx, got)
                });
                rx = back;
                match got {
                    Ok(done) => return done.map_err(batch_error),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(e) = py.check_signals() {
                            engine.cancel();
                            // The scope joins the engine's thread, which returns at the
                            // engine's next look at the flag.
                            let _ = py.detach(move || rx.recv());
                            return Err(e);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(PyOSError::new_err(
                            "the batch engine stopped without a result",
                        ))
                    }
                }
            }
        })
    }
}

/// Row `index` of a block: its value, or, when it is not JSON-shaped (a NaN, bytes, a
/// set…), a row that fails with `invalid_row` and the conversion's message, as a
/// malformed line of `packc batch` does; the other rows go on. Its id is its `id` key
/// when that is a str or a number, else its position from 1.
fn row_of(py: Python<'_>, index: u64, row: &Bound<'_, PyAny>) -> PyResult<Row> {
    match from_py(row, &format!("rows[{index}]")) {
        Ok(v) => Ok(Row::new(index, index + 1, v)),
        Err(e) if e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py) => {
            let id = row
                .cast::<PyDict>()
                .ok()
                .and_then(|d| d.get_item("id").ok().flatten())
                .and_then(|id| from_py(&id, "id").ok())
                .filter(|id| id.is_string() || id.is_number())
                .unwrap_or(Value::from(index + 1));
            Ok(Row {
                index,
                id,
                input: Err(RowError::new(
                    RowError::INVALID_ROW,
                    e.value(py).to_string(),
                    Some(format!("row {}", index + 1)),
                )),
            })
        }
        Err(e) => Err(e),
    }
}

fn batch_error(e: BatchError) -> PyErr {
    match e {
        BatchError::Refused(m) => PyValueError::new_err(m),
        BatchError::Io(m) => PyOSError::new_err(m),
        BatchError::Journal(m) => PyOSError::new_err(format!("journal: {m}")),
    }
}
