//! Values as the run reads them, without copying.
//!
//! - `VRef`: a borrowed value. A parallel step's output is never built while the
//!   composition runs: its branch outputs stay in their own slots, and `VRef` walks the
//!   merged object `{<into>: m}` over them (`compositions.md` 8.2). It is materialized
//!   only when someone needs a whole `Value` (a host reading the input, a rendered
//!   template, a predicate comparing whole objects, the composition output).
//! - `Scope`: the composition input and the output slots; resolves a [`Ref`].
//! - `BVal`: a step's `input` / `args` ([`Bind`]) seen through a scope: members are
//!   looked up through the binding, so a template can be checked without building the
//!   input.
//!
//! Object members are found by a linear scan for small objects (no string hashing).

use std::borrow::Cow;

use ir_spec::{Bind, Composition, Module, Part, PathSeg, Reduce, Ref, Root, StepId, StepKind};
use serde_json::{Map, Value};

pub use ir_spec::text_form::{text_form, write_text_form};
use ir_spec::text_form::{write_json, write_json_string, Escaped, Meter, Sink};

pub(crate) use crate::json::{eq_str, string_rule};
pub use crate::json::{json_eq, member};

/// A parallel step whose branches all ran: its output is `{<into>: m}`, with `m` the
/// reduction of the branch slots (`compositions.md` 8.3).
#[derive(Clone, Copy)]
pub(crate) struct Par<'a> {
    m: &'a Module,
    comp: &'a Composition,
    branches: &'a [StepId],
    strategy: Reduce,
    into: &'a str,
    slots: &'a [Option<Value>],
}

impl<'a> Par<'a> {
    fn branch(&self, b: StepId) -> &'a Value {
        self.slots[b.index()].as_ref().unwrap_or(&Value::Null)
    }

    /// `m`.
    fn reduced(self) -> VRef<'a> {
        match self.strategy {
            Reduce::Replace => match self.branches.last() {
                Some(b) => VRef::Val(self.branch(*b)),
                None => VRef::Val(&Value::Null),
            },
            _ => VRef::Reduced(self),
        }
    }

    fn materialize_reduced(&self) -> Value {
        match self.strategy {
            Reduce::Replace => self.reduced().to_value(),
            Reduce::Barrier => Value::Object(
                self.branches
                    .iter()
                    .map(|b| {
                        let id = self.m.str(self.comp.steps[b.index()].id).to_owned();
                        (id, self.branch(*b).clone())
                    })
                    .collect(),
            ),
            Reduce::Append => {
                let mut out = Vec::new();
                for b in self.branches {
                    match self.branch(*b) {
                        Value::Array(items) => out.extend(items.iter().cloned()),
                        other => out.push(other.clone()),
                    }
                }
                Value::Array(out)
            }
        }
    }
}

/// A borrowed value, possibly a parallel step's merged output walked in place.
#[derive(Clone, Copy)]
pub(crate) enum VRef<'a> {
    /// A real value.
    Val(&'a Value),
    /// A parallel step's output object `{<into>: m}`.
    Merged(Par<'a>),
    /// `m` of a barrier (an object branch id → output) or append (an array) reducer.
    Reduced(Par<'a>),
}

impl<'a> VRef<'a> {
    /// The object member `k`.
    pub fn member(self, k: &str) -> Option<VRef<'a>> {
        match self {
            VRef::Val(v) => member(v, k).map(VRef::Val),
            VRef::Merged(p) => (p.into == k).then(|| p.reduced()),
            VRef::Reduced(p) => match p.strategy {
                Reduce::Barrier => p
                    .branches
                    .iter()
                    .find(|b| p.m.str(p.comp.steps[b.index()].id) == k)
                    .map(|b| VRef::Val(p.branch(*b))),
                _ => None,
            },
        }
    }

    /// The array element `i`.
    pub fn index(self, i: usize) -> Option<VRef<'a>> {
        match self {
            VRef::Val(v) => v.as_array()?.get(i).map(VRef::Val),
            VRef::Merged(_) => None,
            VRef::Reduced(p) => match p.strategy {
                Reduce::Append => {
                    let mut i = i;
                    for b in p.branches {
                        match p.branch(*b) {
                            Value::Array(items) if i < items.len() => {
                                return Some(VRef::Val(&items[i]))
                            }
                            Value::Array(items) => i -= items.len(),
                            other if i == 0 => return Some(VRef::Val(other)),
                            _ => i -= 1,
                        }
                    }
                    None
                }
                _ => None,
            },
        }
    }

    /// Follows a placeholder path segment.
    pub fn seg(self, seg: &PathSeg) -> Option<VRef<'a>> {
        match seg {
            PathSeg::Field(f) => self.member(f),
            PathSeg::Index(i) => self.index(*i as usize),
        }
    }

    /// A copy as a plain value.
    pub fn to_value(self) -> Value {
        match self {
            VRef::Val(v) => v.clone(),
            VRef::Merged(p) => {
                let mut o = Map::new();
                o.insert(p.into.to_owned(), p.materialize_reduced());
                Value::Object(o)
            }
            VRef::Reduced(p) => p.materialize_reduced(),
        }
    }

    /// The value, borrowed when it is real.
    pub fn as_cow(self) -> Cow<'a, Value> {
        match self {
            VRef::Val(v) => Cow::Borrowed(v),
            other => Cow::Owned(other.to_value()),
        }
    }

    /// The real value, if this is one.
    pub fn real(self) -> Option<&'a Value> {
        match self {
            VRef::Val(v) => Some(v),
            _ => None,
        }
    }

    /// The JSON type of the value.
    pub fn ty(self) -> Ty {
        match self {
            VRef::Val(v) => Ty::of(v),
            VRef::Merged(_) => Ty::Object,
            VRef::Reduced(p) => match p.strategy {
                Reduce::Append => Ty::Array,
                _ => Ty::Object,
            },
        }
    }

    /// Appends the text form (`compositions.md` §3.6). A merged output is measured
    /// without being built.
    pub fn write_text<S: Sink + ?Sized>(self, out: &mut S) {
        match self {
            VRef::Val(v) => write_text_form(out, v),
            // A merged output is an object or array: its text form is its JSON.
            other => other.write_json(out),
        }
    }

    /// Appends the value as compact JSON (a string quoted).
    fn write_json<S: Sink + ?Sized>(self, out: &mut S) {
        match (self, out.as_meter()) {
            (VRef::Val(v), _) => write_json(out, v),
            (other, Some(m)) => other.measure(m),
            (other, None) => write_json(out, &other.to_value()),
        }
    }

    /// Counts the JSON of a value, walking a merged output in place.
    fn measure(self, m: &mut Meter) {
        match self {
            VRef::Val(v) => m.json(v),
            VRef::Merged(p) => {
                m.push('{');
                write_json_string(m, p.into);
                m.push(':');
                p.reduced().measure(m);
                m.push('}');
            }
            VRef::Reduced(p) => match p.strategy {
                Reduce::Barrier => {
                    m.push('{');
                    for (i, b) in p.branches.iter().enumerate() {
                        if i > 0 {
                            m.push(',');
                        }
                        write_json_string(m, p.m.str(p.comp.steps[b.index()].id));
                        m.push(':');
                        m.json(p.branch(*b));
                    }
                    m.push('}');
                }
                Reduce::Append => {
                    m.push('[');
                    let mut first = true;
                    for b in p.branches {
                        let items = match p.branch(*b) {
                            Value::Array(items) => items.as_slice(),
                            other => std::slice::from_ref(other),
                        };
                        for item in items {
                            if !first {
                                m.push(',');
                            }
                            first = false;
                            m.json(item);
                        }
                    }
                    m.push(']');
                }
                Reduce::Replace => m.json(&self.to_value()),
            },
        }
    }
}

/// A JSON type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Ty {
    /// The type with its article, for messages: "a string", "an object", "null".
    pub fn described(self) -> &'static str {
        match self {
            Ty::Null => "null",
            Ty::Bool => "a boolean",
            Ty::Number => "a number",
            Ty::String => "a string",
            Ty::Array => "an array",
            Ty::Object => "an object",
        }
    }

    pub fn of(v: &Value) -> Ty {
        match v {
            Value::Null => Ty::Null,
            Value::Bool(_) => Ty::Bool,
            Value::Number(_) => Ty::Number,
            Value::String(_) => Ty::String,
            Value::Array(_) => Ty::Array,
            Value::Object(_) => Ty::Object,
        }
    }
}

/// What references read: the composition input and the output slots.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub m: &'a Module,
    pub comp: Option<&'a Composition>,
    pub input: &'a Value,
    pub slots: &'a [Option<Value>],
}

impl<'a> Scope<'a> {
    /// The output of step `s`: `None` when it did not run. A parallel step's slot holds
    /// only a `null` marker once it ran; its output is walked over its branches' slots.
    pub fn step(&self, s: StepId) -> Option<VRef<'a>> {
        let v = self.slots.get(s.index())?.as_ref()?;
        let comp = self.comp?;
        match &comp.steps[s.index()].kind {
            StepKind::Parallel {
                branches,
                strategy,
                into,
            } => Some(VRef::Merged(Par {
                m: self.m,
                comp,
                branches,
                strategy: *strategy,
                into,
                slots: self.slots,
            })),
            _ => Some(VRef::Val(v)),
        }
    }

    /// Resolves a reference; `None` when it does not resolve (§3.4).
    #[inline]
    pub fn get(&self, r: &Ref) -> Option<VRef<'a>> {
        match self.real_root(r) {
            Ok(root) => {
                let mut v = root?;
                for seg in &r.path {
                    v = member(v, seg)?;
                }
                Some(VRef::Val(v))
            }
            Err(()) => self.get_merged(r),
        }
    }

    /// Resolves a reference to a real value (`Ok(None)`: it does not resolve); `Err`
    /// when it goes through a parallel step's merged output (then use [`Scope::get`]).
    #[inline(always)]
    pub fn get_real(&self, r: &Ref) -> Result<Option<&'a Value>, ()> {
        let Some(mut v) = self.real_root(r)? else {
            return Ok(None);
        };
        for seg in &r.path {
            match member(v, seg) {
                Some(m) => v = m,
                None => return Ok(None),
            }
        }
        Ok(Some(v))
    }

    /// Whether a reference resolves, without building anything.
    #[inline]
    pub fn resolves(&self, r: &Ref) -> bool {
        match self.real_root(r) {
            Ok(Some(mut v)) => {
                for seg in &r.path {
                    match member(v, seg) {
                        Some(m) => v = m,
                        None => return false,
                    }
                }
                true
            }
            Ok(None) => false,
            Err(()) => self.get_merged(r).is_some(),
        }
    }

    /// The root value of `r` when it is a real value (`Ok(None)`: the step did not
    /// run); `Err` for a parallel step's merged output.
    #[inline]
    fn real_root(&self, r: &Ref) -> Result<Option<&'a Value>, ()> {
        match r.root {
            Root::Input => Ok(Some(self.input)),
            Root::Step(s) => {
                let Some(Some(v)) = self.slots.get(s.index()) else {
                    return Ok(None);
                };
                match self.comp.map(|c| &c.steps[s.index()].kind) {
                    Some(StepKind::Parallel { .. }) => Err(()),
                    _ => Ok(Some(v)),
                }
            }
        }
    }

    /// Resolves a reference into a parallel step's merged output.
    #[cold]
    fn get_merged(&self, r: &Ref) -> Option<VRef<'a>> {
        let root = match r.root {
            Root::Input => VRef::Val(self.input),
            Root::Step(s) => self.step(s)?,
        };
        let mut v = root;
        for seg in &r.path {
            v = v.member(seg)?;
        }
        Some(v)
    }

    /// The `${...}` text of a reference, for messages.
    pub fn ref_text(&self, r: &Ref) -> String {
        let mut text = match (r.root, self.comp) {
            (Root::Step(s), Some(c)) => format!("${{{}.output", self.m.str(c.steps[s.index()].id)),
            _ => "${input".to_owned(),
        };
        for seg in &r.path {
            text.push('.');
            text.push_str(seg);
        }
        text.push('}');
        text
    }

    /// Checks that every reference of `b` resolves: `Err` with the first that does not,
    /// in resolution order. A binding that is one whole reference (nearly every step's
    /// input) gives the value it resolved to, so that a caller measuring its text does
    /// not resolve it again.
    #[inline]
    pub fn check<'b>(&self, b: &'b Bind) -> Result<Option<VRef<'a>>, &'b Ref> {
        match b {
            Bind::Whole(r) => self.get(r).map(Some).ok_or(r),
            _ => self.first_unresolved(b).map_or(Ok(None), Err),
        }
    }

    /// The first reference of `b` that does not resolve, in resolution order.
    fn first_unresolved<'b>(&self, b: &'b Bind) -> Option<&'b Ref> {
        match b {
            Bind::Const(_) => None,
            Bind::Whole(r) => (!self.resolves(r)).then_some(r),
            Bind::Interp(parts) => parts.iter().find_map(|p| match p {
                Part::Ref(r) if !self.resolves(r) => Some(r),
                _ => None,
            }),
            Bind::Array(items) => items.iter().find_map(|i| self.first_unresolved(i)),
            Bind::Object(items) => items.iter().find_map(|(_, i)| self.first_unresolved(i)),
        }
    }

    /// Builds the value of `b` (every reference resolves: checked before).
    pub fn materialize(&self, b: &Bind) -> Value {
        match b {
            Bind::Const(v) => v.clone(),
            Bind::Whole(r) => self.get(r).map_or(Value::Null, VRef::to_value),
            Bind::Interp(parts) => Value::String(self.interp(parts)),
            Bind::Array(items) => Value::Array(items.iter().map(|i| self.materialize(i)).collect()),
            Bind::Object(items) => Value::Object(
                items
                    .iter()
                    .map(|(k, i)| (k.clone(), self.materialize(i)))
                    .collect(),
            ),
        }
    }

    fn interp(&self, parts: &[Part]) -> String {
        let mut s = String::new();
        self.write_interp(parts, &mut s);
        s
    }

    /// Appends the string an interpolation builds. Stops early once `out` is full.
    fn write_interp<S: Sink + ?Sized>(&self, parts: &[Part], out: &mut S) {
        for p in parts {
            if out.full() {
                return;
            }
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Ref(r) => {
                    if let Some(v) = self.get(r) {
                        v.write_text(out);
                    }
                }
            }
        }
    }
}

/// A step's bound `input` / `args` seen through its scope, or a plain value.
#[derive(Clone, Copy)]
pub(crate) enum BVal<'a> {
    /// A binding, resolved lazily.
    Bind(&'a Bind, Scope<'a>),
    /// A value.
    V(VRef<'a>),
}

impl<'a> BVal<'a> {
    /// Strips constant and whole-reference bindings down to the value they denote.
    #[inline]
    pub fn norm(self) -> Option<BVal<'a>> {
        match self {
            BVal::Bind(Bind::Const(v), _) => Some(BVal::V(VRef::Val(v))),
            BVal::Bind(Bind::Whole(r), s) => s.get(r).map(BVal::V),
            other => Some(other),
        }
    }

    /// The object member `k`.
    pub fn member(self, k: &str) -> Option<BVal<'a>> {
        match self.norm()? {
            BVal::V(v) => v.member(k).map(BVal::V),
            BVal::Bind(Bind::Object(items), s) => items
                .iter()
                .find(|(kk, _)| kk == k)
                .and_then(|(_, b)| BVal::Bind(b, s).norm()),
            BVal::Bind(..) => None,
        }
    }

    /// Follows a placeholder path segment.
    pub fn seg(self, seg: &PathSeg) -> Option<BVal<'a>> {
        match seg {
            PathSeg::Field(f) => self.member(f),
            PathSeg::Index(i) => match self.norm()? {
                BVal::V(v) => v.index(*i as usize).map(BVal::V),
                BVal::Bind(Bind::Array(items), s) => {
                    items.get(*i as usize).and_then(|b| BVal::Bind(b, s).norm())
                }
                BVal::Bind(..) => None,
            },
        }
    }

    /// The JSON type.
    pub fn ty(self) -> Ty {
        match self.norm() {
            Some(BVal::V(v)) => v.ty(),
            Some(BVal::Bind(Bind::Interp(_), _)) => Ty::String,
            Some(BVal::Bind(Bind::Array(_), _)) => Ty::Array,
            Some(BVal::Bind(Bind::Object(_), _)) => Ty::Object,
            _ => Ty::Null,
        }
    }

    /// The value, borrowed when it is a real one.
    pub fn as_cow(self) -> Cow<'a, Value> {
        match self.norm() {
            Some(BVal::V(v)) => v.as_cow(),
            Some(BVal::Bind(b, s)) => Cow::Owned(s.materialize(b)),
            None => Cow::Owned(Value::Null),
        }
    }

    /// Appends the text form, building nothing but the text (a binding's arrays and
    /// objects are written as they are walked). Stops early once `out` is full.
    pub fn write_text<S: Sink + ?Sized>(self, out: &mut S) {
        match self.norm() {
            Some(BVal::V(v)) => v.write_text(out),
            Some(BVal::Bind(Bind::Interp(parts), s)) => s.write_interp(parts, out),
            _ => self.write_json(out),
        }
    }

    /// Appends the value as compact JSON with sorted object members, as
    /// [`write_text_form`] writes the value [`BVal::as_cow`] builds.
    fn write_json<S: Sink + ?Sized>(self, out: &mut S) {
        if out.full() {
            return;
        }
        match self.norm() {
            None => out.push_str("null"),
            Some(BVal::V(v)) => v.write_json(out),
            Some(BVal::Bind(Bind::Interp(parts), s)) => {
                out.push('"');
                s.write_interp(parts, &mut Escaped(&mut *out));
                out.push('"');
            }
            Some(BVal::Bind(Bind::Array(items), s)) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    BVal::Bind(item, s).write_json(out);
                }
                out.push(']');
            }
            Some(BVal::Bind(Bind::Object(items), s)) if out.as_meter().is_some() => {
                // Measured in any order (equal keys, which no compiled pack has, count
                // each time: a measure at least the length).
                out.push('{');
                for (i, (key, item)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(out, key);
                    out.push(':');
                    BVal::Bind(item, s).write_json(out);
                }
                out.push('}');
            }
            Some(BVal::Bind(Bind::Object(items), s)) => {
                // As a `Map` built from the members holds them: sorted, the last of
                // equal keys winning.
                let mut order: Vec<usize> = (0..items.len()).collect();
                order.sort_by(|a, b| items[*a].0.cmp(&items[*b].0));
                out.push('{');
                let mut first = true;
                for (n, i) in order.iter().enumerate() {
                    let (key, item) = &items[*i];
                    if order.get(n + 1).is_some_and(|j| items[*j].0 == *key) {
                        continue;
                    }
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    write_json_string(out, key);
                    out.push(':');
                    BVal::Bind(item, s).write_json(out);
                }
                out.push('}');
            }
            Some(BVal::Bind(Bind::Const(v), _)) => write_json(out, v),
            Some(BVal::Bind(Bind::Whole(r), s)) => match s.get(r) {
                Some(v) => v.write_json(out),
                None => out.push_str("null"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality_is_numeric_and_order_free() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(!json_eq(&json!("1"), &json!(1)));
        assert!(!json_eq(&json!(true), &json!(1)));
        assert!(!json_eq(&json!(null), &json!(false)));
        assert!(!json_eq(&json!([]), &json!({})));
        assert!(json_eq(&json!({}), &json!({})));
        assert!(json_eq(
            &json!({"a": [1, {"b": 2.0}], "c": null}),
            &json!({"c": null, "a": [1.0, {"b": 2}]})
        ));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
    }
}
