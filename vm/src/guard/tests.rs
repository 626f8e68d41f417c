//! The validators' unit and property tests.

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
    judge(&g, &compile(&g, usize::MAX).unwrap(), text)
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
    // A word that ends a chunk of the packed search, glued to a letter past it.
    let long = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "juliet", "kilo",
    ];
    let edge = format!("{}kilo\u{e9}", " ".repeat(CHUNK - 4));
    assert_eq!(verdict(words(&long, true), &edge), Verdict::Pass);
    assert_eq!(verdict(words(&long, false), &edge), Verdict::Replace);
}

#[test]
fn short_lists_search_by_rare_bytes_long_ones_by_teddy() {
    let kind = |list: &[&str]| {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        match Words::new(&list, true).unwrap().ascii {
            Some(AsciiWords::Rare(rare)) => format!("rare {}", rare.distinct()),
            Some(AsciiWords::Packed(_)) => "packed".to_owned(),
            None => "regex".to_owned(),
        }
    };
    assert_eq!(kind(&["lawsuit", "refund", "password"]), "rare 2");
    // Their rarest bytes are four letters.
    assert_eq!(
        kind(&["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]),
        "rare 4"
    );
    let long = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "juliet", "kilo",
    ];
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

/// A long list compiles within its own size limit, and judges: 20,000 words of seven
/// letters take more than the `regex` crate's default 10 MiB, past which the list used
/// to be broken, replacing every answer.
#[test]
fn a_long_banned_word_list_compiles_and_judges() {
    let mut seed = 7u64;
    let mut letter = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        char::from(b'a' + ((seed >> 33) % 26) as u8)
    };
    let words: Vec<String> = (0..20_000)
        .map(|_| (0..7).map(|_| letter()).collect())
        .collect();
    assert!(Regex::new(&ir_spec::words_pattern(&words, true)).is_err());
    let check = Check::BannedWords {
        words: ir_spec::banned_word_list(words.iter().map(String::as_str)),
        word_boundary: true,
    };
    let last = words.last().unwrap().to_uppercase();
    // Non-ASCII text goes to the regex.
    assert_eq!(verdict(check.clone(), "héllo"), Verdict::Pass);
    assert_eq!(verdict(check, &format!("héllo {last}!")), Verdict::Replace);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    /// The search agrees with its definition, the case-insensitive regex at Unicode
    /// half word boundaries, on any text.
    #[test]
    fn banned_words_agree_with_the_regex((list, word_boundary, text) in words_case()) {
        let reference = Regex::new(&ir_spec::words_pattern(&list, word_boundary)).unwrap();
        let found = Words::new(&list, word_boundary).unwrap().occur_in(&text);
        proptest::prop_assert_eq!(found, reference.is_match(&text), "{:?} in {:?}", list, text);
    }

    /// The format's banned-word pattern escapes a word exactly as the `regex` crate
    /// does, so any word matches only itself.
    #[test]
    fn banned_words_are_escaped_as_the_regex_crate_escapes(words in prop::collection::vec(".{0,12}", 1..4)) {
        let escaped: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
        let expected = format!("(?i)(?:{})", escaped.join("|"));
        proptest::prop_assert_eq!(ir_spec::words_pattern(&words, false), expected);
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
    let pattern = |p: &str| Pattern::new(p, usize::MAX).unwrap();
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
        Some(Literals::Rare(_)) => "rare",
        Some(Literals::Few(_)) => "few",
        Some(Literals::Many(_)) => "many",
        _ => "regex",
    };
    assert_eq!(kind("refund"), "rare");
    assert_eq!(kind(r#""(type|summary)""#), "rare");
    assert_eq!(kind("(?i)ok"), "rare");
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        // 24 strings.
        assert_eq!(kind("(?i)abc|def|ghi"), "few");
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
        let found = Pattern::new(&pattern, usize::MAX).unwrap().is_match(&text);
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
