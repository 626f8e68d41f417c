//! What a pack's JSON text costs to parse, and what it would cost parsed another way:
//! the measurement behind the front end's choice of document type (`benches/README.md`,
//! "The JSON parse"). Each row parses the generated 1,000 compositions × 5 steps pack (JSON,
//! shared and distinct prompt keys) and drops the result, as a check does:
//!
//! - `value`: `serde_json::Value` (`IndexMap` objects with `String` keys), through
//!   `serde_json::from_slice`;
//! - `value_fast`: the front end's parse into `serde_json::Value` (`load::json_fast`:
//!   limits on depth, nodes and string length, duplicate keys refused, collections built
//!   at their final size), which gives the value a caller asks for (`Loaded::value`);
//! - `packc`: the front end's document (`doc::parse`, what the checks and lowering read):
//!   strings borrowed from the text unless escaped, objects as member lists with a hash
//!   table above twelve members, lists in an arena freed at once, the same limits, read
//!   by a parser of its own;
//! - `borrowed`: a bench-local tree of the same shape (no hash tables; its lists each
//!   allocated), read through `serde_json`'s deserializer and a visitor;
//! - `simd_tape`: `simd-json`'s tape (one array of nodes, strings borrowed), the input
//!   copied first because `simd-json` parses in place;
//! - `simd_borrowed`: `simd-json`'s borrowed value tree, copied the same way.

use std::borrow::Cow;
use std::fmt;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use packc_compiler::load::{json_fast, Limits};
use packc_suite::gen::sized_json_packs;
use rustc_hash::FxHashSet;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON document that borrows its strings from the text where it can.
#[derive(Debug, PartialEq)]
pub enum Doc<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, as `serde_json` reads it.
    Num(serde_json::Number),
    /// A string: borrowed unless it had an escape.
    Str(Cow<'a, str>),
    /// An array.
    Array(Vec<Doc<'a>>),
    /// An object's members, in order.
    Object(Vec<(Cow<'a, str>, Doc<'a>)>),
}

/// Above this many members, duplicates are found with a hash set rather than by scanning.
const LINEAR: usize = 8;

struct DocSeed;

impl<'de> DeserializeSeed<'de> for DocSeed {
    type Value = Doc<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Doc<'de>, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Doc<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Doc<'de>, E> {
        Ok(Doc::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Doc<'de>, E> {
        Ok(Doc::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Doc<'de>, E> {
        Ok(Doc::Num(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Doc<'de>, E> {
        Ok(Doc::Num(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Doc<'de>, E> {
        serde_json::Number::from_f64(v)
            .map(Doc::Num)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Doc<'de>, E> {
        Ok(Doc::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Doc<'de>, E> {
        Ok(Doc::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(DocSeed)? {
            items.push(item);
        }
        Ok(Doc::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Doc<'de>)> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value = map.next_value_seed(DocSeed)?;
            members.push((key, value));
        }
        let duplicate = if members.len() <= LINEAR {
            members
                .iter()
                .enumerate()
                .any(|(i, (k, _))| members[..i].iter().any(|(kk, _)| kk == k))
        } else {
            let mut seen = FxHashSet::default();
            !members.iter().all(|(k, _)| seen.insert(k.as_ref()))
        };
        if duplicate {
            return Err(serde::de::Error::custom("duplicate key"));
        }
        Ok(Doc::Object(members))
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// [`Doc`] of a JSON text.
fn borrowed(text: &str) -> Doc<'_> {
    let mut de = serde_json::Deserializer::from_str(text);
    let doc = DocSeed.deserialize(&mut de).expect("the pack parses");
    de.end().expect("one document");
    doc
}

/// Members, items and strings of a document, counted the same way for every form.
fn count_value(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(count_value).sum::<usize>(),
        serde_json::Value::Object(o) => 1 + o.values().map(count_value).sum::<usize>(),
        _ => 1,
    }
}

fn count_doc(v: &Doc<'_>) -> usize {
    match v {
        Doc::Array(a) => 1 + a.iter().map(count_doc).sum::<usize>(),
        Doc::Object(o) => 1 + o.iter().map(|(_, v)| count_doc(v)).sum::<usize>(),
        _ => 1,
    }
}

fn bench_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    group.sample_size(20);
    let limits = Limits::default();
    for (keys, n, text) in sized_json_packs().filter(|(_, n, _)| *n == 1000) {
        let text = String::from_utf8(text).expect("generated JSON is UTF-8");
        // Every form holds the same document.
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let nodes = count_value(&value);
        assert_eq!(json_fast::parse(&text, &limits).as_ref(), Some(&value));
        assert_eq!(
            packc_compiler::doc::parse(&text, &packc_compiler::doc::Arena::new(), &limits)
                .map(|d| d.to_value()),
            Some(value.clone())
        );
        assert_eq!(count_doc(&borrowed(&text)), nodes);
        let mut copy = text.clone().into_bytes();
        let tape = simd_json::to_tape(&mut copy).unwrap();
        assert_eq!(
            tape.as_value().as_object().map(|o| o.len()),
            value.as_object().map(|o| o.len())
        );
        drop(tape);

        group.throughput(Throughput::Bytes(text.len() as u64));
        let id = |row: &str| BenchmarkId::new(row, format!("{keys:?}/{n}"));
        group.bench_with_input(id("value"), &text, |b, text| {
            b.iter(|| serde_json::from_str::<serde_json::Value>(text).unwrap())
        });
        group.bench_with_input(id("value_fast"), &text, |b, text| {
            b.iter(|| json_fast::parse(text, &limits).unwrap())
        });
        group.bench_with_input(id("packc"), &text, |b, text| {
            b.iter(|| {
                let arena = packc_compiler::doc::Arena::new();
                packc_compiler::doc::parse(text, &arena, &limits).map(|d| d.is_object())
            })
        });
        group.bench_with_input(id("borrowed"), &text, |b, text| b.iter(|| borrowed(text)));
        group.bench_with_input(id("simd_tape"), &text, |b, text| {
            b.iter(|| {
                let mut copy = text.as_bytes().to_vec();
                simd_json::to_tape(&mut copy)
                    .unwrap()
                    .as_value()
                    .as_object()
                    .map(|o| o.len())
            })
        });
        group.bench_with_input(id("simd_borrowed"), &text, |b, text| {
            b.iter(|| {
                let mut copy = text.as_bytes().to_vec();
                let len = simd_json::to_borrowed_value(&mut copy).map(|v| {
                    use simd_json::prelude::*;
                    v.as_object().map(|o| o.len())
                });
                len.unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
