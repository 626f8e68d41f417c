//! `{{var}}` templates (`workflow.md` §14, "Syntax").
//!
//! ```text
//! placeholder := "{{" path "}}"                      no whitespace anywhere inside
//! path        := name ( "." name | "[" digits "]" )*
//! name        := [A-Za-z_][A-Za-z0-9_]*
//! ```
//!
//! Anything else is literal text: `{{ name }}` with spaces, an unclosed `{{`,
//! `{{a..b}}`, `{{a[x]}}`, an index that does not fit a `u32`, and a
//! `{{fragment:x}}` left over after fragment expansion. Parsing therefore never fails.
//!
//! Overlapping braces: the scan tries every `{{` from left to right and the first one
//! that opens a valid placeholder wins; a `{` that opens none is literal. So `{{{x}}}`
//! is the text `{`, the placeholder `x` (span `1..6`), then the text `}`; and
//! `{{{{x}}}}` is `{{`, `x`, `}}`. A placeholder contains no `{`, so placeholders never
//! overlap and the scan is linear.

use std::fmt;
use std::ops::Range;

use super::scan::{find_from, ident_end};

/// One step of a placeholder path after its root name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    /// `.name`: an object member, as in `{{customer.name}}`.
    Field(String),
    /// `[i]`: an array element, as in `{{items[0]}}`.
    Index(u32),
}

/// A well-formed `{{root.path[0]}}` placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// The first name: `input`, `artifacts` or a variable name.
    pub root: String,
    /// The steps after the root, in order.
    pub path: Vec<PathSeg>,
    /// Byte range of the whole `{{...}}`, braces included, in the scanned text.
    pub span: Range<usize>,
}

impl fmt::Display for Placeholder {
    /// Writes the placeholder back as `{{root.path[0]}}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{{{}", self.root)?;
        for seg in &self.path {
            match seg {
                PathSeg::Field(name) => write!(f, ".{name}")?,
                PathSeg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        f.write_str("}}")
    }
}

/// A piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Literal text, written as is.
    Text(String),
    /// A placeholder, replaced by the text form of its value at run time.
    Var(Placeholder),
}

/// A parsed template: literal text and placeholders in source order. Two `Text`
/// segments are never adjacent, and no `Text` is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    /// The segments, in source order.
    pub segments: Vec<Segment>,
}

impl Template {
    /// The placeholders, in source order.
    pub fn placeholders(&self) -> impl Iterator<Item = &Placeholder> {
        self.segments.iter().filter_map(|seg| match seg {
            Segment::Var(p) => Some(p),
            Segment::Text(_) => None,
        })
    }
}

/// Splits `text` into literal text and placeholders. Never fails: whatever is not a
/// valid placeholder is literal text (see the module docs for `{{{x}}}`).
pub fn parse_template(text: &str) -> Template {
    let mut segments = Vec::new();
    let mut literal_from = 0;
    for p in scan(text, |open| {
        placeholder_at(text, open).map(|p| (p.span.end, p))
    }) {
        if literal_from < p.span.start {
            segments.push(Segment::Text(text[literal_from..p.span.start].to_owned()));
        }
        literal_from = p.span.end;
        segments.push(Segment::Var(p));
    }
    if literal_from < text.len() {
        segments.push(Segment::Text(text[literal_from..].to_owned()));
    }
    Template { segments }
}

/// The placeholders of `text` in order, each as `read` reads the one whose `{{` starts at
/// the offset it is given (`None`: not a placeholder), with where it ends. Every `{{` is
/// tried from left to right; a `{` that opens none is literal, and the next `{{` may
/// start right after it.
fn scan<'t, T>(
    text: &'t str,
    mut read: impl FnMut(usize) -> Option<(usize, T)> + 't,
) -> impl Iterator<Item = T> + 't {
    let mut search_from = 0;
    std::iter::from_fn(move || loop {
        let open = find_from(text, search_from, "{{")?;
        match read(open) {
            Some((end, found)) => {
                search_from = end;
                return Some(found);
            }
            None => search_from = open + 1,
        }
    })
}

/// The placeholder whose `{{` starts at `open`, if it is well-formed.
pub(crate) fn placeholder_at(text: &str, open: usize) -> Option<Placeholder> {
    let mut path = Vec::new();
    let (root_end, end) = read_placeholder(text, open, |step| {
        path.push(match step {
            Step::Field(name) => PathSeg::Field(name.to_owned()),
            Step::Index(i) => PathSeg::Index(i),
        })
    })?;
    Some(Placeholder {
        root: text[open + 2..root_end].to_owned(),
        path,
        span: open..end,
    })
}

/// The root names of the placeholders of `text`, in order, found as [`parse_template`]
/// finds them, with nothing copied.
pub fn placeholder_roots(text: &str) -> impl Iterator<Item = &str> {
    scan(text, move |open| {
        read_placeholder(text, open, |_| {}).map(|(root_end, end)| (end, &text[open + 2..root_end]))
    })
}

/// The `{{ path }}`s of `text` that would be placeholders but for the spaces or tabs
/// inside their braces, which makes them literal text (`workflow.md` §14): each as the
/// whole `{{ ... }}` and the path inside it. Only a well-formed path counts, so `{{ }}`
/// and `{{ a b }}` are not listed. Linear: each `{{` reads its path in place.
pub fn spaced_placeholders(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let bytes = text.as_bytes();
    scan(text, move |open| {
        let start = skip_blanks(bytes, open + 2);
        let end = path_end(text, start)?;
        let close = skip_blanks(bytes, end);
        let closed = bytes.get(close..close + 2) == Some(b"}}");
        let spaced = start > open + 2 || close > end;
        (closed && spaced).then(|| (close + 2, (&text[open..close + 2], &text[start..end])))
    })
}

/// Template syntax of other engines in `text`, which PromptPack templates do not have and
/// which is therefore literal text (`workflow.md` §14): each as the text found and what it
/// is, in order. Found: a Handlebars block, comment or partial (`{{#if x}}`, `{{/if}}`,
/// `{{^x}}`, `{{! x}}`, `{{> x}}`), a filter (`{{ name | upper }}`), a placeholder closed
/// by one brace (`{{name}`), each closed on its own line, and a Jinja statement
/// (`{% if %}`) closed on its line. Linear: a construct's close is looked for only up to
/// the next opener or the end of the line.
pub fn foreign_syntax(text: &str) -> Vec<(&str, Foreign)> {
    let bytes = text.as_bytes();
    let mut found: Vec<(&str, Foreign)> = scan(text, |open| {
        let start = skip_blanks(bytes, open + 2);
        let closed = |from: usize, what: Foreign| {
            let close = close_on_line(bytes, from, b"}}", b"{{")?;
            Some((close + 2, (&text[open..close + 2], what)))
        };
        match bytes.get(start)? {
            b'#' | b'/' | b'^' => return closed(start, Foreign::Block),
            b'!' => return closed(start, Foreign::Comment),
            b'>' => return closed(start, Foreign::Partial),
            _ => {}
        }
        let end = path_end(text, start)?;
        let after = skip_blanks(bytes, end);
        match bytes.get(after..) {
            Some([b'|', next, ..]) if *next != b'|' => closed(after, Foreign::Filter),
            Some([b'}', rest @ ..]) if rest.first() != Some(&b'}') => {
                Some((after + 1, (&text[open..after + 1], Foreign::OneBrace)))
            }
            _ => None,
        }
    })
    .collect();
    let mut from = 0;
    while let Some(open) = find_from(text, from, "{%") {
        from = match close_on_line(bytes, open + 2, b"%}", b"{%") {
            Some(close) => {
                found.push((&text[open..close + 2], Foreign::Jinja));
                close + 2
            }
            None => open + 2,
        };
    }
    found.sort_by_key(|(whole, _)| whole.as_ptr() as usize);
    found
}

/// Another template engine's construct that [`foreign_syntax`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Foreign {
    /// `{{#if x}}`, `{{/if}}`, `{{^x}}`: a Handlebars block.
    Block,
    /// `{{! x}}`: a Handlebars comment.
    Comment,
    /// `{{> x}}`: a Handlebars partial.
    Partial,
    /// `{{name | upper}}`: a filter.
    Filter,
    /// `{{name}`: a placeholder closed by one brace.
    OneBrace,
    /// `{% if x %}`: a Jinja statement.
    Jinja,
}

impl Foreign {
    /// What it is, for a message: "a Handlebars block".
    pub fn what(self) -> &'static str {
        match self {
            Foreign::Block => "a Handlebars block",
            Foreign::Comment => "a Handlebars comment",
            Foreign::Partial => "a Handlebars partial",
            Foreign::Filter => "a filter",
            Foreign::OneBrace => "a placeholder closed by one brace",
            Foreign::Jinja => "a Jinja statement",
        }
    }
}

/// The first `close` at or after `from` on the same line and before the next `open`.
fn close_on_line(bytes: &[u8], from: usize, close: &[u8; 2], open: &[u8; 2]) -> Option<usize> {
    let mut i = from;
    while let Some(&b) = bytes.get(i) {
        match bytes.get(i..i + 2) {
            _ if b == b'\n' => return None,
            Some(pair) if pair == close => return Some(i),
            Some(pair) if pair == open => return None,
            _ => i += 1,
        }
    }
    None
}

/// The position after the spaces and tabs at `at`.
fn skip_blanks(bytes: &[u8], at: usize) -> usize {
    at + bytes.get(at..).map_or(0, |rest| {
        rest.iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count()
    })
}

/// The end of the placeholder path that starts at `at` ([`read_path`]).
fn path_end(text: &str, at: usize) -> Option<usize> {
    read_path(text, at, |_| {}).map(|(_, end)| end)
}

/// A step of a placeholder's path, borrowed from the text.
enum Step<'t> {
    Field(&'t str),
    Index(u32),
}

/// Reads the placeholder whose `{{` starts at `open`, handing each step of its path to
/// `step`: the end of its root name and of the whole placeholder, if it is well-formed.
fn read_placeholder<'t>(
    text: &'t str,
    open: usize,
    step: impl FnMut(Step<'t>),
) -> Option<(usize, usize)> {
    let (root_end, end) = read_path(text, open + 2, step)?;
    (text.as_bytes().get(end..end + 2) == Some(b"}}")).then_some((root_end, end + 2))
}

/// Reads the placeholder path `name ( "." name | "[" digits "]" )*` that starts at `at`,
/// handing each step after the root to `step`: the end of the root name and of the path;
/// `None` when no path starts there.
#[inline]
fn read_path<'t>(
    text: &'t str,
    at: usize,
    mut step: impl FnMut(Step<'t>),
) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let root_end = ident_end(bytes, at)?;
    let mut pos = root_end;
    loop {
        match bytes.get(pos) {
            Some(b'.') => {
                let end = ident_end(bytes, pos + 1)?;
                step(Step::Field(&text[pos + 1..end]));
                pos = end;
            }
            Some(b'[') => {
                let (index, end) = index_at(bytes, pos + 1)?;
                step(Step::Index(index));
                pos = end;
            }
            _ => return Some((root_end, pos)),
        }
    }
}

/// `digits "]"` starting at `at`: the index and the position after `]`. `None` when
/// there are no digits, no `]`, or the number does not fit a `u32`.
fn index_at(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    let mut pos = at;
    while let Some(&b) = bytes.get(pos).filter(|b| b.is_ascii_digit()) {
        value = value.checked_mul(10)?.checked_add(u32::from(b - b'0'))?;
        pos += 1;
    }
    (pos > at && bytes.get(pos) == Some(&b']')).then_some((value, pos + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(s: &str) -> Segment {
        Segment::Text(s.to_owned())
    }

    fn var(root: &str, path: Vec<PathSeg>, span: Range<usize>) -> Segment {
        Segment::Var(Placeholder {
            root: root.to_owned(),
            path,
            span,
        })
    }

    fn field(name: &str) -> PathSeg {
        PathSeg::Field(name.to_owned())
    }

    fn segs(s: &str) -> Vec<Segment> {
        parse_template(s).segments
    }

    #[test]
    fn plain_placeholder() {
        assert_eq!(
            segs("Hello {{name}}!"),
            [text("Hello "), var("name", vec![], 6..14), text("!")]
        );
    }

    #[test]
    fn foreign_syntax_is_found() {
        let s = "A {{ user.name } B {{#if x}}yes{{/if}} C {{input..x}} D {{}} E {{user | upper}} F {% if a %}G{% endif %} {{! note }} {{> part}} {{name}} {{ ok }} {{{topic} x {{t} y }}";
        let found: Vec<(&str, &str)> = foreign_syntax(s)
            .into_iter()
            .map(|(w, f)| (w, f.what()))
            .collect();
        assert_eq!(
            found,
            [
                ("{{ user.name }", "a placeholder closed by one brace"),
                ("{{#if x}}", "a Handlebars block"),
                ("{{/if}}", "a Handlebars block"),
                ("{{user | upper}}", "a filter"),
                ("{% if a %}", "a Jinja statement"),
                ("{% endif %}", "a Jinja statement"),
                ("{{! note }}", "a Handlebars comment"),
                ("{{> part}}", "a Handlebars partial"),
                ("{{topic}", "a placeholder closed by one brace"),
                ("{{t}", "a placeholder closed by one brace"),
            ]
        );
        // JSON shown to a model, placeholders, `||`, a lone `{%` and constructs left open
        // on their line are not flagged.
        for s in [
            "Reply {{\"a\": 1}} or {{x}} or {{a || b}} {x}",
            "Rate {%d} and 100{% of it",
            "{{#if x\n}}",
            "{% if\n %}",
        ] {
            assert!(foreign_syntax(s).is_empty(), "{s:?}");
        }
    }

    #[test]
    fn the_note_scanners_are_linear() {
        // Inputs that took minutes when every opener searched to the end of the text
        // for its close: now each opener reads only up to the next one.
        let found = |s: &str| (foreign_syntax(s).len(), spaced_placeholders(s).count());
        assert_eq!(found(&"{%".repeat(200_000)), (0, 0));
        assert_eq!(found(&"{{ a}".repeat(100_000)), (100_000, 0));
        assert_eq!(found(&"{{a}\n".repeat(100_000)), (100_000, 0));
        assert_eq!(found(&"{{#".repeat(100_000)), (0, 0));
        assert_eq!(found(&"{{ a |".repeat(100_000)), (0, 0));
        assert_eq!(
            found(&format!("{{{{ {}b }}}}", "a.".repeat(200_000))),
            (0, 1)
        );
    }

    #[test]
    fn spaced_placeholders_are_found() {
        let s = "Hi {{ name }}, {{topic}} {{\tuser.id[0] }} {{ a b }} {{ }} {{ fragments.x}} {{x";
        let found: Vec<_> = spaced_placeholders(s).collect();
        assert_eq!(
            found,
            [
                ("{{ name }}", "name"),
                ("{{\tuser.id[0] }}", "user.id[0]"),
                ("{{ fragments.x}}", "fragments.x"),
            ]
        );
        assert_eq!(spaced_placeholders("{{name}} {{ 1x }}").count(), 0);
    }

    #[test]
    fn spaces_inside_are_literal() {
        assert_eq!(segs("Hi {{ name }}"), [text("Hi {{ name }}")]);
        assert_eq!(segs("{{name }}"), [text("{{name }}")]);
        assert_eq!(segs("{{ name}}"), [text("{{ name}}")]);
        assert_eq!(segs("{{a. b}}"), [text("{{a. b}}")]);
    }

    #[test]
    fn paths() {
        assert_eq!(
            segs("{{items[0].name}}"),
            [var("items", vec![PathSeg::Index(0), field("name")], 0..17)]
        );
        assert_eq!(
            segs("{{input.doc.title}}"),
            [var("input", vec![field("doc"), field("title")], 0..19)]
        );
        assert_eq!(
            segs("{{artifacts.log[0]}}"),
            [var(
                "artifacts",
                vec![field("log"), PathSeg::Index(0)],
                0..20
            )]
        );
        assert_eq!(
            segs("{{m[1][22]._x9}}"),
            [var(
                "m",
                vec![PathSeg::Index(1), PathSeg::Index(22), field("_x9")],
                0..16
            )]
        );
        assert_eq!(
            segs("{{a[007]}}"),
            [var("a", vec![PathSeg::Index(7)], 0..10)]
        );
    }

    #[test]
    fn malformed_is_literal() {
        for s in [
            "{{",
            "{{}}",
            "{{name",
            "{{name}",
            "{{name}x}",
            "{{a..b}}",
            "{{a.}}",
            "{{.a}}",
            "{{a[x]}}",
            "{{a[]}}",
            "{{a[-1]}}",
            "{{a[1}}",
            "{{a b}}",
            "{{9a}}",
            "{{a-b}}",
            "{{fragment:x}}",
            "{{fragments.x.}}",
            "{{é}}",
            "{name}",
            "{ {name}}",
        ] {
            assert_eq!(segs(s), [text(s)], "{s:?}");
        }
    }

    #[test]
    fn index_must_fit_u32() {
        assert_eq!(
            segs("{{a[4294967295]}}"),
            [var("a", vec![PathSeg::Index(u32::MAX)], 0..17)]
        );
        assert_eq!(segs("{{a[4294967296]}}"), [text("{{a[4294967296]}}")]);
        assert_eq!(
            segs("{{a[99999999999999999999999999]}}"),
            [text("{{a[99999999999999999999999999]}}")]
        );
    }

    #[test]
    fn extra_braces() {
        assert_eq!(
            segs("{{{x}}}"),
            [text("{"), var("x", vec![], 1..6), text("}")]
        );
        assert_eq!(
            segs("{{{{x}}}}"),
            [text("{{"), var("x", vec![], 2..7), text("}}")]
        );
        assert_eq!(segs("{{a{{b}}"), [text("{{a"), var("b", vec![], 3..8)]);
        assert_eq!(
            segs("{{a}}}}{{b}}"),
            [var("a", vec![], 0..5), text("}}"), var("b", vec![], 7..12)]
        );
    }

    #[test]
    fn adjacent_placeholders_and_empty() {
        assert_eq!(segs(""), []);
        assert_eq!(
            segs("{{a}}{{b}}"),
            [var("a", vec![], 0..5), var("b", vec![], 5..10)]
        );
    }

    #[test]
    fn multibyte_text_spans_are_bytes() {
        let s = "héllo {{naïve}} {{名前}} ✓{{x.y}}ü";
        let t = parse_template(s);
        let vars: Vec<_> = t.placeholders().collect();
        assert_eq!(vars.len(), 1);
        assert_eq!(vars[0].root, "x");
        assert_eq!(&s[vars[0].span.clone()], "{{x.y}}");
        assert_eq!(
            t.segments,
            [
                text("héllo {{naïve}} {{名前}} ✓"),
                var("x", vec![field("y")], 32..39),
                text("ü")
            ]
        );
    }

    #[test]
    fn display_round_trips() {
        let s = "{{items[0].name}}";
        let t = parse_template(s);
        assert_eq!(t.placeholders().next().unwrap().to_string(), s);
    }

    #[test]
    fn long_inputs_are_linear() {
        // Many failing openers followed by long paths: must finish quickly.
        let s = "{{a.b.c.d.e.f".repeat(20_000);
        assert_eq!(segs(&s), [text(&s)]);
        let s = "{".repeat(100_000) + "x}}";
        let t = parse_template(&s);
        assert_eq!(t.placeholders().count(), 1);
    }

    /// Concatenates the segments (placeholders as their source text), checking the
    /// invariants on the way: spans on char boundaries, no empty or adjacent `Text`.
    fn reassemble(s: &str, t: &Template) -> String {
        let mut out = String::new();
        for seg in &t.segments {
            match seg {
                Segment::Text(x) => {
                    assert!(!x.is_empty());
                    out.push_str(x);
                }
                Segment::Var(p) => {
                    assert!(s.is_char_boundary(p.span.start) && s.is_char_boundary(p.span.end));
                    assert_eq!(p.span.start, out.len());
                    out.push_str(&s[p.span.clone()]);
                }
            }
        }
        for w in t.segments.windows(2) {
            assert!(!matches!(w, [Segment::Text(_), Segment::Text(_)]));
        }
        out
    }

    /// The roots [`placeholder_roots`] finds, with nothing copied, are those of the
    /// placeholders [`parse_template`] finds.
    fn roots_agree(s: &str, t: &Template) {
        let parsed: Vec<&str> = t.placeholders().map(|p| p.root.as_str()).collect();
        let scanned: Vec<&str> = placeholder_roots(s).collect();
        assert_eq!(scanned, parsed, "{s:?}");
    }

    #[test]
    fn roots_without_copying() {
        let s = "{{a}} {{ b }} {{c.d[0]}} {{{e}}} {{f[x]}} {{g";
        assert_eq!(placeholder_roots(s).collect::<Vec<_>>(), ["a", "c", "e"]);
        roots_agree(s, &parse_template(s));
    }

    #[test]
    fn exhaustive_short_strings() {
        let alphabet = ['{', '}', 'a', '.', '[', '0', ']', ' ', 'é'];
        let mut buf = Vec::new();
        fn go(alphabet: &[char], buf: &mut Vec<char>, depth: usize) {
            let s: String = buf.iter().collect();
            let t = parse_template(&s);
            assert_eq!(reassemble(&s, &t), s);
            roots_agree(&s, &t);
            if depth == 0 {
                return;
            }
            for &c in alphabet {
                buf.push(c);
                go(alphabet, buf, depth - 1);
                buf.pop();
            }
        }
        go(&alphabet, &mut buf, 6);
    }

    proptest! {
        #[test]
        fn never_panics_and_round_trips(s in "[{}a-z_.\\[\\]0-9 é名]{0,40}") {
            let t = parse_template(&s);
            roots_agree(&s, &t);
            prop_assert_eq!(reassemble(&s, &t), s);
        }

        #[test]
        fn arbitrary_strings(s in any::<String>()) {
            let t = parse_template(&s);
            prop_assert_eq!(reassemble(&s, &t), s);
        }

        #[test]
        fn generated_placeholders_parse(root in "[a-z_][a-z0-9_]{0,5}",
                                        path in proptest::collection::vec(
                                            prop_oneof!["[a-z_][a-z0-9_]{0,4}".prop_map(PathSeg::Field),
                                                        any::<u32>().prop_map(PathSeg::Index)], 0..4),
                                        pre in "[^{]{0,5}", post in "[^}]{0,5}") {
            let p = Placeholder { root, path, span: 0..0 };
            let src = format!("{pre}{p}{post}");
            let t = parse_template(&src);
            let got: Vec<_> = t.placeholders().collect();
            prop_assert_eq!(got.len(), 1);
            prop_assert_eq!(&got[0].root, &p.root);
            prop_assert_eq!(&got[0].path, &p.path);
            prop_assert_eq!(&src[got[0].span.clone()], p.to_string());
            prop_assert_eq!(reassemble(&src, &t), src.clone());
        }
    }
}
