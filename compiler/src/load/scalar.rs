//! YAML 1.2 core schema: a scalar's text, style and tag → a JSON value.
//!
//! Plain scalars are resolved (`null`, `~` and the empty scalar → null, `true`/`false`,
//! decimal, `0x` and `0o` integers, floats); quoted and block scalars are strings. JSON
//! input needs nothing special: its numbers, `true`, `false` and `null` are plain scalars
//! and its strings are double-quoted.

use std::borrow::Cow;

use saphyr_parser::{ScalarStyle, Tag};
use serde_json::{Number, Value};

/// Why a scalar has no JSON value: one sentence, and a help line when there is one.
pub(super) struct ScalarError {
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
}

impl ScalarError {
    fn new(message: String, help: impl Into<Option<String>>) -> ScalarError {
        ScalarError {
            message,
            help: help.into(),
        }
    }
}

/// The JSON value of a scalar node.
pub(super) fn resolve(
    text: Cow<'_, str>,
    style: ScalarStyle,
    tag: Option<&Tag>,
) -> Result<Value, ScalarError> {
    let Some(tag) = tag else {
        return if style == ScalarStyle::Plain {
            plain(text)
        } else {
            Ok(Value::String(text.into_owned()))
        };
    };
    let wrong = |what: &str| {
        ScalarError::new(
            format!("`{text}` is not a valid {what} for the tag `{}`", show(tag)),
            None,
        )
    };
    match core_name(tag) {
        Some("str") => Ok(Value::String(text.into_owned())),
        Some("null") if is_null(&text) => Ok(Value::Null),
        Some("null") => Err(wrong("null")),
        Some("bool") => bool_value(&text)
            .map(Value::Bool)
            .ok_or_else(|| wrong("boolean")),
        Some("int") => match integer(&text) {
            Some(n) => n,
            None => Err(wrong("integer")),
        },
        Some("float") => match integer(&text) {
            Some(Ok(Value::Number(n))) => n
                .as_f64()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| wrong("float")),
            _ => match float(&text) {
                Some(n) => n,
                None => Err(wrong("float")),
            },
        },
        Some("seq" | "map") => Err(ScalarError::new(
            format!("the tag `{}` cannot be used on a scalar", show(tag)),
            None,
        )),
        _ => Err(unsupported_tag(tag)),
    }
}

/// Whether a container may carry `tag` (`!!seq` on sequences, `!!map` on mappings).
pub(super) fn check_container_tag(tag: &Tag, mapping: bool) -> Result<(), ScalarError> {
    match core_name(tag) {
        Some("map") if mapping => Ok(()),
        Some("seq") if !mapping => Ok(()),
        Some(_) => Err(ScalarError::new(
            format!(
                "the tag `{}` cannot be used on a {}",
                show(tag),
                if mapping { "mapping" } else { "sequence" }
            ),
            None,
        )),
        None => Err(unsupported_tag(tag)),
    }
}

/// Whether a mapping key may carry `tag`: any core-schema tag (the key stays its text).
pub(super) fn check_key_tag(tag: &Tag) -> Result<(), ScalarError> {
    match core_name(tag) {
        Some(_) => Ok(()),
        None => Err(unsupported_tag(tag)),
    }
}

/// The suffix of a core-schema tag (`!!int` → `int`), `str` for the non-specific `!`.
fn core_name(tag: &Tag) -> Option<&str> {
    if tag.is_yaml_core_schema() {
        Some(&tag.suffix)
    } else if tag.handle == "!" && tag.suffix.is_empty() {
        Some("str")
    } else {
        None
    }
}

fn unsupported_tag(tag: &Tag) -> ScalarError {
    ScalarError::new(
        format!("the tag `{}` is not supported", show(tag)),
        Some("packs hold plain JSON data; remove the tag".to_owned()),
    )
}

/// A tag as it is usually written.
fn show(tag: &Tag) -> String {
    if tag.is_yaml_core_schema() {
        format!("!!{}", tag.suffix)
    } else if tag.handle == "!" {
        format!("!{}", tag.suffix)
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

fn plain(text: Cow<'_, str>) -> Result<Value, ScalarError> {
    if is_null(&text) {
        return Ok(Value::Null);
    }
    if let Some(b) = bool_value(&text) {
        return Ok(Value::Bool(b));
    }
    if let Some(n) = integer(&text).or_else(|| float(&text)) {
        return n;
    }
    if is_special_float(&text) {
        return Err(ScalarError::new(
            format!("`{text}` is not a JSON number: JSON has no infinity or NaN"),
            Some(format!(
                "quote it (\"{text}\") to keep it as text, or write a finite number"
            )),
        ));
    }
    Ok(Value::String(text.into_owned()))
}

fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

fn bool_value(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// `[-+]?[0-9]+`, `0x[0-9a-fA-F]+` or `0o[0-7]+`; `None` if the text is not an integer.
/// Integers beyond `i64`/`u64` become floats.
fn integer(text: &str) -> Option<Result<Value, ScalarError>> {
    if let Some(hex) = text.strip_prefix("0x") {
        return radix(text, hex, 16);
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return radix(text, oct, 8);
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(Ok(Value::from(i)));
    }
    if !text.starts_with('-') {
        if let Ok(u) = digits.parse::<u64>() {
            return Some(Ok(Value::from(u)));
        }
    }
    Some(finite(text, text.parse::<f64>().unwrap_or(f64::INFINITY)))
}

fn radix(text: &str, digits: &str, radix: u32) -> Option<Result<Value, ScalarError>> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    if let Ok(u) = u64::from_str_radix(digits, radix) {
        return Some(Ok(Value::from(u)));
    }
    let f = digits.chars().fold(0.0_f64, |acc, c| {
        acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
    });
    Some(finite(text, f))
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`; `None` if the text is not one.
fn float(text: &str) -> Option<Result<Value, ScalarError>> {
    if !is_float_syntax(text) {
        return None;
    }
    Some(finite(text, text.parse::<f64>().ok()?))
}

fn is_float_syntax(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let whole = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        let fraction = digits(&mut i);
        if whole == 0 && fraction == 0 {
            return false;
        }
    } else if whole == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `.inf`, `-.inf`, `.nan` and their capitalised forms.
fn is_special_float(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN")
}

fn finite(text: &str, f: f64) -> Result<Value, ScalarError> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| {
        ScalarError::new(
            format!("the number `{text}` is too large for JSON"),
            Some(format!("quote it (\"{text}\") to keep it as text")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_value(text: &str) -> Result<Value, String> {
        resolve(Cow::Borrowed(text), ScalarStyle::Plain, None).map_err(|e| e.message)
    }

    #[test]
    fn core_schema() {
        use serde_json::json;
        for (text, want) in [
            ("", json!(null)),
            ("~", json!(null)),
            ("NULL", json!(null)),
            ("True", json!(true)),
            ("FALSE", json!(false)),
            ("0", json!(0)),
            ("-12", json!(-12)),
            ("+12", json!(12)),
            ("012", json!(12)),
            ("0x1F", json!(31)),
            ("0o17", json!(15)),
            ("18446744073709551615", json!(u64::MAX)),
            ("9223372036854775808", json!(9_223_372_036_854_775_808_u64)),
            (
                "-9223372036854775809",
                json!(-9_223_372_036_854_775_809.0_f64),
            ),
            (
                "18446744073709551616",
                json!(18_446_744_073_709_551_616.0_f64),
            ),
            (
                "0x1ffffffffffffffff",
                json!(36_893_488_147_419_103_231.0_f64),
            ),
            ("1.0", json!(1.0)),
            ("1.", json!(1.0)),
            (".5", json!(0.5)),
            ("-2.5e3", json!(-2500.0)),
            ("1E+2", json!(100.0)),
            ("yes", json!("yes")),
            ("0x", json!("0x")),
            ("0o8", json!("0o8")),
            ("1e", json!("1e")),
            (".", json!(".")),
            ("+", json!("+")),
            ("1_000", json!("1_000")),
            ("inf", json!("inf")),
            ("nan", json!("nan")),
            ("1.2.3", json!("1.2.3")),
        ] {
            assert_eq!(plain_value(text), Ok(want), "{text:?}");
        }
        assert!(matches!(
            plain_value("1.0").unwrap(),
            Value::Number(n) if n.is_f64()
        ));
    }

    #[test]
    fn not_json_numbers() {
        for text in [".inf", "-.Inf", "+.INF", ".nan", ".NaN"] {
            let e = plain_value(text).unwrap_err();
            assert!(e.contains("not a JSON number"), "{text}: {e}");
        }
        assert!(plain_value("1e999").unwrap_err().contains("too large"));
        assert!(plain_value(&"9".repeat(400))
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn other_styles_are_strings() {
        for style in [
            ScalarStyle::SingleQuoted,
            ScalarStyle::DoubleQuoted,
            ScalarStyle::Literal,
            ScalarStyle::Folded,
        ] {
            let v = resolve(Cow::Borrowed("true"), style, None).ok();
            assert_eq!(v, Some(Value::String("true".into())));
        }
    }

    #[test]
    fn tags() {
        let core = |suffix: &str| Tag {
            handle: "tag:yaml.org,2002:".into(),
            suffix: suffix.into(),
        };
        let r = |text: &str, tag: &Tag| {
            resolve(Cow::Borrowed(text), ScalarStyle::Plain, Some(tag)).map_err(|e| e.message)
        };
        assert_eq!(r("12", &core("str")), Ok(Value::String("12".into())));
        assert_eq!(r("12", &core("float")), Ok(serde_json::json!(12.0)));
        assert_eq!(r("12", &core("int")), Ok(serde_json::json!(12)));
        assert!(r("1.5", &core("int")).unwrap_err().contains("`!!int`"));
        assert!(r("x", &core("bool")).is_err());
        let custom = Tag {
            handle: "!".into(),
            suffix: "foo".into(),
        };
        assert_eq!(
            r("x", &custom),
            Err("the tag `!foo` is not supported".into())
        );
    }
}
