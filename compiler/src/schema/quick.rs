//! A schema check without compiling a validator: walks the embedded schema and the pack
//! together and answers whether the pack is valid, when it can tell for sure.
//!
//! Compiling a `jsonschema` validator for one of the embedded schemas costs about 15 million
//! instructions (several milliseconds), more than everything else `packc check` does on a
//! small pack. Most packs are valid, and a valid pack needs no error messages, so
//! [`super::validate_at`] first asks [`valid`]: [`Verdict::Valid`] means the compiled
//! validator would find nothing, and it is never built. On [`Verdict::Invalid`] or
//! [`Verdict::Unknown`] the compiled validator runs as before and writes the diagnostics,
//! so they are the same as without this module, byte for byte.
//!
//! The walk reads the pack as the checks do ([`crate::doc::Node`]), at any size; the
//! validator needs the pack as a `serde_json` value, built only when the walk does not
//! answer `Valid`. A `$ref` is resolved once a walk, and each `pattern` compiled once a
//! process.
//!
//! Only [`Verdict::Valid`] is trusted, and it is given only when every keyword met was
//! understood exactly: the draft 2020-12 keywords the embedded schemas use (`$ref` within
//! the document, `type`, `properties`, `additionalProperties`, `required`, `enum`,
//! `const`, `pattern`, the length, item and property counts, `minimum` / `maximum`,
//! `uniqueItems`, `oneOf`, `anyOf`, `if` / `then` / `else`), annotations ignored and
//! `format` not asserted (as the validator is built). Anything else (another keyword, a
//! non-ASCII string under a `pattern`, a float where an `integer` is required, a number
//! too large to compare exactly) is [`Verdict::Unknown`], and `Unknown` spreads through
//! `oneOf`, `anyOf`, `if` and the keywords of a schema so that no answer is ever guessed.

use std::cell::RefCell;

use rustc_hash::FxHashMap as HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Number;

use crate::doc::Node as Doc;

use super::pattern::Matcher;
use super::tree::{member, Node};

/// What [`valid`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The pack is valid against the schema: the compiled validator would report nothing.
    Valid,
    /// The pack is not valid.
    Invalid,
    /// The walk met something it does not decide exactly.
    Unknown,
}

use Verdict::{Invalid, Unknown, Valid};

impl Verdict {
    /// Both must hold (the keywords of one schema).
    fn and(self, other: impl FnOnce() -> Verdict) -> Verdict {
        match self {
            Invalid => Invalid,
            Valid => other(),
            Unknown => match other() {
                Invalid => Invalid,
                _ => Unknown,
            },
        }
    }
}

fn of(ok: bool) -> Verdict {
    if ok {
        Valid
    } else {
        Invalid
    }
}

/// Whether `instance`, a pack, is valid against `schema`, the root of a schema document
/// (its `$ref`s are resolved in it), outside the members of its `compositions`.
///
/// The members of `compositions` are not walked: [`super::validate_at`] leaves every
/// schema error inside one to the composition checks, which report each problem with
/// its own kind, so [`Verdict::Valid`] means that the compiled validator would report
/// nothing that `validate_at` keeps. The object `compositions` itself is checked.
pub(super) fn valid(schema: &'static Node, instance: &Doc) -> Verdict {
    Walk {
        root: schema,
        compositions: instance.get("compositions"),
        resolved: RefCell::default(),
    }
    .check(schema, instance, 0)
}

/// `$ref` chains deeper than this are not followed (`Unknown`): the embedded schemas
/// recurse only through the instance, which the compiler's limits bound.
const MAX_DEPTH: usize = 256;

/// The members of a schema object.
type SchemaMembers = &'static [(&'static str, Node)];

struct Walk<'a> {
    root: &'static Node,
    /// The pack's `compositions` object, whose members are not walked.
    compositions: Option<&'a Doc<'a>>,
    /// The `$ref`s resolved so far, by the address and length of their text (the schema
    /// tree is never freed, so an address names one reference).
    resolved: RefCell<HashMap<(usize, usize), Option<&'static Node>>>,
}

impl Walk<'_> {
    fn check(&self, schema: &'static Node, instance: &Doc, depth: usize) -> Verdict {
        let map = match schema {
            Node::Bool(b) => return of(*b),
            Node::Obj(map) => *map,
            _ => return Unknown,
        };
        if depth > MAX_DEPTH {
            return Unknown;
        }
        let mut verdict = Valid;
        for (key, value) in map {
            let v = self.keyword(map, key, value, instance, depth);
            if v == Invalid {
                return Invalid;
            }
            if v == Unknown {
                verdict = Unknown;
            }
        }
        verdict
    }

    fn keyword(
        &self,
        schema: SchemaMembers,
        key: &str,
        value: &'static Node,
        instance: &Doc,
        depth: usize,
    ) -> Verdict {
        match key {
            // Annotations (`version`: the schema's own, at its root), and `format` (not
            // asserted by the compiled validator either).
            "$schema" | "$id" | "$defs" | "$comment" | "title" | "description" | "default"
            | "examples" | "deprecated" | "readOnly" | "writeOnly" | "version" | "format" => Valid,
            // Read by `if`.
            "then" | "else" => Valid,
            "$ref" => match value.as_str().and_then(|r| self.resolve_cached(r)) {
                Some(target) => self.check(target, instance, depth + 1),
                None => Unknown,
            },
            "type" => types(value, instance),
            "enum" => match value {
                Node::Arr(options) => {
                    let mut verdict = Invalid;
                    for option in *options {
                        match equal(option, instance) {
                            Some(true) => return Valid,
                            Some(false) => {}
                            None => verdict = Unknown,
                        }
                    }
                    verdict
                }
                _ => Unknown,
            },
            "const" => equal(value, instance).map_or(Unknown, of),
            "properties" => match (value, instance) {
                (Node::Obj(props), Doc::Object(members)) => {
                    let mut verdict = Valid;
                    for (name, sub) in *props {
                        if let Some(member) = members.get(name) {
                            verdict = verdict.and(|| self.check(sub, member, depth + 1));
                            if verdict == Invalid {
                                return Invalid;
                            }
                        }
                    }
                    verdict
                }
                (Node::Obj(_), _) => Valid,
                _ => Unknown,
            },
            "additionalProperties" => {
                if member(schema, "patternProperties").is_some() {
                    return Unknown;
                }
                let Doc::Object(members) = instance else {
                    return Valid;
                };
                if self.compositions.is_some_and(|c| std::ptr::eq(c, instance)) {
                    return Valid;
                }
                let props = match member(schema, "properties") {
                    Some(Node::Obj(p)) => Some(*p),
                    None => None,
                    Some(_) => return Unknown,
                };
                let mut verdict = Valid;
                for (name, instance) in members {
                    if props.is_some_and(|p| member(p, name).is_some()) {
                        continue;
                    }
                    verdict = verdict.and(|| self.check(value, instance, depth + 1));
                    if verdict == Invalid {
                        return Invalid;
                    }
                }
                verdict
            }
            "required" => match (value, instance) {
                (Node::Arr(names), Doc::Object(members)) => {
                    let mut verdict = Valid;
                    for name in *names {
                        match name.as_str() {
                            Some(n) if members.get(n).is_some() => {}
                            Some(_) => return Invalid,
                            None => verdict = Unknown,
                        }
                    }
                    verdict
                }
                (Node::Arr(_), _) => Valid,
                _ => Unknown,
            },
            "items" => match instance {
                Doc::Array(items) => {
                    let mut verdict = Valid;
                    for item in items.iter() {
                        verdict = verdict.and(|| self.check(value, item, depth + 1));
                        if verdict == Invalid {
                            return Invalid;
                        }
                    }
                    verdict
                }
                _ => Valid,
            },
            "minItems" | "maxItems" => match (count(value), instance) {
                (Some(n), Doc::Array(items)) => of(within(key, items.len(), n)),
                (Some(_), _) => Valid,
                (None, _) => Unknown,
            },
            "minProperties" | "maxProperties" => match (count(value), instance) {
                (Some(n), Doc::Object(members)) => of(within(key, members.len(), n)),
                (Some(_), _) => Valid,
                (None, _) => Unknown,
            },
            "minLength" | "maxLength" => match (count(value), instance) {
                (Some(n), Doc::String(s)) => of(within(key, s.chars().count(), n)),
                (Some(_), _) => Valid,
                (None, _) => Unknown,
            },
            "minimum" | "maximum" => match (value, instance) {
                (Node::Num(_), Doc::Number(n)) => {
                    match (exact(n), value.as_number().as_ref().and_then(exact)) {
                        (Some(n), Some(limit)) => of(if key == "minimum" {
                            n >= limit
                        } else {
                            n <= limit
                        }),
                        _ => Unknown,
                    }
                }
                (Node::Num(_), _) => Valid,
                _ => Unknown,
            },
            "uniqueItems" => match (value, instance) {
                (Node::Bool(false), _) => Valid,
                (Node::Bool(true), Doc::Array(items)) => {
                    let mut verdict = Valid;
                    for (i, a) in items.iter().enumerate() {
                        for b in &items[i + 1..] {
                            match equal(a, b) {
                                Some(true) => return Invalid,
                                Some(false) => {}
                                None => verdict = Unknown,
                            }
                        }
                    }
                    verdict
                }
                (Node::Bool(true), _) => Valid,
                _ => Unknown,
            },
            "pattern" => match (value, instance) {
                (Node::Str(pattern), Doc::String(s)) => {
                    if !s.is_ascii() {
                        return Unknown;
                    }
                    matches(pattern, s).map_or(Unknown, of)
                }
                (Node::Str(_), _) => Valid,
                _ => Unknown,
            },
            "oneOf" => match value {
                Node::Arr(options) => {
                    let mut matched = 0;
                    for option in *options {
                        match self.check(option, instance, depth + 1) {
                            Valid => matched += 1,
                            Invalid => {}
                            Unknown => return Unknown,
                        }
                    }
                    of(matched == 1)
                }
                _ => Unknown,
            },
            "anyOf" => match value {
                Node::Arr(options) => {
                    let mut verdict = Invalid;
                    for option in *options {
                        match self.check(option, instance, depth + 1) {
                            Valid => return Valid,
                            Invalid => {}
                            Unknown => verdict = Unknown,
                        }
                    }
                    verdict
                }
                _ => Unknown,
            },
            "if" => {
                let branch = match self.check(value, instance, depth + 1) {
                    Valid => "then",
                    Invalid => "else",
                    Unknown => return Unknown,
                };
                match member(schema, branch) {
                    Some(sub) => self.check(sub, instance, depth + 1),
                    None => Valid,
                }
            }
            _ => Unknown,
        }
    }

    /// [`Walk::resolve`], once per reference of the schema tree and walk: a pack of
    /// thousands of prompts resolves the same few references for each.
    fn resolve_cached(&self, reference: &'static str) -> Option<&'static Node> {
        let key = (reference.as_ptr() as usize, reference.len());
        if let Some(&found) = self.resolved.borrow().get(&key) {
            return found;
        }
        let found = self.resolve(reference);
        self.resolved.borrow_mut().insert(key, found);
        found
    }

    /// A `$ref` within the document (`#` or `#/json/pointer`).
    fn resolve(&self, reference: &str) -> Option<&'static Node> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.contains('%') {
            return None;
        }
        self.root.pointer(pointer)
    }
}

fn count(limit: &Node) -> Option<usize> {
    limit
        .as_number()?
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
}

fn within(key: &str, len: usize, limit: usize) -> bool {
    if key.starts_with("min") {
        len >= limit
    } else {
        len <= limit
    }
}

/// `type` (one name or a list); `integer` is decided for numbers written without a
/// fraction only.
fn types(value: &Node, instance: &Doc) -> Verdict {
    let one = |name: &Node| -> Verdict {
        let Some(name) = name.as_str() else {
            return Unknown;
        };
        match (name, instance) {
            ("null", Doc::Null)
            | ("boolean", Doc::Bool(_))
            | ("object", Doc::Object(_))
            | ("array", Doc::Array(_))
            | ("string", Doc::String(_))
            | ("number", Doc::Number(_)) => Valid,
            ("integer", Doc::Number(n)) if n.is_f64() => Unknown,
            ("integer", Doc::Number(_)) => Valid,
            ("null" | "boolean" | "object" | "array" | "string" | "number" | "integer", _) => {
                Invalid
            }
            _ => Unknown,
        }
    };
    match value {
        Node::Arr(names) => {
            let mut verdict = Invalid;
            for name in *names {
                match one(name) {
                    Valid => return Valid,
                    Invalid => {}
                    Unknown => verdict = Unknown,
                }
            }
            verdict
        }
        name => one(name),
    }
}

/// A number as an `f64` when that is exact (integers up to 2^53, and floats).
fn exact(n: &Number) -> Option<f64> {
    const EXACT: u64 = 1 << 53;
    if let Some(u) = n.as_u64() {
        return (u <= EXACT).then_some(u as f64);
    }
    if let Some(i) = n.as_i64() {
        return (i.unsigned_abs() <= EXACT).then_some(i as f64);
    }
    n.as_f64()
}

/// A JSON value as [`equal`] reads it: a pack's [`Doc`] or a schema's [`Node`].
trait Json: Sized {
    /// The number, when this is one.
    fn number(&self) -> Option<Number>;
    /// The items, when this is an array.
    fn items(&self) -> Option<&[Self]>;
    /// How many members, and each by name, when this is an object.
    fn members(&self) -> Option<(usize, impl Iterator<Item = (&str, &Self)>)>;
    /// Whether this `null`, boolean or string equals `b` (`false` for anything else).
    fn scalar_eq(&self, b: &Doc) -> bool;
}

impl Json for Doc<'_> {
    fn number(&self) -> Option<Number> {
        match self {
            Doc::Number(n) => Some(n.clone()),
            _ => None,
        }
    }

    fn items(&self) -> Option<&[Self]> {
        self.as_array()
    }

    fn members(&self) -> Option<(usize, impl Iterator<Item = (&str, &Self)>)> {
        let map = self.as_object()?;
        Some((map.len(), map.iter().map(|(k, v)| (k.as_str(), v))))
    }

    fn scalar_eq(&self, b: &Doc) -> bool {
        matches!(self, Doc::Null | Doc::Bool(_) | Doc::String(_)) && self == b
    }
}

impl Json for Node {
    fn number(&self) -> Option<Number> {
        self.as_number()
    }

    fn items(&self) -> Option<&[Node]> {
        match self {
            Node::Arr(items) => Some(items),
            _ => None,
        }
    }

    fn members(&self) -> Option<(usize, impl Iterator<Item = (&str, &Node)>)> {
        match self {
            Node::Obj(members) => Some((members.len(), members.iter().map(|(k, v)| (*k, v)))),
            _ => None,
        }
    }

    fn scalar_eq(&self, b: &Doc) -> bool {
        match (self, b) {
            (Node::Null, Doc::Null) => true,
            (Node::Bool(x), Doc::Bool(y)) => x == y,
            (Node::Str(x), Doc::String(y)) => *x == y.as_str(),
            _ => false,
        }
    }
}

/// JSON equality as JSON Schema defines it (`1` equals `1.0`); `None` when two numbers
/// cannot be compared exactly.
fn equal(a: &impl Json, b: &Doc) -> Option<bool> {
    if let (Some(x), Doc::Number(y)) = (a.number(), b) {
        if x == *y {
            return Some(true);
        }
        return match (exact(&x), exact(y)) {
            (Some(x), Some(y)) => Some(x == y),
            _ => None,
        };
    }
    if let (Some(x), Doc::Array(y)) = (a.items(), b) {
        if x.len() != y.len() {
            return Some(false);
        }
        for (x, y) in x.iter().zip(y.iter()) {
            if !equal(x, y)? {
                return Some(false);
            }
        }
        return Some(true);
    }
    if let (Some((len, members)), Doc::Object(y)) = (a.members(), b) {
        if len != y.len() {
            return Some(false);
        }
        for (k, x) in members {
            match y.get(k) {
                Some(y) if equal(x, y)? => {}
                _ => return Some(false),
            }
        }
        return Some(true);
    }
    Some(a.scalar_eq(b))
}

/// Whether the ASCII string `s` matches `pattern` (ECMA-262 and Rust regex agree on the
/// embedded schemas' patterns for ASCII text); `None` when the pattern does not compile.
/// Each pattern is made ready once per process ([`Matcher`]).
fn matches(pattern: &str, s: &str) -> Option<bool> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Matcher>>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(matcher) = cache.get(pattern) {
        return matcher.as_ref().map(|m| m.is_match(s));
    }
    let matcher = Matcher::new(pattern);
    let verdict = matcher.as_ref().map(|m| m.is_match(s));
    cache.insert(pattern.to_owned(), matcher);
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(schema: serde_json::Value, instance: serde_json::Value) -> Verdict {
        valid(Node::leak(&schema), &crate::doc::leaked(&instance))
    }

    #[test]
    fn keywords_decide() {
        let s = json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2}},
            "additionalProperties": false});
        assert_eq!(v(s.clone(), json!({"a": "ab"})), Valid);
        assert_eq!(v(s.clone(), json!({"a": "a"})), Invalid);
        assert_eq!(v(s.clone(), json!({"a": "A1"})), Invalid);
        assert_eq!(v(s.clone(), json!({})), Invalid);
        assert_eq!(v(s.clone(), json!({"a": "ab", "b": 1})), Invalid);
        assert_eq!(v(s.clone(), json!([])), Invalid);
        assert_eq!(v(s, json!({"a": "äb"})), Unknown);
    }

    #[test]
    fn one_of_counts_matches() {
        let s = json!({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}]});
        assert_eq!(v(s.clone(), json!("")), Valid);
        assert_eq!(v(s.clone(), json!("x")), Invalid);
        assert_eq!(v(s, json!(3)), Invalid);
    }

    #[test]
    fn unknown_spreads_and_never_passes() {
        assert_eq!(v(json!({"not": {"type": "string"}}), json!(3)), Unknown);
        assert_eq!(v(json!({"type": "integer"}), json!(1.0)), Unknown);
        assert_eq!(v(json!({"type": "integer"}), json!(1)), Valid);
        assert_eq!(
            v(json!({"type": "integer", "minimum": 5}), json!(1.0)),
            Invalid
        );
        let s = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert_eq!(v(s, json!(2.0)), Unknown);
        assert_eq!(v(json!({"$ref": "other.json#/x"}), json!(1)), Unknown);
    }

    #[test]
    fn refs_and_conditionals() {
        let s = json!({"$defs": {"n": {"type": "number", "maximum": 1}},
            "properties": {"x": {"$ref": "#/$defs/n"}},
            "if": {"required": ["kind"]}, "then": {"required": ["x"]}});
        assert_eq!(v(s.clone(), json!({"x": 0.5})), Valid);
        assert_eq!(v(s.clone(), json!({"x": 2})), Invalid);
        assert_eq!(v(s.clone(), json!({"kind": 1})), Invalid);
        assert_eq!(v(s, json!({"kind": 1, "x": 1})), Valid);
    }

    #[test]
    fn enum_and_unique_items_compare_numbers_by_value() {
        assert_eq!(v(json!({"enum": [1, "a"]}), json!(1.0)), Valid);
        assert_eq!(v(json!({"enum": [1, "a"]}), json!("b")), Invalid);
        assert_eq!(v(json!({"uniqueItems": true}), json!([1, 1.0])), Invalid);
        assert_eq!(
            v(json!({"uniqueItems": true}), json!([{"a": 1}, {"a": 2}])),
            Valid
        );
    }
}
