//! The predicate grammar of branch steps (`compositions.md` §7.1): exactly one variant
//! with exactly its members, a known operator, a literal `value`, a `path` that is one
//! reference visible from the branch.

use crate::doc::Node;

use super::super::{type_of, Cx};
use super::order::{check_visible, Comp};
use crate::diag::{At, DiagKind, Diagnostic};
use crate::syntax::reference::lex_whole_reference;
use crate::vocab::Op;

fn invalid_predicate(ptr: &At<'_>, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::InvalidPredicate, message)
        .at(ptr)
        .help("a predicate is exactly one of {path, op, value} | {path, exists} | {all_of: [...]} | {any_of: [...]} | {not: ...}")
}

/// Check the predicate `p` at `ptr` of the branch at top-level `index`. Recursion is
/// bounded by the loader's depth limit.
pub(super) fn check_predicate(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    p: &Node,
    ptr: &At<'_>,
    index: usize,
) {
    let Some(obj) = p.as_object() else {
        let found = match p {
            Node::String(s) => format!("the expression {s:?}"),
            v => type_of(v).to_string(),
        };
        cx.push(invalid_predicate(ptr, format!("a predicate must be an object, found {found}; free-form expressions are not predicates")));
        return;
    };
    let has = |k: &str| obj.contains_key(k);
    let variant: &[&str] = if has("op") || has("value") {
        &["path", "op", "value"]
    } else if has("exists") {
        &["path", "exists"]
    } else if has("all_of") {
        &["all_of"]
    } else if has("any_of") {
        &["any_of"]
    } else if has("not") {
        &["not"]
    } else if has("path") {
        cx.push(invalid_predicate(
            ptr,
            "a predicate with `path` needs `op` and `value`, or `exists`",
        ));
        return;
    } else {
        cx.push(invalid_predicate(
            ptr,
            "not a predicate: expected compare, exists, all_of, any_of or not",
        ));
        return;
    };
    let extra: Vec<&str> = obj
        .keys()
        .map(|k| k.as_str())
        .filter(|k| !variant.contains(k))
        .collect();
    if !extra.is_empty() {
        let mut d = invalid_predicate(
            ptr,
            format!(
                "unexpected member(s) {} in a predicate of shape {{{}}}",
                quote_list(&extra),
                variant.join(", ")
            ),
        );
        let near: Vec<(&str, &str)> = extra
            .iter()
            .filter_map(|k| Some((*k, super::shape::meant(obj, k, variant)?)))
            .collect();
        match near[..] {
            [] => {}
            [(_, m)] if extra.len() == 1 => d = d.help(format!("did you mean `{m}`?")),
            _ => {
                let each: Vec<String> = near
                    .iter()
                    .map(|(k, m)| format!("`{m}` for `{k}`"))
                    .collect();
                d = d.help(format!("did you mean {}?", each.join(", ")));
            }
        }
        cx.push(d);
        return;
    }
    if let Some(missing) = variant.iter().find(|k| !obj.contains_key(k)) {
        cx.push(invalid_predicate(
            ptr,
            format!("predicate is missing `{missing}`"),
        ));
        return;
    }
    match variant[0] {
        "path" => {
            if let Some(op) = obj.get("op") {
                if op.as_str().and_then(Op::parse).is_none() {
                    let ops: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
                    let mut d = invalid_predicate(
                        ptr,
                        format!("unknown op {op}; ops are {}", ops.join(", ")),
                    );
                    let near = op.as_str().and_then(|o| {
                        short_op(o).or_else(|| super::super::suggest(o, ops.iter().copied()))
                    });
                    if let Some(near) = near {
                        d = d.help(format!("did you mean `{near}`?"));
                    }
                    // The path is still checked: both problems at once.
                    cx.push(d);
                }
                if let Some(v) = obj.get("value") {
                    if contains_reference_text(v) {
                        cx.push(invalid_predicate(ptr, "a predicate `value` is a literal and may not contain `${`; comparing two paths is not supported in v1"));
                    }
                }
            }
            if let Some(e) = obj.get("exists") {
                if !e.is_boolean() {
                    cx.push(invalid_predicate(
                        ptr,
                        format!("`exists` must be true or false, found {e}"),
                    ));
                }
            }
            let path = &obj.field("path");
            let pptr = ptr.key("path");
            let Some(text) = path.as_str() else {
                cx.push(invalid_predicate(
                    ptr,
                    format!("`path` must be a reference string, found {}", type_of(path)),
                ));
                return;
            };
            match lex_whole_reference(text) {
                Err(e) => cx.push(invalid_predicate(
                    ptr,
                    format!("`path` is not one reference: {e}"),
                )),
                Ok(r) => {
                    if let Some(name) = r.step {
                        check_visible(cx, c, name, &pptr, index);
                    }
                }
            }
        }
        key @ ("all_of" | "any_of") => {
            let lptr = ptr.key(key);
            match obj[key].as_array() {
                Some(list) if !list.is_empty() => {
                    for (k, sub) in list.iter().enumerate() {
                        check_predicate(cx, c, sub, &lptr.index(k), index);
                    }
                }
                Some(_) => cx.push(invalid_predicate(ptr, format!("`{key}` must not be empty"))),
                None => cx.push(invalid_predicate(
                    ptr,
                    format!("`{key}` must be an array of predicates"),
                )),
            }
        }
        _ => check_predicate(cx, c, obj.field("not"), &ptr.key("not"), index),
    }
}

/// The op a common shorthand (`gte`, `>=`, `eq`, `!=`, …) stands for.
fn short_op(op: &str) -> Option<&'static str> {
    Some(match op.to_ascii_lowercase().as_str() {
        "eq" | "==" | "=" | "equal" | "is" => "equals",
        "ne" | "neq" | "!=" | "<>" | "not_equal" => "not_equals",
        "lt" | "<" => "less_than",
        "le" | "lte" | "<=" => "less_than_or_equals",
        "gt" | ">" => "greater_than",
        "ge" | "gte" | ">=" => "greater_than_or_equals",
        "nin" | "not in" => "not_in",
        _ => return None,
    })
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn contains_reference_text(v: &Node) -> bool {
    match v {
        Node::String(s) => s.contains("${"),
        Node::Array(a) => a.iter().any(contains_reference_text),
        Node::Object(o) => o.values().any(contains_reference_text),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A free-form expression where a predicate belongs is quoted in the message as it is
    /// written (escapes and all).
    #[test]
    fn an_expression_is_quoted_in_the_message() {
        let pack = json!({
            "id": "d", "name": "D", "version": "1.0.0",
            "template_engine": {"version": "v1", "syntax": "{{variable}}"},
            "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "Hi"}},
            "compositions": {"c": {"version": 1, "steps": [
                {"id": "a", "kind": "prompt", "prompt_task": "p"},
                {"id": "b", "kind": "branch", "predicate": "a.output.x == \"y\"", "then": "c"},
                {"id": "c", "kind": "prompt", "prompt_task": "p"},
            ]}},
        });
        let messages: Vec<String> = crate::check_bytes(
            &serde_json::to_vec(&pack).unwrap(),
            &crate::Options::default(),
        )
        .diagnostics
        .into_iter()
        .filter(|d| d.message.contains("free-form"))
        .map(|d| d.message)
        .collect();
        assert_eq!(
            messages,
            [
                r#"a predicate must be an object, found the expression "a.output.x == \"y\""; free-form expressions are not predicates"#
            ]
        );
    }
}
