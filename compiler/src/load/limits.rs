//! The [`Limits`] checked on a loaded document: string length (templates with their
//! fragments expanded included), the counts of compositions, steps, states, prompts,
//! tools and agent members, the attempts a `retry` asks for, and the number and compiled
//! size of patterns (variable patterns and `regex` validators).
//!
//! They run before the schema and the semantic checks, and a pack past one of them gets
//! nothing else: the later stages are where a huge pack would cost time. Each limit is
//! reported at most once, at the first place (in source order) that passes it, as a
//! `limit_exceeded` naming the field.
//!
//! Only well-shaped members are counted (`compositions` a mapping, `steps` a sequence…);
//! a misshapen one is the schema's to report, and holds nothing to count.

use std::fmt::Write as _;
use std::ops::ControlFlow;

use crate::doc::{Node, Obj};

use super::Limits;
use crate::diag::{escape_token, walk, At, DiagKind, Diagnostic, Token};
use crate::syntax::expanded_len;

/// Checks `pack` against the limits past parsing; pushes one `limit_exceeded` per limit
/// passed. Returns whether any was.
pub fn check_limits(pack: &Node, limits: &Limits, out: &mut Vec<Diagnostic>) -> bool {
    let long = long_string(pack, limits.max_string_bytes);
    let passed = long.is_some();
    out.extend(long);
    check_limits_parsed(pack, limits, out) || passed
}

/// [`check_limits`] without the string length, for a document whose parser has refused
/// every string past `max_string_bytes` already ([`json_fast::parse`](super::json_fast::parse)):
/// no walk over every node. Returns whether a limit was passed.
pub fn check_limits_parsed(pack: &Node, limits: &Limits, out: &mut Vec<Diagnostic>) -> bool {
    let before = out.len();
    if let Some(root) = pack.as_object() {
        counts(root, limits, out);
        templates(root, limits, out);
        attempts(root, limits, out);
        patterns(root, limits, out);
        banned_words(root, limits, out);
    }
    out.len() > before
}

fn exceeded(pointer: String, message: String, limit: &str) -> Diagnostic {
    Diagnostic::new(DiagKind::LimitExceeded, message)
        .at(pointer)
        .help(format!(
            "packs this large are refused to guard against malicious input; raise `{limit}` (`--limit {limit}=N`) if the pack is trusted"
        ))
}

/// The first string (a value or a mapping key, in document order) longer than `max`.
/// The walk builds no pointer until it has something to report.
fn long_string(pack: &Node, max: usize) -> Option<Diagnostic> {
    walk(pack, |tokens, node| {
        let (what, len) = match (tokens.last(), node) {
            (Some(Token::Key(k)), _) if k.len() > max => ("key", k.len()),
            (_, Node::String(s)) if s.len() > max => ("string", s.len()),
            _ => return ControlFlow::Continue(()),
        };
        let message = format!(
            "this {what} is {len} bytes long, more than the limit of {max} bytes (`max_string_bytes`)"
        );
        let pointer = At::Path(&At::Text(""), tokens).pointer();
        ControlFlow::Break(exceeded(pointer, message, "max_string_bytes"))
    })
}

fn counts(root: &Obj, limits: &Limits, out: &mut Vec<Diagnostic>) {
    fn map<'a, 's>(v: Option<&'a Node<'s>>) -> Option<&'a Obj<'s>> {
        v.and_then(Node::as_object)
    }
    let mut count = |pointer: &str, what: &str, n: usize, max: usize, limit: &str| {
        if n > max {
            let message =
                format!("the pack has {n} {what}, more than the limit of {max} (`{limit}`)");
            out.push(exceeded(pointer.to_owned(), message, limit));
        }
    };
    if let Some(m) = map(root.get("prompts")) {
        count(
            "/prompts",
            "prompts",
            m.len(),
            limits.max_prompts,
            "max_prompts",
        );
    }
    if let Some(m) = map(root.get("tools")) {
        count("/tools", "tools", m.len(), limits.max_tools, "max_tools");
    }
    let members = map(root.get("agents")).and_then(|a| map(a.get("members")));
    if let Some(m) = members {
        let n = m.len();
        count(
            "/agents/members",
            "agent members",
            n,
            limits.max_agents,
            "max_agents",
        );
    }
    let states = map(root.get("workflow")).and_then(|w| map(w.get("states")));
    if let Some(m) = states {
        let n = m.len();
        count(
            "/workflow/states",
            "workflow states",
            n,
            limits.max_states,
            "max_states",
        );
    }
    let Some(comps) = map(root.get("compositions")) else {
        return;
    };
    let n = comps.len();
    count(
        "/compositions",
        "compositions",
        n,
        limits.max_compositions,
        "max_compositions",
    );
    let mut total = 0usize;
    let mut total_reported = false;
    let mut largest_reported = false;
    for (key, comp) in comps {
        let Some(steps) = comp.get("steps").and_then(Node::as_array) else {
            continue;
        };
        let n = step_count(steps);
        // Written only for a diagnostic: a pointer per composition is most of this walk.
        let pointer = || format!("/compositions/{}/steps", escape_token(key));
        if n > limits.max_steps_per_composition && !largest_reported {
            largest_reported = true;
            let max = limits.max_steps_per_composition;
            out.push(exceeded(
                pointer(),
                format!("composition `{key}` has {n} steps (parallel branches included), more than the limit of {max} (`max_steps_per_composition`)"),
                "max_steps_per_composition",
            ));
        }
        total = total.saturating_add(n);
        if total > limits.max_total_steps && !total_reported {
            total_reported = true;
            let max = limits.max_total_steps;
            out.push(exceeded(
                pointer(),
                format!("the compositions up to `{key}` have {total} steps, more than the limit of {max} in all (`max_total_steps`)"),
                "max_total_steps",
            ));
        }
    }
}

/// Each prompt's `system_template` with its fragments expanded, measured without
/// expanding it: at most `max_string_bytes` each and `max_total_template_bytes` in all.
fn templates(root: &Obj, limits: &Limits, out: &mut Vec<Diagnostic>) {
    let Some(prompts) = root.get("prompts").and_then(Node::as_object) else {
        return;
    };
    let fragments = crate::members::fragments(root.get("fragments"));
    let mut total = 0usize;
    let (mut one_reported, mut total_reported) = (false, false);
    for (key, prompt) in prompts {
        let Some(template) = prompt.get("system_template").and_then(Node::as_str) else {
            continue;
        };
        let declared = |name: &str| {
            prompt
                .get("variables")
                .and_then(Node::as_array)
                .is_some_and(|vars| {
                    vars.iter()
                        .any(|v| v.get("name").and_then(Node::as_str) == Some(name))
                })
        };
        let len = expanded_len(template, fragments.as_ref(), declared);
        let pointer = || format!("/prompts/{}/system_template", escape_token(key));
        if len > limits.max_string_bytes && !one_reported {
            one_reported = true;
            let max = limits.max_string_bytes;
            out.push(exceeded(
                pointer(),
                format!("the `system_template` of prompt `{key}` is {len} bytes long once its fragments are expanded, more than the limit of {max} bytes (`max_string_bytes`)"),
                "max_string_bytes",
            ));
        }
        total = total.saturating_add(len);
        if total > limits.max_total_template_bytes && !total_reported {
            total_reported = true;
            let max = limits.max_total_template_bytes;
            out.push(exceeded(
                pointer(),
                format!("the `system_template`s of the prompts up to `{key}` are {total} bytes long once their fragments are expanded, more than the limit of {max} bytes in all (`max_total_template_bytes`)"),
                "max_total_template_bytes",
            ));
        }
    }
}

/// Every step's `retry.max_attempts` (parallel branches included) at most
/// `max_attempts`; the first past it is blamed.
fn attempts(root: &Obj, limits: &Limits, out: &mut Vec<Diagnostic>) {
    let Some(comps) = root.get("compositions").and_then(Node::as_object) else {
        return;
    };
    let max = limits.max_attempts;
    // The step lists met, and those still to visit, last found first. A pointer is
    // written only for the step blamed.
    let mut lists: Vec<StepList<'_>> = Vec::new();
    let mut todo: Vec<usize> = Vec::new();
    for (key, comp) in comps {
        let Some(steps) = comp.get("steps").and_then(Node::as_array) else {
            continue;
        };
        lists.clear();
        lists.push((None, steps));
        todo.push(0);
        while let Some(l) = todo.pop() {
            for (i, step) in lists[l].1.iter().enumerate() {
                let n = step
                    .get("modifiers")
                    .and_then(|m| m.get("retry"))
                    .and_then(|r| r.get("max_attempts"))
                    .and_then(Node::as_f64);
                if n.is_some_and(|n| n > max as f64) {
                    let at = format!(
                        "{}/{i}/modifiers/retry/max_attempts",
                        steps_pointer(key, &lists, l)
                    );
                    let n = n.unwrap_or_default();
                    out.push(exceeded(
                        at,
                        format!("this step asks for {n} attempts, more than the limit of {max} (`max_attempts`); each attempt is a model or tool call"),
                        "max_attempts",
                    ));
                    return;
                }
                // Any step's `branches` is walked, a parallel's or not: a limit is checked
                // before anything knows what the steps are, and must not be escaped.
                if let Some(branches) = step.get("branches").and_then(Node::as_array) {
                    lists.push((Some((l, i)), branches));
                    todo.push(lists.len() - 1);
                }
            }
        }
    }
}

/// A step list [`attempts`] met: where it sits (the index of the list holding its
/// parallel step, and that step's index there; `None` for a composition's `steps`), and
/// its steps.
type StepList<'v> = (Option<(usize, usize)>, &'v [Node<'v>]);

/// The pointer of step list `l` of composition `key`, `lists` as [`attempts`] keeps them:
/// `/compositions/<key>/steps`, then `/<i>/branches` for each parallel step on the way.
fn steps_pointer(key: &str, lists: &[StepList<'_>], l: usize) -> String {
    let mut indexes = Vec::new();
    let mut at = l;
    while let (Some((parent, i)), _) = lists[at] {
        indexes.push(i);
        at = parent;
    }
    let mut pointer = format!("/compositions/{}/steps", escape_token(key));
    for i in indexes.iter().rev() {
        let _ = write!(pointer, "/{i}/branches");
    }
    pointer
}

/// Patterns: the variables' `validation.pattern`s and the `regex` (`content_matches`)
/// validators' `params.pattern`s (those not `enabled: false`), at most `max_patterns` of
/// them in all, each compiling within `max_pattern_size` (the check the artifact loader
/// makes, `packc_vm::Program`). A prompt's variable patterns are counted before its
/// validators'.
fn patterns(root: &Obj, limits: &Limits, out: &mut Vec<Diagnostic>) {
    let Some(prompts) = root.get("prompts").and_then(Node::as_object) else {
        return;
    };
    let mut count = 0usize;
    for (key, prompt) in prompts {
        let list = |member: &str| prompt.get(member).and_then(Node::as_array).unwrap_or(&[]);
        let variables = list("variables").iter().enumerate().filter_map(|(i, var)| {
            let pattern = var.get("validation")?.get("pattern")?.as_str()?;
            Some((i, "variables", "validation/pattern", pattern))
        });
        let validators = list("validators").iter().enumerate().filter_map(|(i, v)| {
            let ty = v.get("type")?.as_str()?;
            let enabled = v.get("enabled") != Some(&Node::Bool(false));
            let pattern = v.get("params")?.get("pattern")?.as_str()?;
            (enabled && crate::validators::built_in(ty) == Some("regex")).then_some((
                i,
                "validators",
                "params/pattern",
                pattern,
            ))
        });
        for (i, member, path, pattern) in variables.chain(validators) {
            let at = || format!("/prompts/{}/{member}/{i}/{path}", escape_token(key));
            count += 1;
            if count > limits.max_patterns {
                let max = limits.max_patterns;
                out.push(exceeded(
                    at(),
                    format!("the prompts up to `{key}` have more than {max} patterns, variable and validator patterns together (`max_patterns`)"),
                    "max_patterns",
                ));
                return;
            }
            let built = regex::RegexBuilder::new(pattern)
                .size_limit(limits.max_pattern_size)
                .build();
            if let Err(regex::Error::CompiledTooBig(max)) = built {
                out.push(exceeded(
                    at(),
                    format!("this pattern compiles to more than {max} bytes (`max_pattern_size`)"),
                    "max_pattern_size",
                ));
                return;
            }
        }
    }
}

/// Banned words: the words of the `banned_words` (`content_excludes`) validators (those
/// not `enabled: false`), lowercased as the check stores them, at most
/// `max_banned_word_bytes` UTF-8 bytes in all, and each list compiling within
/// [`ir_spec::words_size_limit`] (the checks the artifact loader makes,
/// `ir_spec::DecodeLimits` and `packc_vm::Program`).
fn banned_words(root: &Obj, limits: &Limits, out: &mut Vec<Diagnostic>) {
    let Some(prompts) = root.get("prompts").and_then(Node::as_object) else {
        return;
    };
    let mut bytes = 0usize;
    for (key, prompt) in prompts {
        let validators = prompt.get("validators").and_then(Node::as_array);
        for (i, v) in validators.unwrap_or(&[]).iter().enumerate() {
            let Some((words, word_boundary)) = banned_word_list(v) else {
                continue;
            };
            let at = || format!("/prompts/{}/validators/{i}/params/words", escape_token(key));
            bytes = words.iter().fold(bytes, |n, w| n.saturating_add(w.len()));
            if bytes > limits.max_banned_word_bytes {
                let max = limits.max_banned_word_bytes;
                out.push(exceeded(
                    at(),
                    format!("the banned-word lists up to this one hold more than {max} bytes of words (`max_banned_word_bytes`)"),
                    "max_banned_word_bytes",
                ));
                return;
            }
            let size = ir_spec::words_size_limit(&words);
            let built = regex::RegexBuilder::new(&ir_spec::words_pattern(&words, word_boundary))
                .size_limit(size)
                .build();
            if let Err(regex::Error::CompiledTooBig(max)) = built {
                out.push(exceeded(
                    at(),
                    format!("this word list compiles to more than {max} bytes, 128 per byte of its words: use fewer or plainer words"),
                    "max_banned_word_bytes",
                ));
                return;
            }
        }
    }
}

/// The word list and `word_boundary` an enabled `banned_words` validator lowers to, as
/// `validators` reads them; `None` for any other validator, a disabled one, or one
/// without a non-empty `words` list of strings (inert or invalid, reported by the checks).
fn banned_word_list(v: &Node) -> Option<(Vec<String>, bool)> {
    let ty = v.get("type")?.as_str()?;
    if crate::validators::built_in(ty)? != "banned_words"
        || v.get("enabled") == Some(&Node::Bool(false))
    {
        return None;
    }
    let params = v.get("params")?;
    let words = params
        .get("words")?
        .as_array()?
        .iter()
        .map(Node::as_str)
        .filter(|w| w != &Some(""))
        .collect::<Option<Vec<&str>>>()?;
    let word_boundary = params.get("match_mode").and_then(Node::as_str) != Some("substring");
    (!words.is_empty()).then(|| (ir_spec::banned_word_list(words), word_boundary))
}

/// Steps of a `steps` list, with every parallel's `branches` (nested ones too, which
/// the checks refuse but which still cost).
fn step_count(steps: &[Node]) -> usize {
    let mut n = 0usize;
    // No allocation unless a parallel step is met.
    let mut stack: Vec<&[Node]> = Vec::new();
    let mut first = Some(steps);
    while let Some(list) = first.take().or_else(|| stack.pop()) {
        n = n.saturating_add(list.len());
        for step in list {
            if let Some(branches) = step.get("branches").and_then(Node::as_array) {
                stack.push(branches);
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(pack: &serde_json::Value, max: usize) -> Option<(String, String)> {
        long_string(&crate::doc::leaked(pack), max)
            .map(|d| (d.pointer().unwrap_or_default().to_owned(), d.message))
    }

    #[test]
    fn the_first_long_string_in_document_order_is_blamed() {
        let pack = json!({"a": "ok", "b": ["x", "long1"], "long2": 1, "c": "long3"});
        let (at, message) = first(&pack, 4).unwrap();
        assert_eq!(at, "/b/1");
        assert!(message.contains("string is 5 bytes"), "{message}");
        let pack = json!({"a": "ok", "long2": 1, "c": "long3"});
        let (at, message) = first(&pack, 4).unwrap();
        assert_eq!(at, "/long2");
        assert!(message.contains("key is 5 bytes"), "{message}");
        let pack = json!({"a": {"d": "long4"}, "long2": 1});
        assert_eq!(first(&pack, 4).unwrap().0, "/a/d");
        assert_eq!(first(&json!({"a/b": "long5"}), 4).unwrap().0, "/a~1b");
        assert!(first(&pack, 5).is_none());
    }

    #[test]
    fn parallel_branches_count_as_steps() {
        let steps =
            json!([{"id": "a"}, {"id": "p", "branches": [{"id": "b"}, {"branches": [{}]}]}]);
        let steps = crate::doc::leaked(&steps);
        assert_eq!(step_count(steps.as_array().unwrap()), 5);
    }

    #[test]
    fn a_retry_in_nested_branches_is_blamed_at_its_own_pointer() {
        let retry = |n: u64| json!({"retry": {"max_attempts": n}});
        let pack = json!({"compositions": {
            "a/b": {"steps": [{"id": "s"}]},
            "c~": {"steps": [
                {"id": "s"},
                {"id": "p", "branches": [
                    {"id": "q", "branches": [{"id": "x"}, {"id": "y", "modifiers": retry(9)}]},
                ]},
            ]},
        }});
        let limits = Limits {
            max_attempts: 8,
            ..Limits::default()
        };
        let mut out = Vec::new();
        assert!(check_limits_parsed(
            &crate::doc::leaked(&pack),
            &limits,
            &mut out
        ));
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].pointer(),
            Some("/compositions/c~0/steps/1/branches/0/branches/1/modifiers/retry/max_attempts")
        );
        let limits = Limits {
            max_attempts: 9,
            ..Limits::default()
        };
        assert!(!check_limits_parsed(
            &crate::doc::leaked(&pack),
            &limits,
            &mut Vec::new()
        ));
        // Of several, the first blamed is the first in a composition's own steps, then in
        // the branches met (the latest found first).
        let pack = json!({"compositions": {"c": {"steps": [
            {"id": "p", "branches": [{"id": "x", "modifiers": retry(9)}]},
            {"id": "q", "branches": [{"id": "y", "modifiers": retry(9)}]},
            {"id": "s", "modifiers": retry(9)},
        ]}}});
        let blamed = |pack: &serde_json::Value| {
            let mut out = Vec::new();
            let limits = Limits {
                max_attempts: 8,
                ..Limits::default()
            };
            check_limits_parsed(&crate::doc::leaked(pack), &limits, &mut out);
            out[0].pointer().map(str::to_owned)
        };
        assert_eq!(
            blamed(&pack).as_deref(),
            Some("/compositions/c/steps/2/modifiers/retry/max_attempts")
        );
        let mut later = pack.clone();
        later["compositions"]["c"]["steps"][2]["modifiers"] = json!({});
        assert_eq!(
            blamed(&later).as_deref(),
            Some("/compositions/c/steps/1/branches/0/modifiers/retry/max_attempts")
        );
    }
}
