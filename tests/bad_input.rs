//! Hostile or broken sources: each is one clear diagnostic of the right kind, fast, with
//! no panic and no stack overflow.

use std::time::Instant;

use packc_compiler::diag::{DiagKind, Site};
use packc_compiler::{check_bytes, Checked, Options};

fn check(bytes: &[u8]) -> Checked {
    let start = Instant::now();
    let checked = check_bytes(bytes, &Options::default());
    // Not a speed target, a hang detector: a pathological input must not take minutes.
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
    checked
}

fn only_kind(checked: &Checked) -> DiagKind {
    assert_eq!(checked.diagnostics.len(), 1, "{:#?}", checked.diagnostics);
    checked.diagnostics[0].kind
}

/// Asserts that the first diagnostic's message contains `needle`.
#[track_caller]
fn assert_message_contains(checked: &Checked, needle: &str) {
    let message = &checked.diagnostics[0].message;
    assert!(message.contains(needle), "{message}");
}

#[test]
fn empty_file() {
    for text in ["", "   \n\n", "# only a comment\n"] {
        let c = check(text.as_bytes());
        assert_eq!(only_kind(&c), DiagKind::ParseError, "{text:?}");
        assert_message_contains(&c, "empty");
    }
}

#[test]
fn non_utf8_bytes_are_located() {
    let mut bytes = b"id: demo\nname: \"caf".to_vec();
    bytes.extend_from_slice(&[0xE9, b'"', b'\n']);
    let c = check(&bytes);
    assert_eq!(only_kind(&c), DiagKind::ParseError);
    assert_eq!(c.diagnostics[0].site, Site::Span(19..20));
}

#[test]
fn deep_nesting_is_a_parse_error_not_a_stack_overflow() {
    let flow = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(only_kind(&check(flow.as_bytes())), DiagKind::ParseError);
    let json = format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    assert_eq!(only_kind(&check(json.as_bytes())), DiagKind::ParseError);
    // Block style: `- - - ... x` nests 10,000 sequences on one line.
    let block = format!("{}x\n", "- ".repeat(10_000));
    assert_eq!(only_kind(&check(block.as_bytes())), DiagKind::ParseError);
    // Indented mappings 200 deep: past the default depth limit, within the size limit.
    let mut indented = String::new();
    for depth in 0..200 {
        indented.push_str(&" ".repeat(depth));
        indented.push_str("a:\n");
    }
    assert_eq!(only_kind(&check(indented.as_bytes())), DiagKind::ParseError);
}

#[test]
fn alias_bomb_is_refused_quickly() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let c = check(text.as_bytes());
    assert_eq!(only_kind(&c), DiagKind::ParseError);
    assert_message_contains(&c, "alias");
}

#[test]
fn duplicate_keys_blame_both() {
    let c = check(b"id: a\nname: b\nid: c\n");
    assert_eq!(only_kind(&c), DiagKind::ParseError);
    let d = &c.diagnostics[0];
    assert_eq!(d.site, Site::Span(14..16));
    assert_eq!(d.labels.len(), 1);
    assert_eq!(d.labels[0].site, Site::Span(0..2));
    let c = check(br#"{"id": "a", "id": "b"}"#);
    assert_eq!(only_kind(&c), DiagKind::ParseError);
}

#[test]
fn source_size_limit_at_the_edge() {
    let text = "id: demo\n";
    let mut options = Options::default();
    options.limits.max_source_bytes = text.len();
    let at = check_bytes(text.as_bytes(), &options);
    assert!(at
        .diagnostics
        .iter()
        .all(|d| d.kind != DiagKind::LimitExceeded));
    options.limits.max_source_bytes = text.len() - 1;
    let over = check_bytes(text.as_bytes(), &options);
    assert_eq!(only_kind(&over), DiagKind::LimitExceeded);
}

#[test]
fn not_yaml_at_all() {
    let c = check(b"id: [unclosed\n");
    assert_eq!(only_kind(&c), DiagKind::ParseError);
    assert!(matches!(c.diagnostics[0].site, Site::Span(_)));
}
