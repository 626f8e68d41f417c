//! Guardrails: a prompt's guard program ([`ir_spec::Guard`]s) judged on a text
//! (`later-versions.md` §4).
//!
//! [`Matcher`]s are built once per [`Program`](crate::Program): banned-word lists become
//! one case-insensitive regex (word boundaries as half-boundary assertions), `regex`
//! patterns and `json_schema` schemas are compiled. [`judge`] then reads the text once
//! per built-in guard and allocates nothing. The lane applies the verdicts (truncate,
//! replace, block) and records them (`lane::guard_chain`).

use ir_spec::{Check, Guard};
use regex::Regex;
use serde::{Deserialize, Serialize};

/// A guard's compiled form.
pub(crate) enum Matcher {
    /// Nothing to compile.
    Plain,
    /// `BannedWords` and `Regex`: the compiled pattern.
    Regex(Regex),
    /// `JsonSchema`: the compiled schema.
    Schema(Box<jsonschema::Validator>),
    /// A pattern or schema that does not compile (only in a hand-made artifact: the
    /// compiler refuses them): triggers on every text, failing closed.
    Broken,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Matcher::Plain => "Plain",
            Matcher::Regex(_) => "Regex",
            Matcher::Schema(_) => "Schema",
            Matcher::Broken => "Broken",
        })
    }
}

/// Compiles `g` once.
pub(crate) fn compile(g: &Guard) -> Matcher {
    match &g.check {
        Check::BannedWords {
            words,
            word_boundary,
        } => {
            let mut pattern = String::from("(?i)");
            if *word_boundary {
                pattern.push_str(r"\b{start-half}");
            }
            pattern.push_str("(?:");
            for (i, w) in words.iter().enumerate() {
                if i > 0 {
                    pattern.push('|');
                }
                pattern.push_str(&regex::escape(w));
            }
            pattern.push(')');
            if *word_boundary {
                pattern.push_str(r"\b{end-half}");
            }
            Regex::new(&pattern).map_or(Matcher::Broken, Matcher::Regex)
        }
        Check::Regex { pattern, .. } => Regex::new(pattern).map_or(Matcher::Broken, Matcher::Regex),
        Check::JsonSchema(schema) => jsonschema::validator_for(&schema.parse())
            .map_or(Matcher::Broken, |v| Matcher::Schema(Box::new(v))),
        _ => Matcher::Plain,
    }
}

/// What a triggered guard does to the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not triggered.
    Pass,
    /// Keep the text up to this byte offset: the first `max_characters` characters.
    Truncate(usize),
    /// Replace the whole text with the guard's message.
    Replace,
}

/// What a guard did, as the call record says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GuardAction {
    /// The text was cut to `max_characters`.
    Truncated,
    /// The text was replaced by the validator's message.
    Replaced,
    /// A structured answer failed the step with `guardrail_blocked`.
    Blocked,
}

impl GuardAction {
    /// `truncated`, `replaced` or `blocked`.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardAction::Truncated => "truncated",
            GuardAction::Replaced => "replaced",
            GuardAction::Blocked => "blocked",
        }
    }
}

/// Judges `text` by built-in guard `g` (a host guard passes here: the host judges it).
pub(crate) fn judge(g: &Guard, m: &Matcher, text: &str) -> Verdict {
    let trigger = |t: bool| if t { Verdict::Replace } else { Verdict::Pass };
    if matches!(m, Matcher::Broken) {
        return Verdict::Replace;
    }
    match &g.check {
        Check::BannedWords { .. } => trigger(matches!(m, Matcher::Regex(r) if r.is_match(text))),
        Check::MaxLength {
            max_characters,
            max_tokens,
        } => {
            let over_tokens = |t: &str| {
                max_tokens.is_some_and(|max| t.split_whitespace().nth(max as usize).is_some())
            };
            if let Some(max) = max_characters {
                // Fewer bytes than the limit: fewer characters too, nothing to count.
                let max = usize::try_from(*max).unwrap_or(usize::MAX);
                if text.len() > max {
                    if let Some((cut, _)) = text.char_indices().nth(max) {
                        return if over_tokens(&text[..cut]) {
                            Verdict::Replace
                        } else {
                            Verdict::Truncate(cut)
                        };
                    }
                }
            }
            trigger(over_tokens(text))
        }
        Check::MaxSentences(max) => trigger(sentences(text) > *max),
        Check::ContainsAll(list) => trigger(list.iter().any(|s| !text.contains(s.as_str()))),
        Check::ContainsAny(list) => trigger(!list.iter().any(|s| text.contains(s.as_str()))),
        Check::Regex { expect_match, .. } => {
            trigger(matches!(m, Matcher::Regex(r) if r.is_match(text) != *expect_match))
        }
        Check::JsonValid => trigger(serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()),
        Check::JsonSchema(_) => match (serde_json::from_str::<serde_json::Value>(text), m) {
            (Ok(v), Matcher::Schema(s)) => trigger(!s.is_valid(&v)),
            _ => Verdict::Replace,
        },
        Check::Host { .. } => Verdict::Pass,
    }
}

/// Sentences of `text`: each `.`, `!` or `?` followed by whitespace or the end closes one,
/// and text after the last close is one more.
fn sentences(text: &str) -> u64 {
    let mut n = 0u64;
    let mut open = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            n += 1;
            open = false;
        } else if !c.is_whitespace() {
            open = true;
        }
    }
    n + u64::from(open)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir_spec::{Direction, JsonText};
    use serde_json::json;

    fn guard(check: Check) -> Guard {
        Guard {
            name: "t".into(),
            check,
            message: "no".into(),
            direction: Direction::Output,
        }
    }

    fn verdict(check: Check, text: &str) -> Verdict {
        let g = guard(check);
        judge(&g, &compile(&g), text)
    }

    fn words(list: &[&str], word_boundary: bool) -> Check {
        Check::BannedWords {
            words: list.iter().map(|s| s.to_string()).collect(),
            word_boundary,
        }
    }

    #[test]
    fn banned_words_by_boundary_and_case() {
        assert_eq!(
            verdict(words(&["darn"], true), "Oh DARN."),
            Verdict::Replace
        );
        assert_eq!(verdict(words(&["darn"], true), "darnit"), Verdict::Pass);
        assert_eq!(
            verdict(words(&["darn"], true), "é darn é"),
            Verdict::Replace
        );
        assert_eq!(verdict(words(&["darn"], true), "édarn"), Verdict::Pass);
        assert_eq!(verdict(words(&["darn"], false), "darnit"), Verdict::Replace);
        assert_eq!(
            verdict(words(&["can't help"], true), "I can't help."),
            Verdict::Replace
        );
        assert_eq!(verdict(words(&["a.b"], true), "axb"), Verdict::Pass);
    }

    #[test]
    fn lengths_count_characters_and_words() {
        let chars = |n| Check::MaxLength {
            max_characters: Some(n),
            max_tokens: None,
        };
        assert_eq!(verdict(chars(3), "abc"), Verdict::Pass);
        assert_eq!(verdict(chars(3), "ééé"), Verdict::Pass);
        assert_eq!(verdict(chars(3), "éééé"), Verdict::Truncate(6));
        let tokens = Check::MaxLength {
            max_characters: None,
            max_tokens: Some(2),
        };
        assert_eq!(verdict(tokens.clone(), " a  b "), Verdict::Pass);
        assert_eq!(verdict(tokens, "a b c"), Verdict::Replace);
        let both = Check::MaxLength {
            max_characters: Some(5),
            max_tokens: Some(2),
        };
        assert_eq!(verdict(both.clone(), "ab cdefgh"), Verdict::Truncate(5));
        assert_eq!(verdict(both, "a b c d"), Verdict::Replace);
    }

    #[test]
    fn sentences_end_at_punctuation_then_space() {
        assert_eq!(sentences(""), 0);
        assert_eq!(sentences("One"), 1);
        assert_eq!(sentences("One. Two! Three?"), 3);
        assert_eq!(sentences("Wait... what? 3.14 is pi"), 3);
        assert_eq!(
            verdict(Check::MaxSentences(2), "A. B. C."),
            Verdict::Replace
        );
        assert_eq!(verdict(Check::MaxSentences(2), "A. B."), Verdict::Pass);
    }

    #[test]
    fn contains_regex_and_json() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            verdict(Check::ContainsAll(l(&["id", "name"])), "id name"),
            Verdict::Pass
        );
        assert_eq!(
            verdict(Check::ContainsAll(l(&["id", "Name"])), "id name"),
            Verdict::Replace
        );
        assert_eq!(
            verdict(Check::ContainsAny(l(&["yes", "no"])), "maybe"),
            Verdict::Replace
        );
        assert_eq!(
            verdict(Check::ContainsAny(l(&["yes", "no"])), "no"),
            Verdict::Pass
        );
        let rx = |p: &str, e| Check::Regex {
            pattern: p.into(),
            expect_match: e,
        };
        assert_eq!(verdict(rx(r"\d{3}", true), "abc"), Verdict::Replace);
        assert_eq!(verdict(rx(r"\d{3}", false), "a 123"), Verdict::Replace);
        assert_eq!(verdict(rx(r"\d{3}", false), "abc"), Verdict::Pass);
        assert_eq!(
            verdict(rx("(", true), "abc"),
            Verdict::Replace,
            "broken: closed"
        );
        assert_eq!(verdict(Check::JsonValid, "{\"a\":1}"), Verdict::Pass);
        assert_eq!(verdict(Check::JsonValid, "{a"), Verdict::Replace);
        let schema = Check::JsonSchema(JsonText::from_value(&json!({"required": ["a"]})));
        assert_eq!(verdict(schema.clone(), "{\"a\":1}"), Verdict::Pass);
        assert_eq!(verdict(schema.clone(), "{\"b\":1}"), Verdict::Replace);
        assert_eq!(verdict(schema, "nope"), Verdict::Replace);
    }
}
