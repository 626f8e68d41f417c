//! The embedded schemas' `pattern`s, matched without compiling a regular expression.
//!
//! Compiling a pattern with `regex-lite` costs tens of thousands of instructions, and the
//! schema walk of a small pack meets a handful of patterns once each, so compiling them
//! was about a sixth of `packc check` on a one-composition pack. Almost every pattern in
//! the embedded schemas is a plain sequence of character classes (`^[a-z][a-z0-9_-]*$`,
//! `^[a-z]{2}$`), and the one that is not and that nearly every pack meets is the semantic
//! version of `version`. [`Simple`] matches the first kind in one pass over the text,
//! [`semver`] the second; [`Matcher`] compiles anything else with `regex-lite`.
//!
//! Both only see ASCII text (the walk sends a string with other characters to the compiled
//! validator), where `\d` is `[0-9]` in every dialect.

use regex_lite::Regex;

/// The semantic-version pattern of the schemas' `version` members (semver 2.0.0 with an
/// optional `v`).
pub(super) const SEMVER: &str = r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$";

/// The most steps a [`Simple`] pattern may have (one bit each in the state set).
const MAX_STEPS: usize = 63;

/// A `pattern` made ready to match: by hand where this module knows it ([`SEMVER`], a
/// [`Simple`] one), else compiled.
pub(super) enum Matcher {
    /// [`SEMVER`], matched by [`semver`].
    Semver,
    /// A sequence of character classes.
    Simple(Simple),
    /// Anything else, compiled with `regex-lite` (rather than `regex`: the walk meets a
    /// pattern a few times per process, and `regex-lite` compiles in a fraction of the
    /// time).
    Regex(Regex),
}

impl Matcher {
    /// The matcher of `pattern`; `None` when it does not compile.
    pub(super) fn new(pattern: &str) -> Option<Matcher> {
        if pattern == SEMVER {
            return Some(Matcher::Semver);
        }
        if let Some(simple) = Simple::parse(pattern) {
            return Some(Matcher::Simple(simple));
        }
        Regex::new(pattern).ok().map(Matcher::Regex)
    }

    /// Whether the ASCII string `s` matches.
    pub(super) fn is_match(&self, s: &str) -> bool {
        match self {
            Matcher::Semver => semver(s),
            Matcher::Simple(simple) => simple.matches(s),
            Matcher::Regex(regex) => regex.is_match(s),
        }
    }
}

/// A pattern anchored at both ends whose body is a sequence of steps, each a character
/// class or an escaped character, taken once, `*`, `+`, `?` or `{n}` times:
/// `^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_.-]*$`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Simple {
    /// The steps in order: `+` is written as a step taken once and a repeating one,
    /// `{n}` as `n` steps taken once, `?` as an optional step taken once.
    steps: Vec<Step>,
    /// Whether every step is taken exactly once but the last, which may repeat (as in
    /// nearly every embedded pattern): then the text's `k`th byte is in the `k`th step's
    /// set, and every byte past the last step in its set, read in one pass with no set of
    /// states.
    linear: bool,
}

/// One step of a [`Simple`] pattern.
#[derive(Debug, PartialEq, Eq)]
struct Step {
    /// The accepted bytes, one bit each (ASCII only).
    set: u128,
    /// Zero or more times, or exactly once.
    repeat: bool,
    /// May be skipped (`?`, and every repeating step).
    optional: bool,
}

impl Simple {
    /// Reads `pattern`; `None` when it is not of this form.
    pub(super) fn parse(pattern: &str) -> Option<Simple> {
        // An escaped `$` at the end leaves a lone `\\` at the end of the body, which
        // does not parse.
        let body = pattern.strip_prefix('^')?.strip_suffix('$')?;
        let bytes = body.as_bytes();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let (set, next) = match bytes[i] {
                b'[' => class(bytes, i + 1)?,
                b'\\' => (escape(*bytes.get(i + 1)?)?, i + 2),
                b if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b':' => {
                    (1u128 << b, i + 1)
                }
                _ => return None,
            };
            i = next;
            match bytes.get(i) {
                Some(b'*') => {
                    steps.push(Step::star(set));
                    i += 1;
                }
                Some(b'+') => {
                    steps.push(Step::once(set));
                    steps.push(Step::star(set));
                    i += 1;
                }
                Some(b'?') => {
                    steps.push(Step {
                        optional: true,
                        ..Step::once(set)
                    });
                    i += 1;
                }
                Some(b'{') => {
                    let close = i + bytes[i..].iter().position(|&b| b == b'}')?;
                    let n: usize = std::str::from_utf8(&bytes[i + 1..close])
                        .ok()?
                        .parse()
                        .ok()?;
                    if n > MAX_STEPS {
                        return None;
                    }
                    steps.extend((0..n).map(|_| Step::once(set)));
                    i = close + 1;
                }
                _ => steps.push(Step::once(set)),
            }
            if steps.len() > MAX_STEPS {
                return None;
            }
        }
        let linear = steps
            .split_last()
            .is_none_or(|(_, init)| init.iter().all(|s| !s.repeat && !s.optional))
            && steps.last().is_none_or(|s| s.repeat || !s.optional);
        Some(Simple { steps, linear })
    }

    /// Whether `s` matches: the set of steps the text may have reached, advanced one
    /// byte at a time (linear in the text, whatever the pattern).
    pub(super) fn matches(&self, s: &str) -> bool {
        if self.linear {
            return self.matches_linear(s.as_bytes());
        }
        let end = self.steps.len();
        let mut at = self.closure(1);
        for &b in s.as_bytes() {
            if b >= 128 {
                return false;
            }
            let mut next = 0u64;
            for (k, step) in self.steps.iter().enumerate() {
                if at & (1 << k) != 0 && step.set & (1 << b) != 0 {
                    next |= if step.repeat { 1 << k } else { 1 << (k + 1) };
                }
            }
            at = self.closure(next);
            if at == 0 {
                return false;
            }
        }
        at & (1 << end) != 0
    }

    /// [`Simple::matches`] when the pattern is [`Simple::linear`].
    fn matches_linear(&self, bytes: &[u8]) -> bool {
        let has = |set: u128, b: u8| b < 128 && (set >> b) & 1 != 0;
        let (once, tail) = match self.steps.split_last() {
            Some((last, init)) if last.repeat => (init, Some(last.set)),
            _ => (&self.steps[..], None),
        };
        if bytes.len() < once.len() || (tail.is_none() && bytes.len() != once.len()) {
            return false;
        }
        let (head, rest) = bytes.split_at(once.len());
        once.iter().zip(head).all(|(step, &b)| has(step.set, b))
            && tail.is_none_or(|set| rest.iter().all(|&b| has(set, b)))
    }

    /// `at` with every state reachable by skipping optional steps.
    fn closure(&self, mut at: u64) -> u64 {
        for (k, step) in self.steps.iter().enumerate() {
            if at & (1 << k) != 0 && step.optional {
                at |= 1 << (k + 1);
            }
        }
        at
    }
}

impl Step {
    fn once(set: u128) -> Step {
        Step {
            set,
            repeat: false,
            optional: false,
        }
    }

    fn star(set: u128) -> Step {
        Step {
            set,
            repeat: true,
            optional: true,
        }
    }
}

/// The set of a bracketed class whose `[` is just before `i`, and the index after its
/// `]`: ranges, single characters and escapes; no negation.
fn class(bytes: &[u8], mut i: usize) -> Option<(u128, usize)> {
    let mut set = 0u128;
    let mut first = true;
    loop {
        let b = *bytes.get(i)?;
        match b {
            b']' if !first => return Some((set, i + 1)),
            b'^' if first => return None,
            b'[' => return None,
            b'\\' => {
                set |= escape(*bytes.get(i + 1)?)?;
                i += 2;
            }
            _ if !b.is_ascii() => return None,
            _ => {
                // A range `a-z`; a `-` first or last is itself.
                if bytes.get(i + 1) == Some(&b'-') && bytes.get(i + 2).is_some_and(|&c| c != b']') {
                    let hi = bytes[i + 2];
                    if hi == b'\\' || !hi.is_ascii() || hi < b {
                        return None;
                    }
                    set |= range(b, hi);
                    i += 3;
                } else {
                    set |= 1 << b;
                    i += 1;
                }
            }
        }
        first = false;
    }
}

/// The bytes of an escape `\c`: `\d`, or a punctuation character taken literally.
fn escape(c: u8) -> Option<u128> {
    match c {
        b'd' => Some(range(b'0', b'9')),
        b'.' | b'-' | b'\\' | b'+' | b'*' | b'?' | b'(' | b')' | b'[' | b']' | b'{' | b'}'
        | b'|' | b'^' | b'$' => Some(1 << c),
        _ => None,
    }
}

/// The bytes `lo..=hi`.
fn range(lo: u8, hi: u8) -> u128 {
    (lo..=hi).fold(0, |set, b| set | 1 << b)
}

/// Whether `s` matches [`SEMVER`]: `v?MAJOR.MINOR.PATCH(-PRE)?(+BUILD)?`.
pub(super) fn semver(s: &str) -> bool {
    let s = s.strip_prefix('v').unwrap_or(s);
    let b = s.as_bytes();
    // MAJOR.MINOR.PATCH, read byte by byte: most versions are nothing more.
    let mut at = 0;
    for k in 0..3 {
        if k > 0 {
            if b.get(at) != Some(&b'.') {
                return false;
            }
            at += 1;
        }
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if !numeric(&s[start..at]) {
            return false;
        }
    }
    let rest = &s[at..];
    let (pre, build) = if let Some(rest) = rest.strip_prefix('-') {
        match rest.split_once('+') {
            Some((pre, build)) => (Some(pre), Some(build)),
            None => (Some(rest), None),
        }
    } else if let Some(build) = rest.strip_prefix('+') {
        (None, Some(build))
    } else if rest.is_empty() {
        (None, None)
    } else {
        return false;
    };
    let alnum = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    let pre_ok = pre.is_none_or(|pre| {
        pre.split('.').all(|id| {
            let b = id.as_bytes();
            // A number without leading zeros, or an identifier with a letter or `-`.
            numeric(id)
                || (!b.is_empty()
                    && b.iter().all(|&c| alnum(c))
                    && !b.iter().all(u8::is_ascii_digit))
        })
    });
    let build_ok = build.is_none_or(|build| {
        build
            .split('.')
            .all(|id| !id.is_empty() && id.bytes().all(alnum))
    });
    pre_ok && build_ok
}

/// `0|[1-9]\d*`.
fn numeric(s: &str) -> bool {
    match s.as_bytes() {
        [b'0'] => true,
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
        [] => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Whether `s` matches `pattern`, when the pattern is one this module matches by
    /// hand; `None` for one that goes to `regex-lite`.
    fn matches(pattern: &str, s: &str) -> Option<bool> {
        match Matcher::new(pattern)? {
            Matcher::Regex(_) => None,
            m => Some(m.is_match(s)),
        }
    }

    /// Every `pattern` of the embedded schemas.
    fn embedded() -> &'static [String] {
        static PATTERNS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(read_embedded);
        &PATTERNS
    }

    /// The embedded patterns this module knows, each with its compiled regex.
    fn known() -> &'static [(String, Regex)] {
        static KNOWN: std::sync::LazyLock<Vec<(String, Regex)>> = std::sync::LazyLock::new(|| {
            embedded()
                .iter()
                .filter(|p| matches(p, "").is_some())
                .map(|p| (p.clone(), Regex::new(p).unwrap()))
                .collect()
        });
        &KNOWN
    }

    fn read_embedded() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                collect(&value, &mut out);
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn collect(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("pattern", serde_json::Value::String(p)) => out.push(p.clone()),
                        _ => collect(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| collect(v, out)),
            _ => {}
        }
    }

    /// Every embedded pattern but the ISO 8601 duration is known here; the duration
    /// goes to the compiled regular expression.
    #[test]
    fn the_embedded_patterns_are_known() {
        let patterns = embedded();
        assert!(patterns.len() >= 10, "{patterns:?}");
        let unknown: Vec<&String> = patterns
            .iter()
            .filter(|p| matches(p, "x").is_none())
            .collect();
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        assert!(unknown[0].starts_with("^P(?:"), "{unknown:?}");
        assert!(patterns.iter().any(|p| p == SEMVER));
    }

    /// Steps taken once with a repeating last one are matched in one pass; any other
    /// shape by the set of states.
    #[test]
    fn linear_shapes() {
        for (p, linear) in [
            ("^[a-z][a-z0-9_-]*$", true),
            ("^[a-z0-9_]+$", true),
            ("^[a-z]{2}$", true),
            ("^$", true),
            ("^[a-z][a-z0-9_-]*\\.[a-z][a-z0-9_.-]*$", false),
            ("^a?$", false),
            ("^a?b$", false),
        ] {
            assert_eq!(Simple::parse(p).unwrap().linear, linear, "{p}");
        }
        let two = Simple::parse("^[a-z]{2}$").unwrap();
        assert!(two.matches("ab") && !two.matches("a") && !two.matches("abc"));
        let id = Simple::parse("^[a-z][a-z0-9_-]*$").unwrap();
        assert!(id.matches("c0_p0") && !id.matches("0c") && !id.matches("") && !id.matches("aé"));
    }

    #[test]
    fn forms_outside_the_subset_are_not_simple() {
        for p in [
            "[a-z]+$",
            "^[a-z]+",
            "^(a|b)$",
            "^[^a-z]$",
            "^a.b$",
            r"^[a-z]\$",
            r"^\w+$",
            "^é$",
            "^[z-a]$",
            "^a{99}$",
        ] {
            assert_eq!(Simple::parse(p), None, "{p}");
        }
    }

    #[test]
    fn semver_examples() {
        for ok in [
            "1.0.0",
            "v1.2.3",
            "0.0.0-alpha.1",
            "1.0.0-0a.x-y+build.007",
            "10.20.30-rc.1+b",
        ] {
            assert!(semver(ok), "{ok}");
        }
        for bad in [
            "1.0",
            "01.0.0",
            "1.0.0-",
            "1.0.0-01",
            "1.0.0+",
            "1.0.0+a..b",
            "v",
            "1.0.0.0",
            "V1.0.0",
            "1.0.0-a+b+c",
        ] {
            assert!(!semver(bad), "{bad}");
        }
    }

    /// Text from the bytes the patterns care about, so that matches are common.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just('a'),
                Just('z'),
                Just('A'),
                Just('0'),
                Just('1'),
                Just('9'),
                Just('v'),
                Just('.'),
                Just('-'),
                Just('_'),
                Just('+'),
                Just(':'),
                Just(' '),
                Just('x'),
            ],
            0..14,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        /// Every known embedded pattern agrees with the compiled regular expression.
        #[test]
        fn known_patterns_agree_with_the_regex(s in text(), semverish in "v?[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}(-[0-9a-z.-]{0,6})?(\\+[0-9a-z.-]{0,5})?") {
            for (p, re) in known() {
                for s in [&s, &semverish] {
                    prop_assert_eq!(matches(p, s), Some(re.is_match(s)), "{} on {:?}", p, s);
                }
            }
        }

        /// Generated simple patterns agree with the compiled regular expression.
        #[test]
        fn simple_patterns_agree_with_the_regex(
            steps in proptest::collection::vec(
                (prop_oneof![Just("[a-z]"), Just("[0-9_-]"), Just(r"\."), Just("a"), Just(r"\d"), Just("[a-zA-Z_:]")],
                 prop_oneof![Just(""), Just("*"), Just("+"), Just("?"), Just("{2}")]),
                1..6,
            ),
            s in text(),
        ) {
            let body: String = steps.iter().map(|(c, q)| format!("{c}{q}")).collect();
            let p = format!("^{body}$");
            let simple = Simple::parse(&p).expect("simple");
            prop_assert_eq!(simple.matches(&s), Regex::new(&p).unwrap().is_match(&s), "{} on {:?}", p, s);
        }
    }
}
