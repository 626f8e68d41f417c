//! JSON values inside the IR are encoded as JSON text.
//!
//! `serde_json::Value` deserializes through `deserialize_any`, which non-self-describing
//! formats such as postcard (the `.ppk` encoding) do not support. Every field holding a
//! `Value` therefore carries `#[serde(with = "crate::json_text")]`: it is written as one
//! string of compact JSON and parsed back on decode, whatever the outer format.

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Writes `v` as a string of JSON text.
pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    let text = serde_json::to_string(v).map_err(S::Error::custom)?;
    s.serialize_str(&text)
}

/// Reads a value written by [`serialize`].
pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    let text = String::deserialize(d)?;
    serde_json::from_str(&text).map_err(D::Error::custom)
}

/// Optional JSON values: written as a postcard `Option<str>`, so that a present JSON
/// `null` (`default: null`) stays distinct from an absent value.
pub mod option {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `None` as absent and `Some(v)` as the JSON text of `v`.
    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            None => s.serialize_none(),
            Some(v) => {
                let text = serde_json::to_string(v).map_err(S::Error::custom)?;
                s.serialize_some(&text)
            }
        }
    }

    /// Reads a value written by [`serialize`].
    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(D::Error::custom),
        }
    }
}

/// The deepest JSON nesting a `json` field may hold (serde_json's parser stops at 128).
pub const MAX_JSON_NESTING: usize = 127;

/// How deeply `[` and `{` nest in JSON text (outside strings). Linear, no recursion.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A JSON document kept as its compact text: checked to be well-formed JSON when it is
/// read, but not built into a tree until someone asks ([`JsonText::parse`]). Embedded
/// output schemas are this: the VM never reads them, a host passes them on.
///
/// On the wire it is the same `str` of JSON text as a `json` field (FORMAT.md §2.1).
#[derive(Clone, Debug)]
pub struct JsonText(Box<serde_json::value::RawValue>);

impl JsonText {
    /// The compact text of `v`.
    pub fn from_value(v: &serde_json::Value) -> JsonText {
        // Written directly, not re-read: the reader's own limits apply when it is loaded.
        serde_json::value::to_raw_value(v).map_or_else(|_| JsonText::null(), JsonText)
    }

    /// Checks that `text` is one JSON value, nested at most 127 levels as every JSON
    /// field of the format (FORMAT.md §2.1), and keeps it.
    pub fn from_text(text: String) -> Result<JsonText, serde_json::Error> {
        // Every level opens with a `[` or `{`, so text with few of them (most schemas)
        // needs no scan: the count is one vectorized pass, the scan a byte at a time.
        let opens = text.bytes().filter(|&b| b == b'[' || b == b'{').count();
        if opens > MAX_JSON_NESTING && nesting(&text) > MAX_JSON_NESTING {
            return Err(<serde_json::Error as serde::de::Error>::custom(format!(
                "JSON nested deeper than {MAX_JSON_NESTING} levels"
            )));
        }
        serde_json::value::RawValue::from_string(text).map(JsonText)
    }

    fn null() -> JsonText {
        JsonText(serde_json::value::RawValue::from_string("null".to_owned()).expect("null is JSON"))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The document as a value.
    pub fn parse(&self) -> serde_json::Value {
        serde_json::from_str(self.get()).unwrap_or(serde_json::Value::Null)
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.get())
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonText, D::Error> {
        JsonText::from_text(String::deserialize(d)?).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_brackets_outside_strings() {
        assert_eq!(nesting(r#"{"a": [1, {"b": "[[[{"}]}"#), 3);
        assert_eq!(nesting(r#""\"[""#), 0);
        assert_eq!(nesting("1"), 0);
    }

    #[test]
    fn json_text_keeps_the_text_and_refuses_what_the_format_refuses() {
        let v = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let t = JsonText::from_value(&v);
        assert_eq!(t.parse(), v);
        assert_eq!(t, JsonText::from_text(t.get().to_owned()).unwrap());
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(JsonText::from_text(deep(127)).is_ok());
        let e = JsonText::from_text(deep(128)).unwrap_err().to_string();
        assert!(e.contains("nested deeper than 127"), "{e}");
        // Many brackets, but inside strings or side by side: scanned, and shallow.
        let shallow = format!(
            r#"{{"a": "{}", "b": [{}]}}"#,
            "[".repeat(200),
            "[],".repeat(150) + "[]"
        );
        assert!(JsonText::from_text(shallow).is_ok());
        assert!(JsonText::from_text("{".to_owned()).is_err());
    }
}
