//! Schema validation: the official v1.4.0 schema extended with the v1.5 additions.
//!
//! The schema (`schema/promptpack.v1.5.schema.json`, derived by `schema/derive.py`) checks
//! everything outside compositions. The inside of a composition is checked by hand in
//! [`crate::check`], because most of its rules have kinds more specific than
//! `schema_violation` (`shared/semantics/compositions.md` 2.23).
//!
//! A `$schema` URL naming a spec version above 1.5 turns unknown members into one
//! `newer_spec_version` warning (RFC runtime support Level 0).

use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::Validator;
use serde_json::Value;

use crate::diag::{join, DiagKind, Diagnostic};

/// The v1.5 schema packc validates against, as JSON text.
pub const SCHEMA_V1_5: &str = include_str!("../schema/promptpack.v1.5.schema.json");

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA_V1_5).expect("embedded schema is JSON");
        jsonschema::options()
            .should_validate_formats(false)
            .build(&schema)
            .expect("embedded schema compiles")
    })
}

/// The spec version a `$schema` URL claims, if it names one (`.../v1.6/...` → `(1, 6, 0)`).
///
/// A path segment `vX.Y` or `vX.Y.Z` names a version; `latest`, `v1` or a URL that cannot be
/// parsed make no claim.
pub fn claimed_version(url: &str) -> Option<(u64, u64, u64)> {
    url.split(['/', '?', '#']).find_map(|seg| {
        let rest = seg.strip_prefix('v')?;
        let mut parts = rest.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        parts.next().is_none().then_some((major, minor, patch))
    })
}

/// Whether the pack's `$schema` claims a spec version above 1.5.
pub fn claims_newer_version(pack: &Value) -> bool {
    pack.get("$schema")
        .and_then(Value::as_str)
        .and_then(claimed_version)
        .is_some_and(|v| v > (1, 5, 0))
}

/// Validate `pack` against the v1.5 schema, pushing one diagnostic per violation.
///
/// Errors inside `/compositions/<c>` are left to the composition checks; unknown members
/// are tolerated (with one warning) when the pack claims a newer spec version.
pub fn validate(pack: &Value, out: &mut Vec<Diagnostic>) {
    let newer = claims_newer_version(pack);
    if newer {
        out.push(
            Diagnostic::new(
                DiagKind::NewerSpecVersion,
                "`$schema` names a spec version newer than 1.5: fields unknown to v1.5 are ignored",
            )
            .at("/$schema")
            .help("packc implements PromptPack v1.5; upgrade packc to check the newer fields"),
        );
    }
    for error in validator().iter_errors(pack) {
        let path = error.instance_path().as_str();
        if is_in_composition(path) {
            continue;
        }
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                if newer {
                    continue;
                }
                for name in unexpected {
                    let ptr = join(path, &[name]);
                    out.push(
                        Diagnostic::new(
                            DiagKind::SchemaViolation,
                            format!("unknown member `{name}`"),
                        )
                        .at(ptr)
                        .help(format!(
                            "remove `{name}`, or check its spelling against the PromptPack schema"
                        )),
                    );
                }
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                out.push(
                    Diagnostic::new(
                        DiagKind::SchemaViolation,
                        format!("missing required member `{name}`"),
                    )
                    .at(path)
                    .help(format!("add `{name}` here")),
                );
            }
            _ => {
                let (message, help) = describe(&error);
                let mut d = Diagnostic::new(DiagKind::SchemaViolation, message).at(path);
                if let Some(help) = help {
                    d = d.help(help);
                }
                out.push(d);
            }
        }
    }
}

/// `/compositions/<c>/...` (the composition object itself and everything inside it).
fn is_in_composition(path: &str) -> bool {
    path.strip_prefix("/compositions/").is_some()
}

fn describe(error: &jsonschema::ValidationError<'_>) -> (String, Option<String>) {
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::Type { kind } => (
            format!(
                "expected {}, found {}",
                type_name(kind),
                json_type(instance)
            ),
            Some(format!("write {} here", type_name(kind))),
        ),
        ValidationErrorKind::Enum { options } => (
            format!("{instance} is not one of {options}"),
            Some(format!("use one of {options}")),
        ),
        ValidationErrorKind::Pattern { pattern } => (
            format!("{instance} does not match the pattern `{pattern}`"),
            Some(format!("change the value to match `{pattern}`")),
        ),
        ValidationErrorKind::Minimum { limit }
        | ValidationErrorKind::ExclusiveMinimum { limit } => (
            error.to_string(),
            Some(format!("use a value of at least {limit}")),
        ),
        ValidationErrorKind::MinProperties { .. } | ValidationErrorKind::MinItems { .. } => {
            (error.to_string(), Some("this may not be empty".to_string()))
        }
        ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::AnyOf { .. } => {
            let candidates = candidates(error.schema_path().as_str());
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
fn candidates(schema_path: &str) -> Vec<String> {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| serde_json::from_str(SCHEMA_V1_5).unwrap_or_default());
    // The path goes through `$ref`s by name (`.../media/$ref/additionalProperties/oneOf`).
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
    let list = at
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

fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {:?}", s),
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
        validate(v, &mut out);
        out.into_iter()
            .map(|d| (d.kind, d.pointer().unwrap_or("").to_string()))
            .collect()
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
        v["$schema"] = json!("https://promptpack.org/schema/v1.6/promptpack.schema.json");
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
        validate(&pack, &mut out);
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
        let newer = |s: &str| claims_newer_version(&json!({ "$schema": s }));
        assert!(newer("https://promptpack.org/schema/v1.6/x.json"));
        assert!(newer("https://promptpack.org/schema/v1.5.1/x.json"));
        assert!(!newer("https://promptpack.org/schema/v1.5/x.json"));
        assert!(!newer("https://promptpack.org/schema/v1.4.0/x.json"));
        assert!(!newer("not a url"));
    }
}
