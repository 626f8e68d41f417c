//! The embedder's limits on what a host hands a run: the size and nesting of a value
//! (a turn's input, an answer, an event name, each host variable).
//!
//! A value is measured by a walk that stops as soon as it passes the limit, so measuring
//! a huge value costs no more than the limit, and allocates nothing. The size counts one
//! per JSON value (null, boolean, number, string, array, object) plus the bytes of every
//! string and object key: `{"a": [1, "xy"]}` is 7 (the object, `a`, the array, `1`, the
//! string and its 2 bytes). An answer counts its output and event, each requested tool's
//! name and arguments, or its error message. The nesting counts arrays and objects, as a
//! JSON text's does: `[[1]]` is 2.
//!
//! Past a limit, an answer fails the run with `limit_exceeded` naming the limit, as a
//! run-wide failure (like `max_host_calls`), not a `host_error` of the step: the limit is
//! the embedder's, not the pack's, so retry modifiers and tool loops must not spend more
//! calls on it, and the value is never stored. A caller's turn or event past a limit is
//! refused with the same error before anything changes: the run still waits for the
//! caller, who may send another.

use serde_json::{Map, Value};

use crate::api::Answer;
use crate::error::{ErrorKind, RunError};
use crate::options::RunOptions;

pub use crate::options::{
    DEFAULT_MAX_BUILT_BYTES, DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_MAX_TOOL_CALLS_PER_ANSWER,
    DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_VALUE_DEPTH,
};

/// The limits a run keeps: those of its [`RunOptions`]. They are the embedder's, so a
/// snapshot does not carry them: [`Run::restore_with`](crate::Run::restore_with) takes
/// them from the restorer's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub max_value_bytes: usize,
    pub max_value_depth: usize,
    pub max_snapshot_bytes: usize,
    pub max_built_bytes: usize,
    pub max_tool_calls_per_answer: usize,
}

impl Limits {
    pub fn of(options: &RunOptions) -> Limits {
        Limits {
            max_value_bytes: options.max_value_bytes,
            max_value_depth: options.max_value_depth,
            max_snapshot_bytes: options.max_snapshot_bytes,
            max_built_bytes: options.max_built_bytes,
            max_tool_calls_per_answer: options.max_tool_calls_per_answer,
        }
    }

    /// Whether both value limits are off (`usize::MAX`): then nothing is walked.
    #[inline]
    fn off(&self) -> bool {
        self.max_value_bytes == usize::MAX && self.max_value_depth == usize::MAX
    }

    /// Checks a value the host hands in; `what` names it in the error ("the turn input").
    #[inline]
    pub fn value(&self, v: &Value, what: &str) -> Result<(), RunError> {
        if self.off() {
            return Ok(());
        }
        let mut walk = Walk::new(self);
        walk.value(v, 0);
        walk.result(self, what)
    }

    /// Checks the host variables, each a value of its own.
    pub fn variables(&self, m: &Map<String, Value>) -> Result<(), RunError> {
        m.iter().try_for_each(|(name, v)| {
            let mut walk = Walk::new(self);
            walk.value(v, 0);
            match walk.over {
                None => Ok(()),
                Some(_) => walk.result(self, &format!("host variable `{name}`")),
            }
        })
    }

    /// Checks a string the host hands in (an event name).
    #[inline]
    pub fn string(&self, s: &str, what: &str) -> Result<(), RunError> {
        let mut walk = Walk::new(self);
        walk.str(s);
        walk.result(self, what)
    }

    /// Checks an answer: its output and event, its requests, or its error message.
    #[inline]
    pub fn answer(&self, a: &Answer, what: &str) -> Result<(), RunError> {
        if self.off() {
            return Ok(());
        }
        let mut walk = Walk::new(self);
        match a {
            Answer::Output { output, event } => {
                walk.value(output, 0);
                if let Some(e) = event {
                    walk.str(e);
                }
            }
            Answer::ToolCalls(reqs) => {
                walk.take(1);
                for r in reqs {
                    if walk.over.is_some() {
                        break;
                    }
                    walk.str(&r.name);
                    walk.value(&r.args, 0);
                }
            }
            Answer::Error(e) => walk.str(e),
        }
        walk.result(self, what)
    }
}

/// Which limit a walk passed.
#[derive(Clone, Copy)]
enum Over {
    Bytes,
    Depth,
}

struct Walk {
    /// What is left of `max_value_bytes`.
    left: usize,
    max_depth: usize,
    over: Option<Over>,
}

impl Walk {
    fn new(limits: &Limits) -> Walk {
        Walk {
            left: limits.max_value_bytes,
            max_depth: limits.max_value_depth,
            over: None,
        }
    }

    #[inline]
    fn take(&mut self, n: usize) {
        match self.left.checked_sub(n) {
            Some(left) => self.left = left,
            None => self.over = Some(Over::Bytes),
        }
    }

    #[inline]
    fn str(&mut self, s: &str) {
        self.take(s.len().saturating_add(1));
    }

    /// Walks `v`, which sits inside `depth` arrays and objects. Recursion is bounded by
    /// `max_depth`: the walk stops one level past it.
    #[inline]
    fn value(&mut self, v: &Value, depth: usize) {
        if self.over.is_some() {
            return;
        }
        if let Err(over) = node(v, depth, self.max_depth, &mut self.left) {
            self.over = Some(over);
        }
    }

    fn result(self, limits: &Limits, what: &str) -> Result<(), RunError> {
        let message = match self.over {
            None => return Ok(()),
            Some(Over::Bytes) => format!(
                "{what} is larger than the embedder's limit of {} (`max_value_bytes`)",
                limits.max_value_bytes
            ),
            Some(Over::Depth) => format!(
                "{what} nests deeper than the embedder's limit of {} levels (`max_value_depth`)",
                limits.max_value_depth
            ),
        };
        Err(RunError::new(ErrorKind::LimitExceeded, message))
    }
}

/// `left` less `n`, or [`Over::Bytes`] when `n` is more than is left.
#[inline(always)]
fn less(left: usize, n: usize) -> Result<usize, Over> {
    left.checked_sub(n).ok_or(Over::Bytes)
}

/// Counts an item of an array, or a member of an object with `name` bytes of name (0
/// for an item), that sits inside `depth` arrays and objects, against `left`; returns
/// what is left. A scalar is counted in place (its name and itself in one step), an
/// empty array or object too (its name, its level, then itself, as [`walk`] would), any
/// other array or object by recursion. Most members of an answer are scalars, and empty
/// lists are common (`"flagged_terms": []`), so most are counted without a call, and
/// what is left stays in a register.
#[inline(always)]
fn item(
    v: &Value,
    name: usize,
    depth: usize,
    max_depth: usize,
    left: usize,
) -> Result<usize, Over> {
    let empty = match v {
        Value::String(s) => return less(left, name.saturating_add(s.len()).saturating_add(1)),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => return less(left, name.saturating_add(1)),
    };
    let mut left = less(left, name)?;
    if !empty {
        walk(v, depth, max_depth, &mut left)?;
        return Ok(left);
    }
    // What `walk` does for an empty array or object, in its order: the level, then one.
    if depth >= max_depth {
        return Err(Over::Depth);
    }
    less(left, 1)
}

/// The walk itself: counts `v` against `left`, returning at the first limit passed.
/// Entering an array or object checks its level before counting it. Out of line, for
/// the arrays and objects nested in a value: the value's own level is [`node`], inlined
/// into its caller, so that an answer of scalars (or of empty arrays and objects) is
/// counted without a call.
#[inline(never)]
fn walk(v: &Value, depth: usize, max_depth: usize, left: &mut usize) -> Result<(), Over> {
    node(v, depth, max_depth, left)
}

/// One level of the walk: `v` itself, which sits inside `depth` arrays and objects, with
/// its items or members counted in place ([`item`]).
#[inline(always)]
fn node(v: &Value, depth: usize, max_depth: usize, left: &mut usize) -> Result<(), Over> {
    let mut rest = *left;
    match v {
        Value::Array(items) => {
            if depth >= max_depth {
                return Err(Over::Depth);
            }
            rest = less(rest, 1)?;
            for v in items {
                rest = item(v, 0, depth + 1, max_depth, rest)?;
            }
        }
        Value::Object(map) => {
            if depth >= max_depth {
                return Err(Over::Depth);
            }
            rest = less(rest, 1)?;
            for (k, v) in map {
                rest = item(v, k.len(), depth + 1, max_depth, rest)?;
            }
        }
        Value::String(s) => rest = less(rest, s.len().saturating_add(1))?,
        _ => rest = less(rest, 1)?,
    }
    *left = rest;
    Ok(())
}

/// A value's size as the limits count it, or `None` when it is larger than `max`: for
/// hosts that want to refuse an oversized answer before handing it in.
pub fn value_size(v: &Value, max: usize) -> Option<usize> {
    let mut walk = Walk {
        left: max,
        max_depth: usize::MAX,
        over: None,
    };
    walk.value(v, 0);
    walk.over.is_none().then_some(max - walk.left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_count_values_and_string_bytes() {
        assert_eq!(value_size(&json!({"a": [1, "xy"]}), 100), Some(7));
        assert_eq!(value_size(&json!(null), 100), Some(1));
        assert_eq!(value_size(&json!(""), 100), Some(1));
        assert_eq!(value_size(&json!({"a": [1, "xy"]}), 7), Some(7));
        assert_eq!(value_size(&json!({"a": [1, "xy"]}), 6), None);
    }

    #[test]
    fn depth_counts_arrays_and_objects() {
        let limits = Limits {
            max_value_bytes: 100,
            max_value_depth: 2,
            max_snapshot_bytes: 0,
            max_built_bytes: 0,
            max_tool_calls_per_answer: 0,
        };
        assert!(limits.value(&json!([[1]]), "v").is_ok());
        assert!(limits.value(&json!([{"a": 1}]), "v").is_ok());
        let e = limits.value(&json!([[[1]]]), "v").unwrap_err();
        assert!(e.message.contains("`max_value_depth`"), "{e}");
        assert!(limits.value(&json!(1), "v").is_ok());
        // Empty arrays and objects, counted in place, still count as a level.
        assert!(limits.value(&json!([[]]), "v").is_ok());
        assert!(limits.value(&json!({"a": {}}), "v").is_ok());
        let e = limits.value(&json!([[{}]]), "v").unwrap_err();
        assert!(e.message.contains("`max_value_depth`"), "{e}");
        assert_eq!(value_size(&json!({"a": [], "bc": {}}), 100), Some(6));
        assert_eq!(value_size(&json!({"a": [], "bc": {}}), 5), None);
        // Past both limits at once, the name is counted before the level is checked.
        let tight = Limits {
            max_value_bytes: 3,
            max_value_depth: 1,
            ..limits
        };
        let e = tight.value(&json!({"abcdef": []}), "v").unwrap_err();
        assert!(e.message.contains("`max_value_bytes`"), "{e}");
        let e = tight.value(&json!({"a": []}), "v").unwrap_err();
        assert!(e.message.contains("`max_value_depth`"), "{e}");
    }

    /// The size and nesting of `v` by their definitions in the module doc.
    fn spec_size_depth(v: &Value) -> (usize, usize) {
        match v {
            Value::String(s) => (1 + s.len(), 0),
            Value::Array(items) => items.iter().fold((1, 1), |(n, d), i| {
                let (m, e) = spec_size_depth(i);
                (n + m, d.max(e + 1))
            }),
            Value::Object(map) => map.iter().fold((1, 1), |(n, d), (k, i)| {
                let (m, e) = spec_size_depth(i);
                (n + k.len() + m, d.max(e + 1))
            }),
            _ => (1, 0),
        }
    }

    proptest::proptest! {
        /// The walk's size and depth verdicts are those of the definitions, at every
        /// limit around the value's own size and nesting.
        #[test]
        fn walk_agrees_with_the_definitions(v in ir_spec::testing::json_value()) {
            let (size, depth) = spec_size_depth(&v);
            proptest::prop_assert_eq!(value_size(&v, usize::MAX), Some(size));
            proptest::prop_assert_eq!(value_size(&v, size), Some(size));
            proptest::prop_assert_eq!(value_size(&v, size - 1), None);
            for max_depth in depth.saturating_sub(1)..=depth + 1 {
                let limits = Limits {
                    max_value_bytes: usize::MAX - 1,
                    max_value_depth: max_depth,
                    max_snapshot_bytes: 0,
                    max_built_bytes: 0,
                    max_tool_calls_per_answer: 0,
                };
                proptest::prop_assert_eq!(limits.value(&v, "v").is_ok(), depth <= max_depth);
            }
        }
    }
}
