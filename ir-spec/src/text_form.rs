//! The text form of a JSON value (`compositions.md` §3.6), shared by `{{var}}`
//! placeholders and `${...}` interpolation.
//!
//! | value | text |
//! | --- | --- |
//! | string | its characters, unquoted |
//! | number | as ECMAScript `Number::toString` prints it: `3`, `-2`, `2.5`, `0.1`, `1e+21` |
//! | boolean | `true` / `false` |
//! | null | `null` |
//! | array, object | compact JSON, object members sorted by key in code-point order |
//!
//! Every number is first converted to an IEEE-754 double, as a JavaScript host would:
//! an integer beyond 2^53 prints rounded (`18446744073709551615` → `18446744073709552000`).
//! Strings inside arrays and objects are escaped as `JSON.stringify` escapes them.
//!
//! The writer is iterative, so a deeply nested value cannot overflow the stack.

use serde_json::{Number, Value};

/// The text form of `v`.
///
/// ```
/// # use ir_spec::text_form::text_form;
/// let v = serde_json::json!({"b": 1, "a": [true, "x"]});
/// assert_eq!(text_form(&v), r#"{"a":[true,"x"],"b":1}"#);
/// assert_eq!(text_form(&serde_json::json!(3.0)), "3");
/// ```
pub fn text_form(v: &Value) -> String {
    let mut out = String::new();
    write_text_form(&mut out, v);
    out
}

/// Appends the text form of `v` to `out`.
pub fn write_text_form(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => out.push_str(s),
        _ => write_json(out, v),
    }
}

/// A pending piece of output.
enum Item<'a> {
    Value(&'a Value),
    Key(&'a str),
    Punct(char),
}

/// Compact JSON with sorted object members, without recursion.
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
                    // `str` order is byte order of UTF-8, which is code-point order.
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

/// `s` quoted and escaped as `JSON.stringify` does: `\"`, `\\`, the short escapes for
/// backspace, form feed, newline, carriage return and tab, `\u00xx` (lowercase) for the
/// other control characters, everything else as is.
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
        // Every byte matched above is ASCII, so `i` and `i + 1` are char boundaries.
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

/// A JSON number as ECMAScript prints it.
fn write_number(out: &mut String, n: &Number) {
    match n.as_f64() {
        Some(x) => write_js_number(out, x),
        // Only reachable if serde_json's `arbitrary_precision` is enabled and the number
        // does not fit a double; its own text is the best we have.
        None => out.push_str(&n.to_string()),
    }
}

/// ECMAScript `Number::toString(x)` (ECMA-262 §6.1.6.1.20) for radix 10.
///
/// With `x = s × 10^(n−k)`, where `s` has `k` digits and `k` is as small as possible
/// (the shortest digits that round-trip, which Rust's `{:e}` also produces):
/// - `k ≤ n ≤ 21`: the digits then `n − k` zeros (`1e20` → `100000000000000000000`);
/// - `0 < n ≤ 21`: a point after `n` digits (`2.5`);
/// - `−6 < n ≤ 0`: `0.`, `−n` zeros, the digits (`0.000001`);
/// - otherwise exponent form, `d[.ddd]e±(n−1)` (`1e+21`, `1.5e-7`).
fn write_js_number(out: &mut String, x: f64) {
    if x == 0.0 {
        // Both zeros print as `0`.
        out.push('0');
        return;
    }
    if !x.is_finite() {
        // `JSON.stringify` prints these as `null`; serde_json never holds them.
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
    use proptest::prelude::*;
    use serde_json::json;

    fn num(x: f64) -> String {
        let mut s = String::new();
        write_js_number(&mut s, x);
        s
    }

    #[test]
    fn table_of_section_3_6() {
        assert_eq!(text_form(&json!("héllo \"x\"")), "héllo \"x\"");
        assert_eq!(text_form(&json!(3)), "3");
        assert_eq!(text_form(&json!(-2)), "-2");
        assert_eq!(text_form(&json!(2.5)), "2.5");
        assert_eq!(text_form(&json!(0.1)), "0.1");
        assert_eq!(text_form(&json!(1e21)), "1e+21");
        assert_eq!(text_form(&json!(3.0)), "3");
        assert_eq!(text_form(&json!(10.0)), "10");
        assert_eq!(text_form(&json!(0.25)), "0.25");
        assert_eq!(text_form(&json!(true)), "true");
        assert_eq!(text_form(&json!(false)), "false");
        assert_eq!(text_form(&json!(null)), "null");
        assert_eq!(
            text_form(&json!({"b": 1, "a": [true, "x"]})),
            r#"{"a":[true,"x"],"b":1}"#
        );
        assert_eq!(text_form(&json!([])), "[]");
        assert_eq!(text_form(&json!({})), "{}");
    }

    #[test]
    fn section_3_6_example() {
        // "obj=${input.o} none=${input.z}" with o = {b: 1, a: [true, "x"]}, z = null
        let mut out = String::from("obj=");
        write_text_form(&mut out, &json!({"b": 1, "a": [true, "x"]}));
        out.push_str(" none=");
        write_text_form(&mut out, &json!(null));
        assert_eq!(out, r#"obj={"a":[true,"x"],"b":1} none=null"#);
    }

    #[test]
    fn numbers_like_ecmascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (1e6, "1000000"),
            (123456789.0, "123456789"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (-1e21, "-1e+21"),
            (1.2345e22, "1.2345e+22"),
            (999999999999999900000.0, "999999999999999900000"),
            (1e-6, "0.000001"),
            (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (-1.5e-7, "-1.5e-7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (123.456, "123.456"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (9007199254740993.0, "9007199254740992"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
        ];
        for &(x, want) in cases {
            assert_eq!(num(x), want, "{x:e}");
        }
    }

    #[test]
    fn integers_print_as_doubles() {
        assert_eq!(text_form(&json!(u64::MAX)), "18446744073709552000");
        assert_eq!(text_form(&json!(i64::MIN)), "-9223372036854776000");
        assert_eq!(text_form(&json!(9007199254740992_u64)), "9007199254740992");
        assert_eq!(text_form(&json!(-42)), "-42");
    }

    #[test]
    fn string_escapes() {
        let v = json!(["\"\\\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f} é ✓ \u{2028} 😀 /"]);
        assert_eq!(
            text_form(&v),
            "[\"\\\"\\\\\\n\\r\\t\\b\\f\\u0000\\u001f\u{7f} é ✓ \u{2028} 😀 /\"]"
        );
        // Top-level strings are not escaped at all.
        assert_eq!(text_form(&json!("a\n\"b\"")), "a\n\"b\"");
        // Keys are escaped too.
        assert_eq!(
            text_form(&json!({"a\"b": "\u{1b}"})),
            r#"{"a\"b":"\u001b"}"#
        );
    }

    #[test]
    fn keys_sorted_by_code_point() {
        let v = json!({"b": 1, "B": 2, "é": 3, "a": 4, "\u{ff61}": 5, "😀": 6, "": 7, "aa": 8});
        assert_eq!(
            text_form(&v),
            "{\"\":7,\"B\":2,\"a\":4,\"aa\":8,\"b\":1,\"é\":3,\"\u{ff61}\":5,\"😀\":6}"
        );
    }

    #[test]
    fn nested_values() {
        let v = json!({"z": {"y": [1, {"b": null, "a": 2.50}], "x": []}, "a": [[], [[]]]});
        assert_eq!(
            text_form(&v),
            r#"{"a":[[],[[]]],"z":{"x":[],"y":[1,{"a":2.5,"b":null}]}}"#
        );
    }

    #[test]
    fn matches_serde_json_when_no_numbers_or_keys_disagree() {
        let v = json!({"a": ["x", null, true, {"c": "d\u{1}"}]});
        assert_eq!(text_form(&v), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut v = json!(1);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        let s = text_form(&v);
        assert_eq!(s.len(), 200_001);
        // Dropping a deep `Value` recurses inside serde_json; unwrap it by hand.
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    proptest! {
        #[test]
        fn numbers_round_trip(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
            let s = num(x);
            let back: f64 = s.parse().unwrap();
            prop_assert!(back == x, "{} -> {} -> {}", x, s, back);
            // Decimal form exactly in the ECMAScript range, exponent form outside.
            let decimal = x == 0.0 || (1e-6 <= x.abs() && x.abs() < 1e21);
            prop_assert_eq!(!s.contains('e'), decimal, "{}", s);
            if x.fract() == 0.0 && decimal {
                prop_assert!(!s.contains('.'), "{}", s);
            }
        }

        #[test]
        fn strings_are_valid_json(s in any::<String>()) {
            let v = json!([s.clone()]);
            let text = text_form(&v);
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, v);
            prop_assert_eq!(text_form(&json!(s.clone())), s);
        }
    }
}
