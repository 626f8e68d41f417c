//! `system_template` rendering for the reference interpreter (`workflow.md` §14),
//! written from the text: bind and check every declared variable, then replace each
//! `{{path}}` placeholder by the text form of what it names.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::values::{json_eq, text};

/// An artifact's value (`workflow.md` §11): one value, or the entries of an append list.
#[derive(Clone, Debug)]
pub enum Artifact {
    Value(Value),
    List(Vec<Value>),
}

/// One step of a placeholder path.
#[derive(Debug)]
enum Seg {
    Name(String),
    Index(usize),
}

/// A placeholder's path (`name ( "." name | "[" digits "]" )*`) if `body` is one.
fn parse_path(body: &str) -> Option<Vec<Seg>> {
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_cont = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let mut segs = Vec::new();
    let name = |i: &mut usize| -> Option<String> {
        if *i < chars.len() && is_start(chars[*i]) {
            let s = *i;
            while *i < chars.len() && is_cont(chars[*i]) {
                *i += 1;
            }
            Some(chars[s..*i].iter().collect())
        } else {
            None
        }
    };
    segs.push(Seg::Name(name(&mut i)?));
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                segs.push(Seg::Name(name(&mut i)?));
            }
            '[' => {
                i += 1;
                let s = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                if s == i || i >= chars.len() || chars[i] != ']' {
                    return None;
                }
                let digits: String = chars[s..i].iter().collect();
                segs.push(Seg::Index(digits.parse().ok()?));
                i += 1;
            }
            _ => return None,
        }
    }
    Some(segs)
}

/// Follows `segs` from `v`; `None` on a missing member, an index out of range or a step
/// into a non-container.
fn walk(mut v: &Value, segs: &[Seg]) -> Option<Value> {
    for s in segs {
        v = match s {
            Seg::Name(n) => v.as_object()?.get(n)?,
            Seg::Index(i) => v.as_array()?.get(*i)?,
        };
    }
    Some(v.clone())
}

fn type_ok(ty: &str, v: &Value) -> bool {
    match ty {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        _ => true,
    }
}

fn valid(rules: &Value, v: &Value) -> bool {
    let num = |k: &str| rules.get(k).and_then(Value::as_f64);
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as f64;
        if num("min_length").is_some_and(|m| len < m) || num("max_length").is_some_and(|m| len > m)
        {
            return false;
        }
    }
    if let Some(x) = v.as_f64() {
        if num("minimum").is_some_and(|m| x < m) || num("maximum").is_some_and(|m| x > m) {
            return false;
        }
    }
    if let Some(allowed) = rules.get("enum").and_then(Value::as_array) {
        if !allowed.iter().any(|a| json_eq(a, v)) {
            return false;
        }
    }
    true
}

/// Expands fragment references (`workflow.md` §14, compile time 1): `{{fragments.n}}`,
/// `{{fragment:n}}`, and `{{n}}` when `n` is a fragment and not a declared variable.
/// One level: the inserted text is not searched for fragment references again.
fn expand_fragments(template: &str, fragments: &Map<String, Value>, declared: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let fragment = after.find("}}").and_then(|end| {
            let body = &after[..end];
            let name = body
                .strip_prefix("fragments.")
                .or_else(|| body.strip_prefix("fragment:"))
                .or((!declared.contains(&body)).then_some(body))?;
            Some((fragments.get(name)?.as_str()?, end))
        });
        match fragment {
            Some((text, end)) => {
                out.push_str(text);
                rest = &after[end + 2..];
            }
            None => {
                // Not a reference here; one may start at the next brace (`{{{f0}}}`).
                out.push('{');
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Renders `prompt`'s `system_template` with `input`; `Err(())` is `invalid_variable`.
pub fn render(
    prompt: &Value,
    fragments: &Map<String, Value>,
    input: &Value,
    artifacts: &BTreeMap<String, Artifact>,
    host_variables: &Map<String, Value>,
) -> Result<String, ()> {
    let names: Vec<&str> = prompt
        .get("variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    let template = expand_fragments(
        prompt["system_template"].as_str().unwrap(),
        fragments,
        &names,
    );
    let template = template.as_str();
    // Bind and check every declared variable, used or not.
    let mut declared: BTreeMap<&str, Option<Value>> = BTreeMap::new();
    for var in prompt
        .get("variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = var["name"].as_str().unwrap();
        let required = var["required"].as_bool().unwrap();
        let from_input = input.get(name).filter(|v| !v.is_null()).cloned();
        let bound = match (from_input, var.get("default")) {
            (Some(v), _) => Some(v),
            (None, Some(d)) if !required => Some(d.clone()),
            (None, _) if required => return Err(()),
            (None, _) => None,
        };
        if let Some(v) = &bound {
            if !type_ok(var["type"].as_str().unwrap(), v) {
                return Err(());
            }
            if let Some(rules) = var.get("validation") {
                if !valid(rules, v) {
                    return Err(());
                }
            }
        }
        declared.insert(name, bound);
    }
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let path = after
            .find("}}")
            .and_then(|end| parse_path(&after[..end]).map(|p| (p, end)));
        let Some((segs, end)) = path else {
            // No placeholder starts here: the brace is literal text, and one may start at
            // the next character (`{{{input}}}` is a brace, a placeholder and a brace).
            out.push('{');
            rest = &rest[start + 1..];
            continue;
        };
        rest = &after[end + 2..];
        let Seg::Name(root) = &segs[0] else {
            unreachable!()
        };
        let value = match root.as_str() {
            "input" => Some(walk(input, &segs[1..]).ok_or(())?),
            "artifacts" => {
                let Some(Seg::Name(name)) = segs.get(1) else {
                    panic!("the generator writes `artifacts.<name>`")
                };
                match artifacts.get(name) {
                    None => None,
                    Some(Artifact::Value(v)) => Some(walk(v, &segs[2..]).ok_or(())?),
                    Some(Artifact::List(entries)) if segs.len() == 2 => {
                        let lines: Vec<String> = entries.iter().map(text).collect();
                        out.push_str(&lines.join("\n"));
                        continue;
                    }
                    Some(Artifact::List(entries)) => {
                        Some(walk(&Value::Array(entries.clone()), &segs[2..]).ok_or(())?)
                    }
                }
            }
            name => match declared.get(name) {
                Some(None) => None,
                Some(Some(v)) => Some(walk(v, &segs[1..]).ok_or(())?),
                None => {
                    // Undeclared: like an optional variable without default, from the
                    // input's member, else a host variable, else `invalid_variable`.
                    let v = input
                        .get(name)
                        .filter(|v| !v.is_null())
                        .or_else(|| host_variables.get(name))
                        .ok_or(())?;
                    Some(walk(v, &segs[1..]).ok_or(())?)
                }
            },
        };
        if let Some(v) = value {
            out.push_str(&text(&v));
        }
    }
    out.push_str(rest);
    Ok(out)
}
