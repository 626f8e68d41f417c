//! JSON sources parsed into a `serde_json::Value` within the limits, with no span index.
//!
//! Most packs in CI are JSON and clean. Building a span for every node costs several
//! times the parse itself, and spans are only needed to print a diagnostic. So a source
//! that looks like a JSON object is first parsed without them; the caller builds the span
//! index (with [`json_spans`](super::json_spans)) only when there is something to report.
//! The check itself parses with [`doc::parse`](crate::doc::parse), which accepts exactly
//! the texts this parser accepts; this one gives the `serde_json` value a caller asks for
//! ([`Loaded::value`](super::Loaded::value)) and reads schema files.
//! Anything this parser refuses — a syntax error, a duplicate key, nesting past the limit,
//! a string longer than `max_string_bytes` — returns `None`, and the caller loads the text
//! the slow way, whose loader and limit checks report the located `parse_error` or
//! `limit_exceeded`. So a document this parser accepts needs no second walk for the
//! string limit ([`check_limits_parsed`](super::limits::check_limits_parsed)).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::Limits;

/// Whether `text` starts like a JSON object (after whitespace and a byte-order mark).
pub fn looks_like_json(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{')
}

/// [`parse`] for a source's bytes: its text and value when they are UTF-8 that looks like
/// a JSON object ([`looks_like_json`]) and parses; `None` sends the caller to the loader.
pub fn parse_source<'t>(bytes: &'t [u8], limits: &Limits) -> Option<(&'t str, Value)> {
    let text = std::str::from_utf8(bytes).ok()?;
    if !looks_like_json(text) {
        return None;
    }
    Some((text, parse(text, limits)?))
}

/// Parse strict JSON within `limits` (depth, nodes and string length), refusing duplicate
/// keys. `None` when the text is not such a document; the caller then loads it the slow
/// way for a located diagnostic.
pub fn parse(text: &str, limits: &Limits) -> Option<Value> {
    let text = text.trim_start_matches('\u{feff}');
    let mut de = serde_json::Deserializer::from_str(text);
    let mut budget = Budget {
        depth: 0,
        nodes: 0,
        limits,
        items: Vec::new(),
        members: Vec::new(),
    };
    let value = (&mut budget).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

struct Budget<'l> {
    depth: usize,
    nodes: usize,
    limits: &'l Limits,
    /// The items of the open arrays, innermost last.
    items: Vec<Value>,
    /// The members of the open objects, innermost last.
    members: Vec<(String, Value)>,
}

impl Budget<'_> {
    fn node<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(E::custom("too many nodes"));
        }
        Ok(())
    }

    fn string<E: serde::de::Error>(&self, s: &str) -> Result<(), E> {
        if s.len() > self.limits.max_string_bytes {
            return Err(E::custom("string too long"));
        }
        Ok(())
    }

    fn enter<E: serde::de::Error>(&mut self) -> Result<(), E> {
        self.node()?;
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(E::custom("too deep"));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for &mut Budget<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Budget<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.node()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.node()?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.node()?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.node()?;
        // Non-finite numbers cannot come out of JSON text; refuse rather than guess.
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.node()?;
        self.string(v)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.node()?;
        self.string(&v)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.node()?;
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.enter()?;
        // The items wait on a stack shared by the whole parse, so the array is allocated
        // once at its final size (JSON gives no length up front).
        let start = self.items.len();
        while let Some(item) = seq.next_element_seed(&mut *self)? {
            self.items.push(item);
        }
        let items = self.items.drain(start..).collect();
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.enter()?;
        // As for arrays: the members wait on a shared stack, and the map is built at its
        // final size, without growing its entries and hash table a few members at a time.
        let start = self.members.len();
        while let Some(key) = map.next_key::<String>()? {
            self.string(&key)?;
            let value = map.next_value_seed(&mut *self)?;
            self.members.push((key, value));
        }
        let mut members = Map::with_capacity(self.members.len() - start);
        for (key, value) in self.members.drain(start..) {
            if members.insert(key, value).is_some() {
                return Err(serde::de::Error::custom("duplicate key"));
            }
        }
        self.depth -= 1;
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_json_like_the_yaml_loader() {
        let text = r#"{"a": [1, 2.5, -3, true, null, "x"], "b": {"c": {}}}"#;
        let fast = parse(text, &Limits::default()).unwrap();
        assert_eq!(
            fast,
            json!({"a": [1, 2.5, -3, true, null, "x"], "b": {"c": {}}})
        );
        assert_eq!(
            fast,
            super::super::load_str(text, &Limits::default())
                .unwrap()
                .into_value()
        );
    }

    #[test]
    fn refuses_what_needs_a_located_diagnostic() {
        let limits = Limits::default();
        assert!(parse(r#"{"a": 1, "a": 2}"#, &limits).is_none());
        assert!(parse(r#"{"a": [1,}"#, &limits).is_none());
        assert!(parse(r#"{"a": 1} {}"#, &limits).is_none());
        let deep = format!("{}{}", "{\"a\":".repeat(200), "}".repeat(200));
        assert!(parse(&deep, &limits).is_none());
        let shallow = Limits {
            max_depth: 2,
            ..Limits::default()
        };
        assert!(parse(r#"{"a": {"b": {}}}"#, &shallow).is_none());
        assert!(parse(r#"{"a": {"b": 1}}"#, &shallow).is_some());
        let short = Limits {
            max_string_bytes: 3,
            ..Limits::default()
        };
        assert!(parse(r#"{"abc": "xyz"}"#, &short).is_some());
        assert!(parse(r#"{"abcd": "x"}"#, &short).is_none());
        assert!(parse(r#"{"a": ["xyzw"]}"#, &short).is_none());
        assert!(parse(r#"{"a": "x\nyz"}"#, &short).is_none());
    }

    #[test]
    fn detection() {
        assert!(looks_like_json("\u{feff}  {\"a\": 1}"));
        assert!(!looks_like_json("a: 1"));
        assert!(!looks_like_json("[1]"));
    }
}
