//! JSON helpers on the run's hot path: member lookup and string equality (shared with the
//! compiler, [`ir_spec::json`]), value equality (`compositions.md` §7.3), and the string
//! rule of `compositions.md` §11.2.

use serde_json::Value;

pub(crate) use ir_spec::json::eq_str;

/// The member `k` of `v` when `v` is an object.
#[inline(always)]
pub fn member<'v>(v: &'v Value, k: &str) -> Option<&'v Value> {
    ir_spec::json::member(v.as_object()?, k)
}

/// JSON equality of `compositions.md` §7.3: numbers compare as IEEE-754 doubles
/// (`1 == 1.0`), objects ignore member order, different types are never equal.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::String(x), Value::String(y)) => eq_str(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| member(b, k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The string rule of `compositions.md` §11.2: with an output schema, a string answer
/// holding JSON text becomes the parsed value. Inlined: every prompt answer passes here,
/// and only a string answer with a schema is parsed (out of line).
#[inline(always)]
pub(crate) fn string_rule(schema: bool, v: Value) -> Value {
    match v {
        Value::String(s) if schema => parse_string_answer(s),
        v => v,
    }
}

/// A string answer's JSON text parsed, or the string itself when it is not JSON.
#[inline(never)]
fn parse_string_answer(s: String) -> Value {
    serde_json::from_str(&s).unwrap_or(Value::String(s))
}
