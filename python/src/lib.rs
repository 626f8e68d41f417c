//! `packc._packc`: the native half of the `packc` Python package.
//!
//! The package (`python/packc/`) re-exports these classes and functions and adds the
//! pure-Python drivers (`drive`, `drive_async`). The model is the Rust one:
//!
//! - `front`: `check` / `compile` a pack into an `Artifact` (`to_bytes`, `from_bytes`,
//!   `inspect`), diagnostics as `Diagnostic` objects, errors as `packc.CompileError`.
//! - `vm`: the sans-IO VM. A `Program` is built once from an artifact and shared by
//!   runs and threads; a `Run` is resumed by the host and says what it `Need`s next;
//!   the outstanding calls are `Call` objects whose fields are read from the run on
//!   access (the system prompt renders only when asked for).
//! - `hosts`: the Rust hosts: the conformance case runner (`run_case`) and the live
//!   OpenAI-compatible host (`run_live`), run with the GIL released.
//! - `batch`: the batch engine of `packc batch` (`Batch`): a block of rows, one run
//!   each, many in flight on its own async runtime, the GIL released; `packc.ray` runs
//!   it over the blocks of a Ray dataset.
//! - `args`: the int and str arguments whose errors name the parameter (and the
//!   range of an int).
//! - `convert`: values cross the boundary as plain Python objects (dict, list, str,
//!   int, float, bool, None); anything else is a `TypeError` naming where it sits.
//!
//! Errors: every VM error is raised as an instance of a `packc.RunError` subclass
//! chosen by its kind; the classes and the kind → class table live in
//! `packc/_errors.py`, and `errors` builds them from Rust.

mod args;
mod batch;
mod convert;
mod errors;
mod front;
mod hosts;
mod vm;

use pyo3::prelude::*;

/// The native module `packc._packc`.
#[pymodule]
fn _packc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("COMPILER_VERSION", packc_compiler::COMPILER_VERSION)?;
    front::register(m)?;
    vm::register(m)?;
    hosts::register(m)?;
    batch::register(m)?;
    Ok(())
}
