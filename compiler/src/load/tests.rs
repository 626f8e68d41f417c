use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::diag::{escape_token, Label, Site};

fn load(text: &str) -> Loaded {
    match load_str(text, &Limits::default()) {
        Ok(loaded) => loaded,
        Err(d) => panic!("{text:?} should load: {d:?}"),
    }
}

fn fail(text: &str) -> Diagnostic {
    fail_with(text, &Limits::default())
}

fn fail_with(text: &str, limits: &Limits) -> Diagnostic {
    match load_str(text, limits) {
        Ok(loaded) => panic!("{text:?} should fail, loaded {}", loaded.value()),
        Err(d) => {
            assert_eq!(d.kind, DiagKind::ParseError, "{d:?}");
            d
        }
    }
}

/// The source text of the key and the value of the node at `pointer`.
fn texts<'t>(text: &'t str, loaded: &Loaded, pointer: &str) -> (Option<&'t str>, &'t str) {
    let span = loaded
        .spans
        .get(pointer)
        .unwrap_or_else(|| panic!("no span for {pointer:?}"));
    (
        span.key.clone().map(|k| &text[k]),
        &text[span.value.clone()],
    )
}

fn span_of(d: &Diagnostic) -> Range<usize> {
    match &d.site {
        Site::Span(r) => r.clone(),
        other => panic!("expected a span, got {other:?}"),
    }
}

#[test]
fn spans_yaml_block() {
    let text = "\
name: demo   # a comment
tools:
  - search
  - 'quoted'
  - k: 1
    list:
      - a
nested:
  deep:
    x: \"s\"
prompt: |
  hello
  world

after: ~
";
    let l = load(text);
    assert_eq!(texts(text, &l, "/name"), (Some("name"), "demo"));
    assert_eq!(texts(text, &l, "/tools/0"), (None, "search"));
    assert_eq!(texts(text, &l, "/tools/1"), (None, "'quoted'"));
    assert_eq!(texts(text, &l, "/tools/2/k"), (Some("k"), "1"));
    assert_eq!(texts(text, &l, "/tools/2/list/0"), (None, "a"));
    assert_eq!(
        texts(text, &l, "/tools/2"),
        (None, "k: 1\n    list:\n      - a")
    );
    assert_eq!(
        texts(text, &l, "/tools"),
        (
            Some("tools"),
            "- search\n  - 'quoted'\n  - k: 1\n    list:\n      - a"
        )
    );
    assert_eq!(texts(text, &l, "/nested/deep/x"), (Some("x"), "\"s\""));
    assert_eq!(texts(text, &l, "/nested/deep"), (Some("deep"), "x: \"s\""));
    assert_eq!(
        texts(text, &l, "/prompt"),
        (Some("prompt"), "|\n  hello\n  world")
    );
    assert_eq!(texts(text, &l, "/after"), (Some("after"), "~"));
    assert_eq!(texts(text, &l, "").1, text.trim_end());
    assert_eq!(l.value()["prompt"], json!("hello\nworld\n"));
    assert_eq!(l.value()["after"], json!(null));
    assert_eq!(l.spans.len(), 14);
}

#[test]
fn spans_yaml_flow() {
    let text = "a: {b: [1, two, {c: d}], e: []}\nf: [x, {g: h}]\n";
    let l = load(text);
    assert_eq!(
        texts(text, &l, "/a"),
        (Some("a"), "{b: [1, two, {c: d}], e: []}")
    );
    assert_eq!(texts(text, &l, "/a/b"), (Some("b"), "[1, two, {c: d}]"));
    assert_eq!(texts(text, &l, "/a/b/1"), (None, "two"));
    assert_eq!(texts(text, &l, "/a/b/2"), (None, "{c: d}"));
    assert_eq!(texts(text, &l, "/a/b/2/c"), (Some("c"), "d"));
    assert_eq!(texts(text, &l, "/a/e"), (Some("e"), "[]"));
    assert_eq!(texts(text, &l, "/f/1/g"), (Some("g"), "h"));
}

#[test]
fn spans_json() {
    let text = r#"{
  "name": "demo",
  "version": 1.0,
  "list": [1, -2, 3.5e2, true, null, {"k": "v"}],
  "empty": {}
}"#;
    let l = load(text);
    assert_eq!(texts(text, &l, ""), (None, text));
    assert_eq!(texts(text, &l, "/name"), (Some("\"name\""), "\"demo\""));
    assert_eq!(texts(text, &l, "/version"), (Some("\"version\""), "1.0"));
    assert_eq!(texts(text, &l, "/list/2"), (None, "3.5e2"));
    assert_eq!(texts(text, &l, "/list/5/k"), (Some("\"k\""), "\"v\""));
    assert_eq!(texts(text, &l, "/empty"), (Some("\"empty\""), "{}"));
    assert_eq!(
        *l.value(),
        json!({"name": "demo", "version": 1.0, "list": [1, -2, 350.0, true, null, {"k": "v"}], "empty": {}})
    );
    assert!(l.value()["version"].is_f64());
    let keys: Vec<&String> = l.value().as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "version", "list", "empty"]);
}

#[test]
fn non_ascii_before_nodes() {
    let text = "\u{feff}título: «ünïcödé» 🎉\nnext: [é, 中文]\n\"🎉\": ok\n";
    let l = load(text);
    assert_eq!(texts(text, &l, "/título"), (Some("título"), "«ünïcödé» 🎉"));
    assert_eq!(texts(text, &l, "/next/1"), (None, "中文"));
    assert_eq!(texts(text, &l, "/🎉"), (Some("\"🎉\""), "ok"));
    // Past the 64-character checkpoints of the offset table.
    let text = format!("{}\nkey: value\n", "# ü".repeat(100));
    let l = load(&text);
    assert_eq!(texts(&text, &l, "/key"), (Some("key"), "value"));
    let text = format!("a: {}\nb: 1\n", "é".repeat(300));
    let l = load(&text);
    assert_eq!(texts(&text, &l, "/b"), (Some("b"), "1"));
}

#[test]
fn crlf_line_ends() {
    let text = "a: 1\r\nb:\r\n  - x\r\n  - |\r\n    lit\r\n";
    let l = load(text);
    assert_eq!(texts(text, &l, "/b/0"), (None, "x"));
    assert_eq!(texts(text, &l, "/b/1"), (None, "|\r\n    lit"));
}

#[test]
fn escaped_pointers() {
    let text = "\"a/b\": 1\n\"c~d\": {\"~/\": 2}\n\"\": 3\n";
    let l = load(text);
    let ptr = format!("/{}", escape_token("a/b"));
    assert_eq!(ptr, "/a~1b");
    assert_eq!(texts(text, &l, &ptr), (Some("\"a/b\""), "1"));
    assert_eq!(texts(text, &l, "/c~0d/~0~1"), (Some("\"~/\""), "2"));
    assert_eq!(texts(text, &l, "/"), (Some("\"\""), "3"));
    assert!(l.spans.get("/a/b").is_none());
    assert!(l.spans.get("/c~2d").is_none());
    assert!(l.spans.get("no-slash").is_none());
}

#[test]
fn lookups_fall_back_to_ancestors() {
    let text = "a:\n  b: [x, y]\n";
    let l = load(text);
    let at = |r: Option<Range<usize>>| r.map(|r| &text[r]);
    assert_eq!(at(l.spans.locate("/a/b/1")), Some("y"));
    assert_eq!(at(l.spans.locate("/a/b/7")), Some("[x, y]"));
    assert_eq!(at(l.spans.locate("/a/missing/deeper")), Some("b: [x, y]"));
    assert_eq!(at(l.spans.key_or_value("/a/b")), Some("b"));
    assert_eq!(at(l.spans.key_or_value("/a/b/0")), Some("x"));
    assert_eq!(at(l.spans.key_or_value("/a/nope")), Some("b: [x, y]"));
    assert_eq!(at(l.spans.key_or_value("")), Some("a:\n  b: [x, y]"));
    // Array indices are canonical: no leading zeros, no `-`.
    assert!(l.spans.get("/a/b/01").is_none());
    assert!(l.spans.get("/a/b/-").is_none());
    assert!(SpanIndex::default().locate("").is_none());
    assert!(SpanIndex::default().is_empty());
}

#[test]
fn scalar_typing() {
    let text = "\
n1: null
n2: ~
n3:
b1: true
b2: False
i1: 42
i2: -7
i3: 0x1F
i4: 0o17
big: 18446744073709551615
huge: 123456789012345678901234567890
f1: 1.5
f2: 1.0
f3: -2e3
s1: '42'
s2: \"true\"
s3: yes
s4: 1.0.0
t1: !!str 12
t2: !!float 3
1: numeric key
true: bool key
~: null key
";
    let l = load(text);
    let v = &l.value();
    assert_eq!(v["n1"], json!(null));
    assert_eq!(v["n2"], json!(null));
    assert_eq!(v["n3"], json!(null));
    assert_eq!(v["b1"], json!(true));
    assert_eq!(v["b2"], json!(false));
    assert_eq!(v["i1"], json!(42));
    assert_eq!(v["i2"], json!(-7));
    assert_eq!(v["i3"], json!(31));
    assert_eq!(v["i4"], json!(15));
    assert_eq!(v["big"], json!(u64::MAX));
    assert!(v["huge"].is_f64());
    assert_eq!(v["f1"], json!(1.5));
    assert!(v["f2"].is_f64());
    assert_eq!(v["f3"], json!(-2000.0));
    assert_eq!(v["s1"], json!("42"));
    assert_eq!(v["s2"], json!("true"));
    assert_eq!(v["s3"], json!("yes"));
    assert_eq!(v["s4"], json!("1.0.0"));
    assert_eq!(v["t1"], json!("12"));
    assert_eq!(v["t2"], json!(3.0));
    assert_eq!(v["1"], json!("numeric key"));
    assert_eq!(v["true"], json!("bool key"));
    assert_eq!(v["~"], json!("null key"));
    assert_eq!(texts(text, &l, "/t1"), (Some("t1"), "!!str 12"));
}

#[test]
fn special_floats_are_refused() {
    let text = "a: 1\nb: .inf\n";
    let d = fail(text);
    assert!(d.message.contains("not a JSON number"), "{}", d.message);
    assert_eq!(&text[span_of(&d)], ".inf");
    assert!(d.help.is_some());
    fail("[.nan]");
    fail("x: -.Inf");
    assert_eq!(*load("x: '.inf'").value(), json!({"x": ".inf"}));
}

#[test]
fn unsupported_tags() {
    let d = fail("a: !custom 1\n");
    assert!(d.message.contains("`!custom`"), "{}", d.message);
    fail("a: !!binary aGVsbG8=\n");
    fail("a: !!int abc\n");
    fail("a: !!map [1]\n");
    assert_eq!(*load("a: !!seq [1]\n").value(), json!({"a": [1]}));
}

#[test]
fn empty_files() {
    for text in [
        "",
        "   \n\n",
        "# just a comment\n",
        "\u{feff}",
        "---\n",
        "---\n# c\n...\n",
    ] {
        let d = fail(text);
        assert_eq!(d.message, "the file is empty", "{text:?}");
        assert_eq!(d.site, Site::Whole);
    }
    assert_eq!(*load("--- null\n").value(), json!(null));
    assert_eq!(*load("[]").value(), json!([]));
    assert_eq!(*load("just text").value(), json!("just text"));
}

#[test]
fn non_utf8_bytes() {
    let bytes = b"name: caf\xe9\nmore: x\n";
    let d = load_bytes(bytes, &Limits::default()).unwrap_err();
    assert_eq!(d.kind, DiagKind::ParseError);
    assert_eq!(span_of(&d), 9..10);
    // A truncated sequence at the end.
    let d = load_bytes(b"a: \xe2\x82", &Limits::default()).unwrap_err();
    assert_eq!(span_of(&d), 3..5);
    assert!(load_bytes("a: café".as_bytes(), &Limits::default()).is_ok());
}

#[test]
fn size_limit() {
    let text = "a: 1234567\n"; // 11 bytes
    let limits = |max| Limits {
        max_source_bytes: max,
        ..Limits::default()
    };
    assert!(load_bytes(text.as_bytes(), &limits(12)).is_ok());
    assert!(load_bytes(text.as_bytes(), &limits(11)).is_ok());
    let d = load_bytes(text.as_bytes(), &limits(10)).unwrap_err();
    assert_eq!(d.kind, DiagKind::LimitExceeded);
    assert_eq!(d.site, Site::Whole);
    assert_eq!(
        load_str(text, &limits(10)).unwrap_err().kind,
        DiagKind::LimitExceeded
    );
    assert_eq!(Limits::default().max_source_bytes, 16 * 1024 * 1024);
}

fn assert_depth_error(text: &str, limits: &Limits) {
    let started = Instant::now();
    let d = fail_with(text, limits);
    assert!(
        d.message
            .contains("nests deeper than the limit of 128 levels"),
        "{}",
        d.message
    );
    // The error is at the 129th level, long before the end of the text.
    assert!(span_of(&d).start < 10_000, "{:?}", d.site);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn deep_flow_nesting() {
    let n = 10_000;
    let text = format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert_depth_error(&text, &Limits::default());
    let text = format!("{}{}", "{a: ".repeat(n), "}".repeat(n));
    assert_depth_error(&text, &Limits::default());
    // Within saphyr's own flow limit, the depth limit is ours: the error is at the 129th `[`.
    let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let d = fail(&text);
    assert_eq!(span_of(&d), 128..129);
    // With a higher limit, saphyr's 255 levels bound flow nesting, still cleanly.
    let limits = Limits {
        max_depth: 100_000,
        ..Limits::default()
    };
    let text = format!("{}{}", "[".repeat(n), "]".repeat(n));
    let d = fail_with(&text, &limits);
    assert!(d.message.contains("255"), "{}", d.message);
    // Exactly at the limit is fine.
    let text = format!("{}{}", "[".repeat(128), "]".repeat(128));
    assert!(load_str(&text, &Limits::default()).is_ok());
}

#[test]
fn deep_block_nesting() {
    let n = 10_000;
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&" ".repeat(i));
        text.push_str("a:\n");
    }
    let limits = Limits {
        max_source_bytes: usize::MAX,
        ..Limits::default()
    };
    assert_depth_error(&text, &limits);
    let text = format!("{}x\n", "- ".repeat(n));
    assert_depth_error(&text, &Limits::default());
}

#[test]
fn depth_limit_is_configurable() {
    let limits = Limits {
        max_depth: 2,
        ..Limits::default()
    };
    assert!(load_str("a: {b: 1}", &limits).is_ok());
    let d = fail_with("a: {b: [1]}", &limits);
    assert!(d.message.contains("limit of 2 levels"), "{}", d.message);
}

#[test]
fn aliases_expand_by_copy() {
    let text = "\
base: &base
  model: m1
  params: {t: 0.5}
copy: *base
list: [&x 1, *x]
key: &k name
again: *k
&kk anchored: key
keyed: *kk
";
    let l = load(text);
    assert_eq!(
        l.value()["copy"],
        json!({"model": "m1", "params": {"t": 0.5}})
    );
    assert_eq!(l.value()["list"], json!([1, 1]));
    assert_eq!(l.value()["again"], json!("name"));
    assert_eq!(l.value()["keyed"], json!("anchored"));
    // The alias itself has its own span; what it copies points at the anchor's text.
    assert_eq!(texts(text, &l, "/copy"), (Some("copy"), "*base"));
    assert_eq!(texts(text, &l, "/copy/params/t"), (Some("t"), "0.5"));
    assert_eq!(l.spans.get("/copy/params/t"), l.spans.get("/base/params/t"));
    assert_eq!(texts(text, &l, "/list/1"), (None, "*x"));
    assert_eq!(
        texts(text, &l, "/base"),
        (Some("base"), "&base\n  model: m1\n  params: {t: 0.5}")
    );
}

#[test]
fn nested_alias_copies() {
    let text = "a: &a [1, 2]\nb: &b {x: *a, y: *a}\nc: [*b, *b]\n";
    let l = load(text);
    assert_eq!(
        l.value()["c"],
        json!([{"x": [1, 2], "y": [1, 2]}, {"x": [1, 2], "y": [1, 2]}])
    );
    assert_eq!(texts(text, &l, "/c/1/y/1"), (None, "2"));
    assert_eq!(texts(text, &l, "/c/1/y"), (Some("y"), "*a"));
}

#[test]
fn bad_aliases() {
    let d = fail("a: &a [1, *a]\n");
    assert!(
        d.message.contains("inside the node it names"),
        "{}",
        d.message
    );
    let d = fail("a: *nope\n");
    assert!(d.message.contains("`*nope`"), "{}", d.message);
    let text = "a: &k x\n*k : y\n";
    let d = fail(text);
    assert!(d.message.contains("mapping key"), "{}", d.message);
    assert_eq!(&text[span_of(&d)], "*k");
    fail("? [a, b]\n: c\n");
    fail("{[a]: b}");
}

#[test]
fn alias_bomb() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let started = Instant::now();
    let d = fail(&text);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(d.message, "alias expansion too large (possible alias bomb)");
    assert!(text[span_of(&d)].starts_with("*a"));
}

#[test]
fn alias_string_bomb() {
    // Few nodes, but each copy is a megabyte of text.
    let mut text = format!("a: &a \"{}\"\nb: [", "x".repeat(1 << 20));
    text.push_str(&vec!["*a"; 20].join(", "));
    text.push_str("]\n");
    let limits = Limits {
        max_source_bytes: 32 << 20,
        ..Limits::default()
    };
    assert!(load_str(&text, &limits).is_ok());
    let limits = Limits {
        max_source_bytes: 16 << 20,
        ..Limits::default()
    };
    let d = fail_with(&text, &limits);
    assert!(d.message.contains("alias bomb"), "{}", d.message);
}

#[test]
fn node_limit() {
    let limits = Limits {
        max_nodes: 4,
        ..Limits::default()
    };
    assert!(load_str("[1, 2, 3]", &limits).is_ok());
    let d = fail_with("[1, 2, 3, 4]", &limits);
    assert!(d.message.contains("more than 4 nodes"), "{}", d.message);
    let d = fail_with("a: &a [1]\nb: *a\n", &limits);
    assert!(d.message.contains("alias bomb"), "{}", d.message);
}

fn first_label(d: &Diagnostic) -> &Label {
    d.labels.first().expect("a label")
}

#[test]
fn duplicate_keys_yaml() {
    let text = "a: 1\nb:\n  c: 2\n  c: 3\n";
    let d = fail(text);
    assert_eq!(d.message, "the key `c` appears twice in this mapping");
    assert_eq!(span_of(&d), 17..18);
    assert_eq!(first_label(&d).site, Site::Span(10..11));
    assert_eq!(first_label(&d).message, "first defined here");
    assert!(d.help.is_some());
    // Keys compare as text: `1` and `"1"` are the same JSON key.
    let text = "1: a\n\"1\": b\n";
    let d = fail(text);
    assert_eq!(&text[span_of(&d)], "\"1\"");
}

#[test]
fn duplicate_keys_json() {
    let text = r#"{"x": {"k": 1, "k": 2}}"#;
    let d = fail(text);
    assert_eq!(&text[span_of(&d)], "\"k\"");
    assert_eq!(span_of(&d), 15..18);
    assert_eq!(first_label(&d).site, Site::Span(7..10));
    // The same key in different mappings is fine.
    assert!(load(r#"{"a": {"k": 1}, "b": {"k": 1}}"#).value()["b"]["k"] == json!(1));
}

#[test]
fn multiple_documents() {
    let text = "a: 1\n---\nb: 2\n";
    let d = fail(text);
    assert!(
        d.message.contains("more than one YAML document"),
        "{}",
        d.message
    );
    assert_eq!(&text[span_of(&d)], "---");
    fail("--- 1\n--- 2\n");
    fail("a: 1\n...\nb: 2\n");
    // One document with explicit markers is fine.
    assert_eq!(*load("---\na: 1\n...\n").value(), json!({"a": 1}));
}

#[test]
fn syntax_errors_have_spans() {
    let text = "a: [1, 2\n";
    let d = fail(text);
    assert!(
        d.message
            .starts_with("the file is not valid YAML or JSON: "),
        "{}",
        d.message
    );
    assert_eq!(span_of(&d), 9..9);
    let text = "é: b: c\n";
    let d = fail(text);
    assert_eq!(span_of(&d), 5..6);
    let text = "{\"a\": 1,,}";
    fail(text);
}

#[test]
fn subtree_rebases_pointers() {
    let text = "name: x\npack:\n  prompts:\n    p: {id: 1}\n  alias: *missing_is_fine\n";
    // An undefined alias is an error; use a valid document instead.
    assert!(load_str(text, &Limits::default()).is_err());
    let text = "defs: &d {t: 1}\npack:\n  prompts:\n    p: {id: 1}\n  uses: *d\n";
    let l = load(text);
    let sub = l.spans.subtree("/pack", l.value()["pack"].clone());
    assert_eq!(sub.value()["uses"], json!({"t": 1}));
    assert_eq!(texts(text, &sub, "/prompts/p/id"), (Some("id"), "1"));
    assert_eq!(texts(text, &sub, "/uses/t"), (Some("t"), "1"));
    assert_eq!(sub.spans.get("").unwrap().key, None);
    assert!(l.spans.subtree("/nope", json!(null)).spans.is_empty());
}

#[test]
fn never_panics_on_odd_input() {
    let inputs = [
        "{---",
        "[",
        "]",
        "}",
        "{",
        ":",
        "- - -",
        "? ",
        "&a",
        "*",
        "!",
        "!!",
        "%YAML 1.2",
        "---\n---",
        "'",
        "\"",
        "|",
        ">",
        "a: |\n",
        "- &a\n- *a",
        "&a &b x",
        "[*a]",
        "a:\n\t- b",
        "\u{0}",
        "\u{85}",
        "a: \"\\u\"",
        "? |\n  x\n: y",
        "[a, b]: c",
        "{a: 1, a: 2}",
        "- !!str\n- !!int",
        "a: !<tag:x> 1",
        "%TAG ! tag:x:\n--- !a 1",
        "\u{feff}\u{feff}---",
        "a: 'x\n",
        "a: [1, {b: [2, {c: ]}]",
    ];
    for text in inputs {
        if let Err(d) = load_str(text, &Limits::default()) {
            assert_ne!(d.message, "the YAML parser failed on this file", "{text:?}");
        }
    }
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the input, loading returns (no panic, no parser crash), and every span
        /// of a loaded document lies on character boundaries of the text.
        #[test]
        fn loads_or_fails_cleanly(text in "[-a-c:,&*!|>?#'\"\\[\\]{} \n\té~]{0,40}") {
            match load_str(&text, &Limits::default()) {
                Ok(loaded) => {
                    let span = loaded.spans.get("").unwrap().value.clone();
                    prop_assert!(text.get(span).is_some());
                }
                Err(d) => {
                    prop_assert_ne!(d.message, "the YAML parser failed on this file");
                    if let Site::Span(r) = d.site {
                        prop_assert!(text.get(r).is_some());
                    }
                }
            }
        }
    }
}

/// A tab indenting a line is blamed on that line's tab, not on the end of the line
/// before, with a help line saying what YAML wants.
#[test]
fn tab_indentation_is_blamed_on_the_tab() {
    for text in [
        "prompts:\n  p:\n\tid: p\n",
        "prompts:\n  p:\n    id: p\n\tname: x\n",
    ] {
        let d = fail(text);
        let tab = text.find('\t').unwrap();
        assert_eq!(d.site, Site::Span(tab..tab + 1), "{text:?}: {d:?}");
        assert_eq!(
            d.help.as_deref(),
            Some("YAML does not allow tabs for indentation; use spaces"),
            "{text:?}"
        );
    }
}

/// The parser's commonest errors name its state ("did not find expected key"); each gets
/// a help line saying what to change on the line, read from the lines above it.
#[test]
fn yaml_mistakes_get_a_help_line_saying_what_to_change() {
    let head = "name: x\nprompts:\n  a:\n    system: hi\n";
    for (tail, help) in [
        (
            "   model: x\n",
            "line 5 is indented 3 spaces, which lines up with no level above it (YAML nests \
             by indentation): indent it 4 spaces to put it beside `system:` (line 4), or \
             indent it 2 spaces to put it beside `a:` (line 3)",
        ),
        (
            " model: x\n",
            "line 5 is indented 1 space, which lines up with no level above it (YAML nests \
             by indentation): indent it 2 spaces to put it beside `a:` (line 3), or start it \
             in the first column to put it beside `prompts:` (line 2)",
        ),
        (
            "      model: x\n",
            "this line is indented deeper than `system:` on line 4, so YAML reads it as \
             more of that line's value: indent it 4 spaces to put it beside `system:`",
        ),
        (
            "    user: say: \"hi\"\n",
            r#"a plain value cannot hold `: ` (a colon and a space): quote it, `user: "say: \"hi\""`"#,
        ),
        (
            "    user: \"hi\n",
            r#"the double quote opened here is never closed: end the value with `"` (a `"` inside it is written `\"`)"#,
        ),
    ] {
        let text = format!("{head}{tail}");
        let d = fail(&text);
        assert_eq!(d.help.as_deref(), Some(help), "{text:?}: {}", d.message);
    }
    let d = fail("items:\n  - a: 1\n  b: 2\n");
    assert_eq!(
        d.help.as_deref(),
        Some(
            "line 3 starts in the column of the list on line 2, without a `- `: start it \
             with `- ` to add an item, or indent it 4 spaces to put it beside `a:` (line 2)"
        )
    );
    // Other errors keep the parser's message alone: among them, a line in its place
    // whose mistake is further on.
    for text in [
        "a: [1, 2\n",
        "name: x\nprompts:\n  a:\n    system: \"hi\"\n    user: [1, 2] x\n",
        "items:\n- a: 1\n- [1] x\n",
        "\"sys: tem\": say: hi\n",
    ] {
        let d = fail(text);
        assert_eq!(d.help, None, "{text:?}: {}", d.message);
    }
    // A key over a list in its own column is a level of its own.
    let d = fail("host:\n  prompts:\n    intake:\n    - output: ok\n      event: Ready\n     resolve:\n      - output: done\n");
    assert_eq!(
        d.help.as_deref(),
        Some(
            "line 6 is indented 5 spaces, which lines up with no level above it (YAML nests \
             by indentation): indent it 6 spaces to put it beside `event:` (line 5), or \
             indent it 4 spaces to put it beside `intake:` (line 3)"
        )
    );
    // A comment stays out of the quotes; a blank line does not hide the line above.
    let d = fail(&format!("{head}    user: say: hi # greet\n"));
    assert_eq!(
        d.help.as_deref(),
        Some(
            r#"a plain value cannot hold `: ` (a colon and a space): quote it, `user: "say: hi"`"#
        )
    );
    let d = fail(&format!("{head}\n      model: x\n"));
    assert!(
        d.help
            .as_deref()
            .is_some_and(|h| h.starts_with("this line is indented deeper than `system:` on line 4")),
        "{:?}",
        d.help
    );
}

/// A JSON pack with something to report is parsed twice (the second time for spans);
/// what is reported, and where, is what checking the located document gives.
#[test]
fn json_diagnostics_are_those_of_the_located_document() {
    let pack = r#"{"id": "demo", "name": "Demo", "version": "1.0.0",
        "template_engine": {"version": "v1", "syntax": "{{variable}}"},
        "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0",
                          "system_template": "hi {{nope}}", "shiny": 1}},
        "workflow": {"version": 1, "entry": "a",
                     "states": {"a": {"prompt_task": "p", "on_event": {"Go": "b"}},
                                "b": {"prompt_task": "missing", "terminal": true}}}}"#;
    let options = crate::Options::default();
    let fast = crate::check_bytes(pack.as_bytes(), &options);
    let located = crate::check_loaded(load_str(pack, &Limits::default()).unwrap(), &options);
    assert!(fast.diagnostics.len() >= 3, "{:?}", fast.diagnostics);
    assert_eq!(fast.diagnostics, located.diagnostics);
    let spans = &fast.loaded.as_ref().unwrap().spans;
    let site = spans.key_or_value("/prompts/p/shiny").unwrap();
    assert_eq!(&pack[site], "\"shiny\"");
}
