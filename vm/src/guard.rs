//! Guardrails: a prompt's guard program ([`ir_spec::Guard`]s) judged on a text
//! (`later-versions.md` §4).
//!
//! [`Matcher`]s are built once per [`Program`](crate::Program): banned-word lists become
//! [`Words`] (an ASCII search by the words' rarest bytes or a packed multi-substring
//! searcher, and the list as one case-insensitive regex),
//! `regex` patterns become a [`Pattern`] (compiled, with a literal fast path) and
//! `json_schema` schemas are compiled. [`judge`] then reads the text once per built-in
//! guard and allocates nothing. The lane applies the verdicts (truncate,
//! replace, block) and records them (`lane::guard_chain`).

use aho_corasick::{packed, AhoCorasick};
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
    Regex(Box<Pattern>),
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

/// A `regex` validator's pattern, compiled.
///
/// The definition is [`Pattern::regex`]. A pattern that matches exactly a finite set of
/// strings and asserts nothing about where (no `^`, `$`, `\b`: an alternation of
/// literals, a literal with a small class or an optional part, case-insensitive or not,
/// groups and all) is also compiled to those strings: it matches a text exactly when one of
/// them occurs in it, which a multi-substring search answers without the regex engine's
/// per-search set-up (about 800 instructions on a 200-character answer, against a few
/// dozen when the literal is near the start).
pub(crate) struct Pattern {
    /// The definition.
    regex: Regex,
    /// The strings the pattern matches, all of them, when it is such a pattern.
    literals: Option<Literals>,
}

/// The strings a literal-only pattern matches.
enum Literals {
    /// One of them is empty: every text matches.
    Always,
    /// At most [`MAX_FINDERS`]: one SIMD substring search each, which costs less than
    /// a packed searcher's set-up on an answer of a few hundred characters.
    Each(Box<[memchr::memmem::Finder<'static>]>),
    /// More: a packed (Teddy) searcher, when it takes them.
    Few(packed::Searcher),
    /// Any number.
    Many(AhoCorasick),
}

impl Pattern {
    fn new(pattern: &str) -> Option<Pattern> {
        let regex = Regex::new(pattern).ok()?;
        let literals = literal_set(pattern).and_then(|set| {
            if set.iter().any(|l| l.is_empty()) {
                return Some(Literals::Always);
            }
            if set.len() <= MAX_FINDERS {
                let finders = set
                    .iter()
                    .map(|l| memchr::memmem::Finder::new(l).into_owned());
                return Some(Literals::Each(finders.collect()));
            }
            match packed::Searcher::new(set.iter()) {
                Some(few) => Some(Literals::Few(few)),
                None => AhoCorasick::new(&set).ok().map(Literals::Many),
            }
        });
        Some(Pattern { regex, literals })
    }

    /// Whether the pattern matches somewhere in `text`.
    fn is_match(&self, text: &str) -> bool {
        match &self.literals {
            Some(Literals::Always) => true,
            Some(Literals::Each(finders)) => {
                let text = text.as_bytes();
                finders.iter().any(|f| f.find(text).is_some())
            }
            Some(Literals::Few(few)) => few.find(text).is_some(),
            Some(Literals::Many(ac)) => ac.is_match(text),
            None => self.regex.is_match(text),
        }
    }
}

/// The most literals searched for one by one ([`Literals::Each`]).
const MAX_FINDERS: usize = 3;

/// Every string `pattern` matches, when that is a finite set of at most a few hundred and
/// the pattern has no look-around assertion (which the literal extraction takes for the
/// empty string); `None` otherwise. The parser is `regex`'s, with its defaults.
fn literal_set(pattern: &str) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::literal::Extractor;
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    if !hir.properties().look_set().is_empty() {
        return None;
    }
    let seq = Extractor::new().extract(&hir);
    if !seq.is_exact() {
        return None;
    }
    let literals = seq.literals()?;
    Some(literals.iter().map(|l| l.as_bytes().to_vec()).collect())
}

/// A banned-word list, compiled.
///
/// The definition is [`Words::regex`]: the words as one case-insensitive (Unicode simple
/// case folding) alternation, at Unicode half word boundaries when `word_boundary` holds.
/// When every word is ASCII, an ASCII text (nearly every answer) is searched without it:
/// the text is lowercased a chunk at a time into a buffer on the stack, the places where a
/// word may be are found there all at once ([`Search`]: the words' rarest bytes by
/// `memchr`, or `aho_corasick::packed`'s Teddy, SIMD both), and at each such place every
/// word that occurs there has its neighbours tested for word bytes. On ASCII text that is the same test: ASCII letters fold only to each other
/// among ASCII bytes, and the ASCII word characters are `[0-9A-Za-z_]`. A text with any
/// other byte goes to the regex, since some non-ASCII letters fold to ASCII ones (`K`,
/// the Kelvin sign, to `k`).
pub(crate) struct Words {
    /// The definition, for texts and word lists the ASCII search does not cover.
    regex: Regex,
    /// The ASCII search, when every word is ASCII, non-empty and at most
    /// [`MAX_ASCII_WORD`] bytes long, and [`Search`] takes the list (the rarest bytes of
    /// at most three distinct values, or else the packed searcher, which needs SIMD on
    /// x86-64 or aarch64 and a list of at most a few dozen words).
    ascii: Option<AsciiWords>,
    /// `match_mode: word_boundary`.
    word_boundary: bool,
}

/// The ASCII search of a banned-word list.
struct AsciiWords {
    /// Finds where a word may be.
    search: Search,
    /// The words, ASCII-lowercased.
    words: Vec<Box<[u8]>>,
    /// The longest word's length in bytes.
    longest: usize,
}

/// How [`AsciiWords`] finds the places to test.
enum Search {
    /// The words' rarest bytes (by `memchr`'s byte frequency ranking), when they are at
    /// most three distinct bytes: `memchr` finds each of them in the chunk and every word
    /// whose rarest byte it is is tested around it. On a short list this skips most of
    /// the text at SIMD speed with far less set-up than the packed searcher.
    Rare {
        /// The distinct rarest bytes (one to three; the rest repeat the first).
        needles: [u8; 3],
        /// How many of `needles` are distinct.
        count: usize,
        /// For each word, the offset of its rarest byte.
        at: Vec<usize>,
    },
    /// A packed (Teddy) searcher for the leftmost position where a word starts.
    Packed(packed::Searcher),
}

impl Search {
    fn new(words: &[Box<[u8]>]) -> Option<Search> {
        let at: Vec<usize> = words
            .iter()
            .map(|w| memchr::arch::all::packedpair::Pair::new(w).map_or(0, |p| p.index1().into()))
            .collect();
        let mut needles = Vec::with_capacity(3);
        for (w, &i) in words.iter().zip(&at) {
            if !needles.contains(&w[i]) {
                needles.push(w[i]);
            }
        }
        if needles.len() <= 3 {
            let count = needles.len();
            let first = needles[0];
            needles.resize(3, first);
            return Some(Search::Rare {
                needles: [needles[0], needles[1], needles[2]],
                count,
                at,
            });
        }
        packed::Searcher::new(words.iter()).map(Search::Packed)
    }
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
            let search = Search::new(&words)?;
            let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
            Some(AsciiWords {
                search,
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
            let chunk = &*chunk;
            // Whether word `w` occurs at `at` in the chunk (bounded, when it must be).
            let occurs = |at: usize, w: &[u8]| {
                chunk[at..].starts_with(w)
                    && (!word_boundary || bounded(text, start + at, start + at + w.len()))
            };
            let found = match &self.search {
                Search::Rare { needles, count, at } => {
                    // Every word whose rarest byte is the one at `p`, placed around it.
                    let around = |p: usize| {
                        self.words
                            .iter()
                            .zip(at)
                            .any(|(w, &i)| w[i] == chunk[p] && p >= i && occurs(p - i, w))
                    };
                    let [a, b, c] = *needles;
                    match count {
                        1 => memchr::memchr_iter(a, chunk).any(around),
                        2 => memchr::memchr2_iter(a, b, chunk).any(around),
                        _ => memchr::memchr3_iter(a, b, c, chunk).any(around),
                    }
                }
                Search::Packed(searcher) => {
                    let mut from = 0;
                    let mut found = false;
                    while let Some(m) = searcher.find_in(chunk, (from..chunk.len()).into()) {
                        // The leftmost-first match is one of the words that start here:
                        // test them all, since a shorter or later one may be bounded
                        // where it is not.
                        let at = m.start();
                        if self.words.iter().any(|w| occurs(at, w)) {
                            found = true;
                            break;
                        }
                        from = at + 1;
                    }
                    found
                }
            };
            if found {
                return Some(true);
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
        Check::Regex { pattern, .. } => {
            Pattern::new(pattern).map_or(Matcher::Broken, |p| Matcher::Regex(Box::new(p)))
        }
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
                    // An ASCII prefix of `max` bytes is `max` characters: no counting.
                    let cut = if text.as_bytes()[..max].is_ascii() {
                        Some(max)
                    } else {
                        text.char_indices().nth(max).map(|(cut, _)| cut)
                    };
                    if let Some(cut) = cut {
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

    #[test]
    fn short_lists_search_by_rare_bytes_long_ones_by_teddy() {
        let kind = |list: &[&str]| {
            let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            match Words::new(&list, true).unwrap().ascii.map(|a| a.search) {
                Some(Search::Rare { count, .. }) => format!("rare {count}"),
                Some(Search::Packed(_)) => "packed".to_owned(),
                None => "regex".to_owned(),
            }
        };
        assert_eq!(kind(&["lawsuit", "refund", "password"]), "rare 2");
        let long = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(kind(&long), "packed");
        }
        let words = |list: &[&str]| words(list, true);
        assert_eq!(verdict(words(&long), "an echo."), Verdict::Replace);
        assert_eq!(verdict(words(&long), "echoes"), Verdict::Pass);
        assert_eq!(
            verdict(words(&["lawsuit", "refund"]), "A Refund, please"),
            Verdict::Replace
        );
        assert_eq!(
            verdict(words(&["lawsuit", "refund"]), "refunds"),
            Verdict::Pass
        );
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
        let list = proptest::collection::vec("[abkAB_1' .-]{1,4}|é|[ab]\u{17f}", 1..7)
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
    fn literal_patterns_skip_the_regex_engine() {
        let set = |p: &str| {
            literal_set(p).map(|s| {
                s.into_iter()
                    .map(|l| String::from_utf8(l).unwrap())
                    .collect::<Vec<_>>()
            })
        };
        let pattern = |p: &str| Pattern::new(p).unwrap();
        assert_eq!(
            set(r#""(type|summary)""#).unwrap(),
            [r#""type""#, r#""summary""#]
        );
        assert_eq!(set("colou?r").unwrap(), ["colour", "color"]);
        // o, O times k, K and the Kelvin sign.
        assert_eq!(set("(?i)ok").unwrap().len(), 6);
        // Where a match may be, or how long it is, is not a finite set of strings.
        for p in [r"^a", r"a$", r"\bword\b", r"(?m)^a", "a+", "[a-z]x", "."] {
            assert_eq!(set(p), None, "{p}");
            assert!(pattern(p).literals.is_none(), "{p}");
        }
        assert!(matches!(pattern("a?").literals, Some(Literals::Always)));
        assert!(pattern("a?").is_match("zzz"));
        let kind = |p: &str| match pattern(p).literals {
            Some(Literals::Each(_)) => "each",
            Some(Literals::Few(_)) => "few",
            Some(Literals::Many(_)) => "many",
            _ => "regex",
        };
        assert_eq!(kind("refund"), "each");
        assert_eq!(kind(r#""(type|summary)""#), "each");
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(kind("(?i)ok"), "few");
        }
        // More strings than a packed searcher takes.
        let many =
            "(?i)abc|def|ghi|jlm|nop|qrt|uvw|xyz|bcd|efg|hij|lmn|opq|rtu|vwx|yza|cde|fgh|ijl|mno";
        assert_eq!(literal_set(many).map(|s| s.len()), Some(160));
        assert_eq!(kind(many), "many");
        // `(?i)` folds as Unicode does: the Kelvin sign is a `k`.
        assert!(pattern("(?i)kill").is_match("\u{212a}ILL"));
        assert!(!pattern("kill").is_match("KILL"));
    }

    /// Patterns made of literals, classes, optional parts, alternations, `(?i)` and
    /// anchors (which keep the regex).
    fn pattern_case() -> impl Strategy<Value = (String, String)> {
        let atom = prop_oneof![
            "[abK]{1,3}",
            Just("[ab]".to_owned()),
            Just("\\.".to_owned()),
            Just("é".to_owned()),
            Just("(?:a|bb)".to_owned()),
            Just("(b|\u{212a})?".to_owned()),
        ];
        let flag = prop::sample::select(vec!["", "(?i)", "^", "\\b", "(?i)^"]);
        let end = prop::sample::select(vec!["", "$", "\\b"]);
        let alt = proptest::collection::vec(proptest::collection::vec(atom, 1..4), 1..4);
        let text = "[abkABK. é\u{212a}]{0,12}";
        (flag, alt, end, text).prop_map(|(flag, alt, end, text)| {
            let alt: Vec<String> = alt.into_iter().map(|a| a.concat()).collect();
            (format!("{flag}(?:{}){end}", alt.join("|")), text)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// A pattern's literal fast path agrees with the regex on any text.
        #[test]
        fn literal_patterns_agree_with_the_regex((pattern, text) in pattern_case()) {
            let reference = Regex::new(&pattern).unwrap();
            let found = Pattern::new(&pattern).unwrap().is_match(&text);
            proptest::prop_assert_eq!(found, reference.is_match(&text), "{:?} in {:?}", pattern, text);
        }
    }

    #[test]
    fn long_ascii_answers_are_cut_without_counting() {
        let chars = |n| Check::MaxLength {
            max_characters: Some(n),
            max_tokens: None,
        };
        assert_eq!(verdict(chars(3), "abcd"), Verdict::Truncate(3));
        assert_eq!(verdict(chars(3), "abcé"), Verdict::Truncate(3));
        assert_eq!(verdict(chars(3), "abéd"), Verdict::Truncate(4));
        assert_eq!(verdict(chars(0), "a"), Verdict::Truncate(0));
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
