//! JSON helpers on the run's hot path: member lookup, string and value equality
//! (`compositions.md` §7.3), and the string rule of `compositions.md` §11.2.

use serde_json::Value;

/// Objects up to this many members are searched linearly.
const LINEAR: usize = 12;

/// The member `k` of `v` when `v` is an object.
#[inline(always)]
pub fn member<'v>(v: &'v Value, k: &str) -> Option<&'v Value> {
    let o = v.as_object()?;
    if o.len() <= LINEAR {
        // Lengths first, then the bytes, compared inline: most members are told apart
        // by their lengths, and short keys never reach `memcmp`.
        for (kk, v) in o {
            if eq_str(kk, k) {
                return Some(v);
            }
        }
        None
    } else {
        o.get(k)
    }
}

/// String equality without a call to `memcmp` for strings up to 16 bytes (object keys,
/// enum-like values): one or two overlapping word loads per side.
#[inline(always)]
pub(crate) fn eq_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        if n > 16 {
            return a == b;
        }
        let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
        return (w(a, 0) ^ w(b, 0)) | (w(a, n - 8) ^ w(b, n - 8)) == 0;
    }
    if n >= 4 {
        let w = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or([0; 4]));
        return (w(a, 0) ^ w(b, 0)) | (w(a, n - 4) ^ w(b, n - 4)) == 0;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
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
/// holding JSON text becomes the parsed value.
pub(crate) fn string_rule(schema: bool, v: Value) -> Value {
    match (&v, schema) {
        (Value::String(s), true) => serde_json::from_str(s).unwrap_or(v),
        _ => v,
    }
}
