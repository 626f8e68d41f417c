//! Arbitrary JSON values, small and biased towards known words.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// How deep generated values nest (the VM's own limits are far above this; the point is
/// variety, not depth).
pub const MAX_DEPTH: u32 = 4;

/// The most members of a generated array or object.
pub const MAX_WIDTH: usize = 4;

/// A word: one of `words` most of the time (when there are any), else arbitrary text.
pub fn word(u: &mut Unstructured<'_>, words: &[&str]) -> Result<String> {
    if !words.is_empty() && !u.ratio(1u8, 4u8)? {
        return Ok((*u.choose(words)?).to_owned());
    }
    let len = u.int_in_range(0..=12usize)?;
    let bytes = u.bytes(len.min(u.len()))?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// An arbitrary JSON value of at most `depth` levels of arrays and objects.
pub fn value(u: &mut Unstructured<'_>, words: &[&str], depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.choose_index(kinds)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => {
            if u.arbitrary()? {
                Value::from(u.int_in_range(-2i64..=20)?)
            } else {
                Value::from(u.arbitrary::<i64>()?)
            }
        }
        3 => Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        4 => Value::String(word(u, words)?),
        5 => {
            let n = u.int_in_range(0..=MAX_WIDTH)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(value(u, words, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(object(u, words, depth - 1)?),
    })
}

/// An arbitrary JSON object whose member values are at most `depth` levels deep.
pub fn object(u: &mut Unstructured<'_>, words: &[&str], depth: u32) -> Result<Map<String, Value>> {
    let n = u.int_in_range(0..=MAX_WIDTH)?;
    let mut map = Map::new();
    for _ in 0..n {
        let key = word(u, words)?;
        map.insert(key, value(u, words, depth)?);
    }
    Ok(map)
}
