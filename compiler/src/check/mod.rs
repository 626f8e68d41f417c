//! Semantic checks: every rule of `shared/semantics/compositions.md` §2 and
//! `shared/semantics/workflow.md` §16, as located diagnostics.
//!
//! The checks read the loaded JSON value directly, so that a pack with schema errors
//! still gets every other diagnostic in the same pass. Each check blames the JSON
//! pointer the semantics table gives; a missing member is blamed on the object that
//! lacks it, a present member on the member itself.

mod compositions;
mod prompts;
mod spec;
mod workflow;

use rustc_hash::FxHashSet as HashSet;
use std::path::PathBuf;

use crate::doc::{Node, Obj};
use crate::members::Name;

use crate::diag::Diagnostic;

/// What the checks need to know beyond the pack itself.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// The folder of the pack file, where `output_schema` files are looked up.
    /// `None` for a pack that is not a file (inline in a case file): schema names are
    /// then not looked up and no `unresolved_schema` is reported.
    pub base_dir: Option<PathBuf>,
    /// The spec level override (`--spec-level`); `None` reads the pack's claim.
    pub spec_level: Option<ir_spec::SpecLevel>,
    /// Further folders the files a pack names may be read from (see
    /// [`crate::paths::Folders::allow`]).
    pub allow_paths: Vec<PathBuf>,
}

impl CheckOptions {
    /// Where the files the pack names may be read from; `None` when they are not looked up.
    pub fn folders(&self) -> Option<crate::paths::Folders> {
        self.base_dir.as_ref().map(|base| crate::paths::Folders {
            base: base.clone(),
            allow: self.allow_paths.clone(),
        })
    }
}

/// Run every semantic check on `pack`, pushing diagnostics to `out` (unsorted).
pub fn check(pack: &Node, options: &CheckOptions, out: &mut Vec<Diagnostic>) {
    let Some(root) = pack.as_object() else {
        return; // the schema stage reports a non-object document
    };
    let names = Names::collect(root);
    let claim = crate::schema::claim(pack);
    let mut cx = Cx {
        root,
        names,
        newer_spec: claim.newer,
        level: options.spec_level.unwrap_or(claim.level),
        claim,
        options,
        out,
    };
    prompts::check(&mut cx);
    workflow::check(&mut cx);
    compositions::check(&mut cx);
    spec::check(&mut cx);
}

/// The name spaces references resolve in.
struct Names<'a> {
    prompts: NameSet<'a>,
    tools: NameSet<'a>,
    evals: NameSet<'a>,
    members: NameSet<'a>,
    states: NameSet<'a>,
    compositions: NameSet<'a>,
    has_workflow: bool,
}

/// A set of names (see [`Name`]).
#[derive(Default)]
struct NameSet<'a>(HashSet<Name<'a>>);

impl<'a> NameSet<'a> {
    /// Whether `name` is in the set.
    #[inline]
    fn contains(&self, name: &str) -> bool {
        self.0.contains(&Name(name))
    }

    /// The names, in the set's order.
    fn iter(&self) -> impl Iterator<Item = &'a str> + Clone + '_ {
        self.0.iter().map(|name| name.0)
    }
}

impl<'a> FromIterator<&'a str> for NameSet<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> Self {
        NameSet(names.into_iter().map(Name).collect())
    }
}

impl<'a> Names<'a> {
    fn collect(root: &'a Obj<'a>) -> Names<'a> {
        let keys = |v: Option<&'a Node<'a>>| -> NameSet<'a> {
            v.and_then(Node::as_object)
                .map(|m| m.keys().map(|k| k.as_str()).collect())
                .unwrap_or_default()
        };
        let workflow = root.get("workflow");
        Names {
            prompts: keys(root.get("prompts")),
            tools: keys(root.get("tools")),
            evals: root
                .get("evals")
                .and_then(Node::as_array)
                .map(|evals| {
                    evals
                        .iter()
                        .filter_map(|e| e.get("id").and_then(Node::as_str))
                        .collect()
                })
                .unwrap_or_default(),
            members: keys(root.get("agents").and_then(|a| a.get("members"))),
            states: keys(workflow.and_then(|w| w.get("states"))),
            compositions: keys(root.get("compositions")),
            has_workflow: workflow.is_some_and(Node::is_object),
        }
    }
}

/// The checking context shared by the rule modules.
struct Cx<'a, 'o> {
    root: &'a Obj<'a>,
    names: Names<'a>,
    /// The pack claims a spec version above 1.9: unknown members are tolerated.
    newer_spec: bool,
    /// The level the pack is read at.
    level: ir_spec::SpecLevel,
    /// What its `$schema` claims.
    claim: crate::schema::Claim,
    options: &'o CheckOptions,
    out: &'o mut Vec<Diagnostic>,
}

impl Cx<'_, '_> {
    fn push(&mut self, d: Diagnostic) {
        self.out.push(d);
    }
}

/// `^[a-zA-Z_][a-zA-Z0-9_]*$`, the identifier pattern of step ids and reducer `into`.
fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A short name for a JSON value's type, for messages.
fn type_of(v: &Node) -> &'static str {
    match v {
        Node::Null => "null",
        Node::Bool(_) => "a boolean",
        Node::Number(_) => "a number",
        Node::String(_) => "a string",
        Node::Array(_) => "an array",
        Node::Object(_) => "an object",
    }
}

/// The closest name to `name` among `candidates`, for "did you mean" help lines (also
/// used by the case loader and the CLI); [`ir_spec::suggest::suggest`].
pub use ir_spec::suggest::suggest;

/// "did you mean `x`?" when a close name exists, else a list of what is available.
fn did_you_mean<'a>(
    what: &str,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    if let Some(s) = suggest(name, candidates.clone()) {
        return format!("did you mean `{s}`?");
    }
    let mut all: Vec<&str> = candidates.into_iter().collect();
    all.sort_unstable();
    match all.len() {
        // Steps are relative to the one naming them: there are none before (or after) it.
        0 if what.starts_with("earlier") || what.starts_with("later") => {
            format!("there are no {what}")
        }
        0 => format!("the pack defines no {what}"),
        1..=8 => format!(
            "the {what} defined are: {}",
            all.iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => format!(
            "define it, or use one of the {} {what} the pack defines",
            all.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            suggest("sumarize", ["summarize", "classify"]),
            Some("summarize")
        );
        assert_eq!(suggest("zzz", ["summarize", "classify"]), None);
        assert!(did_you_mean("prompts", "x", ["a", "b"]).contains("`a`, `b`"));
    }

    #[test]
    fn idents() {
        assert!(is_ident("_a1"));
        assert!(!is_ident("1a"));
        assert!(!is_ident("a-b"));
        assert!(!is_ident(""));
    }
}
