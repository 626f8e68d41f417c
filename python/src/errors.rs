//! Raising the package's exceptions from Rust. The classes are Python classes
//! (`packc/_errors.py`), so they carry attributes (`kind`, `diagnostics`) and docstrings
//! like any Python exception; this module only instantiates them.

use pyo3::prelude::*;

/// The module that defines the exception classes.
const ERRORS: &str = "packc._errors";

/// A Python exception of class `name` of `packc._errors`, built with `args`.
fn build<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let made = py
        .import(ERRORS)
        .and_then(|m| m.getattr(name))
        .and_then(|f| f.call1(args));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// A VM error as an instance of the `packc.RunError` subclass of its kind.
pub fn run_error(py: Python<'_>, e: &packc_vm::RunError) -> PyErr {
    build(py, "run_error", (e.kind.as_str(), e.message.as_str()))
}

/// `packc.ArtifactError`: bytes that are not a valid `.ppk` artifact.
pub fn artifact_error(py: Python<'_>, message: String) -> PyErr {
    build(py, "ArtifactError", (message,))
}

/// `packc.SnapshotError`: snapshot bytes that cannot be restored (or written).
pub fn snapshot_error(py: Python<'_>, message: String) -> PyErr {
    build(py, "SnapshotError", (message,))
}

/// `packc.CompileError`: a pack with errors; `report` is the rendered report.
pub fn compile_error(py: Python<'_>, report: String, diagnostics: Vec<Py<PyAny>>) -> PyErr {
    build(py, "CompileError", (report, diagnostics))
}

/// An `OSError` for a file that could not be read, as Python's own `open()` raises it:
/// with `errno`, `strerror` and `filename`, so it is the subclass of its error
/// (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`…).
pub fn os_error(e: &std::io::Error, path: &std::path::Path) -> PyErr {
    let filename = path.display().to_string();
    match e.raw_os_error() {
        Some(errno) => {
            // `Display` ends with " (os error N)"; `strerror` is the words before it.
            let text = e.to_string();
            let strerror = text
                .strip_suffix(&format!(" (os error {errno})"))
                .unwrap_or(&text)
                .to_owned();
            pyo3::exceptions::PyOSError::new_err((errno, strerror, filename))
        }
        None => pyo3::exceptions::PyOSError::new_err(format!("cannot read {filename}: {e}")),
    }
}

/// Issues `message` as a `UserWarning` from the caller's line (what `warnings.warn` does
/// with `stacklevel=1`); an error only when a warnings filter turns it into one.
pub fn user_warning(py: Python<'_>, message: &str) -> PyResult<()> {
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &std::ffi::CString::new(message).unwrap_or_default(),
        1,
    )
}
