//! Prompt checks: the `tools` list (warning `unresolved_tool`) and `{{placeholders}}`
//! (warning `undeclared_variable`; the notes `spaced_placeholder` for a `{{ name }}` and
//! `foreign_template_syntax` for `{{#if x}}` and the like, which are literal text),
//! `shared/semantics/workflow.md` §14 and §16.

use std::collections::BTreeSet;

use crate::doc::Node;

use crate::members::entries;

use super::{did_you_mean, Cx};
use crate::diag::{At, DiagKind, Diagnostic, Token};
use crate::syntax::{
    expanded_text, foreign_syntax, placeholder_roots, spaced_placeholders, Foreign,
};

pub(super) fn check(cx: &mut Cx<'_, '_>) {
    let base = At::Text("/prompts");
    for (key, prompt) in entries(cx.root.get("prompts")) {
        if !prompt.is_object() {
            continue;
        }
        let ptr = base.key(key);
        check_tools(cx, prompt, &ptr);
        check_template(cx, key, prompt, &ptr);
        check_validators(cx, prompt, &ptr);
    }
}

/// `validators` (`later-versions.md` §4): `invalid_validator`, `inert_validator`,
/// `deprecated_fail_on_violation`, as [`crate::validators::read`] finds them.
fn check_validators(cx: &mut Cx<'_, '_>, prompt: &Node, ptr: &At<'_>) {
    let Some(list) = prompt.get("validators").and_then(Node::as_array) else {
        return;
    };
    let level_1_8 = cx.level >= ir_spec::SpecLevel::V1_8;
    for (i, v) in list.iter().enumerate() {
        let item = ptr.key("validators");
        let item = item.index(i);
        for p in crate::validators::read(v, level_1_8).1 {
            let tokens: Vec<Token<'_>> = p.at.iter().map(|t| Token::Key(t)).collect();
            let d = Diagnostic::new(p.kind, p.message)
                .at(At::Path(&item, &tokens))
                .help(p.help);
            cx.push(d);
        }
    }
}

fn check_tools(cx: &mut Cx<'_, '_>, prompt: &Node, ptr: &At<'_>) {
    let Some(tools) = prompt.get("tools").and_then(Node::as_array) else {
        return;
    };
    for (k, name) in tools.iter().enumerate() {
        let Some(name) = name.as_str() else { continue };
        if cx.names.tools.contains(name) || cx.names.members.contains(name) {
            continue;
        }
        let candidates = cx.names.tools.iter().chain(cx.names.members.iter());
        let d = Diagnostic::new(
            DiagKind::UnresolvedTool,
            format!("tool `{name}` is neither a key of `tools` nor an agent member; it will not be offered"),
        )
        .warning()
        .at(ptr.key("tools").index(k))
        .help(did_you_mean("tools", name, candidates));
        cx.push(d);
    }
}

/// At most this many `spaced_placeholder` notes, and as many `foreign_template_syntax`
/// ones, for one template.
const NOTES_PER_TEMPLATE: usize = 8;

fn check_template(cx: &mut Cx<'_, '_>, key: &str, prompt: &Node, ptr: &At<'_>) {
    let Some(template) = prompt.get("system_template").and_then(Node::as_str) else {
        return;
    };
    let declared: BTreeSet<&str> = prompt
        .get("variables")
        .and_then(Node::as_array)
        .map(|vars| {
            vars.iter()
                .filter_map(|v| v.get("name").and_then(Node::as_str))
                .collect()
        })
        .unwrap_or_default();
    // Notes, not errors: a template full of such text gets the first few of each kind,
    // once per distinct text.
    let mut seen = BTreeSet::new();
    for (whole, path) in spaced_placeholders(template)
        .filter(|(whole, _)| seen.insert(*whole))
        .take(NOTES_PER_TEMPLATE)
    {
        let d = Diagnostic::new(
            DiagKind::SpacedPlaceholder,
            format!(
                "`{whole}` has spaces inside its braces, so it is sent as written, not filled in"
            ),
        )
        .at(ptr.key("system_template"))
        .within(whole)
        .help(format!("write `{{{{{path}}}}}` to insert the value"));
        cx.push(d);
    }
    let mut seen = BTreeSet::new();
    for (whole, what) in foreign_syntax(template)
        .into_iter()
        .filter(|(whole, _)| seen.insert(*whole))
        .take(NOTES_PER_TEMPLATE)
    {
        let help = match what {
            Foreign::OneBrace => format!("close it with two braces: `{whole}}}`"),
            Foreign::Block | Foreign::Jinja => "a template only fills `{{name}}`, `{{name.member}}` and `{{name[0]}}`: choose the text before the call (in the input, or a fragment) instead of a condition or loop".to_owned(),
            Foreign::Comment => "remove it: the model would read it".to_owned(),
            Foreign::Partial => "include shared text with a fragment: `{{fragments.NAME}}`".to_owned(),
            Foreign::Filter => "transform the value before the call and pass it in the input; a template inserts values as they are".to_owned(),
        };
        let d = Diagnostic::new(
            DiagKind::ForeignTemplateSyntax,
            format!(
                "`{whole}` is {}, which PromptPack templates do not have: it is sent as written",
                what.what()
            ),
        )
        .at(ptr.key("system_template"))
        .within(whole)
        .help(help);
        cx.push(d);
    }
    let fragments = crate::members::fragments(cx.root.get("fragments"));
    let expanded = expanded_text(template, fragments, |name| declared.contains(name));
    let mut undeclared = BTreeSet::new();
    for root in placeholder_roots(&expanded) {
        if matches!(root, "input" | "artifacts") || declared.contains(root) {
            continue;
        }
        undeclared.insert(root.to_string());
    }
    if undeclared.remove("fragments") {
        unknown_fragments(cx, &expanded, ptr);
    }
    for name in undeclared {
        let help = if declared.is_empty() {
            format!("declare it in `variables` of prompt `{key}` (name, type, required), or pass it in the input")
        } else {
            format!(
                "declare it in `variables` of prompt `{key}`; {}",
                did_you_mean("variables", &name, declared.iter().copied())
            )
        };
        let d = Diagnostic::new(
            DiagKind::UndeclaredVariable,
            format!(
                "`{{{{{name}}}}}` is not a declared variable, `input`, `artifacts` or a fragment"
            ),
        )
        .at(ptr.key("system_template"))
        .within(format!("{{{{{name}"))
        .help(help);
        cx.push(d);
    }
}

/// `{{fragments.name}}` left in the expanded template: `name` is no key of the pack's
/// `fragments` (the warning `undeclared_variable`, naming the fragment).
fn unknown_fragments(cx: &mut Cx<'_, '_>, expanded: &str, ptr: &At<'_>) {
    let keys: Vec<&str> = entries(cx.root.get("fragments")).map(|(k, _)| k).collect();
    let mut named = BTreeSet::new();
    for p in crate::syntax::parse_template(expanded).placeholders() {
        if p.root != "fragments" {
            continue;
        }
        match p.path.first() {
            Some(crate::syntax::PathSeg::Field(name)) => named.insert(Some(name.clone())),
            _ => named.insert(None),
        };
    }
    for name in named {
        let (message, within, help) = match &name {
            Some(name) => (
                format!("`{{{{fragments.{name}}}}}` names no fragment: the pack's `fragments` has no `{name}`"),
                format!("{{{{fragments.{name}"),
                if keys.is_empty() {
                    format!("add `{name}` to the pack's top-level `fragments` (a map of name to text)")
                } else {
                    did_you_mean("fragments", name, keys.iter().copied())
                },
            ),
            None => (
                "`{{fragments}}` is not a declared variable, `input`, `artifacts` or a fragment".to_owned(),
                "{{fragments".to_owned(),
                "a fragment is written `{{fragments.NAME}}`".to_owned(),
            ),
        };
        let d = Diagnostic::new(DiagKind::UndeclaredVariable, message)
            .at(ptr.key("system_template"))
            .within(within)
            .help(help);
        cx.push(d);
    }
}
