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
//! answer `Valid`. Each schema object's keywords are read once a process, the first time
//! a walk meets it ([`Ready`], kept in the object's slot of the static tree): its `$ref`
//! resolved, its `pattern` made ready, its `type` names as bits and its `properties`
//! hashed, so that a pack of thousands of prompts matches no keyword by name.
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

use rustc_hash::FxHashMap as HashMap;

use serde_json::Number;

use crate::doc::Node as Doc;

use super::pattern::Matcher;
use super::tree::{member, Node, Object};

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
///
/// `schema` is always the root of its document: the `$ref`s of an object are resolved
/// against it once a process, and kept with the object.
pub(super) fn valid(schema: &'static Node, instance: &Doc) -> Verdict {
    Walk {
        root: schema,
        compositions: instance.get("compositions"),
    }
    .check(schema, instance, 0)
}

/// `$ref` chains deeper than this are not followed (`Unknown`): the embedded schemas
/// recurse only through the instance, which the compiler's limits bound.
const MAX_DEPTH: usize = 256;

/// A schema object's keywords, read once a process: the tests an instance must pass.
///
/// A schema object's verdict is `Invalid` when any of its keywords is, else `Unknown`
/// when any is, else `Valid`, whatever the order they are tested in; the cheap tests come
/// first, so that an invalid instance (as the `if` of a conditional often is) is
/// refused early.
pub(crate) struct Ready {
    /// The tests, cheapest first.
    tests: Box<[Test]>,
}

/// One test of a [`Ready`] schema object: one keyword, or `properties` and
/// `additionalProperties` together.
enum Test {
    /// `type`.
    Type(Types),
    /// `required`; `malformed` when one of the names is not a string.
    Required {
        names: &'static [Node],
        malformed: bool,
    },
    /// `const`.
    Const(&'static Node),
    /// `enum`.
    Enum(&'static [Node]),
    /// `minItems` to `maxLength`: the count of `of` is at least (`min`) or at most `limit`.
    Count {
        of: Counted,
        min: bool,
        limit: usize,
    },
    /// `minimum` (`min`) or `maximum`; `None` when the limit cannot be compared exactly.
    Bound { min: bool, limit: Option<f64> },
    /// `uniqueItems: true`.
    Unique,
    /// `pattern`; `None` when it does not compile. (Boxed, as the members below, so
    /// that a test is small.)
    Pattern(Option<Box<Matcher>>),
    /// `properties` and `additionalProperties`, in one pass over an object's members.
    Members(Box<Members>),
    /// `items`.
    Items(&'static Node),
    /// `$ref`, resolved.
    Ref(&'static Node),
    /// `oneOf`.
    OneOf(&'static [Node]),
    /// `anyOf`.
    AnyOf(&'static [Node]),
    /// `if`, with its `then` and `else`.
    If {
        condition: &'static Node,
        then: Option<&'static Node>,
        otherwise: Option<&'static Node>,
    },
    /// A keyword not decided exactly whatever the instance: one this walk does not know,
    /// or one whose value is not what the keyword takes.
    Unknown,
}

/// What a [`Test::Count`] counts.
#[derive(Clone, Copy)]
enum Counted {
    /// An array's items.
    Items,
    /// An object's members.
    Properties,
    /// A string's characters.
    Length,
}

/// The names of a `type`, one bit each.
#[derive(Clone, Copy)]
struct Types {
    /// [`Types::NULL`] and the others.
    allowed: u8,
    /// A name that is not one of the seven (or not a string).
    other: bool,
}

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const OBJECT: u8 = 4;
    const ARRAY: u8 = 8;
    const STRING: u8 = 16;
    const NUMBER: u8 = 32;
    const INTEGER: u8 = 64;

    fn of(value: &Node) -> Types {
        let mut types = Types {
            allowed: 0,
            other: false,
        };
        let mut add = |name: &Node| {
            types.allowed |= match name.as_str() {
                Some("null") => Types::NULL,
                Some("boolean") => Types::BOOLEAN,
                Some("object") => Types::OBJECT,
                Some("array") => Types::ARRAY,
                Some("string") => Types::STRING,
                Some("number") => Types::NUMBER,
                Some("integer") => Types::INTEGER,
                _ => {
                    types.other = true;
                    0
                }
            }
        };
        match value {
            Node::Arr(names) => names.iter().for_each(&mut add),
            name => add(name),
        }
        types
    }

    /// Whether `instance` has one of the types; `integer` is decided for numbers written
    /// without a fraction only.
    fn test(self, instance: &Doc) -> Verdict {
        let bit = match instance {
            Doc::Null => Types::NULL,
            Doc::Bool(_) => Types::BOOLEAN,
            Doc::Object(_) => Types::OBJECT,
            Doc::Array(_) => Types::ARRAY,
            Doc::String(_) => Types::STRING,
            Doc::Number(n) => {
                if self.allowed & Types::NUMBER != 0 {
                    return Valid;
                }
                if self.allowed & Types::INTEGER != 0 {
                    return if n.is_f64() { Unknown } else { Valid };
                }
                0
            }
        };
        if self.allowed & bit != 0 {
            Valid
        } else if self.other {
            Unknown
        } else {
            Invalid
        }
    }
}

/// `properties` and `additionalProperties` of one schema object.
struct Members {
    /// The schema of each named member.
    properties: Properties,
    /// The schema of every other member (`additionalProperties`), when there is one.
    additional: Option<&'static Node>,
}

/// A schema object's `properties`, looked up by name.
enum Properties {
    /// Few: searched in order.
    Few(&'static [(&'static str, Node)]),
    /// Many: hashed.
    Many(HashMap<&'static str, &'static Node>),
}

/// Above this many `properties`, they are hashed.
const FEW_PROPERTIES: usize = 8;

impl Properties {
    fn of(members: &'static [(&'static str, Node)]) -> Properties {
        if members.len() <= FEW_PROPERTIES {
            Properties::Few(members)
        } else {
            Properties::Many(members.iter().map(|(k, v)| (*k, v)).collect())
        }
    }

    fn get(&self, name: &str) -> Option<&'static Node> {
        match self {
            Properties::Few(members) => member(members, name),
            Properties::Many(map) => map.get(name).copied(),
        }
    }
}

impl Test {
    /// Its place in [`Ready::tests`]: cheap tests first.
    fn rank(&self) -> u8 {
        match self {
            Test::Type(_) | Test::Const(_) | Test::Required { .. } => 0,
            Test::Enum(_) | Test::Count { .. } | Test::Bound { .. } | Test::Pattern(_) => 1,
            Test::Unique | Test::Members(_) | Test::Items(_) => 2,
            Test::Ref(_) | Test::OneOf(_) | Test::AnyOf(_) | Test::If { .. } => 3,
            Test::Unknown => 4,
        }
    }
}

struct Walk<'a> {
    root: &'static Node,
    /// The pack's `compositions` object, whose members are not walked.
    compositions: Option<&'a Doc<'a>>,
}

impl Walk<'_> {
    fn check(&self, schema: &'static Node, instance: &Doc, depth: usize) -> Verdict {
        let object = match schema {
            Node::Bool(b) => return of(*b),
            Node::Obj(object) => *object,
            _ => return Unknown,
        };
        if depth > MAX_DEPTH {
            return Unknown;
        }
        let ready = object.ready.get_or_init(|| self.ready(object));
        let mut verdict = Valid;
        for test in &ready.tests {
            match self.test(test, instance, depth) {
                Invalid => return Invalid,
                Unknown => verdict = Unknown,
                Valid => {}
            }
        }
        verdict
    }

    /// The keywords of `object`, read.
    fn ready(&self, object: &'static Object) -> Ready {
        let schema = object.members;
        let mut tests = Vec::with_capacity(schema.len());
        let mut members = Members {
            properties: Properties::Few(&[]),
            additional: None,
        };
        let mut has_members = false;
        for (key, value) in schema {
            let test = match *key {
                // Annotations (`version`: the schema's own, at its root), and `format`
                // (not asserted by the compiled validator either).
                "$schema" | "$id" | "$defs" | "$comment" | "title" | "description" | "default"
                | "examples" | "deprecated" | "readOnly" | "writeOnly" | "version" | "format" => {
                    continue
                }
                // Read with `if`.
                "then" | "else" => continue,
                "$ref" => match value.as_str().and_then(|r| self.resolve(r)) {
                    Some(target) => Test::Ref(target),
                    None => Test::Unknown,
                },
                "type" => Test::Type(Types::of(value)),
                "enum" => match value {
                    Node::Arr(options) => Test::Enum(options),
                    _ => Test::Unknown,
                },
                "const" => Test::Const(value),
                "properties" => match value {
                    Node::Obj(properties) => {
                        members.properties = Properties::of(properties.members);
                        has_members = true;
                        continue;
                    }
                    _ => Test::Unknown,
                },
                "additionalProperties" => {
                    let properties = member(schema, "properties");
                    if member(schema, "patternProperties").is_some()
                        || properties.is_some_and(|p| !matches!(p, Node::Obj(_)))
                    {
                        Test::Unknown
                    } else {
                        members.additional = Some(value);
                        has_members = true;
                        continue;
                    }
                }
                "required" => match value {
                    Node::Arr(names) => Test::Required {
                        names,
                        malformed: names.iter().any(|n| n.as_str().is_none()),
                    },
                    _ => Test::Unknown,
                },
                "items" => Test::Items(value),
                "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minLength"
                | "maxLength" => match count(value) {
                    Some(limit) => Test::Count {
                        of: match &key[3..] {
                            "Items" => Counted::Items,
                            "Properties" => Counted::Properties,
                            _ => Counted::Length,
                        },
                        min: key.starts_with("min"),
                        limit,
                    },
                    None => Test::Unknown,
                },
                "minimum" | "maximum" => match value {
                    Node::Num(_) => Test::Bound {
                        min: *key == "minimum",
                        limit: value.as_number().as_ref().and_then(exact),
                    },
                    _ => Test::Unknown,
                },
                "uniqueItems" => match value {
                    Node::Bool(false) => continue,
                    Node::Bool(true) => Test::Unique,
                    _ => Test::Unknown,
                },
                "pattern" => match value {
                    Node::Str(pattern) => Test::Pattern(Matcher::new(pattern).map(Box::new)),
                    _ => Test::Unknown,
                },
                "oneOf" => match value {
                    Node::Arr(options) => Test::OneOf(options),
                    _ => Test::Unknown,
                },
                "anyOf" => match value {
                    Node::Arr(options) => Test::AnyOf(options),
                    _ => Test::Unknown,
                },
                "if" => Test::If {
                    condition: value,
                    then: member(schema, "then"),
                    otherwise: member(schema, "else"),
                },
                _ => Test::Unknown,
            };
            tests.push(test);
        }
        if has_members {
            tests.push(Test::Members(Box::new(members)));
        }
        tests.sort_by_key(Test::rank);
        Ready {
            tests: tests.into_boxed_slice(),
        }
    }

    fn test(&self, test: &Test, instance: &Doc, depth: usize) -> Verdict {
        match test {
            Test::Type(types) => types.test(instance),
            Test::Required { names, malformed } => match instance {
                Doc::Object(members) => {
                    let missing = |n: &Node| n.as_str().is_some_and(|n| members.get(n).is_none());
                    if names.iter().any(missing) {
                        Invalid
                    } else if *malformed {
                        Unknown
                    } else {
                        Valid
                    }
                }
                _ => Valid,
            },
            Test::Const(value) => equal(*value, instance).map_or(Unknown, of),
            Test::Enum(options) => {
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
            &Test::Count {
                of: counted,
                min,
                limit,
            } => {
                let len = match (counted, instance) {
                    (Counted::Items, Doc::Array(items)) => items.len(),
                    (Counted::Properties, Doc::Object(members)) => members.len(),
                    (Counted::Length, Doc::String(s)) => {
                        // A character is one to four bytes: the byte length settles most
                        // bounds without counting.
                        let bytes = s.len();
                        if min && bytes / 4 >= limit || !min && bytes <= limit {
                            return Valid;
                        }
                        if min && bytes < limit {
                            return Invalid;
                        }
                        s.chars().count()
                    }
                    _ => return Valid,
                };
                of(if min { len >= limit } else { len <= limit })
            }
            &Test::Bound { min, limit } => match instance {
                Doc::Number(n) => match (exact(n), limit) {
                    (Some(n), Some(limit)) => of(if min { n >= limit } else { n <= limit }),
                    _ => Unknown,
                },
                _ => Valid,
            },
            Test::Unique => match instance {
                Doc::Array(items) => {
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
                _ => Valid,
            },
            Test::Pattern(matcher) => match instance {
                Doc::String(s) => match matcher {
                    Some(matcher) if s.is_ascii() => of(matcher.is_match(s)),
                    _ => Unknown,
                },
                _ => Valid,
            },
            Test::Members(members) => self.members(members, instance, depth),
            Test::Items(schema) => match instance {
                Doc::Array(items) => {
                    let mut verdict = Valid;
                    for item in items.iter() {
                        verdict = verdict.and(|| self.check(schema, item, depth + 1));
                        if verdict == Invalid {
                            return Invalid;
                        }
                    }
                    verdict
                }
                _ => Valid,
            },
            Test::Ref(target) => self.check(target, instance, depth + 1),
            Test::OneOf(options) => {
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
            Test::AnyOf(options) => {
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
            Test::If {
                condition,
                then,
                otherwise,
            } => {
                let branch = match self.check(condition, instance, depth + 1) {
                    Valid => then,
                    Invalid => otherwise,
                    Unknown => return Unknown,
                };
                match branch {
                    Some(schema) => self.check(schema, instance, depth + 1),
                    None => Valid,
                }
            }
            Test::Unknown => Unknown,
        }
    }

    /// `properties` and `additionalProperties`: each member of an object against the
    /// schema of its name, or else the schema of every other member. The members of the
    /// pack's `compositions` are not walked.
    fn members(&self, schema: &Members, instance: &Doc, depth: usize) -> Verdict {
        let Doc::Object(members) = instance else {
            return Valid;
        };
        let additional = schema
            .additional
            .filter(|_| !self.compositions.is_some_and(|c| std::ptr::eq(c, instance)));
        let mut verdict = Valid;
        for (name, member) in members {
            let Some(sub) = schema.properties.get(name.as_str()).or(additional) else {
                continue;
            };
            verdict = verdict.and(|| self.check(sub, member, depth + 1));
            if verdict == Invalid {
                return Invalid;
            }
        }
        verdict
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
            Node::Obj(object) => Some((
                object.members.len(),
                object.members.iter().map(|(k, v)| (*k, v)),
            )),
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

    /// An object's keywords are read the first time a walk meets it, and kept: a second
    /// walk reads the same tests and gives the same verdict.
    #[test]
    fn keywords_are_read_once() {
        let schema = Node::leak(&json!({"type": "object", "required": ["a"]}));
        let Node::Obj(object) = schema else {
            unreachable!()
        };
        assert!(object.ready.get().is_none());
        assert_eq!(valid(schema, &crate::doc::leaked(&json!({"a": 1}))), Valid);
        let ready: *const Ready = object.ready.get().expect("read by the walk");
        assert_eq!(valid(schema, &crate::doc::leaked(&json!({}))), Invalid);
        assert!(std::ptr::eq(ready, object.ready.get().unwrap()));
    }

    /// `properties` and `additionalProperties` are read in one pass over the members;
    /// `patternProperties` leaves the others undecided but `properties` still refuses.
    #[test]
    fn members_in_one_pass() {
        let s = json!({"properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "number"}});
        assert_eq!(v(s.clone(), json!({"a": "x", "b": 1, "c": 2})), Valid);
        assert_eq!(v(s.clone(), json!({"a": 1})), Invalid);
        assert_eq!(v(s.clone(), json!({"a": "x", "b": "y"})), Invalid);
        assert_eq!(v(s, json!("not an object")), Valid);
        let s = json!({"properties": {"a": {"type": "string"}},
            "patternProperties": {"^b": {}}, "additionalProperties": false});
        assert_eq!(v(s.clone(), json!({"a": "x", "c": 1})), Unknown);
        assert_eq!(v(s, json!({"a": 1})), Invalid);
        // Many properties are hashed, and read the same.
        let many: serde_json::Map<String, serde_json::Value> = (0..20)
            .map(|i| (format!("p{i}"), json!({"type": "integer"})))
            .collect();
        let s = json!({"properties": many, "additionalProperties": false});
        assert_eq!(v(s.clone(), json!({"p3": 1, "p19": 2})), Valid);
        assert_eq!(v(s.clone(), json!({"p3": "x"})), Invalid);
        assert_eq!(v(s, json!({"p20": 1})), Invalid);
    }

    /// Lengths count characters; the byte length settles a bound only when it can.
    #[test]
    fn lengths_count_characters() {
        let min = |n: u64, s: &str| v(json!({"minLength": n}), json!(s));
        let max = |n: u64, s: &str| v(json!({"maxLength": n}), json!(s));
        // "ééé": six bytes, three characters.
        assert_eq!(min(3, "ééé"), Valid);
        assert_eq!(min(4, "ééé"), Invalid);
        assert_eq!(max(3, "ééé"), Valid);
        assert_eq!(max(2, "ééé"), Invalid);
        assert_eq!(min(1, "abcd"), Valid);
        assert_eq!(min(5, "abcd"), Invalid);
        assert_eq!(max(4, "abcd"), Valid);
        assert_eq!(max(3, "abcd"), Invalid);
        assert_eq!(min(2, "😀😀"), Valid);
        assert_eq!(max(1, "😀😀"), Invalid);
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
