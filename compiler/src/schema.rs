//! Schema validation against the schema of the pack's spec level.
//!
//! The `$schema` claim picks the level ([`claim`], `shared/semantics/later-versions.md` §1),
//! and the level the schema: level 1.5 uses `schema/promptpack.v1.5.schema.json` (the
//! official v1.4.0 schema with the v1.5 additions), levels 1.5.1, 1.8 and 1.9 the official
//! v1.5.1, v1.8.1 and v1.9.0 schemas (a v1.6 claim: v1.5.1 with RFC 0013's governance
//! members), all derived by `schema/derive.py` and compiled into the binary. The inside of
//! a composition is checked by hand in [`crate::check`], because most of its rules have
//! kinds more specific than `schema_violation` (`shared/semantics/compositions.md` 2.23).
//!
//! A claim above v1.9 is read at level 1.9 and turns unknown members into one
//! `newer_spec_version` warning.

use std::sync::OnceLock;

use ir_spec::SpecLevel;
use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::Value;

use crate::doc::Node;

use crate::diag::{join, DiagKind, Diagnostic};

mod pattern;
mod quick;
mod tree;

/// The v1.5 schema packc validates level-1.5 packs against, as JSON text.
pub const SCHEMA_V1_5: &str = include_str!("../schema/promptpack.v1.5.schema.json");
/// The official v1.5.1 schema (annotations dropped): level 1.5.1.
pub const SCHEMA_V1_5_1: &str = include_str!("../schema/promptpack.v1.5.1.schema.json");
/// The official v1.5.1 schema with v1.8.1's governance members: a v1.6 claim.
pub const SCHEMA_V1_6: &str = include_str!("../schema/promptpack.v1.6.schema.json");
/// The official v1.8.1 schema (annotations dropped): level 1.8.
pub const SCHEMA_V1_8_1: &str = include_str!("../schema/promptpack.v1.8.1.schema.json");
/// The official v1.9.0 schema (annotations dropped): level 1.9.
pub const SCHEMA_V1_9_0: &str = include_str!("../schema/promptpack.v1.9.0.schema.json");

/// Which of the embedded schemas a pack is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    V1_5,
    V1_5_1,
    V1_6,
    V1_8_1,
    V1_9_0,
}

impl Which {
    fn slot(self) -> usize {
        self as usize
    }

    fn text(self) -> &'static str {
        match self {
            Which::V1_5 => SCHEMA_V1_5,
            Which::V1_5_1 => SCHEMA_V1_5_1,
            Which::V1_6 => SCHEMA_V1_6,
            Which::V1_8_1 => SCHEMA_V1_8_1,
            Which::V1_9_0 => SCHEMA_V1_9_0,
        }
    }
}

/// The embedded schema as a static tree, compiled into the binary: what [`quick`]
/// walks.
fn tree(which: Which) -> &'static tree::Node {
    match which {
        Which::V1_5 => &tree::V1_5,
        Which::V1_5_1 => &tree::V1_5_1,
        Which::V1_6 => &tree::V1_6,
        Which::V1_8_1 => &tree::V1_8_1,
        Which::V1_9_0 => &tree::V1_9_0,
    }
}

/// The embedded schema as a JSON value, parsed once per process: what the compiled
/// validator is built from, and what diagnostics name alternatives from.
fn document(which: Which) -> &'static Value {
    static DOCUMENTS: [OnceLock<Value>; 5] = [const { OnceLock::new() }; 5];
    DOCUMENTS[which.slot()]
        .get_or_init(|| serde_json::from_str(which.text()).expect("embedded schema is JSON"))
}

/// The compiled validator of the embedded schema, built once per process and only when
/// a pack is not found valid without it ([`quick`]).
static VALIDATORS: [OnceLock<Validator>; 5] = [const { OnceLock::new() }; 5];

fn validator(which: Which) -> &'static Validator {
    VALIDATORS[which.slot()].get_or_init(|| {
        jsonschema::options()
            .should_validate_formats(false)
            .build(document(which))
            .expect("embedded schema compiles")
    })
}

/// The spec version a `$schema` URL claims, if it names one (`.../v1.6/...` → `(1, 6, 0)`).
///
/// A path segment `vX.Y` or `vX.Y.Z` names a version, with any semver pre-release or
/// build suffix left aside (`v1.9.0-rc1` → `(1, 9, 0)`); `latest`, `v1` or a URL that
/// cannot be parsed make no claim.
pub fn claimed_version(url: &str) -> Option<(u64, u64, u64)> {
    // A number too long for a u64 is still a number, and larger than any other.
    let number = |p: &str| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().unwrap_or(u64::MAX))
    };
    url.split(['/', '?', '#']).find_map(|seg| {
        let rest = seg.strip_prefix('v')?;
        let rest = rest.split(['-', '+']).next()?;
        let mut parts = rest.split('.');
        let major = number(parts.next()?)?;
        let minor = number(parts.next()?)?;
        let patch = match parts.next() {
            Some(p) => number(p)?,
            None => 0,
        };
        parts.next().is_none().then_some((major, minor, patch))
    })
}

/// What a pack's `$schema` claims (`shared/semantics/later-versions.md` §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The level the pack is read at.
    pub level: SpecLevel,
    /// The claim names a version above 1.9.0: unknown members are ignored, with the
    /// warning `newer_spec_version`.
    pub newer: bool,
    /// The pack has a `$schema` member at all (none: the note `no_spec_version` may apply).
    pub declared: bool,
    /// The claim is v1.6: level 1.5.1 with RFC 0013's governance members.
    pub v1_6: bool,
    /// `$schema` is a string that names no version packc reads: no `vX.Y` segment, no
    /// `v1` and no `latest` (the note `unknown_spec_version`; level 1.5).
    pub unread: bool,
}

/// The claim of `pack`'s `$schema`: the §1 table. No `$schema`, or a URL that names no
/// version (and is not `latest`), is level 1.5.
pub fn claim(pack: &Node<'_>) -> Claim {
    let url = pack.get("$schema").and_then(Node::as_str);
    let version = url.and_then(claimed_version);
    let segments = || url.into_iter().flat_map(|u| u.split(['/', '?', '#']));
    let latest = segments().any(|seg| seg == "latest");
    let major_only = segments().any(|seg| {
        seg.strip_prefix('v')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    let level = match version {
        Some(v) => SpecLevel::of_version(v).unwrap_or_default(),
        None if latest => SpecLevel::V1_9,
        None => SpecLevel::V1_5,
    };
    Claim {
        level,
        newer: version.is_some_and(|v| v > (1, 9, 0)),
        declared: pack.get("$schema").is_some(),
        v1_6: version.is_some_and(|v| (v.0, v.1) == (1, 6)),
        unread: url.is_some() && version.is_none() && !latest && !major_only,
    }
}

/// Whether the pack's `$schema` claims a spec version above 1.9 (unknown members are
/// then tolerated).
pub fn claims_newer_version(pack: &Node<'_>) -> bool {
    claim(pack).newer
}

/// The level `pack` is read at: `over` when given (`--spec-level`), else its claim's.
pub fn level_of(pack: &Node<'_>, over: Option<SpecLevel>) -> SpecLevel {
    over.unwrap_or_else(|| claim(pack).level)
}

/// Validate `pack` against the schema of its level (its claim's, or `over`), pushing one
/// diagnostic per violation.
///
/// Errors inside `/compositions/<c>` are left to the composition checks; unknown members
/// are tolerated (with one warning) when the pack claims a version above 1.9.
pub fn validate_at(pack: &Node<'_>, over: Option<SpecLevel>, out: &mut Vec<Diagnostic>) {
    let c = claim(pack);
    let level = over.unwrap_or(c.level);
    let which = match level {
        SpecLevel::V1_5 => Which::V1_5,
        SpecLevel::V1_5_1 if c.v1_6 && over.is_none() => Which::V1_6,
        SpecLevel::V1_5_1 => Which::V1_5_1,
        SpecLevel::V1_8 => Which::V1_8_1,
        SpecLevel::V1_9 => Which::V1_9_0,
    };
    if c.unread && over.is_none() {
        let url = pack
            .get("$schema")
            .and_then(Node::as_str)
            .unwrap_or_default();
        out.push(
            Diagnostic::new(
                DiagKind::UnknownSpecVersion,
                format!(
                    "`$schema` is `{url}`, which names no spec version packc reads: the pack is read at level 1.5, as if it declared none"
                ),
            )
            .at("/$schema")
            .help("name the version in a path segment, e.g. `$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json` (or pass `--spec-level`)"),
        );
    }
    let newer = c.newer;
    if newer {
        out.push(
            Diagnostic::new(
                DiagKind::NewerSpecVersion,
                "`$schema` names a spec version newer than 1.9: fields unknown to v1.9 are ignored",
            )
            .at("/$schema")
            .help(
                "packc implements PromptPack up to v1.9; upgrade packc to check the newer fields",
            ),
        );
    }
    // A valid pack has nothing to report. The walk reads the pack as it was parsed; the
    // validator needs it as a `serde_json` value, and its compilation costs more than
    // the rest of a small pack's check, so both are paid only to describe what is wrong
    // (or what the walk cannot decide).
    if quick::valid(tree(which), pack) == quick::Verdict::Valid {
        return;
    }
    let value = pack.to_value();
    let errors: Vec<_> = validator(which)
        .iter_errors(&value)
        .filter(|e| !is_in_composition(e.instance_path().as_str()))
        .collect();
    let misspelt = misspellings(which, &errors, newer, level);
    for error in &errors {
        let path = error.instance_path().as_str();
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                if newer {
                    continue;
                }
                for name in unexpected {
                    let meant = misspelt.iter().find(|m| m.at == path && m.name == *name);
                    // A near miss of a required member that is missing is one mistake:
                    // the `Required` error names both, with the rename as its help. It
                    // names the first near miss only; a second one is reported here.
                    let linked = meant.filter(|m| m.missing).is_some_and(|m| {
                        linked_misspelling(&misspelt, path, m.meant)
                            .is_some_and(|first| first.name == *name)
                    });
                    if linked && later_level_defining(path, name, level).is_none() {
                        continue;
                    }
                    let ptr = join(path, &[name]);
                    let mut d = Diagnostic::new(
                        DiagKind::SchemaViolation,
                        format!("unknown member `{name}`"),
                    )
                    .at(ptr);
                    d = match (later_level_defining(path, name, level), meant) {
                        (Some(v), _) if over.is_some() => d.help(format!(
                            "`{name}` is defined by PromptPack v{v}: the pack is read at level {level} because `--spec-level` (`spec_level`) says so; give v{v} or later there, or leave it out to read the pack's own `$schema`"
                        )),
                        (Some(v), _) => d.help(format!(
                            "`{name}` is defined by PromptPack v{v}: declare `$schema` for v{v} or later (this pack is read at level {level})"
                        )),
                        (None, Some(m)) => d.help(format!("did you mean `{}`?", m.meant)),
                        (None, None) => d.help(format!(
                            "remove `{name}`, or check its spelling against the PromptPack schema"
                        )),
                    };
                    out.push(d);
                }
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let mut d = Diagnostic::new(
                    DiagKind::SchemaViolation,
                    format!("missing required member `{name}`"),
                )
                .at(path);
                d = match linked_misspelling(&misspelt, path, name) {
                    Some(m) => d
                        .also(
                            join(path, &[m.name.as_str()]),
                            format!("`{}` may be `{name}` misspelt", m.name),
                        )
                        .help(format!(
                            "rename `{}` to `{name}`, or add `{name}` here",
                            m.name
                        )),
                    None => d.help(format!("add `{name}` here")),
                };
                out.push(d);
            }
            _ => {
                let (message, help) = describe(which, error);
                let mut d = Diagnostic::new(DiagKind::SchemaViolation, message).at(path);
                if let Some(help) = help {
                    d = d.help(help);
                }
                out.push(d);
            }
        }
    }
}

/// The near miss of `meant` in the object at `at` that its `Required` error names: the
/// first, when there are several.
fn linked_misspelling<'m, 'e>(
    misspelt: &'m [Misspelling<'e>],
    at: &str,
    meant: &str,
) -> Option<&'m Misspelling<'e>> {
    misspelt.iter().find(|m| m.at == at && m.meant == meant)
}

/// An unknown member that is a near miss of a member allowed where it stands.
struct Misspelling<'e> {
    /// The pointer of the object holding it.
    at: &'e str,
    /// The unknown member.
    name: String,
    /// The allowed member it is nearest to.
    meant: &'static str,
    /// `meant` is required at `at` and missing (a `Required` error of the same object).
    missing: bool,
}

/// The unknown members of `errors` that are near misses of a member their object may
/// hold: a member the schema there names in `properties` and the object lacks. A
/// missing required member is preferred, so `sytem_template` beside a missing
/// `system_template` is reported as that one misspelt. A member a later spec level
/// defines is no misspelling.
fn misspellings<'e>(
    which: Which,
    errors: &'e [jsonschema::ValidationError<'_>],
    newer: bool,
    level: SpecLevel,
) -> Vec<Misspelling<'e>> {
    if newer {
        return Vec::new();
    }
    let missing = |at: &str| -> Vec<&'e str> {
        errors
            .iter()
            .filter_map(|e| match e.kind() {
                ValidationErrorKind::Required { property } if e.instance_path().as_str() == at => {
                    property.as_str()
                }
                _ => None,
            })
            .collect()
    };
    let mut out = Vec::new();
    for error in errors {
        let ValidationErrorKind::AdditionalProperties { unexpected } = error.kind() else {
            continue;
        };
        let at = error.instance_path().as_str();
        let present = |m: &str| error.instance().get(m).is_some();
        let allowed: Vec<&'static str> = allowed_members(which, error.schema_path().as_str())
            .into_iter()
            .filter(|m| !present(m))
            .collect();
        let required = missing(at);
        for name in unexpected {
            if later_level_defining(at, name, level).is_some() {
                continue;
            }
            let near_required = ir_spec::suggest::suggest(name, required.iter().copied());
            let meant = near_required
                .and_then(|r| allowed.iter().find(|a| **a == r).copied())
                .or_else(|| ir_spec::suggest::suggest(name, allowed.iter().copied()));
            if let Some(meant) = meant {
                out.push(Misspelling {
                    at,
                    name: name.clone(),
                    meant,
                    missing: required.contains(&meant),
                });
            }
        }
    }
    out
}

/// The members the schema object holding the `additionalProperties` keyword at
/// `schema_path` names in its `properties`.
fn allowed_members(which: Which, schema_path: &str) -> Vec<&'static str> {
    let Some(parent) = schema_path.rsplit_once('/').map(|(p, _)| p) else {
        return Vec::new();
    };
    schema_at(which, parent)
        .and_then(|node| node.get("properties"))
        .and_then(Value::as_object)
        .map(|props| props.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The node of the embedded schema at `schema_path`, a validator's schema path: it
/// goes through `$ref`s by name (`.../media/$ref/additionalProperties/oneOf`), each
/// resolved against the document (`#/$defs/...`, `#/definitions/...`).
fn schema_at(which: Which, schema_path: &str) -> Option<&'static Value> {
    let schema = document(which);
    let mut at = Some(schema);
    for seg in schema_path.split('/').skip(1) {
        at = at.and_then(|node| match seg {
            "$ref" => node
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| schema.pointer(r.strip_prefix('#')?)),
            _ => match node {
                Value::Array(items) => seg.parse().ok().and_then(|i: usize| items.get(i)),
                _ => node.get(seg.replace("~1", "/").replace("~0", "~")),
            },
        });
    }
    at
}

/// The first spec version that defines a member named `name` of the object at JSON
/// pointer `at` above `level`, for the help line of an unknown member (`provider` → 1.9,
/// `control` → 1.7, a validator's `id` → 1.8, …).
pub fn later_level_defining(at: &str, name: &str, level: SpecLevel) -> Option<&'static str> {
    let is_validator = || {
        let segs: Vec<&str> = at.split('/').skip(1).collect();
        matches!(segs.as_slice(), ["prompts", _, "validators", _])
    };
    let (version, at) = match name {
        "provider" => ("1.9", SpecLevel::V1_9),
        "control" | "extensions" => ("1.7", SpecLevel::V1_8),
        "governance" => ("1.6", SpecLevel::V1_8),
        "requires" => ("1.5.1", SpecLevel::V1_5_1),
        "id" if is_validator() => ("1.8", SpecLevel::V1_8),
        _ => return None,
    };
    (level < at).then_some(version)
}

/// Validate `pack` against the schema of its claimed level.
pub fn validate(pack: &Node<'_>, out: &mut Vec<Diagnostic>) {
    validate_at(pack, None, out);
}
/// `/compositions/<c>/...` (the composition object itself and everything inside it).
fn is_in_composition(path: &str) -> bool {
    path.strip_prefix("/compositions/").is_some()
}

/// What the schemas' long patterns mean, said in words rather than as the regex: a
/// semantic version, an ISO 8601 duration. The help suggests the value fixed when the
/// mistake is a common one (`1.0` for `1.0.0`).
fn pattern_meaning(pattern: &str, instance: &Value) -> Option<(&'static str, String)> {
    if pattern.starts_with(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.") {
        let text = instance.as_str().unwrap_or_default();
        let parts: Vec<&str> = text.trim_start_matches('v').split('.').collect();
        let numbers = parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()));
        let help = match parts.len() {
            1 | 2 if numbers => {
                let mut fixed = parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
                fixed.resize(3, "0".into());
                format!("write a version of three numbers: \"{}\"", fixed.join("."))
            }
            _ => "write a version of three numbers, MAJOR.MINOR.PATCH: \"1.0.0\" (a `-pre` or `+build` suffix may follow)".to_owned(),
        };
        return Some(("a semantic version (MAJOR.MINOR.PATCH)", help));
    }
    if pattern.starts_with("^P(?:") {
        return Some((
            "an ISO 8601 duration",
            "write a duration such as \"P30D\" (30 days), \"PT1H\" (an hour) or \"P1Y2M\""
                .to_owned(),
        ));
    }
    None
}

fn describe(which: Which, error: &jsonschema::ValidationError<'_>) -> (String, Option<String>) {
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let name = type_name(kind);
            let help = match (&**instance, name.as_str()) {
                // `version: 1.0` is read as a number: the fix is quoting a full version.
                (Value::Number(n), "a string")
                    if error.instance_path().as_str().ends_with("/version") =>
                {
                    let mut parts: Vec<String> =
                        n.to_string().split('.').map(str::to_owned).collect();
                    parts.resize(3, "0".into());
                    format!(
                        "write the version as a string of three numbers: \"{}\"",
                        parts.join(".")
                    )
                }
                (v @ (Value::Number(_) | Value::Bool(_)), "a string") => {
                    format!("quote it to make it a string: \"{v}\"")
                }
                _ => format!("write {name} here"),
            };
            (
                format!(
                    "expected {}, found {}",
                    type_name(kind),
                    json_type(instance)
                ),
                Some(help),
            )
        }
        ValidationErrorKind::Enum { options } => (
            format!("{} is not one of {options}", shown(instance)),
            Some(format!("use one of {options}")),
        ),
        ValidationErrorKind::Pattern { pattern } => match pattern_meaning(pattern, instance) {
            Some((what, help)) => (format!("{} is not {what}", shown(instance)), Some(help)),
            None => (
                format!("{} does not match the pattern `{pattern}`", shown(instance)),
                Some(format!("change the value to match `{pattern}`")),
            ),
        },
        ValidationErrorKind::Minimum { limit }
        | ValidationErrorKind::ExclusiveMinimum { limit } => (
            error.to_string(),
            Some(format!("use a value of at least {limit}")),
        ),
        ValidationErrorKind::MinProperties { .. } | ValidationErrorKind::MinItems { .. } => {
            (error.to_string(), Some("this may not be empty".to_string()))
        }
        ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::AnyOf { .. } => {
            let candidates = candidates(which, error.schema_path().as_str());
            (
                format!(
                    "{} matches none of the forms allowed here: {}",
                    json_type(instance),
                    candidates.join(", ")
                ),
                Some(format!("write one of: {}", candidates.join(", "))),
            )
        }
        _ => (error.to_string(), None),
    }
}

/// The alternatives of the `oneOf` / `anyOf` at `schema_path`, by name: a `$ref`'s
/// definition name, else the type.
fn candidates(which: Which, schema_path: &str) -> Vec<String> {
    let list = schema_at(which, schema_path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    list.iter()
        .map(
            |c| match (c.get("$ref").and_then(Value::as_str), c.get("type")) {
                (Some(r), _) => format!("`{}`", r.rsplit('/').next().unwrap_or(r)),
                (None, Some(Value::String(t))) => article(t),
                _ => "another form".to_owned(),
            },
        )
        .collect()
}

fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => article(&t.to_string()),
        jsonschema::error::TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            names.join(" or ")
        }
    }
}

fn article(t: &str) -> String {
    match t {
        "array" | "object" | "integer" => format!("an {t}"),
        "null" => "null".to_string(),
        _ => format!("a {t}"),
    }
}

/// The longest text of a value a message quotes, in characters: a file that is not a
/// pack (a key file, `/etc/passwd`) reads as one long string, and a message must not
/// print it whole.
const QUOTED_CHARS: usize = 40;

/// `s` quoted, cut to [`QUOTED_CHARS`] characters with `…`.
fn cut_quoted(s: &str) -> String {
    match s.char_indices().nth(QUOTED_CHARS) {
        Some((at, _)) => format!("{:?}…", &s[..at]),
        None => format!("{s:?}"),
    }
}

/// A value as a message quotes it: its JSON text, cut to [`QUOTED_CHARS`] characters.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", cut_quoted(s)),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "id": "demo", "name": "Demo", "version": "1.0.0",
            "template_engine": {"version": "v1", "syntax": "{{variable}}"},
            "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "hi"}}
        })
    }

    fn kinds_at(v: &Value) -> Vec<(DiagKind, String)> {
        let mut out = Vec::new();
        validate(&crate::doc::leaked(v), &mut out);
        out.into_iter()
            .map(|d| (d.kind, d.pointer().unwrap_or("").to_string()))
            .collect()
    }

    /// An unknown member that a later version defines is named with that version, a
    /// validator's `id` by where it stands (a prompt's `id` is defined at every level).
    #[test]
    fn members_of_later_versions_are_named_with_their_version() {
        let l15 = SpecLevel::V1_5;
        assert_eq!(
            later_level_defining("/prompts/p/validators/0", "id", l15),
            Some("1.8")
        );
        assert_eq!(
            later_level_defining("/prompts/p/validators/0", "id", SpecLevel::V1_8),
            None
        );
        assert_eq!(later_level_defining("/prompts/p", "id", l15), None);
        assert_eq!(
            later_level_defining("/prompts/p", "provider", l15),
            Some("1.9")
        );
        assert_eq!(later_level_defining("", "requires", l15), Some("1.5.1"));
    }

    #[test]
    fn the_static_trees_are_the_embedded_schemas() {
        for which in [
            Which::V1_5,
            Which::V1_5_1,
            Which::V1_6,
            Which::V1_8_1,
            Which::V1_9_0,
        ] {
            assert_eq!(tree(which), tree::Node::leak(document(which)), "{which:?}");
        }
        // A pointer into one, as `$ref`s use them.
        let tree = tree(Which::V1_9_0);
        let defs = tree.get("$defs").expect("the schema has definitions");
        let tree::Node::Obj(names) = defs else {
            panic!("`$defs` is an object")
        };
        let (name, def) = &names.members[0];
        assert_eq!(tree.pointer(&format!("/$defs/{name}")), Some(def));
        assert_eq!(tree.pointer("/$defs/no such definition"), None);
        assert_eq!(tree.pointer(""), Some(tree));
    }

    #[test]
    fn minimal_pack_is_valid() {
        assert_eq!(kinds_at(&minimal()), vec![]);
    }

    #[test]
    fn unknown_member_points_at_the_member() {
        let mut v = minimal();
        v["prompts"]["p"]["user_template"] = json!("x");
        assert_eq!(
            kinds_at(&v),
            vec![(DiagKind::SchemaViolation, "/prompts/p/user_template".into())]
        );
    }

    #[test]
    fn missing_member_points_at_the_object() {
        let mut v = minimal();
        v["prompts"]["p"].as_object_mut().unwrap().remove("name");
        assert_eq!(
            kinds_at(&v),
            vec![(DiagKind::SchemaViolation, "/prompts/p".into())]
        );
    }

    /// Each diagnostic as (pointer, help, the pointers of its other labels).
    fn helps(v: &Value) -> Vec<(String, String, Vec<String>)> {
        let mut out = Vec::new();
        validate(&crate::doc::leaked(v), &mut out);
        out.into_iter().map(crate::diag::summary).collect()
    }

    #[test]
    fn an_unknown_member_names_the_nearest_member_allowed_there() {
        let mut v = minimal();
        v["workflow"] = json!({"version": 1, "entry": "a",
            "states": {"a": {"prompt_task": "p", "termnial": true}}});
        // Through a `$ref` (`Prompt` → `Parameters`), at v1.5 and v1.9 alike.
        v["prompts"]["p"]["parameters"] = json!({"temprature": 0.2});
        for schema in [
            None,
            Some("https://promptpack.org/schema/v1.9.0/promptpack.schema.json"),
        ] {
            if let Some(url) = schema {
                v["$schema"] = json!(url);
            }
            let got = helps(&v);
            assert_eq!(got.len(), 2, "{got:?}");
            assert!(got.contains(&(
                "/workflow/states/a/termnial".into(),
                "did you mean `terminal`?".into(),
                vec![]
            )));
            assert!(got.contains(&(
                "/prompts/p/parameters/temprature".into(),
                "did you mean `temperature`?".into(),
                vec![]
            )));
        }
        // Nothing near: the help says to remove it.
        let mut v = minimal();
        v["prompts"]["p"]["zzzzzz"] = json!(1);
        assert_eq!(
            helps(&v)[0].1,
            "remove `zzzzzz`, or check its spelling against the PromptPack schema"
        );
        // A member the object already has is not suggested twice.
        let mut v = minimal();
        v["prompts"]["p"]["nme"] = json!("P");
        assert!(
            helps(&v)[0].1.starts_with("remove `nme`"),
            "{:?}",
            helps(&v)
        );
    }

    /// A version is said to be a semantic version, not shown as the schema's regex, and
    /// the help gives it fixed; a number where a string belongs is to be quoted.
    #[test]
    fn versions_and_numbers_get_a_fix_not_a_regex() {
        let mut v = minimal();
        for (version, help) in [
            (json!("1.0"), "write a version of three numbers: \"1.0.0\""),
            (json!("2"), "write a version of three numbers: \"2.0.0\""),
            (
                json!("one"),
                "write a version of three numbers, MAJOR.MINOR.PATCH: \"1.0.0\" (a `-pre` or `+build` suffix may follow)",
            ),
            (json!(1.5), "write the version as a string of three numbers: \"1.5.0\""),
        ] {
            v["prompts"]["p"]["version"] = version.clone();
            let got = helps(&v);
            assert_eq!(got.len(), 1, "{version}: {got:?}");
            assert_eq!(got[0].0, "/prompts/p/version");
            assert_eq!(got[0].1, help, "{version}");
        }
    }

    /// One mistake, one error: the missing member's, pointing at the misspelt one too;
    /// the unknown member is not reported again on its own.
    #[test]
    fn a_misspelt_required_member_is_linked_to_the_missing_one() {
        let mut v = minimal();
        let p = v["prompts"]["p"].as_object_mut().unwrap();
        p.remove("system_template");
        p.insert("sytem_template".into(), json!("hi"));
        let got = helps(&v);
        assert_eq!(
            got,
            vec![(
                "/prompts/p".into(),
                "rename `sytem_template` to `system_template`, or add `system_template` here"
                    .into(),
                vec!["/prompts/p/sytem_template".into()]
            ),]
        );
        // A second near miss of the same member is not linked: it is reported alone.
        let p = v["prompts"]["p"].as_object_mut().unwrap();
        p.insert("system_templte".into(), json!("hi"));
        let got = helps(&v);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[1],
            (
                "/prompts/p/system_templte".into(),
                "did you mean `system_template`?".into(),
                vec![]
            )
        );
    }

    #[test]
    fn composition_internals_are_left_to_the_checks() {
        let mut v = minimal();
        v["compositions"] = json!({"c": {"version": "one", "steps": 3}});
        assert_eq!(kinds_at(&v), vec![]);
        v["compositions"] = json!({"c": 3});
        assert_eq!(kinds_at(&v), vec![]);
    }

    #[test]
    fn newer_version_turns_unknown_members_into_one_warning() {
        let mut v = minimal();
        v["$schema"] = json!("https://promptpack.org/schema/v2.0/promptpack.schema.json");
        v["prompts"]["p"]["shiny"] = json!(true);
        v["prompts"]["p"]["version"] = json!(3);
        assert_eq!(
            kinds_at(&v),
            vec![
                (DiagKind::NewerSpecVersion, "/$schema".into()),
                (DiagKind::SchemaViolation, "/prompts/p/version".into())
            ]
        );
    }

    #[test]
    fn a_one_of_mismatch_names_its_candidates() {
        let mut pack = minimal();
        pack["skills"] = json!([3]);
        let mut out = Vec::new();
        validate(&crate::doc::leaked(&pack), &mut out);
        let d = out
            .iter()
            .find(|d| d.message.contains("matches none of the forms"))
            .unwrap_or_else(|| panic!("{out:?}"));
        assert!(
            d.message
                .contains("a string, `SkillPathSource`, `InlineSkill`"),
            "{}",
            d.message
        );
    }

    /// Every pack of the examples, the tests, the shared corpus and the conformance cases
    /// at every level, and variants of the examples with one member removed or replaced:
    /// where the walk without a validator decides, it agrees with the compiled validator.
    #[test]
    fn the_quick_walk_agrees_with_the_validator() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let all = [
            Which::V1_5,
            Which::V1_5_1,
            Which::V1_6,
            Which::V1_8_1,
            Which::V1_9_0,
        ];
        let mut files = Vec::new();
        for dir in [
            "examples",
            "tests",
            "../shared/corpus",
            "../shared/conformance/cases",
        ] {
            collect(&root.join(dir), &mut files);
        }
        let mut packs = Vec::new();
        let mut mutated = 0;
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let Ok(loaded) = crate::load::load_str(&text, &Default::default()) else {
                continue;
            };
            let value = loaded.into_value();
            match value.get("pack") {
                Some(pack @ Value::Object(_)) => packs.push((pack.clone(), &all[..])),
                _ if value.get("prompts").is_some() => packs.push((value, &all[..])),
                _ => {}
            }
            if file.starts_with(root.join("examples")) && file.to_string_lossy().contains(".pack.")
            {
                let pack = packs.last().unwrap().0.clone();
                let mut variants = Vec::new();
                mutations(&pack, &mut Vec::new(), &pack, &mut variants);
                mutated += variants.len();
                packs.extend(variants.into_iter().map(|v| (v, &all[..1])));
            }
        }
        // Without `../shared` (a bare checkout) only the repository's own packs are read.
        let least = if root.join("../shared").is_dir() {
            100
        } else {
            10
        };
        assert!(
            packs.len() - mutated > least,
            "{} packs",
            packs.len() - mutated
        );
        assert!(mutated > 1000, "{mutated} variants");
        let mut decided = [0; 3];
        for (pack, levels) in &packs {
            for &which in *levels {
                let verdict = quick::valid(tree(which), &crate::doc::leaked(pack));
                // What `validate_at` keeps: errors outside the compositions' members.
                let valid = validator(which)
                    .iter_errors(pack)
                    .all(|e| is_in_composition(e.instance_path().as_str()));
                decided[verdict as usize] += 1;
                match verdict {
                    quick::Verdict::Valid => assert!(valid, "{which:?}: {pack}"),
                    quick::Verdict::Invalid => assert!(!valid, "{which:?}: {pack}"),
                    quick::Verdict::Unknown => {}
                }
            }
        }
        // The walk decides nearly everything, or it would not save the validator.
        assert!(decided[2] * 20 < decided[0] + decided[1], "{decided:?}");
        let ex2 = std::fs::read_to_string(root.join("examples/rfc0010-ex2.pack.yaml")).unwrap();
        let ex2 = crate::load::load_str(&ex2, &Default::default())
            .unwrap()
            .into_value();
        assert_eq!(
            quick::valid(tree(Which::V1_5), &crate::doc::leaked(&ex2)),
            quick::Verdict::Valid
        );
    }

    fn collect(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                collect(&path, out);
            } else if path
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
            {
                out.push(path);
            }
        }
    }

    /// Copies of `pack` with the member at each path below `at` removed, or replaced by
    /// a number, a string, an empty array and an empty object.
    fn mutations(pack: &Value, path: &mut Vec<String>, at: &Value, out: &mut Vec<Value>) {
        let Value::Object(members) = at else {
            return;
        };
        for (name, member) in members {
            path.push(name.clone());
            let pointer: String = path
                .iter()
                .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
                .collect();
            let (parent, last) = pointer.rsplit_once('/').unwrap();
            let mut removed = pack.clone();
            if let Some(Value::Object(m)) = removed.pointer_mut(parent) {
                m.shift_remove(&last.replace("~1", "/").replace("~0", "~"));
            }
            out.push(removed);
            for replacement in [json!(-1.5), json!("x"), json!({})] {
                let mut changed = pack.clone();
                *changed.pointer_mut(&pointer).unwrap() = replacement;
                out.push(changed);
            }
            mutations(pack, path, member, out);
            path.pop();
        }
    }

    #[test]
    fn claims_pick_levels() {
        let level = |s: &str| claim(&crate::doc::leaked(&json!({ "$schema": s }))).level;
        let url = |v: &str| format!("https://promptpack.org/schema/{v}/promptpack.schema.json");
        assert_eq!(level(&url("v1.0")), SpecLevel::V1_5);
        assert_eq!(level(&url("v1.5.0")), SpecLevel::V1_5);
        assert_eq!(level(&url("v1")), SpecLevel::V1_5);
        assert_eq!(level(&url("v1.5.1")), SpecLevel::V1_5_1);
        assert_eq!(level(&url("v1.6")), SpecLevel::V1_5_1);
        assert_eq!(level(&url("v1.7.0")), SpecLevel::V1_8);
        assert_eq!(level(&url("v1.8.1")), SpecLevel::V1_8);
        assert_eq!(level(&url("v1.9.0")), SpecLevel::V1_9);
        assert_eq!(level(&url("latest")), SpecLevel::V1_9);
        assert_eq!(level(&url("v3.1")), SpecLevel::V1_9);
        assert_eq!(level("not a url"), SpecLevel::V1_5);
        let huge = url("v1.99999999999999999999");
        assert_eq!(level(&huge), SpecLevel::V1_9);
        assert!(claim(&crate::doc::leaked(&json!({ "$schema": huge }))).newer);
        assert_eq!(level(&url("v1.9.99999999999999999999")), SpecLevel::V1_9);
        assert_eq!(level(&url("v1.+9")), SpecLevel::V1_5);
        assert_eq!(
            claim(&crate::doc::leaked(&json!({}))).level,
            SpecLevel::V1_5
        );
        assert!(!claim(&crate::doc::leaked(&json!({}))).declared);
        assert!(claim(&crate::doc::leaked(&json!({"$schema": url("v1.6")}))).v1_6);
        let unread = |s: &str| claim(&crate::doc::leaked(&json!({ "$schema": s }))).unread;
        for s in ["1.9.0", "not a url", "", "./promptpack.schema.json"] {
            assert!(unread(s), "{s:?} names no version");
        }
        for v in ["V1.9.0", "v1.9.0.1", "v", "vnext"] {
            assert!(unread(&url(v)), "{v} names no version");
        }
        for v in ["v1", "v1.0", "v1.9.0", "latest", "v2.0"] {
            assert!(!unread(&url(v)), "{v} is read");
        }
        assert!(!claim(&crate::doc::leaked(&json!({}))).unread);
    }

    #[test]
    fn each_level_checks_its_schema() {
        // `control` is a v1.7 member: a schema_violation at level 1.5, nothing at 1.8.
        let mut v = minimal();
        v["workflow"] = json!({"version": 1, "entry": "a",
            "states": {"a": {"prompt_task": "p", "control": "agent"}}});
        let at = |v: &Value, over| {
            let mut out = Vec::new();
            validate_at(&crate::doc::leaked(v), over, &mut out);
            out.into_iter()
                .map(|d| (d.kind, d.pointer().unwrap_or("").to_owned(), d.help))
                .collect::<Vec<_>>()
        };
        let low = at(&v, None);
        assert_eq!(low.len(), 1);
        assert_eq!(low[0].1, "/workflow/states/a/control");
        assert!(low[0].2.as_deref().unwrap().contains("v1.7"), "{low:?}");
        assert_eq!(at(&v, Some(SpecLevel::V1_8)), vec![]);
        // `provider` on a prompt is v1.9.
        let mut v = minimal();
        v["prompts"]["p"]["provider"] = json!("drafter");
        assert_eq!(at(&v, Some(SpecLevel::V1_9)), vec![]);
        let low = at(&v, Some(SpecLevel::V1_8));
        assert!(low[0].2.as_deref().unwrap().contains("v1.9"), "{low:?}");
    }

    #[test]
    fn version_claims() {
        let c = |s| claimed_version(s);
        assert_eq!(
            c("https://promptpack.org/schema/v1.6/x.json"),
            Some((1, 6, 0))
        );
        assert_eq!(
            c("https://promptpack.org/schema/v1.5.1/x.json"),
            Some((1, 5, 1))
        );
        assert_eq!(c("https://promptpack.org/schema/latest/x.json"), None);
        assert_eq!(c("https://promptpack.org/schema/v1/x.json"), None);
        // A pre-release or build suffix does not hide the version.
        assert_eq!(
            c("https://promptpack.org/schema/v1.9.0-rc1/x.json"),
            Some((1, 9, 0))
        );
        assert_eq!(
            c("https://promptpack.org/schema/v1.8-beta/x.json"),
            Some((1, 8, 0))
        );
        assert_eq!(
            c("https://promptpack.org/schema/v1.7.0+build.5/x.json"),
            Some((1, 7, 0))
        );
        assert_eq!(c("https://promptpack.org/schema/v1.x-rc1/x.json"), None);
        let newer = |s: &str| claims_newer_version(&crate::doc::leaked(&json!({ "$schema": s })));
        assert!(newer("https://promptpack.org/schema/v1.9.1/x.json"));
        assert!(newer("https://promptpack.org/schema/v2.0/x.json"));
        assert!(!newer("https://promptpack.org/schema/v1.9.0/x.json"));
        assert!(!newer("https://promptpack.org/schema/latest/x.json"));
        assert!(!newer("https://promptpack.org/schema/v1.6/x.json"));
        assert!(!newer("https://promptpack.org/schema/v1.5/x.json"));
        assert!(!newer("https://promptpack.org/schema/v1.4.0/x.json"));
        assert!(!newer("not a url"));
    }
}
