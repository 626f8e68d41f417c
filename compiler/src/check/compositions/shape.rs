//! Shape checks: members present, of the right JSON type, none unknown. Each is a
//! `schema_violation` (2.23) made by the same few helpers, so every "`x` must be a
//! string" reads alike and blames the member itself.

use std::fmt;

use crate::doc::{Node, Obj};

use super::super::{did_you_mean, is_ident, type_of, Cx};
use crate::diag::{At, DiagKind, Diagnostic};
use crate::vocab::{Kind, Strategy, KIND_MEMBERS, SHARED_STEP_MEMBERS};

pub(super) const COMPOSITION_MEMBERS: &[&str] = &[
    "version",
    "description",
    "input_schema",
    "output_schema",
    "output",
    "steps",
    "engine",
];

/// A `schema_violation` at `ptr`.
pub(super) fn schema(ptr: &At<'_>, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::SchemaViolation, message).at(ptr)
}

/// What a shape message names: a member (printed in backticks) or a phrase.
#[derive(Clone, Copy)]
pub(super) enum What<'a> {
    /// The member `key`: "`key` must be ...".
    Member(&'a str),
    /// A phrase: "a step id must be ...".
    Phrase(&'static str),
}

impl fmt::Display for What<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Member(key) => write!(f, "`{key}`"),
            What::Phrase(p) => f.write_str(p),
        }
    }
}

/// "`what` must be `expected`, found <type of v>" at `ptr`.
pub(super) fn wrong_type(ptr: &At<'_>, what: What<'_>, expected: &str, v: &Node) -> Diagnostic {
    let d = schema(
        ptr,
        format!("{what} must be {expected}, found {}", type_of(v)),
    );
    // How to write what is wanted, for the shapes YAML makes easy to confuse.
    let help = match v {
        Node::Object(_) if expected.starts_with("an array") || expected.contains("list") => {
            Some("write a list: each item on a line of its own starting with `- `, not `key: value` lines")
        }
        Node::Array(_) if expected == "an object" => {
            Some("write a mapping (`key: value` lines, or `{...}`) without the `- ` of list items")
        }
        Node::Number(_) | Node::Bool(_) if expected == "a string" => {
            Some("quote the value to make it a string")
        }
        _ => None,
    };
    match help {
        Some(help) => d.help(help),
        None => d,
    }
}

/// `get(v)`, or a `schema_violation` "`what` must be `expected`" at `ptr` and `None`.
fn expect<'v, T>(
    cx: &mut Cx<'_, '_>,
    v: &'v Node<'v>,
    ptr: &At<'_>,
    what: What<'_>,
    expected: &str,
    get: fn(&'v Node<'v>) -> Option<T>,
) -> Option<T> {
    let got = get(v);
    if got.is_none() {
        cx.push(wrong_type(ptr, what, expected, v));
    }
    got
}

/// `v` as a string, or a `schema_violation` at `ptr` and `None`.
pub(super) fn expect_str<'v>(
    cx: &mut Cx<'_, '_>,
    v: &'v Node<'v>,
    ptr: &At<'_>,
    what: What<'_>,
) -> Option<&'v str> {
    expect(cx, v, ptr, what, "a string", Node::as_str)
}

/// `v` as an object, or a `schema_violation` at `ptr` and `None`.
pub(super) fn expect_object<'v>(
    cx: &mut Cx<'_, '_>,
    v: &'v Node<'v>,
    ptr: &At<'_>,
    what: What<'_>,
) -> Option<&'v Obj<'v>> {
    expect(cx, v, ptr, what, "an object", Node::as_object)
}

/// `v` as an array, or a `schema_violation` "must be `expected`" at `ptr` and `None`.
pub(super) fn expect_array<'v>(
    cx: &mut Cx<'_, '_>,
    v: &'v Node<'v>,
    ptr: &At<'_>,
    what: What<'_>,
    expected: &str,
) -> Option<&'v [Node<'v>]> {
    expect(cx, v, ptr, what, expected, Node::as_array)
}

/// The member `key` of `obj` at `ptr`, which must be a string when present.
pub(super) fn optional_str<'v>(
    cx: &mut Cx<'_, '_>,
    obj: &'v Obj<'v>,
    ptr: &At<'_>,
    key: &str,
) -> Option<&'v str> {
    let v = obj.get(key)?;
    expect_str(cx, v, &ptr.key(key), What::Member(key))
}

/// The member of `known` that `key`, a member of `obj` outside `known`, was likely meant
/// to be: the nearest one `obj` lacks ([`ir_spec::suggest::suggest`]).
pub(super) fn meant<'k>(obj: &Obj, key: &str, known: &[&'k str]) -> Option<&'k str> {
    super::super::suggest(key, known.iter().copied().filter(|k| !obj.contains_key(k)))
}

/// "did you mean `x`?" for the unknown member `key` of `obj`, when one of `known` is near.
pub(super) fn did_you_mean_member(obj: &Obj, key: &str, known: &[&str]) -> Option<String> {
    meant(obj, key, known).map(|m| format!("did you mean `{m}`?"))
}

/// `d`, which says `member` is missing from `obj` at `ptr`, linked to the member of `obj`
/// outside `known` that looks like `member` misspelt (`promt_task`): a second label on it
/// and a help that says to rename it. `d` unchanged when there is none.
pub(super) fn missing_member(
    d: Diagnostic,
    obj: &Obj,
    ptr: &At<'_>,
    member: &str,
    known: &[&str],
) -> Diagnostic {
    let misspelt = obj
        .keys()
        .map(|k| k.as_str())
        .find(|k| !known.contains(k) && meant(obj, k, known) == Some(member));
    match misspelt {
        Some(k) => d
            .also(
                ptr.key(k).pointer(),
                format!("`{k}` may be `{member}` misspelt"),
            )
            .help(format!("rename `{k}` to `{member}`")),
        None => d,
    }
}

/// The members of a composition object: none unknown, `version: 1`, the string members
/// strings, `engine` an object.
pub(super) fn composition_members(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>) {
    let newer = cx.newer_spec;
    for (key, _) in obj {
        let later = key == "extensions" && cx.level >= ir_spec::SpecLevel::V1_8;
        if !COMPOSITION_MEMBERS.contains(&key.as_str()) && !newer && !later {
            cx.push(
                schema(
                    &ptr.key(key),
                    format!("unknown member `{key}` of a composition"),
                )
                .help(
                    did_you_mean_member(obj, key, COMPOSITION_MEMBERS).unwrap_or_else(|| {
                        format!("a composition has only: {}", COMPOSITION_MEMBERS.join(", "))
                    }),
                ),
            );
        }
    }
    match obj.get("version") {
        None => {
            let d = schema(ptr, "missing required member `version`").help("add `version: 1`");
            cx.push(missing_member(d, obj, ptr, "version", COMPOSITION_MEMBERS));
        }
        Some(v) if v.as_u64() != Some(1) => cx.push(
            schema(
                &ptr.key("version"),
                format!("composition version must be the integer 1, found {v}"),
            )
            .help("write `version: 1`"),
        ),
        Some(_) => {}
    }
    for key in ["description", "input_schema", "output_schema", "output"] {
        optional_str(cx, obj, ptr, key);
    }
    if let Some(v) = obj.get("engine") {
        expect_object(cx, v, &ptr.key("engine"), What::Member("engine"));
    }
}

/// Members no step kind of this level defines, and members of another kind.
///
/// Members no v1 step kind defines (`later-versions.md` §1 "Steps"): `provider` below
/// level 1.9 is a `schema_violation` naming v1.9; `provider` on a step that makes no
/// model call, and any other unknown member, is the warning `ignored_member`. A member
/// another v1 kind owns is a `schema_violation`.
pub(super) fn step_members(cx: &mut Cx<'_, '_>, kind: Kind, obj: &Obj, ptr: &At<'_>) {
    if kind == Kind::Extension {
        // Every member but the shared ones is a param the host reads (§5), `provider`
        // included: it routes nothing, since the step makes no model call (§3).
        if let Some(key) = obj.keys().find(|k| k.as_str() == "provider") {
            cx.push(
                Diagnostic::new(
                    DiagKind::IgnoredMember,
                    "`provider` does not route an extension step, which makes no model call: the host gets it in `params` as written",
                )
                .at(ptr.key(key.as_str()))
                .help("remove `provider`, or give the host's own routing param another name"),
            );
        }
        return;
    }
    for key in obj.keys() {
        let key = key.as_str();
        if KIND_MEMBERS.contains(&key) || SHARED_STEP_MEMBERS.contains(&key) {
            continue;
        }
        let mptr = ptr.key(key);
        if key == "provider" && cx.level < ir_spec::SpecLevel::V1_9 && !cx.newer_spec {
            cx.push(
                schema(
                    &mptr,
                    format!(
                        "`provider` on a step is defined by PromptPack v1.9; this pack is read at level {}",
                        cx.level
                    ),
                )
                .help(if cx.options.spec_level.is_some() {
                    "the pack is read at this level because `--spec-level` (`spec_level`) says so: give 1.9 there, or leave it out to read the pack's own `$schema`"
                } else {
                    "declare `$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json` (or `--spec-level 1.9`) and the key under `requires.providers`, or remove `provider`"
                }),
            );
        } else if key == "provider" && kind.calls_model() {
            // resolved by the provider checks
        } else {
            let why = if key == "provider" {
                format!(
                    "`provider` has no effect on a {} step, which makes no model call",
                    kind.as_str()
                )
            } else {
                format!(
                    "unknown member `{key}` of a {} step is ignored",
                    kind.as_str()
                )
            };
            let takes: Vec<&str> = SHARED_STEP_MEMBERS
                .iter()
                .chain(kind.members())
                .copied()
                .collect();
            let help = match meant(obj, key, &takes).filter(|_| key != "provider") {
                Some(m) => format!("did you mean `{m}`?"),
                None => format!(
                    "remove `{key}`; a {} step takes: {}",
                    kind.as_str(),
                    takes.join(", ")
                ),
            };
            cx.push(
                Diagnostic::new(DiagKind::IgnoredMember, why)
                    .at(mptr)
                    .help(help),
            );
        }
    }
    for key in obj.keys() {
        let key = key.as_str();
        if KIND_MEMBERS.contains(&key)
            && !kind.members().contains(&key)
            && !SHARED_STEP_MEMBERS.contains(&key)
        {
            cx.push(
                schema(
                    &ptr.key(key),
                    format!("`{key}` does not belong on a {} step", kind.as_str()),
                )
                .help(format!(
                    "a {} step takes: {}",
                    kind.as_str(),
                    kind.members().join(", ")
                )),
            );
        }
    }
}

/// A step's `modifiers`: `retry.max_attempts` ≥ 1, `eval` a list of eval ids.
pub(super) fn modifiers(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>) {
    let Some(mods) = obj.get("modifiers") else {
        return;
    };
    let mptr = ptr.key("modifiers");
    let Some(mods) = expect_object(cx, mods, &mptr, What::Member("modifiers")) else {
        return;
    };
    ignored_members(cx, mods, &mptr, "modifier", &["retry", "eval"]);
    if let Some(retry) = mods.get("retry") {
        let rptr = mptr.key("retry");
        if let Some(r) = expect_object(cx, retry, &rptr, What::Member("retry")) {
            ignored_members(cx, r, &rptr, "member of `retry`", &["max_attempts"]);
            if let Some(n) = r.get("max_attempts") {
                if n.as_u64().is_none_or(|n| n < 1) {
                    cx.push(
                        schema(
                            &rptr.key("max_attempts"),
                            format!("`max_attempts` must be an integer ≥ 1, found {n}"),
                        )
                        .help("`max_attempts` counts every attempt, the first included"),
                    );
                }
            }
        }
    }
    if let Some(eval) = mods.get("eval") {
        let eptr = mptr.key("eval");
        let what = What::Member("eval");
        let Some(evals) = expect_array(cx, eval, &eptr, what, "an array of eval ids") else {
            return;
        };
        for (k, e) in evals.iter().enumerate() {
            let kptr = eptr.index(k);
            match expect_str(cx, e, &kptr, What::Phrase("an eval id")) {
                Some(id) if !cx.names.evals.contains(id) => {
                    let d = Diagnostic::new(
                        DiagKind::UnresolvedEval,
                        format!("eval `{id}` is not the id of an entry of `evals`"),
                    )
                    .at(kptr)
                    .help(did_you_mean("evals", id, cx.names.evals.iter()));
                    cx.push(d);
                }
                _ => {}
            }
        }
    }
}

/// The warning `ignored_member` for each member of `obj` not in `known`: the v1
/// modifier vocabulary is `retry` (with `max_attempts`) and `eval` (RFC 0010 §Modifier
/// Vocabulary), and the schema leaves `modifiers` open, so anything else runs as if it
/// were absent. Said, with the nearest known name, because a misspelt `retry` would
/// quietly turn retries off.
fn ignored_members(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>, what: &str, known: &[&str]) {
    for key in obj.keys().map(|k| k.as_str()) {
        if known.contains(&key) {
            continue;
        }
        let help = match super::super::suggest(key, known.iter().copied()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if RESERVED_MODIFIERS.contains(&key) && what == "modifier" => format!(
                "`{key}` is reserved for a future PromptPack RFC; v1 defines only `retry` and `eval`"
            ),
            None => format!(
                "remove `{key}`; the {what}s v1 defines are: {}",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        cx.push(
            Diagnostic::new(
                DiagKind::IgnoredMember,
                format!("unknown {what} `{key}` is ignored"),
            )
            .at(ptr.key(key))
            .help(help),
        );
    }
}

/// The modifiers RFC 0010 reserves for future RFCs ("Additional modifiers").
const RESERVED_MODIFIERS: &[&str] = &[
    "timeout",
    "on_error",
    "cache_key",
    "budget",
    "recall",
    "persist",
    "compensate",
];

/// A parallel step's `reduce` (present): an object of a known `strategy` and an
/// identifier `into`, nothing else.
pub(super) fn reduce(cx: &mut Cx<'_, '_>, reduce: &Node, rptr: &At<'_>) {
    let Some(r) = expect_object(cx, reduce, rptr, What::Member("reduce")) else {
        return;
    };
    for key in REDUCE_MEMBERS {
        if r.get(key).is_none() {
            let d = schema(rptr, format!("`reduce` without `{key}`"))
                .help("write `reduce: {strategy: barrier|append|replace, into: <name>}`");
            cx.push(missing_member(d, r, rptr, key, REDUCE_MEMBERS));
        }
    }
    if let Some(s) = r.get("strategy") {
        if s.as_str().and_then(Strategy::parse).is_none() {
            let near = s
                .as_str()
                .and_then(|s| super::super::suggest(s, Strategy::ALL.map(Strategy::as_str)));
            cx.push(
                schema(
                    &rptr.key("strategy"),
                    format!("unknown reduce strategy {s}"),
                )
                .help(match near {
                    Some(n) => format!("did you mean `{n}`?"),
                    None => "strategies are append, replace and barrier".to_owned(),
                }),
            );
        }
    }
    if let Some(into) = r.get("into") {
        if !into.as_str().is_some_and(is_ident) {
            cx.push(schema(
                &rptr.key("into"),
                format!("`into` must be a name matching ^[a-zA-Z_][a-zA-Z0-9_]*$, found {into}"),
            ));
        }
    }
    for key in r.keys().filter(|k| !REDUCE_MEMBERS.contains(&k.as_str())) {
        cx.push(
            schema(
                &rptr.key(key),
                format!("unknown member `{key}` of `reduce`"),
            )
            .help(
                did_you_mean_member(r, key, REDUCE_MEMBERS).unwrap_or_else(|| {
                    format!("remove `{key}`; `reduce` has only `strategy` and `into`")
                }),
            ),
        );
    }
}

/// The members of a parallel step's `reduce`.
const REDUCE_MEMBERS: &[&str] = &["strategy", "into"];

/// A suggestion for an invalid step id: every other character replaced by `_`, and a
/// leading `_` where the id would start with a digit or be `input`.
pub(super) fn sanitize(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || s == "input" {
        s.insert(0, '_');
    }
    s
}
