//! The pack as the checks and lowering read it: a JSON document whose strings borrow
//! from the text they were parsed from, and whose objects are member lists.
//!
//! A pack parsed into `serde_json::Value` allocates every string and member name, builds
//! a hash table for every object and hashes each name into it, and frees all of it
//! again: about two thirds of checking a large JSON pack. A [`Node`] parsed from a JSON
//! text ([`parse`]) allocates only its arrays' and objects' lists; a string is copied only
//! when it has an escape. A pack loaded from YAML is read through [`Node::borrow`], which
//! borrows the loaded `serde_json::Value`'s strings.
//!
//! The methods are named as `serde_json::Value`'s are (`as_str`, `as_object`, `get`, …),
//! and objects keep their members in source order, as `serde_json`'s `preserve_order`
//! map does.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

use crate::load::Limits;

/// One node of a JSON document, its strings borrowed from `'s` where they can be.
#[derive(Clone, Debug, PartialEq)]
pub enum Node<'s> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as `serde_json` reads it.
    Number(Number),
    /// A string.
    String(Str<'s>),
    /// An array.
    Array(Vec<Node<'s>>),
    /// An object, its members in source order.
    Object(Obj<'s>),
}

/// A string of a document: borrowed from the source unless it had to be unescaped.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Str<'s>(Cow<'s, str>);

impl<'s> Str<'s> {
    /// The string.
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An object's members in source order. Objects with more than
/// [`SCAN_MAX`](ir_spec::json::SCAN_MAX) members also keep a hash table of their
/// members' indices, so that a lookup hashes the name once rather than comparing it with
/// every member's.
#[derive(Clone, Debug, Default)]
pub struct Obj<'s> {
    entries: Vec<(Str<'s>, Node<'s>)>,
    /// For a large object: open addressing, linear probing, a power of two at least twice
    /// the members; each slot is a member's index + 1, or 0 when empty.
    table: Option<Box<[u32]>>,
}

/// The hash of a member name in an object's table.
#[inline]
fn name_hash(name: &str) -> usize {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(name) as usize
}

impl PartialEq for Obj<'_> {
    /// Objects are equal when they have the same members, in any order (JSON equality).
    fn eq(&self, other: &Obj<'_>) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(k, v)| other.get(k).is_some_and(|w| v == w))
    }
}

impl<'s> Obj<'s> {
    /// An object of `entries`; `None` when two have the same name.
    pub fn new(entries: Vec<(Str<'s>, Node<'s>)>) -> Option<Obj<'s>> {
        if entries.len() <= ir_spec::json::SCAN_MAX {
            for (i, (k, _)) in entries.iter().enumerate() {
                if entries[..i]
                    .iter()
                    .any(|(j, _)| ir_spec::json::eq_str(j, k))
                {
                    return None;
                }
            }
            return Some(Obj {
                entries,
                table: None,
            });
        }
        // Member indices are stored + 1 in a `u32`; a document's nodes are bounded far
        // below that by `max_nodes`.
        let n = u32::try_from(entries.len())
            .ok()
            .filter(|&n| n < u32::MAX)?;
        let mut table = vec![0u32; (entries.len() * 2).next_power_of_two()].into_boxed_slice();
        let mask = table.len() - 1;
        for (i, (k, _)) in (1..=n).zip(&entries) {
            let mut slot = name_hash(k) & mask;
            while table[slot] != 0 {
                if ir_spec::json::eq_str(&entries[table[slot] as usize - 1].0, k) {
                    return None;
                }
                slot = (slot + 1) & mask;
            }
            table[slot] = i;
        }
        Some(Obj {
            entries,
            table: Some(table),
        })
    }

    /// The member `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Node<'s>> {
        let Some(table) = &self.table else {
            return self
                .entries
                .iter()
                .find(|(k, _)| ir_spec::json::eq_str(k, key))
                .map(|(_, v)| v);
        };
        let mask = table.len() - 1;
        let mut slot = name_hash(key) & mask;
        loop {
            let (k, v) = self.entries.get((table[slot] as usize).checked_sub(1)?)?;
            if ir_spec::json::eq_str(k, key) {
                return Some(v);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The member `key` (the name the checks and lowering use, as
    /// as `serde_json`'s map was read).
    #[inline]
    pub fn member(&self, key: &str) -> Option<&Node<'s>> {
        self.get(key)
    }

    /// The member `key`, or `null` when there is none.
    #[inline]
    pub fn field(&self, key: &str) -> &Node<'s> {
        self.get(key).unwrap_or(&NULL)
    }

    /// Whether the object has a member `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// How many members it has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Its members (name, value) in source order.
    pub fn as_slice(&self) -> &[(Str<'s>, Node<'s>)] {
        &self.entries
    }

    /// Its members in source order.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&Str<'s>, &Node<'s>)> + ExactSizeIterator {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Its members' names in source order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Str<'s>> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Its members' values in source order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Node<'s>> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }
}

impl<'a, 's> IntoIterator for &'a Obj<'s> {
    type Item = (&'a Str<'s>, &'a Node<'s>);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Str<'s>, Node<'s>)>,
        fn(&'a (Str<'s>, Node<'s>)) -> (&'a Str<'s>, &'a Node<'s>),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

/// `null`, for a lookup that finds nothing.
static NULL: Node<'static> = Node::Null;

impl<'s> Node<'s> {
    /// The node of a `serde_json` value, borrowing its strings.
    pub fn borrow(v: &'s serde_json::Value) -> Node<'s> {
        use serde_json::Value;
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(Str(Cow::Borrowed(s))),
            Value::Array(a) => Node::Array(a.iter().map(Node::borrow).collect()),
            Value::Object(o) => {
                let entries = o
                    .iter()
                    .map(|(k, v)| (Str(Cow::Borrowed(k.as_str())), Node::borrow(v)))
                    .collect();
                // A map's names are distinct.
                Node::Object(Obj::new(entries).unwrap_or_default())
            }
        }
    }

    /// The same document as a `serde_json` value (for the schema validator's error
    /// report and the values the IR keeps as JSON).
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.as_str().to_owned()),
            Node::Array(a) => Value::Array(a.iter().map(Node::to_value).collect()),
            Node::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// The member `key` of an object; `None` for anything else.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Node<'s>> {
        self.as_object()?.get(key)
    }

    /// [`Node::get`], by the name the checks and lowering use.
    #[inline]
    pub fn member(&self, key: &str) -> Option<&Node<'s>> {
        self.get(key)
    }

    /// The member `key`, or `null` when there is none, as `value[key]` reads it.
    #[inline]
    pub fn field(&self, key: &str) -> &Node<'s> {
        self.get(key).unwrap_or(&NULL)
    }

    /// The string, if this is one.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The object, if this is one.
    #[inline]
    pub fn as_object(&self) -> Option<&Obj<'s>> {
        match self {
            Node::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The array, if this is one.
    #[inline]
    pub fn as_array(&self) -> Option<&Vec<Node<'s>>> {
        match self {
            Node::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Node::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The number as a `u64`, if it is one that fits.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_number()?.as_u64()
    }

    /// The number as an `i64`, if it is one that fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_number()?.as_i64()
    }

    /// The number as an `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number()?.as_f64()
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }

    /// Whether this is `true` or `false`.
    pub fn is_boolean(&self) -> bool {
        matches!(self, Node::Bool(_))
    }

    /// Whether this is a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Node::Number(_))
    }

    /// Whether this is a number that fits a `u64`.
    pub fn is_u64(&self) -> bool {
        self.as_u64().is_some()
    }

    /// Whether this is a number that fits an `i64`.
    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// Whether this is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Node::String(_))
    }

    /// Whether this is an array.
    pub fn is_array(&self) -> bool {
        matches!(self, Node::Array(_))
    }

    /// Whether this is an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Node::Object(_))
    }
}

impl<'s> std::ops::Index<&str> for Node<'s> {
    type Output = Node<'s>;

    /// The member `key`, or `null`.
    fn index(&self, key: &str) -> &Node<'s> {
        self.field(key)
    }
}

impl<'s> std::ops::Index<&str> for Obj<'s> {
    type Output = Node<'s>;

    /// The member `key`, or `null`.
    fn index(&self, key: &str) -> &Node<'s> {
        self.field(key)
    }
}

impl fmt::Display for Node<'_> {
    /// The node as compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_value(), f)
    }
}

impl PartialEq<serde_json::Value> for Node<'_> {
    fn eq(&self, other: &serde_json::Value) -> bool {
        *self == Node::borrow(other)
    }
}

/// Parse strict JSON within `limits` (depth, nodes and string length), refusing duplicate
/// keys, into a document that borrows `text`'s strings. `None` when the text is not such
/// a document; the caller then loads it the slow way for a located diagnostic. It accepts
/// exactly what [`json_fast::parse`](crate::load::json_fast::parse) accepts.
pub fn parse<'s>(text: &'s str, limits: &Limits) -> Option<Node<'s>> {
    let text = text.trim_start_matches('\u{feff}');
    let mut de = serde_json::Deserializer::from_str(text);
    let mut budget = Budget {
        count: crate::load::json_fast::Count::new(limits),
        items: Vec::new(),
        members: Vec::new(),
    };
    let node = (&mut budget).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(node)
}

struct Budget<'l, 's> {
    count: crate::load::json_fast::Count<'l>,
    /// The items of the open arrays, innermost last.
    items: Vec<Node<'s>>,
    /// The members of the open objects, innermost last.
    members: Vec<(Str<'s>, Node<'s>)>,
}

impl<'de> DeserializeSeed<'de> for &mut Budget<'_, 'de> {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Budget<'_, 'de> {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Node<'de>, E> {
        self.count.node()?;
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Node<'de>, E> {
        self.count.node()?;
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Node<'de>, E> {
        self.count.node()?;
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Node<'de>, E> {
        self.count.node()?;
        // Non-finite numbers cannot come out of JSON text; refuse rather than guess.
        Number::from_f64(v)
            .map(Node::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Node<'de>, E> {
        self.count.node()?;
        self.count.string(v)?;
        Ok(Node::String(Str(Cow::Borrowed(v))))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Node<'de>, E> {
        self.count.node()?;
        self.count.string(v)?;
        Ok(Node::String(Str(Cow::Owned(v.to_owned()))))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Node<'de>, E> {
        self.count.node()?;
        Ok(Node::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        self.count.enter()?;
        // The items wait on a stack shared by the whole parse, so the array is allocated
        // once at its final size (JSON gives no length up front).
        let start = self.items.len();
        while let Some(item) = seq.next_element_seed(&mut *self)? {
            self.items.push(item);
        }
        let items = self.items.drain(start..).collect();
        self.count.leave();
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        self.count.enter()?;
        let start = self.members.len();
        while let Some(key) = map.next_key_seed(Key)? {
            self.count.string(&key)?;
            let value = map.next_value_seed(&mut *self)?;
            self.members.push((key, value));
        }
        let members = self.members.drain(start..).collect();
        let obj = Obj::new(members).ok_or_else(|| serde::de::Error::custom("duplicate key"))?;
        self.count.leave();
        Ok(Node::Object(obj))
    }
}

/// A member name, borrowed unless it had an escape.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Str<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Str<'de>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Str<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Owned(v.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_what_the_value_parser_parses() {
        let limits = Limits::default();
        let many: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
        for text in [
            r#"{"a": [1, 2.5, -3, true, null, "x"], "b": {"c": {}}, "e\n": "q\"t"}"#.to_owned(),
            format!("{{{many}\"last\": [{{}}, []]}}"),
            "\u{feff} {\"\\u00e9\": \"\\ud83d\\ude00\"}".to_owned(),
        ] {
            let value = crate::load::json_fast::parse(&text, &limits).unwrap();
            let node = parse(&text, &limits).unwrap();
            assert_eq!(node.to_value(), value, "{text}");
            assert_eq!(node, Node::borrow(&value), "{text}");
        }
    }

    #[test]
    fn refuses_what_the_value_parser_refuses() {
        let limits = Limits::default();
        let many: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
        let shallow = Limits {
            max_depth: 2,
            ..Limits::default()
        };
        let short = Limits {
            max_string_bytes: 3,
            ..Limits::default()
        };
        let few = Limits {
            max_nodes: 3,
            ..Limits::default()
        };
        let cases = [
            (r#"{"a": 1, "a": 2}"#.to_owned(), &limits),
            (format!("{{{many}\"k7\": 1}}"), &limits),
            (r#"{"a": [1,}"#.to_owned(), &limits),
            (r#"{"a": 1} {}"#.to_owned(), &limits),
            (r#"{"a": {"b": {}}}"#.to_owned(), &shallow),
            (r#"{"a": {"b": 1}}"#.to_owned(), &shallow),
            (r#"{"abc": "xyz"}"#.to_owned(), &short),
            (r#"{"abcd": "x"}"#.to_owned(), &short),
            (r#"{"a": "x\nyz"}"#.to_owned(), &short),
            (r#"{"a": [1, 2]}"#.to_owned(), &few),
            (r#"{"a": [1]}"#.to_owned(), &few),
        ];
        for (text, limits) in cases {
            let value = crate::load::json_fast::parse(&text, limits);
            let node = parse(&text, limits);
            assert_eq!(node.is_some(), value.is_some(), "{text}");
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let text = r#"{"plain": "text", "esc\u0061ped": "a\tb"}"#;
        let node = parse(text, &Limits::default()).unwrap();
        let obj = node.as_object().unwrap();
        let kinds: Vec<(bool, bool)> = obj
            .iter()
            .map(|(k, v)| {
                let Node::String(v) = v else { unreachable!() };
                (
                    matches!(k.0, Cow::Borrowed(_)),
                    matches!(v.0, Cow::Borrowed(_)),
                )
            })
            .collect();
        assert_eq!(kinds, [(true, true), (false, false)]);
        assert_eq!(node["escaped"].as_str(), Some("a\tb"));
    }

    #[test]
    fn members_are_found_in_small_and_large_objects() {
        let small = json!({"id": 1, "name": "n", "": 2});
        let large =
            serde_json::Value::Object((0..40).map(|i| (format!("k{i}"), json!(i))).collect());
        for v in [&small, &large, &json!([1]), &json!("s"), &json!(null)] {
            let node = Node::borrow(v);
            for key in ["id", "name", "", "k0", "k39", "k40", "missing"] {
                assert_eq!(
                    node.get(key).map(Node::to_value).as_ref(),
                    v.get(key),
                    "{v} {key}"
                );
                assert_eq!(node[key].to_value(), v[key], "{v} {key}");
            }
        }
        let o = Node::borrow(&large);
        let o = o.as_object().unwrap();
        let names: Vec<&str> = o.keys().map(|k| k.as_str()).collect();
        let expected: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        assert_eq!(names, expected, "members keep their source order");
    }

    #[test]
    fn objects_compare_as_json_objects() {
        let x = json!({"x": 1, "y": [true]});
        let a = Node::borrow(&x);
        let b = json!({"y": [true], "x": 1});
        assert_eq!(a, b);
        assert_ne!(a, json!({"x": 1}));
        assert_eq!(a.to_string(), r#"{"x":1,"y":[true]}"#);
    }
}
