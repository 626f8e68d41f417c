//! Guardrails: a prompt's guard program ([`ir_spec::Guard`]s) judged on a text
//! (`later-versions.md` §4).
//!
//! [`Matcher`]s are built once per [`Program`](crate::Program): banned-word lists become
//! [`Words`] (an ASCII search by the words' rarest bytes or a packed multi-substring
//! searcher, and the list as one case-insensitive regex), `regex` patterns become a
//! [`Pattern`] (compiled, with a literal fast path by the same rarest-byte scan) and
//! `json_schema` schemas are compiled. [`judge`] then reads the text once per built-in
//! guard and allocates nothing. The lane applies the verdicts (truncate,
//! replace, block) and records them (`lane/guards.rs`).

use aho_corasick::{packed, AhoCorasick};
use ir_spec::{Check, Guard};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use scan::{Rare, Scanned};

mod scan;

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
    /// At most [`MAX_RARE_LITERALS`], found by their rarest bytes (when those are few):
    /// no set-up per search.
    Rare(Rare),
    /// More: a packed (Teddy) searcher, when it takes them.
    Few(packed::Searcher),
    /// Any number.
    Many(AhoCorasick),
}

impl Pattern {
    /// Compiles `pattern` within `max` bytes (the `regex` crate's `size_limit`, which
    /// bounds the time compiling takes).
    fn new(pattern: &str, max: usize) -> Result<Pattern, regex::Error> {
        let regex = RegexBuilder::new(pattern).size_limit(max).build()?;
        let literals = literal_set(pattern).and_then(|set| {
            if set.iter().any(|l| l.is_empty()) {
                return Some(Literals::Always);
            }
            if set.len() <= MAX_RARE_LITERALS {
                if let Some(rare) = Rare::new(set.iter().map(Vec::as_slice), false) {
                    return Some(Literals::Rare(rare));
                }
            }
            match packed::Searcher::new(set.iter()) {
                Some(few) => Some(Literals::Few(few)),
                None => AhoCorasick::new(&set).ok().map(Literals::Many),
            }
        });
        Ok(Pattern { regex, literals })
    }

    /// Whether the pattern matches somewhere in `text`.
    fn is_match(&self, text: &str) -> bool {
        match &self.literals {
            Some(Literals::Always) => true,
            Some(Literals::Rare(rare)) => {
                matches!(
                    rare.find(text.as_bytes(), |_, _| Some(())),
                    Scanned::Hit(())
                )
            }
            Some(Literals::Few(few)) => few.find(text).is_some(),
            Some(Literals::Many(ac)) => ac.is_match(text),
            None => self.regex.is_match(text),
        }
    }
}

/// The most literals compared around their rarest bytes ([`Literals::Rare`]).
const MAX_RARE_LITERALS: usize = 16;

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
/// the places where a word may be are found ([`AsciiWords`]: the words' rarest bytes in
/// either case by the vector scan of `guard/scan.rs`, or, for a longer list,
/// `aho_corasick::packed`'s Teddy over the text lowercased a chunk at a time), and at
/// each such place every word that occurs there, ignoring ASCII case, has its neighbours
/// tested for word bytes. On ASCII text that is the same test: ASCII letters fold only
/// to each other among ASCII bytes, and the ASCII word characters are `[0-9A-Za-z_]`. A
/// text with any other byte and no occurrence, or an occurrence next to a byte that is
/// not ASCII, goes to the regex, since some non-ASCII letters fold to ASCII ones (`K`,
/// the Kelvin sign, to `k`) and are word characters.
pub(crate) struct Words {
    /// The definition, for texts and word lists the ASCII search does not cover.
    regex: Regex,
    /// The ASCII search, when every word is ASCII, non-empty and at most
    /// [`MAX_ASCII_WORD`] bytes long, and [`AsciiWords`] takes the list (the rarest bytes of
    /// at most three distinct values, or else the packed searcher, which needs SIMD on
    /// x86-64 or aarch64 and a list of at most a few dozen words).
    ascii: Option<AsciiWords>,
    /// `match_mode: word_boundary`.
    word_boundary: bool,
}

/// The ASCII search of a banned-word list: how it finds the places to test.
enum AsciiWords {
    /// The words' rarest bytes in either case, when they are few: the scan finds them
    /// in the text itself and the words are compared around them. On a short list this
    /// skips most of the text at SIMD speed with no set-up and no lowercased copy.
    Rare(Rare),
    /// A packed (Teddy) searcher, over the text lowercased a chunk at a time.
    Packed(Packed),
}

/// [`AsciiWords::Packed`].
struct Packed {
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
    /// The search of a banned-word list, its regex ([`ir_spec::words_pattern`]) compiled
    /// within [`ir_spec::words_size_limit`].
    fn new(words: &[String], word_boundary: bool) -> Result<Words, regex::Error> {
        let regex = RegexBuilder::new(&ir_spec::words_pattern(words, word_boundary))
            .size_limit(ir_spec::words_size_limit(words))
            .build()?;
        let ascii = (!words.is_empty()
            && words
                .iter()
                .all(|w| !w.is_empty() && w.len() <= MAX_ASCII_WORD && w.is_ascii()))
        .then(|| {
            let words: Vec<Box<[u8]>> = words
                .iter()
                .map(|w| w.to_ascii_lowercase().into_bytes().into_boxed_slice())
                .collect();
            AsciiWords::new(words)
        })
        .flatten();
        Ok(Words {
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
    /// The search of `words` (non-empty, ASCII-lowercased): by rarest bytes when they
    /// are few, else packed; `None` when neither takes the list.
    fn new(words: Vec<Box<[u8]>>) -> Option<AsciiWords> {
        if let Some(rare) = Rare::new(words.iter().map(|w| &**w), true) {
            return Some(AsciiWords::Rare(rare));
        }
        let searcher = packed::Searcher::new(words.iter())?;
        let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
        Some(AsciiWords::Packed(Packed {
            searcher,
            words,
            longest,
        }))
    }

    /// Whether a word occurs in `text`, or `None` when the ASCII search cannot tell (a
    /// non-ASCII text with no occurrence, or an occurrence next to a non-ASCII byte).
    fn occur_in(&self, text: &[u8], word_boundary: bool) -> Option<bool> {
        match self {
            AsciiWords::Rare(rare) => {
                match rare.find(text, |s, e| occurrence(text, s, e, word_boundary)) {
                    Scanned::Hit(found) => found,
                    Scanned::Miss { ascii } => ascii.then_some(false),
                }
            }
            AsciiWords::Packed(packed) => packed.in_chunks(text, word_boundary),
        }
    }
}

impl Packed {
    /// The text lowercased a chunk at a time into a buffer on the stack, and the
    /// searcher run over each chunk.
    fn in_chunks(&self, text: &[u8], word_boundary: bool) -> Option<bool> {
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
            let mut from = 0;
            while let Some(m) = self.searcher.find_in(chunk, (from..chunk.len()).into()) {
                // The leftmost-first match is one of the words that start here: test
                // them all, since a shorter or later one may be bounded where it is not.
                let at = m.start();
                for w in &self.words {
                    if !chunk[at..].starts_with(w) {
                        continue;
                    }
                    let (s, e) = (start + at, start + at + w.len());
                    if let Some(found) = occurrence(text, s, e, word_boundary) {
                        return found;
                    }
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

/// What an occurrence of a word at `start..end` of an ASCII search's text says: `true`
/// when it counts (bounded, when it must be), `None` when a neighbour is not ASCII and
/// only the regex can tell; no answer when it does not count and the search goes on.
fn occurrence(text: &[u8], start: usize, end: usize, word_boundary: bool) -> Option<Option<bool>> {
    match word_boundary.then(|| bounded(text, start, end)) {
        None | Some(Some(true)) => Some(Some(true)),
        Some(None) => Some(None),
        Some(Some(false)) => None,
    }
}

/// Whether `text[at..end]` is neither preceded nor followed by an ASCII word byte;
/// `None` when a neighbour is not ASCII (a Unicode word boundary the regex decides).
fn bounded(text: &[u8], at: usize, end: usize) -> Option<bool> {
    let before = at.checked_sub(1).map(|i| text[i]);
    let after = text.get(end).copied();
    let mut word = false;
    for b in [before, after].into_iter().flatten() {
        if !b.is_ascii() {
            return None;
        }
        word |= b.is_ascii_alphanumeric() || b == b'_';
    }
    Some(!word)
}

/// Compiles `g` once: a `Regex` pattern within `max_pattern_size` bytes, a banned-word
/// list's regex within [`ir_spec::words_size_limit`]; `Err` carries the limit when it
/// compiles past it.
pub(crate) fn compile(g: &Guard, max_pattern_size: usize) -> Result<Matcher, usize> {
    Ok(match &g.check {
        Check::BannedWords {
            words,
            word_boundary,
        } => match Words::new(words, *word_boundary) {
            Ok(w) => Matcher::Words(Box::new(w)),
            Err(regex::Error::CompiledTooBig(max)) => return Err(max),
            Err(_) => Matcher::Broken,
        },
        Check::Regex { pattern, .. } => match Pattern::new(pattern, max_pattern_size) {
            Ok(p) => Matcher::Regex(Box::new(p)),
            Err(regex::Error::CompiledTooBig(max)) => return Err(max),
            Err(_) => Matcher::Broken,
        },
        Check::JsonSchema(schema) => jsonschema::validator_for(&schema.parse())
            .map_or(Matcher::Broken, |v| Matcher::Schema(Box::new(v))),
        _ => Matcher::Plain,
    })
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

/// How many of the built-in guards of prompt `prompt` (its index in the module) trigger
/// on `text`, each judged as the output chain judges it: the validators' own cost, with
/// no run around them (`vm_guard/judge3_200` in `benches/vm.rs`).
pub fn judge_prompt(program: &crate::Program, prompt: usize, text: &str) -> usize {
    let guards = &program.m.prompts[prompt].guards;
    let matchers = &program.guards[prompt];
    guards
        .iter()
        .zip(matchers)
        .filter(|(g, m)| judge(g, m, text) != Verdict::Pass)
        .count()
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
mod tests;
