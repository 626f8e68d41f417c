//! Small value helpers of the reference interpreter: JSON equality, `${...}` references
//! and bindings (`compositions.md` §3, §7.3). Written from the semantics text; nothing
//! here comes from the VM or the compiler.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// JSON equality of `compositions.md` §7.3: numbers by value (as doubles), objects
/// regardless of member order, different types never equal.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The text form of `compositions.md` §3.6.
///
/// This reuses `ir_spec::text_form` (a small pure helper with its own tests: the
/// ECMAScript number printing is not worth writing twice); everything else in the
/// reference interpreter is written independently of the compiler and the VM.
pub fn text(v: &Value) -> String {
    ir_spec::text_form::text_form(v)
}

/// What references can read: the composition input and the outputs of the steps that
/// ran (a skipped step is absent).
pub struct Scope<'a> {
    pub input: &'a Value,
    pub outputs: &'a BTreeMap<String, Value>,
}

/// Resolves the body of a `${...}` (`input.a.b`, `step.output.a`); `None` when it does
/// not resolve (§3.4).
pub fn resolve(body: &str, scope: &Scope) -> Option<Value> {
    let body = body.trim_matches([' ', '\t']);
    let mut parts = body.split('.');
    let root = parts.next()?;
    let mut v = if root == "input" {
        scope.input
    } else {
        let output = parts.next();
        assert_eq!(
            output,
            Some("output"),
            "the checker lets only `<step>.output` through"
        );
        scope.outputs.get(root)?
    };
    for seg in parts {
        v = v.as_object()?.get(seg)?;
    }
    Some(v.clone())
}

/// Splits a binding string into literal text and reference bodies.
enum Piece<'s> {
    Text(&'s str),
    Ref(&'s str),
}

fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let end = rest[start..]
            .find('}')
            .expect("the checker rejects an unclosed `${`")
            + start;
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        out.push(Piece::Ref(&rest[start + 2..end]));
        rest = &rest[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// The body of a predicate `path` (exactly one reference).
pub fn path_body(path: &str) -> &str {
    path.strip_prefix("${")
        .and_then(|p| p.strip_suffix('}'))
        .expect("the checker requires a path to be one reference")
}

/// Resolves a binding (`input` / `args`) against `scope` (§3.5); `None` when some
/// reference does not resolve (`unresolved_binding`).
pub fn bind(v: &Value, scope: &Scope) -> Option<Value> {
    Some(match v {
        Value::String(s) => {
            let ps = pieces(s);
            match ps.as_slice() {
                [Piece::Ref(body)] => resolve(body, scope)?,
                _ => {
                    let mut out = String::new();
                    for p in ps {
                        match p {
                            Piece::Text(t) => out.push_str(t),
                            Piece::Ref(body) => out.push_str(&text(&resolve(body, scope)?)),
                        }
                    }
                    Value::String(out)
                }
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| bind(i, scope))
                .collect::<Option<Vec<_>>>()?,
        ),
        Value::Object(members) => {
            let mut out = Map::new();
            for (k, v) in members {
                out.insert(k.clone(), bind(v, scope)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}
