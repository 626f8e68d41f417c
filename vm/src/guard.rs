//! Guardrails: a prompt's guard program ([`ir_spec::Guard`]s) judged on a text
//! (`later-versions.md` §4).
//!
//! [`Matcher`]s are built once per [`Program`](crate::Program): banned-word lists become
//! [`Words`] (a packed multi-substring searcher, and the list as one case-insensitive regex),
//! `regex` patterns and `json_schema` schemas are compiled. [`judge`] then reads the text
//! once per built-in guard and allocates nothing. The lane applies the verdicts (truncate,
//! replace, block) and records them (`lane::guard_chain`).

use aho_corasick::packed;
use ir_spec::{Check, Guard};
use regex::Regex;
use serde::{Deserialize, Serialize};

/// A guard's compiled form.
pub(crate) enum Matcher {
    /// Nothing to compile.
    Plain,
    /// `BannedWords`: the word list.
    Words(Box<Words>),
    /// `Regex`: the compiled pattern.
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
            Matcher::Words(_) => "Words",
            Matcher::Regex(_) => "Regex",
            Matcher::Schema(_) => "Schema",
            Matcher::Broken => "Broken",
        })
    }
}

/// A banned-word list, compiled.
///
/// The definition is [`Words::regex`]: the words as one case-insensitive (Unicode simple
/// case folding) alternation, at Unicode half word boundaries when `word_boundary` holds.
/// When every word is ASCII, an ASCII text (nearly every answer) is searched without it:
/// the text is lowercased a chunk at a time into a buffer on the stack, the words are
/// looked for there all at once (`aho_corasick::packed`: Teddy, SIMD), and at each
/// position where one starts, every word that starts there has its neighbours tested for
/// word bytes. On ASCII text that is the same test: ASCII letters fold only to each other
/// among ASCII bytes, and the ASCII word characters are `[0-9A-Za-z_]`. A text with any
/// other byte goes to the regex, since some non-ASCII letters fold to ASCII ones (`K`,
/// the Kelvin sign, to `k`).
pub(crate) struct Words {
    /// The definition, for texts and word lists the ASCII search does not cover.
    regex: Regex,
    /// The ASCII search, when every word is ASCII, non-empty and at most
    /// [`MAX_ASCII_WORD`] bytes long, and the packed searcher takes the list (it needs
    /// SIMD on x86-64 or aarch64 and a list of at most a few dozen words).
    ascii: Option<AsciiWords>,
    /// `match_mode: word_boundary`.
    word_boundary: bool,
}

/// The ASCII search of a banned-word list.
struct AsciiWords {
    /// Finds the leftmost position where a word starts.
    searcher: packed::Searcher,
    /// The words, ASCII-lowercased.
    words: Vec<Box<[u8]>>,
    /// The longest word's length in bytes.
    longest: usize,
}

/// Bytes of text lowercased at a time by the ASCII search.
const CHUNK: usize = 256;

/// The longest word the ASCII search takes: consecutive chunks overlap by one byte less,
/// so every occurrence lies whole in one chunk.
const MAX_ASCII_WORD: usize = 64;

impl Words {
    fn new(words: &[String], word_boundary: bool) -> Option<Words> {
        let regex = Regex::new(&words_pattern(words, word_boundary)).ok()?;
        let ascii = (!words.is_empty()
            && words
                .iter()
                .all(|w| !w.is_empty() && w.len() <= MAX_ASCII_WORD && w.is_ascii()))
        .then(|| {
            let words: Vec<Box<[u8]>> = words
                .iter()
                .map(|w| w.to_ascii_lowercase().into_bytes().into_boxed_slice())
                .collect();
            let searcher = packed::Searcher::new(words.iter())?;
            let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
            Some(AsciiWords {
                searcher,
                words,
                longest,
            })
        })
        .flatten();
        Some(Words {
            regex,
            ascii,
            word_boundary,
        })
    }

    /// Whether a word occurs in `text`.
    fn occur_in(&self, text: &str) -> bool {
        let found = match &self.ascii {
            Some(ascii) => ascii.occur_in(text.as_bytes(), self.word_boundary),
            None => None,
        };
        found.unwrap_or_else(|| self.regex.is_match(text))
    }
}

impl AsciiWords {
    /// Whether a word occurs in `text`, or `None` when `text` is not ASCII.
    fn occur_in(&self, text: &[u8], word_boundary: bool) -> Option<bool> {
        let mut buf = [0u8; CHUNK];
        let mut start = 0;
        loop {
            let end = text.len().min(start + CHUNK);
            let chunk = &mut buf[..end - start];
            let mut high = 0u8;
            for (b, t) in chunk.iter_mut().zip(&text[start..end]) {
                high |= t;
                *b = t.to_ascii_lowercase();
            }
            if !high.is_ascii() {
                return None;
            }
            let mut from = 0;
            while let Some(m) = self.searcher.find_in(&*chunk, (from..chunk.len()).into()) {
                if !word_boundary {
                    return Some(true);
                }
                // The leftmost-first match is one of the words that start here: test them
                // all, since a shorter or later one may be bounded where it is not.
                let at = m.start();
                let here = &chunk[at..];
                let bounded_here = |w: &[u8]| {
                    here.starts_with(w) && bounded(text, start + at, start + at + w.len())
                };
                if self.words.iter().any(|w| bounded_here(w)) {
                    return Some(true);
                }
                from = at + 1;
            }
            if end == text.len() {
                return Some(false);
            }
            start = end + 1 - self.longest;
        }
    }
}

/// Whether `text[at..end]` is neither preceded nor followed by an ASCII word byte.
fn bounded(text: &[u8], at: usize, end: usize) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let before = at.checked_sub(1).is_some_and(|i| word(text[i]));
    let after = text.get(end).is_some_and(|&b| word(b));
    !before && !after
}

/// The banned-word regex: `(?i)` and the escaped words as one alternation, between half
/// word boundaries in `word_boundary` mode.
fn words_pattern(words: &[String], word_boundary: bool) -> String {
    let mut pattern = String::from("(?i)");
    if word_boundary {
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
    if word_boundary {
        pattern.push_str(r"\b{end-half}");
    }
    pattern
}

/// Compiles `g` once.
pub(crate) fn compile(g: &Guard) -> Matcher {
    match &g.check {
        Check::BannedWords {
            words,
            word_boundary,
        } => Words::new(words, *word_boundary)
            .map_or(Matcher::Broken, |w| Matcher::Words(Box::new(w))),
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

/// What a failing verdict of a host validator does to the run (`later-versions.md` §4):
/// the same as a triggered built-in validator that replaces. A failed or malformed
/// answer to a `guard` call counts as a failing verdict (fail closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardEffect {
    /// An input check (`direction: input`): the model is not called and the output is
    /// the validator's message.
    InputReplaced,
    /// A text answer is replaced by the validator's message.
    Replaced,
    /// A structured answer (an `output_schema`, or a JSON answer) fails the attempt with
    /// `guardrail_blocked`, which a `retry` modifier retries.
    Blocked,
}

impl GuardEffect {
    /// What the run does, in words: "the answer is replaced by the validator's message".
    pub fn describe(self) -> &'static str {
        match self {
            GuardEffect::InputReplaced => {
                "the model is not called and the output is the validator's message"
            }
            GuardEffect::Replaced => "the answer is replaced by the validator's message",
            GuardEffect::Blocked => {
                "the structured answer is blocked with guardrail_blocked (a retry modifier asks again)"
            }
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
        Check::BannedWords { .. } => trigger(matches!(m, Matcher::Words(w) if w.occur_in(text))),
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
    use proptest::prelude::{prop, prop_oneof, Just, Strategy};
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
    fn banned_words_across_chunks_and_overlaps() {
        let at_end = format!("{}darn", "x ".repeat(CHUNK));
        assert_eq!(verdict(words(&["darn"], true), &at_end), Verdict::Replace);
        let across = format!("{} DaRn it", "x".repeat(CHUNK - 3));
        assert_eq!(verdict(words(&["darn"], true), &across), Verdict::Replace);
        let glued = format!("{}darn", "x".repeat(CHUNK - 2));
        assert_eq!(verdict(words(&["darn"], true), &glued), Verdict::Pass);
        assert_eq!(verdict(words(&["darn"], false), &glued), Verdict::Replace);
        // The first occurrence is glued to a word, an overlapping later one is not.
        assert_eq!(verdict(words(&["a-a"], true), "xa-a-a"), Verdict::Replace);
        assert_eq!(
            verdict(words(&["ab", "b"], true), "xab b"),
            Verdict::Replace
        );
        // Non-ASCII text goes to the regex: the Kelvin sign folds to `k`.
        assert_eq!(
            verdict(words(&["kill"], true), "\u{212a}ILL"),
            Verdict::Replace
        );
        assert_eq!(
            verdict(words(&["kill"], true), "kill\u{301}"),
            Verdict::Pass
        );
        assert_eq!(verdict(words(&["kill"], true), "é kill"), Verdict::Replace);
    }

    /// Pieces of ASCII text: the banned words in any case, separators and word bytes.
    fn ascii_piece(list: &[String]) -> impl Strategy<Value = String> {
        let word =
            (prop::sample::select(list.to_vec()), proptest::num::u64::ANY).prop_map(|(w, case)| {
                let upper = |i: usize| (case >> (i % 64)) & 1 == 1;
                w.chars()
                    .enumerate()
                    .map(|(i, c)| if upper(i) { c.to_ascii_uppercase() } else { c })
                    .collect()
            });
        prop_oneof![
            4 => word,
            4 => "[abAB_1' .-]{1,3}",
            1 => (1..600usize).prop_map(|n| "b".repeat(n)),
            1 => (1..40usize).prop_map(|n| "a ".repeat(n)),
        ]
    }

    /// Texts, half of them ASCII; the others hold non-ASCII characters that fold to ASCII,
    /// are word characters, or are neither.
    fn text(list: &[String]) -> impl Strategy<Value = String> {
        let other = prop::sample::select(vec![
            "\u{212a}", "\u{17f}", "é", "É", "\u{301}", "ß", "中", "\u{a0}", "\u{2028}",
        ])
        .prop_map(str::to_owned);
        let any_piece = prop_oneof![8 => ascii_piece(list), 1 => other];
        prop_oneof![
            proptest::collection::vec(ascii_piece(list), 0..60),
            proptest::collection::vec(any_piece, 0..60),
        ]
        .prop_map(|pieces| pieces.concat())
    }

    /// Banned-word lists (lowercased, as the compiler leaves them), a mode and a text.
    fn words_case() -> impl Strategy<Value = (Vec<String>, bool, String)> {
        let list = proptest::collection::vec("[abkAB_1' .-]{1,4}|é|[ab]\u{17f}", 1..4)
            .prop_map(|l| l.iter().map(|w| w.to_lowercase()).collect::<Vec<_>>());
        (list, proptest::bool::ANY).prop_flat_map(|(list, wb)| {
            let text = text(&list);
            (Just(list), Just(wb), text)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// The search agrees with its definition, the case-insensitive regex at Unicode
        /// half word boundaries, on any text.
        #[test]
        fn banned_words_agree_with_the_regex((list, word_boundary, text) in words_case()) {
            let reference = Regex::new(&words_pattern(&list, word_boundary)).unwrap();
            let found = Words::new(&list, word_boundary).unwrap().occur_in(&text);
            proptest::prop_assert_eq!(found, reference.is_match(&text), "{:?} in {:?}", list, text);
        }
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
