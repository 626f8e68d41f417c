//! JSON values a person hands in (`packc run --input`, `--turn`, the lines of a `packc
//! batch` input), read as strictly as a pack: a key given twice in one object is
//! refused, not silently the last one.
//!
//! Numbers follow the pack loader: an integer that fits in 64 bits stays exact, a larger
//! one becomes the nearest double (a pack's does too, and the VM compares numbers as
//! doubles), which [`Parsed::rounded`] names so the caller can say so; a number past the
//! doubles (`1e400`) is an error.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A value read from JSON text.
pub struct Parsed {
    /// The value.
    pub value: Value,
    /// The first integer of the text too large for 64 bits, read as a double.
    pub rounded: Option<String>,
}

/// Parses `text` as one JSON value, refusing duplicate keys (a `Data` error at the
/// second one, with its line and column).
pub fn parse(text: &str) -> Result<Parsed, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut de)?;
    de.end()?;
    Ok(Parsed {
        value,
        rounded: big_integer(text),
    })
}

/// Whether `text` starts like a JSON value other than a string without its quotes: `{`,
/// `[`, `"`, a digit, `-`, or the word `true`, `false` or `null`.
pub fn looks_like_json(text: &str) -> bool {
    let t = text.trim_start();
    let word = |w: &str| {
        t.strip_prefix(w)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    t.starts_with(['{', '[', '"', '-'])
        || t.starts_with(|c: char| c.is_ascii_digit())
        || word("true")
        || word("false")
        || word("null")
}

/// The first integer literal of the JSON text `text` (valid JSON) that fits neither
/// `u64` nor `i64`.
fn big_integer(text: &str) -> Option<String> {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                // Skip the string, escapes included.
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '-' | '0'..='9' => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, c)) = chars.peek() {
                    if !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')) {
                        break;
                    }
                    end = j + c.len_utf8();
                    chars.next();
                }
                let number = &text[i..end];
                let integer = !number.contains(['.', 'e', 'E']);
                if integer && number.parse::<u64>().is_err() && number.parse::<i64>().is_err() {
                    return Some(number.to_owned());
                }
            }
            _ => {}
        }
    }
    None
}

/// Builds a `Value` as `serde_json` does, but refuses an object's second key of a name.
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        // JSON text gives no non-finite number (serde_json refuses `1e400` itself).
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("the number is too large"))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{key}` is given twice in one object"
                )));
            }
            let value = map.next_value_seed(Strict)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_parse_as_serde_json_parses_them() {
        let text = r#"{"a": [1, -2, 2.5, true, null, "x\"y"], "b": {}}"#;
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.value, serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(parsed.rounded, None);
    }

    #[test]
    fn a_duplicate_key_is_refused_where_it_is() {
        let e = parse(r#"{"text": "a", "text": "b"}"#).err().unwrap();
        assert_eq!(e.classify(), serde_json::error::Category::Data);
        assert_eq!(
            e.to_string(),
            "the key `text` is given twice in one object at line 1 column 20"
        );
        assert!(parse(r#"[{"a": 1}, {"a": 2}]"#).is_ok());
    }

    #[test]
    fn integers_past_64_bits_are_named() {
        let parsed = parse(r#"{"n": 18446744073709551616, "s": "99999999999999999999"}"#).unwrap();
        assert_eq!(parsed.value["n"], json!(18_446_744_073_709_551_616.0_f64));
        assert_eq!(parsed.rounded.as_deref(), Some("18446744073709551616"));
        for exact in [
            "18446744073709551615",
            "-9223372036854775808",
            "1e30",
            "2.5",
        ] {
            assert_eq!(parse(exact).unwrap().rounded, None, "{exact}");
        }
        assert_eq!(
            parse("-9223372036854775809").unwrap().rounded.as_deref(),
            Some("-9223372036854775809")
        );
    }

    #[test]
    fn json_looking_text() {
        for t in [
            "{",
            "[1",
            "\"a",
            "12x",
            "-x",
            " true story",
            "null,",
            "false",
        ] {
            assert!(looks_like_json(t), "{t}");
        }
        for t in ["hello", "nullable", "trueish", "'x'", ""] {
            assert!(!looks_like_json(t), "{t}");
        }
    }
}
