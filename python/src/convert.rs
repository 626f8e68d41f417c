//! Values across the boundary: `serde_json::Value` ⇄ plain Python objects.
//!
//! JSON-shaped Python values are `None`, `bool`, `int` (within 64 bits), finite `float`,
//! `str`, `list` / `tuple` (or any other `collections.abc.Sequence` but bytes) and `dict`
//! (or any other `collections.abc.Mapping`) with `str` keys. Anything else, anywhere inside a
//! value, is a `TypeError` naming its path (`output['items'][2]`) and its type.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyMemoryView,
    PySequence, PyString, PyTuple,
};
use serde_json::{Map, Number, Value};

/// The deepest nesting converted: deeper values (or a list that contains itself) are a
/// `ValueError`, not a stack overflow. The VM's own default limit (`max_value_depth`)
/// is far lower.
const MAX_DEPTH: usize = 512;

/// `repr(obj)` for a `__repr__` of ours, or `?` when it raises.
pub fn repr(py: Python<'_>, obj: &Py<PyAny>) -> String {
    obj.bind(py)
        .repr()
        .map_or_else(|_| "?".into(), |r| r.to_string())
}

/// A JSON value as a new Python object.
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_py(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(m) => {
            let dict = PyDict::new(py);
            for (k, x) in m {
                dict.set_item(k, to_py(py, x)?)?;
            }
            dict.into_any()
        }
    })
}

/// A `str` as text, or a `ValueError` naming where it sits when it is not valid Unicode
/// (a lone surrogate, which UTF-8 and JSON text cannot hold).
pub(crate) fn text<'a>(
    s: &'a Bound<'_, PyString>,
    path: &str,
) -> PyResult<std::borrow::Cow<'a, str>> {
    s.to_cow().map_err(|_| {
        PyValueError::new_err(format!(
            "{} is a str with a lone surrogate, which JSON text cannot hold",
            shortened(path)
        ))
    })
}

/// `path` as an error shows it: its start and end around `…` when it is long (a
/// deeply nested value's).
fn shortened(path: &str) -> std::borrow::Cow<'_, str> {
    const EDGE: usize = 60;
    if path.len() <= 3 * EDGE {
        return path.into();
    }
    let head = (0..=EDGE)
        .rev()
        .find(|&i| path.is_char_boundary(i))
        .unwrap_or(0);
    let tail = (path.len() - EDGE..=path.len())
        .find(|&i| path.is_char_boundary(i))
        .unwrap_or(path.len());
    format!("{}…{}", &path[..head], &path[tail..]).into()
}

/// A Python value as JSON; `root` names it in errors (`output`, `turn`, …).
pub fn from_py(obj: &Bound<'_, PyAny>, root: &str) -> PyResult<Value> {
    let mut path = root.to_owned();
    convert(obj, &mut path, 0)
}

fn convert(obj: &Bound<'_, PyAny>, path: &mut String, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{} is nested more than {MAX_DEPTH} levels deep (does a value contain itself?)",
            shortened(path)
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyTypeError::new_err(format!(
            "{path} is an int outside the 64-bit range JSON numbers are kept in"
        )));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let x = f.value();
        return Number::from_f64(x).map(Value::Number).ok_or_else(|| {
            PyTypeError::new_err(format!("{path} is {x}, which JSON cannot represent"))
        });
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(text(s, path)?.into_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return object(d.iter().map(Ok), d.len(), path, depth);
    }
    let items = if let Ok(l) = obj.cast::<PyList>() {
        Some(l.iter().collect::<Vec<_>>())
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        Some(t.iter().collect::<Vec<_>>())
    } else {
        None
    };
    // The slow path: any other `collections.abc.Mapping` is an object, any other
    // `Sequence` an array (but bytes, which JSON cannot hold).
    let items = match items {
        Some(items) => Some(items),
        None if is_bytes(obj) => None,
        None => {
            if let Ok(m) = obj.cast::<PyMapping>() {
                let pairs = m.items()?;
                let pairs = pairs
                    .iter()
                    .map(|pair| pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>());
                return object(pairs, m.len()?, path, depth);
            }
            match obj.cast::<PySequence>() {
                Ok(seq) => Some(seq.try_iter()?.collect::<PyResult<Vec<_>>>()?),
                Err(_) => None,
            }
        }
    };
    if let Some(items) = items {
        let mark = path.len();
        let mut out = Vec::with_capacity(items.len());
        for (i, x) in items.iter().enumerate() {
            path.push_str(&format!("[{i}]"));
            out.push(convert(x, path, depth + 1)?);
            path.truncate(mark);
        }
        return Ok(Value::Array(out));
    }
    Err(PyTypeError::new_err(format!(
        "{path} is of type {}, not a JSON value (dict or other mapping, list, tuple or other \
         sequence, str, int, float, bool or None)",
        type_name(obj)
    )))
}

/// The members of a dict or other mapping, as a JSON object: its keys must be `str`.
fn object<'py>(
    pairs: impl Iterator<Item = PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)>>,
    len: usize,
    path: &mut String,
    depth: usize,
) -> PyResult<Value> {
    let mut map = Map::with_capacity(len);
    let mark = path.len();
    for pair in pairs {
        let (k, v) = pair?;
        let Ok(key) = k.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "{path} has a key of type {} ({}); JSON object keys are str",
                type_name(&k),
                k.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            )));
        };
        let key = text(key, path)?;
        path.push_str(&format!("[{key:?}]"));
        let value = convert(&v, path, depth + 1)?;
        path.truncate(mark);
        map.insert(key.into_owned(), value);
    }
    Ok(Value::Object(map))
}

/// `bytes`, `bytearray` or `memoryview`: sequences, but not of JSON values.
fn is_bytes(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<PyMemoryView>()
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}
