//! Run-time values: JSON equality, reference paths, and the shared text form.
//!
//! The text form (`compositions.md` §3.6) is the same function as the compiler's
//! `syntax::text_form`; the VM keeps its own copy so that it does not depend on the
//! compiler (data flows compiler → IR → VM only).

use serde_json::{Number, Value};

/// JSON equality of `compositions.md` §7.3: numbers compare as IEEE-754 doubles
/// (`1 == 1.0`), objects ignore member order, different types are never equal.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Follows `path` (object members only) from `root`; `None` when a member is missing
/// or a non-object is met on the way (`compositions.md` §3.4).
pub fn follow<'v>(root: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, seg| v.as_object()?.get(seg))
}

/// The text form of `v`.
pub fn text_form(v: &Value) -> String {
    let mut out = String::new();
    write_text_form(&mut out, v);
    out
}

/// Appends the text form of `v` to `out`: a string as is, anything else as compact JSON
/// with members sorted by key and numbers as ECMAScript prints them.
pub fn write_text_form(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => out.push_str(s),
        _ => write_json(out, v),
    }
}

enum Item<'a> {
    Value(&'a Value),
    Key(&'a str),
    Punct(char),
}

fn write_json(out: &mut String, v: &Value) {
    let mut stack = vec![Item::Value(v)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Punct(c) => out.push(c),
            Item::Key(k) => {
                write_json_string(out, k);
                out.push(':');
            }
            Item::Value(v) => match v {
                Value::Null => out.push_str("null"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Number(n) => write_number(out, n),
                Value::String(s) => write_json_string(out, s),
                Value::Array(items) => {
                    out.push('[');
                    stack.push(Item::Punct(']'));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Item::Value(item));
                        if i > 0 {
                            stack.push(Item::Punct(','));
                        }
                    }
                }
                Value::Object(members) => {
                    out.push('{');
                    stack.push(Item::Punct('}'));
                    let mut members: Vec<_> = members.iter().collect();
                    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    for (i, (key, value)) in members.into_iter().enumerate().rev() {
                        stack.push(Item::Value(value));
                        stack.push(Item::Key(key));
                        if i > 0 {
                            stack.push(Item::Punct(','));
                        }
                    }
                }
            },
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[from..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escape);
        }
        from = i + 1;
    }
    out.push_str(&s[from..]);
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) {
    match n.as_f64() {
        Some(x) => write_js_number(out, x),
        None => out.push_str(&n.to_string()),
    }
}

/// ECMAScript `Number::toString(x)` for radix 10.
fn write_js_number(out: &mut String, x: f64) {
    if x == 0.0 {
        out.push('0');
        return;
    }
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let n = exp + 1;
    let zeros = |count: i32| "0".repeat(usize::try_from(count).unwrap_or(0));
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.push_str(&zeros(n - k));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.push_str(&zeros(-n));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(digits.len().min(1));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality_is_numeric_and_order_free() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(!json_eq(&json!("1"), &json!(1)));
        assert!(!json_eq(&json!(true), &json!(1)));
        assert!(!json_eq(&json!(null), &json!(false)));
        assert!(!json_eq(&json!([]), &json!({})));
        assert!(json_eq(
            &json!({"a": [1, {"b": 2.0}], "c": null}),
            &json!({"c": null, "a": [1.0, {"b": 2}]})
        ));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn text_form_matches_the_spec_example() {
        let v = json!({"b": 1, "a": [true, "x"]});
        assert_eq!(text_form(&v), r#"{"a":[true,"x"],"b":1}"#);
        assert_eq!(text_form(&json!(3.0)), "3");
        assert_eq!(text_form(&json!(null)), "null");
        assert_eq!(text_form(&json!(1e21)), "1e+21");
    }
}
