//! Run-time values: JSON equality, reference paths, and the shared text form.
//!
//! The text form (`compositions.md` §3.6) lives in `ir_spec::text_form`, shared with the
//! compiler, so both write values into templates identically.

use serde_json::Value;

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

pub use ir_spec::text_form::{text_form, write_text_form};

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
