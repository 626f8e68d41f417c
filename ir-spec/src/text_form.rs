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

use serde_json::Value;

mod number;

use number::{js_number_len, write_number};

/// Where text goes: a `String`, a [`Meter`] that only counts it, or an [`Escaped`]
/// adapter that writes it as the inside of a JSON string.
pub trait Sink {
    /// Appends `s`.
    fn push_str(&mut self, s: &str);
    /// Appends `c`.
    fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }
    /// Whether the sink wants no more text (a [`Meter`] past its limit): writers may
    /// stop early, leaving the text unfinished.
    fn full(&self) -> bool {
        false
    }
    /// The sink as a [`Meter`], when it is one: writers then count what they would
    /// write without building it, in any member order (the length is the same).
    fn as_meter(&mut self) -> Option<&mut Meter> {
        None
    }
}

impl Sink for String {
    #[inline]
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    #[inline]
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

/// A sink that counts the bytes written to it and is [`full`](Sink::full) once they pass
/// a limit: text can be measured without being built, and a measurement of huge text
/// costs no more than the limit.
///
/// ```
/// # use ir_spec::text_form::{write_text_form, Meter};
/// let mut m = Meter::new(100);
/// write_text_form(&mut m, &serde_json::json!({"a": "x\ny"}));
/// assert_eq!(m.len(), r#"{"a":"x\ny"}"#.len());
/// assert!(!m.over());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Meter {
    len: usize,
    limit: usize,
}

impl Meter {
    /// A meter that is full past `limit` bytes.
    pub fn new(limit: usize) -> Meter {
        Meter { len: 0, limit }
    }

    /// The bytes written so far (exact while not [`over`](Meter::over)).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether more than the limit was written.
    pub fn over(&self) -> bool {
        self.len > self.limit
    }

    /// Counts `v` as compact JSON, allocating nothing for values nested up to 64 levels
    /// and for numbers that are integers of at most 2^53.
    pub fn json(&mut self, v: &Value) {
        self.json_at(v, 0);
    }

    fn json_at(&mut self, v: &Value, depth: usize) {
        if self.over() {
            return;
        }
        if depth >= 64 {
            return write_json_sorted(self, v);
        }
        match v {
            Value::Null => self.len += 4,
            Value::Bool(b) => self.len += if *b { 4 } else { 5 },
            Value::Number(n) => match n.as_i64() {
                Some(i) if i.unsigned_abs() <= 1 << 53 => {
                    let digits = i.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
                    self.len += digits as usize + usize::from(i < 0);
                }
                _ => match n.as_f64() {
                    Some(x) => self.len += js_number_len(x),
                    None => write_number(self, n),
                },
            },
            Value::String(s) => self.len += 2 + escaped_len(s),
            Value::Array(items) => {
                self.len += 1 + items.len().max(1);
                for item in items {
                    self.json_at(item, depth + 1);
                }
            }
            Value::Object(members) => {
                // Braces, commas and colons.
                self.len += 1 + members.len().max(1) + members.len();
                for (k, v) in members {
                    write_json_string(self, k);
                    self.json_at(v, depth + 1);
                }
            }
        }
    }
}

impl Sink for Meter {
    #[inline]
    fn push_str(&mut self, s: &str) {
        self.len = self.len.saturating_add(s.len());
    }
    #[inline]
    fn push(&mut self, c: char) {
        self.len = self.len.saturating_add(c.len_utf8());
    }
    #[inline]
    fn full(&self) -> bool {
        self.over()
    }
    fn as_meter(&mut self) -> Option<&mut Meter> {
        Some(self)
    }
}

/// Writes what it is given as the inside of a JSON string, escaped as
/// [`write_json_string`] escapes (without the quotes).
pub struct Escaped<'a, S: Sink + ?Sized>(pub &'a mut S);

impl<S: Sink + ?Sized> Sink for Escaped<'_, S> {
    fn push_str(&mut self, s: &str) {
        write_escaped(self.0, s);
    }
    fn full(&self) -> bool {
        self.0.full()
    }
}

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
pub fn write_text_form<S: Sink + ?Sized>(out: &mut S, v: &Value) {
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

/// Appends `v` as compact JSON with sorted object members (the text form of an array or
/// object; a string is quoted), without recursion. Stops early once `out` is full.
pub fn write_json<S: Sink + ?Sized>(out: &mut S, v: &Value) {
    match out.as_meter() {
        Some(m) => m.json(v),
        None => write_json_sorted(out, v),
    }
}

fn write_json_sorted<S: Sink + ?Sized>(out: &mut S, v: &Value) {
    let mut stack = vec![Item::Value(v)];
    while let Some(item) = stack.pop() {
        if out.full() {
            return;
        }
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
pub fn write_json_string<S: Sink + ?Sized>(out: &mut S, s: &str) {
    out.push('"');
    write_escaped(out, s);
    out.push('"');
}

/// The length of `s` escaped as [`write_json_string`] escapes it, without the quotes.
fn escaped_len(s: &str) -> usize {
    // Extra bytes per byte: 1 for a short escape, 5 for `\u00xx`.
    const EXTRA: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut b = 0;
        while b < 0x20 {
            t[b] = 5;
            b += 1;
        }
        t[b'"' as usize] = 1;
        t[b'\\' as usize] = 1;
        t[b'\n' as usize] = 1;
        t[b'\r' as usize] = 1;
        t[b'\t' as usize] = 1;
        t[0x08] = 1;
        t[0x0c] = 1;
        t
    };
    s.len()
        + s.bytes()
            .map(|b| usize::from(EXTRA[usize::from(b)]))
            .sum::<usize>()
}

/// The inside of [`write_json_string`].
fn write_escaped<S: Sink + ?Sized>(out: &mut S, s: &str) {
    if let Some(m) = out.as_meter() {
        m.len = m.len.saturating_add(escaped_len(s));
        return;
    }
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
}

#[cfg(test)]
mod tests {
    use super::number::{digit_count_of, digits_of, write_js_number};
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

        #[test]
        fn shortest_digits_count_like_rusts(bits in any::<u64>()) {
            let x = f64::from_bits(bits).abs();
            prop_assume!(x.is_finite() && x > 0.0);
            // A meter counts `zmij`'s digits: as many as Rust's `{:e}` prints (the
            // last may differ when several are as short), with the same exponent.
            let sci = format!("{x:e}");
            let (mantissa, exp) = sci.split_once('e').unwrap();
            let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
            let (k, n) = digit_count_of(zmij::Buffer::new().format_finite(x));
            prop_assert_eq!(k, digits.len());
            prop_assert_eq!(n, exp.parse::<i32>().unwrap() + 1);
            let exact = digits_of(&sci).0;
            prop_assert_eq!(exact.as_str(), digits.as_str());
            prop_assert_eq!(js_number_len(x), num(x).len());
            prop_assert_eq!(js_number_len(-x), num(-x).len());
        }

        #[test]
        fn short_decimals_count_like_rusts(int in 0u64..10_000_000_000, places in 0u32..10, neg: bool) {
            let x = int as f64 / 10f64.powi(places as i32) * if neg { -1.0 } else { 1.0 };
            prop_assert_eq!(js_number_len(x), num(x).len(), "{}", x);
        }

        #[test]
        fn a_meter_counts_what_a_string_gets(v in crate::testing::json_value(), limit in 0usize..64) {
            let text = text_form(&v);
            let mut m = Meter::new(usize::MAX);
            write_text_form(&mut m, &v);
            prop_assert_eq!(m.len(), text.len());
            // Under a limit the meter may stop early, but only once past it.
            let mut m = Meter::new(limit);
            write_text_form(&mut m, &v);
            prop_assert_eq!(m.over(), text.len() > limit);
        }

        #[test]
        fn escaped_is_a_json_string_inside(s in any::<String>()) {
            let mut inner = String::new();
            Escaped(&mut inner).push_str(&s);
            let array = text_form(&json!([s]));
            prop_assert_eq!(format!("[\"{inner}\"]"), array);
        }
    }
}
