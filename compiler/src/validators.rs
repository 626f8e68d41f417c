//! Validators (guardrails, `shared/semantics/later-versions.md` §4): a prompt's
//! `validators` read once into [`ir_spec::Guard`]s, with what is wrong with them.
//!
//! The checks ([`crate::check`]) report the [`Problem`]s as located diagnostics; lowering
//! keeps the guards. Both go through [`read`], so what is reported is exactly what is
//! (not) lowered:
//!
//! - `enabled: false` is skipped whole;
//! - a param of a built-in type that is present but unusable (a `regex` that does not
//!   compile, a limit that is not a positive integer, `words` that is not a list of
//!   strings, an unknown `direction`) is `invalid_validator`, at the param;
//! - a built-in validator missing what it needs (a `length` with no limit, an empty word
//!   list) can never trigger: `inert_validator`, and it is not lowered;
//! - `fail_on_violation: false` (and `true` at level 1.8+) is
//!   `deprecated_fail_on_violation`: validators always enforce.
//!
//! Unknown params are ignored. A type that is not built in is a host validator
//! ([`Check::Host`]): the host decides, and `packc check` lists them.

use crate::doc::{Node, Obj};
use ir_spec::{Check, Direction, Guard, JsonText, DEFAULT_BLOCKED_MESSAGE};

use crate::diag::DiagKind;

/// Something wrong with one validator, relative to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// `invalid_validator`, `inert_validator` or `deprecated_fail_on_violation`.
    pub kind: DiagKind,
    /// The member path below the validator (`["params", "pattern"]`), empty for the
    /// validator itself.
    pub at: Vec<&'static str>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

/// The built-in validator types, aliases included, with the canonical name.
const BUILT_IN: &[(&str, &str)] = &[
    ("banned_words", "banned_words"),
    ("content_excludes", "banned_words"),
    ("max_length", "max_length"),
    ("length", "max_length"),
    ("max_sentences", "max_sentences"),
    ("sentence_count", "max_sentences"),
    ("required_fields", "required_fields"),
    ("field_presence", "required_fields"),
    ("contains", "contains"),
    ("contains_any", "contains_any"),
    ("regex", "regex"),
    ("content_matches", "regex"),
    ("json_valid", "json_valid"),
    ("is_valid_json", "json_valid"),
    ("valid_json", "json_valid"),
    ("json_schema", "json_schema"),
];

/// The canonical built-in type `ty` names, `None` for a host validator type.
pub fn built_in(ty: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(a, _)| *a == ty).map(|(_, c)| *c)
}

/// Reads one entry of a prompt's `validators`. `level_1_8`: the pack is read at spec
/// level 1.8 or above (`fail_on_violation: true` then warns too). The guard is `None`
/// when the validator is disabled, inert or invalid (or not an object with a `type`).
pub fn read(v: &Node, level_1_8: bool) -> (Option<Guard>, Vec<Problem>) {
    let mut problems = Vec::new();
    let Some(obj) = v.as_object() else {
        return (None, problems);
    };
    let Some(ty) = obj.get("type").and_then(Node::as_str) else {
        return (None, problems);
    };
    match obj.get("fail_on_violation") {
        Some(Node::Bool(false)) => problems.push(deprecated(false)),
        Some(Node::Bool(true)) if level_1_8 => problems.push(deprecated(true)),
        _ => {}
    }
    if obj.get("enabled") == Some(&Node::Bool(false)) {
        return (None, problems);
    }
    let empty = Obj::default();
    let params = obj
        .get("params")
        .and_then(Node::as_object)
        .unwrap_or(&empty);
    let mut r = Reader {
        ty,
        params,
        problems,
        inert: None,
    };
    let direction = r.direction();
    let check = r.check();
    let message = obj
        .get("message")
        .and_then(Node::as_str)
        .or_else(|| params.get("message").and_then(Node::as_str))
        .unwrap_or(DEFAULT_BLOCKED_MESSAGE)
        .to_owned();
    let invalid = r
        .problems
        .iter()
        .any(|p| p.kind == DiagKind::InvalidValidator);
    if let (Some(why), false) = (&r.inert, invalid) {
        let d = Problem {
            kind: DiagKind::InertValidator,
            at: Vec::new(),
            message: format!("validator `{ty}` can never trigger: {why}"),
            help: "give it the params its type needs, or remove it".to_owned(),
        };
        r.problems.push(d);
    }
    let guard = match (check, direction, invalid, &r.inert) {
        (Some(check), Some(direction), false, None) => Some(Guard {
            name: ty.to_owned(),
            check,
            message,
            direction,
        }),
        _ => None,
    };
    (guard, r.problems)
}

fn deprecated(value: bool) -> Problem {
    Problem {
        kind: DiagKind::DeprecatedFailOnViolation,
        at: vec!["fail_on_violation"],
        message: format!(
            "`fail_on_violation: {value}` is deprecated: a declared validator always enforces"
        ),
        help: "remove `fail_on_violation`; to measure an answer without enforcing anything, use an eval".to_owned(),
    }
}

struct Reader<'a> {
    ty: &'a str,
    params: &'a Obj<'a>,
    problems: Vec<Problem>,
    /// Why the validator can never trigger.
    inert: Option<String>,
}

impl<'a> Reader<'a> {
    fn invalid(&mut self, param: &'static str, message: String, help: &str) {
        self.problems.push(Problem {
            kind: DiagKind::InvalidValidator,
            at: vec!["params", param],
            message: format!("validator `{}`: {message}", self.ty),
            help: help.to_owned(),
        });
    }

    fn direction(&mut self) -> Option<Direction> {
        match self.params.get("direction") {
            None => Some(Direction::Output),
            Some(Node::String(s)) if s == "output" => Some(Direction::Output),
            Some(Node::String(s)) if s == "input" => Some(Direction::Input),
            Some(Node::String(s)) if s == "both" => Some(Direction::Both),
            Some(other) => {
                self.invalid(
                    "direction",
                    format!("`direction` is {other}, not `output`, `input` or `both`"),
                    "use `output` (the model's answer, the default), `input` or `both`",
                );
                None
            }
        }
    }

    /// A positive integer limit `name`, when present.
    fn limit(&mut self, name: &'static str) -> Option<u64> {
        let v = self.params.get(name)?;
        match v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }) {
            Some(n) if n > 0 => Some(n),
            // A whole number too large for the 64 bits a limit is kept in.
            _ if v.as_f64().is_some_and(|f| f.fract() == 0.0 && f >= 1.8e19) => {
                self.invalid(
                    name,
                    format!(
                        "`{name}` is {v}, more than a limit can be (at most 18446744073709551615)"
                    ),
                    "give a whole number a text could reach, or remove the validator",
                );
                None
            }
            _ => {
                self.invalid(
                    name,
                    format!("`{name}` is {v}, not a positive integer"),
                    "give a whole number of 1 or more",
                );
                None
            }
        }
    }

    /// A list of strings `name`, when present (empty strings dropped).
    fn strings(&mut self, name: &'static str) -> Option<Vec<String>> {
        let v = self.params.get(name)?;
        let list = v.as_array().and_then(|a| {
            a.iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
        });
        match list {
            Some(l) => Some(l.into_iter().filter(|s| !s.is_empty()).collect()),
            None => {
                self.invalid(
                    name,
                    format!("`{name}` is not a list of strings"),
                    "write a list of strings, e.g. `[refund, lawsuit]`",
                );
                None
            }
        }
    }

    /// A non-empty list of strings `name`; absent or empty makes the validator inert.
    fn required_list(&mut self, name: &'static str) -> Option<Vec<String>> {
        match self.strings(name) {
            Some(l) if !l.is_empty() => Some(l),
            Some(_) => {
                self.inert = Some(format!("`params.{name}` is empty"));
                None
            }
            None if !self.params.contains_key(name) => {
                self.inert = Some(format!("it has no `params.{name}`"));
                None
            }
            None => None,
        }
    }

    fn check(&mut self) -> Option<Check> {
        let Some(canonical) = built_in(self.ty) else {
            return Some(Check::Host {
                params: JsonText::from_value(&Node::Object(*self.params).to_value()),
            });
        };
        match canonical {
            "banned_words" => {
                let word_boundary = match self.params.get("match_mode") {
                    None => true,
                    Some(Node::String(s)) if s == "word_boundary" => true,
                    Some(Node::String(s)) if s == "substring" => false,
                    Some(other) => {
                        self.invalid(
                            "match_mode",
                            format!("`match_mode` is {other}, not `word_boundary` or `substring`"),
                            "use `word_boundary` (the default) or `substring`",
                        );
                        true
                    }
                };
                let words = self.required_list("words")?;
                Some(Check::BannedWords {
                    words: ir_spec::banned_word_list(words.iter().map(String::as_str)),
                    word_boundary,
                })
            }
            "max_length" => {
                let chars = ["max_characters", "max", "max_chars"]
                    .into_iter()
                    .filter_map(|n| self.limit(n))
                    .min();
                let tokens = self.limit("max_tokens");
                let named = ["max_characters", "max", "max_chars", "max_tokens"]
                    .iter()
                    .any(|n| self.params.contains_key(n));
                if !named {
                    self.inert = Some(
                        "it has none of `max_characters`, `max`, `max_chars` or `max_tokens`"
                            .to_owned(),
                    );
                    return None;
                }
                if chars.is_none() && tokens.is_none() {
                    return None;
                }
                Some(Check::MaxLength {
                    max_characters: chars,
                    max_tokens: tokens,
                })
            }
            "max_sentences" => {
                if !self.params.contains_key("max_sentences") {
                    self.inert = Some("it has no `params.max_sentences`".to_owned());
                    return None;
                }
                self.limit("max_sentences").map(Check::MaxSentences)
            }
            "required_fields" => self.required_list("fields").map(Check::ContainsAll),
            "contains" => self.required_list("patterns").map(Check::ContainsAll),
            "contains_any" => self.required_list("values").map(Check::ContainsAny),
            "regex" => {
                let expect_match = match self.params.get("expect_match") {
                    None => true,
                    Some(Node::Bool(b)) => *b,
                    Some(other) => {
                        self.invalid(
                            "expect_match",
                            format!("`expect_match` is {other}, not a boolean"),
                            "use `true` (trigger when the text does not match) or `false`",
                        );
                        true
                    }
                };
                let pattern = match self.params.get("pattern") {
                    None => {
                        self.inert = Some("it has no `params.pattern`".to_owned());
                        return None;
                    }
                    Some(Node::String(p)) => p.as_str().to_owned(),
                    Some(other) => {
                        self.invalid(
                            "pattern",
                            format!("`pattern` is {other}, not a string"),
                            "write the regex as a string",
                        );
                        return None;
                    }
                };
                if let Err(e) = regex::Regex::new(&pattern) {
                    let first = e.to_string();
                    let first = first.lines().last().unwrap_or_default().trim().to_owned();
                    self.invalid(
                        "pattern",
                        format!("`pattern` does not compile: {first}"),
                        "patterns use the Rust `regex` crate's syntax (RE2-like: no look-around, no backreferences)",
                    );
                    return None;
                }
                Some(Check::Regex {
                    pattern,
                    expect_match,
                })
            }
            "json_valid" => Some(Check::JsonValid),
            "json_schema" => {
                let Some(schema) = self.params.get("schema") else {
                    self.inert = Some("it has no `params.schema`".to_owned());
                    return None;
                };
                let schema = schema.to_value();
                if let Err(e) = jsonschema::validator_for(&schema) {
                    self.invalid(
                        "schema",
                        format!("`schema` is not a usable JSON Schema: {e}"),
                        "give an inline JSON Schema object",
                    );
                    return None;
                }
                Some(Check::JsonSchema(JsonText::from_value(&schema)))
            }
            _ => None,
        }
    }
}

/// The built-in type nearest a host validator's `type`, when it is close enough to be a
/// misspelling (`banned_word` → `banned_words`): said beside the host validator, which a
/// scripted run fails closed and a live run refuses unbound.
pub fn near_built_in(ty: &str) -> Option<&'static str> {
    crate::check::suggest(ty, BUILT_IN.iter().map(|(a, _)| *a))
}

/// Every enabled host validator of a pack (a `type` that is not built in): its pointer
/// and its type, in source order. `packc check` lists them; a live host must serve each.
pub fn host_validators(pack: &Node) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let prompts = pack.get("prompts").and_then(Node::as_object);
    for (key, prompt) in prompts.into_iter().flatten() {
        let list = prompt.get("validators").and_then(Node::as_array);
        for (i, v) in list.into_iter().flatten().enumerate() {
            let Some(ty) = v.get("type").and_then(Node::as_str) else {
                continue;
            };
            if built_in(ty).is_some() || v.get("enabled") == Some(&Node::Bool(false)) {
                continue;
            }
            let ptr = crate::diag::join("/prompts", &[key, "validators", &i.to_string()]);
            out.push((ptr, ty.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(v: serde_json::Value) -> Vec<(&'static str, Vec<&'static str>)> {
        read(&crate::doc::leaked(&v), false)
            .1
            .into_iter()
            .map(|p| (p.kind.as_str(), p.at))
            .collect()
    }

    #[test]
    fn a_near_miss_names_the_built_in() {
        assert_eq!(near_built_in("banned_word"), Some("banned_words"));
        assert_eq!(near_built_in("maxlength"), Some("max_length"));
        assert_eq!(near_built_in("pii_redactor"), None);
    }

    #[test]
    fn params_are_parsed_once() {
        let (g, p) = read(
            &crate::doc::leaked(
                &json!({"type": "content_excludes", "params": {"words": ["Darn", "darn", ""], "match_mode": "substring"}}),
            ),
            false,
        );
        assert!(p.is_empty());
        let g = g.unwrap();
        assert_eq!(g.name, "content_excludes");
        assert_eq!(
            g.check,
            Check::BannedWords {
                words: vec!["darn".into()],
                word_boundary: false
            }
        );
        assert_eq!(g.message, DEFAULT_BLOCKED_MESSAGE);
        let (g, _) = read(
            &crate::doc::leaked(
                &json!({"type": "length", "params": {"max": 10, "max_chars": 8.0, "max_tokens": 3, "message": "m"}}),
            ),
            false,
        );
        let g = g.unwrap();
        assert_eq!(
            g.check,
            Check::MaxLength {
                max_characters: Some(8),
                max_tokens: Some(3)
            }
        );
        assert_eq!(g.message, "m");
    }

    #[test]
    fn unusable_params_are_located() {
        assert_eq!(
            kinds(json!({"type": "regex", "params": {"pattern": "("}})),
            [("invalid_validator", vec!["params", "pattern"])]
        );
        assert_eq!(
            kinds(json!({"type": "max_length", "params": {"max_characters": 0}})),
            [("invalid_validator", vec!["params", "max_characters"])]
        );
        assert_eq!(
            kinds(json!({"type": "banned_words", "params": {"words": "x"}})),
            [("invalid_validator", vec!["params", "words"])]
        );
        assert_eq!(
            kinds(json!({"type": "toxicity", "params": {"direction": "sideways"}})),
            [("invalid_validator", vec!["params", "direction"])]
        );
        // A limit too large to keep says so, not that it is no positive integer.
        let (_, p) = read(
            &crate::doc::leaked(&json!({"type": "max_length", "params": {"max_characters": 1e30}})),
            false,
        );
        assert_eq!(p.len(), 1);
        assert!(
            p[0].message.contains("more than a limit can be"),
            "{}",
            p[0].message
        );
        // Disabled: nothing is read.
        assert!(
            kinds(json!({"type": "regex", "enabled": false, "params": {"pattern": "("}}))
                .is_empty()
        );
    }

    #[test]
    fn missing_params_are_inert_and_not_lowered() {
        for v in [
            json!({"type": "length", "params": {"direction": "output"}}),
            json!({"type": "banned_words", "params": {"words": []}}),
            json!({"type": "regex"}),
        ] {
            let (g, p) = read(&crate::doc::leaked(&v), false);
            assert!(g.is_none(), "{v}");
            assert_eq!(p.len(), 1, "{v}");
            assert_eq!(p[0].kind, DiagKind::InertValidator);
            assert!(p[0].at.is_empty());
        }
    }

    #[test]
    fn fail_on_violation_warns_by_level() {
        let f = json!({"type": "json_valid", "fail_on_violation": false});
        let t = json!({"type": "json_valid", "fail_on_violation": true});
        assert_eq!(
            kinds(f.clone()),
            [("deprecated_fail_on_violation", vec!["fail_on_violation"])]
        );
        assert!(kinds(t.clone()).is_empty());
        assert_eq!(read(&crate::doc::leaked(&t), true).1.len(), 1);
        // Enforced either way.
        assert!(read(&crate::doc::leaked(&f), false).0.is_some());
    }

    #[test]
    fn host_validators_are_listed() {
        let pack = json!({"prompts": {"p": {"validators": [
            {"type": "toxicity"}, {"type": "max_length", "params": {"max": 3}},
            {"type": "pii_leakge", "enabled": false}]}}});
        assert_eq!(
            host_validators(&crate::doc::leaked(&pack)),
            [("/prompts/p/validators/0".to_owned(), "toxicity".to_owned())]
        );
    }
}
