//! Arguments that pyo3's own conversions would refuse with a message that names neither
//! the parameter nor what it takes: an unsigned int given a negative int raises
//! `OverflowError: can't convert negative int to unsigned`, a `str` given an int
//! `'int' object is not an instance of 'str'`. Each function here reads one parameter
//! (`#[pyo3(from_py_with = args::retries)]`), so its error names it:
//! `ValueError: retries must not be negative, not -1`.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// An unsigned int type an argument converts to, with its largest value.
trait Unsigned: TryFrom<u64> {
    const MAX: u64;
}

impl Unsigned for u32 {
    const MAX: u64 = u32::MAX as u64;
}

impl Unsigned for u64 {
    const MAX: u64 = u64::MAX;
}

impl Unsigned for usize {
    const MAX: u64 = usize::MAX as u64;
}

/// The type name of `ob`, for a message (`int`, `str`).
fn type_name(ob: &Bound<'_, PyAny>) -> String {
    ob.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// `ob` as a `T`: a `TypeError` for what is not an int, a `ValueError` for an int out of
/// `T`'s range, both naming `name`.
fn unsigned<T: Unsigned>(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<T> {
    let n = match ob.extract::<u64>() {
        Ok(n) => Some(n),
        Err(e) if e.is_instance_of::<PyOverflowError>(ob.py()) => None,
        Err(_) => {
            return Err(PyTypeError::new_err(format!(
                "{name} must be an int, not {}",
                type_name(ob)
            )))
        }
    };
    n.and_then(|n| T::try_from(n).ok()).ok_or_else(|| {
        // `str` of an int past Python's digit limit raises: say what it is instead.
        let shown = ob
            .str()
            .map_or_else(|_| "a larger int".to_owned(), |s| s.to_string());
        let negative = ob.lt(0).unwrap_or(false);
        if negative {
            PyValueError::new_err(format!("{name} must not be negative, not {shown}"))
        } else {
            PyValueError::new_err(format!(
                "{name} must be an int from 0 to {}, not {shown}",
                T::MAX
            ))
        }
    })
}

/// `ob` as text: a `TypeError` naming `name` for anything but a `str`.
fn text(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    match ob.cast::<PyString>() {
        Ok(s) => crate::convert::text(s, name).map(|t| t.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name} must be a str, not {}",
            type_name(ob)
        ))),
    }
}

/// One reader function per parameter, named after it: `name: Type` for a required or
/// defaulted argument, `name: Option<Type>` for one that may be `None`.
macro_rules! readers {
    ($read:ident; $($name:ident: Option<$t:ty>),* $(,)?) => {$(
        #[doc = concat!("The `", stringify!($name), "` argument, or `None`.")]
        pub fn $name(ob: &Bound<'_, PyAny>) -> PyResult<Option<$t>> {
            if ob.is_none() {
                Ok(None)
            } else {
                $read(ob, stringify!($name)).map(Some)
            }
        }
    )*};
    ($read:ident; $($name:ident: $t:ty),* $(,)?) => {$(
        #[doc = concat!("The `", stringify!($name), "` argument.")]
        pub fn $name(ob: &Bound<'_, PyAny>) -> PyResult<$t> {
            $read(ob, stringify!($name))
        }
    )*};
}

readers!(unsigned; retries: u32, concurrency: usize, rows_in_flight: usize,
    tool_concurrency: usize, threads: usize);
readers!(unsigned; rpm: Option<u32>, tpm: Option<u64>, max_host_calls: Option<u64>,
    max_value_bytes: Option<usize>, max_value_depth: Option<usize>,
    max_snapshot_bytes: Option<usize>, max_built_bytes: Option<usize>, max_bytes: Option<usize>);
readers!(text; error: Option<String>, event: Option<String>);
