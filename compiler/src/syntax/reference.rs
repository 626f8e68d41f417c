//! `${...}` references in composition bindings and predicate paths
//! (`compositions.md` §3.1, §3.5, §7.1).
//!
//! ```text
//! reference := "${" ws* root path* ws* "}"
//! root      := "input" | step-id ".output"
//! path      := "." ident
//! ident     := [A-Za-z_][A-Za-z0-9_]*
//! ws        := " " | "\t"
//! ```
//!
//! Unlike `{{var}}` templates, a `${` that does not open a well-formed reference is an
//! error ([`RefError`]), which the checker reports as `unresolved_binding` (§3.3): there
//! is no way to write a literal `${` in a binding. A reference's body runs from `${` to
//! the first `}`. Whether a step root is visible is the checker's business, not the
//! lexer's.

use std::fmt;
use std::ops::Range;

use super::scan::{find_from, ident_end, is_ident};
use ir_spec::json::eq_str;

/// The grammar, quoted at the end of every error message.
const EXPECTED: &str = "expected `${input.path}` or `${step.output.path}`";

/// At most this many bytes of the offending text are quoted in an error message.
const QUOTE_MAX: usize = 60;

/// What a reference starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefRoot {
    /// `${input...}`: the composition's input.
    Input,
    /// `${<step>.output...}`: the output of the step with this id.
    Step(String),
}

/// A well-formed `${...}` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `input` or a step's output.
    pub root: RefRoot,
    /// The member names after `input` or after `<step>.output`, in order.
    pub path: Vec<String>,
    /// Byte range of the whole `${...}`, braces included, in the parsed string.
    pub span: Range<usize>,
}

impl fmt::Display for Reference {
    /// Writes the reference in its canonical form, without spaces: `${step.output.a.b}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.root {
            RefRoot::Input => f.write_str("${input")?,
            RefRoot::Step(step) => write!(f, "${{{step}.output")?,
        }
        for name in &self.path {
            write!(f, ".{name}")?;
        }
        f.write_str("}")
    }
}

/// A piece of a [`Binding::Template`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingPart {
    /// Literal text.
    Text(String),
    /// A reference, replaced by the text form of its value (§3.6).
    Ref(Reference),
}

/// A binding string (a string inside a step's `input` or `args`), classified as in §3.5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// No `${` at all: the string is copied as is.
    Literal(String),
    /// The string is exactly one reference, as `"${input.count}"`: it resolves to the
    /// referenced value with its JSON type.
    Whole(Reference),
    /// Text and references, as `"n=${input.n}"`: the result is a string. Two `Text`
    /// parts are never adjacent, and no `Text` is empty.
    Template(Vec<BindingPart>),
}

impl Binding {
    /// The references of the binding, in source order.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        let (whole, parts) = match self {
            Binding::Literal(_) => (None, &[][..]),
            Binding::Whole(r) => (Some(r), &[][..]),
            Binding::Template(parts) => (None, &parts[..]),
        };
        whole
            .into_iter()
            .chain(parts.iter().filter_map(|p| match p {
                BindingPart::Ref(r) => Some(r),
                BindingPart::Text(_) => None,
            }))
    }
}

/// A `${` that does not open a well-formed reference, or a predicate path that is not
/// exactly one reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RefError {
    /// Byte range of the offending text in the parsed string: the `${...}` up to its `}`
    /// (or to the end of the string when it is not closed), or the whole string for
    /// [`parse_whole_reference`].
    pub span: Range<usize>,
    /// What is wrong and what the grammar is.
    pub message: String,
}

/// Parses a binding string. Every `${` must open a well-formed reference; otherwise
/// [`RefError`] (its message says what is wrong and what the grammar is, e.g.
/// "`${input.a + 1}` is not a reference: expected `${input.path}` or `${step.output.path}`").
pub fn parse_binding(text: &str) -> Result<Binding, RefError> {
    Ok(match lex_binding(text)? {
        Lexing::Literal(t) => Binding::Literal(t.to_owned()),
        Lexing::Whole(r) => Binding::Whole(r.owned()),
        Lexing::Template(pieces) => Binding::Template(
            pieces
                .into_iter()
                .map(|piece| match piece {
                    Piece::Text(t) => BindingPart::Text(t.to_owned()),
                    Piece::Ref(r) => BindingPart::Ref(r.owned()),
                })
                .collect(),
        ),
    })
}

/// A binding string classified as [`parse_binding`] does, borrowing from the text: what
/// lowering reads. Only a template's list of pieces is allocated.
pub(crate) enum Lexing<'t> {
    /// [`Binding::Literal`].
    Literal(&'t str),
    /// [`Binding::Whole`].
    Whole(Lexed<'t>),
    /// [`Binding::Template`], with the same pieces.
    Template(Vec<Piece<'t>>),
}

/// A piece of a [`Lexing::Template`]: [`BindingPart`], borrowed.
pub(crate) enum Piece<'t> {
    /// Literal text, never empty.
    Text(&'t str),
    /// A reference.
    Ref(Lexed<'t>),
}

/// [`parse_binding`], borrowing from `text`.
pub(crate) fn lex_binding(text: &str) -> Result<Lexing<'_>, RefError> {
    let mut refs = references(text);
    let Some(first) = refs.next().transpose()? else {
        return Ok(Lexing::Literal(text));
    };
    if first.span == (0..text.len()) {
        return Ok(Lexing::Whole(first));
    }
    let mut pieces = Vec::new();
    let mut literal_from = 0;
    for reference in std::iter::once(Ok(first)).chain(refs) {
        let reference = reference?;
        if literal_from < reference.span.start {
            pieces.push(Piece::Text(&text[literal_from..reference.span.start]));
        }
        literal_from = reference.span.end;
        pieces.push(Piece::Ref(reference));
    }
    if literal_from < text.len() {
        pieces.push(Piece::Text(&text[literal_from..]));
    }
    Ok(Lexing::Template(pieces))
}

/// The references of `text`, in order; a malformed one is its error, and the last item.
fn references(text: &str) -> impl Iterator<Item = Result<Lexed<'_>, RefError>> {
    let mut from = Some(0);
    std::iter::from_fn(move || {
        let open = find_from(text, from?, "${")?;
        let lexed = lex_at(text, open);
        from = lexed.as_ref().ok().map(|l| l.span.end);
        Some(lexed)
    })
}

/// Parses a predicate `path` (§7.1): the whole string must be exactly one well-formed
/// reference, with nothing before `${` or after `}`.
pub fn parse_whole_reference(text: &str) -> Result<Reference, RefError> {
    lex_whole_reference(text).map(Lexed::owned)
}

/// [`parse_whole_reference`], borrowing from `text`.
pub(crate) fn lex_whole_reference(text: &str) -> Result<Lexed<'_>, RefError> {
    let whole = 0..text.len();
    match lex_binding(text)? {
        Lexing::Whole(r) => Ok(r),
        Lexing::Literal(_) => {
            let trimmed = text.trim_matches([' ', '\t']);
            let message = if !trimmed.is_empty() && trimmed.split('.').all(is_ident) {
                format!(
                    "{} is not a reference: write `${{{}}}`",
                    quote(text),
                    trimmed
                )
            } else {
                format!(
                    "{} is not a reference: a predicate path must be exactly one reference, {EXPECTED}",
                    quote(text)
                )
            };
            Err(RefError {
                span: whole,
                message,
            })
        }
        Lexing::Template(pieces) => {
            let refs = pieces.iter().filter(|p| matches!(p, Piece::Ref(_))).count();
            let what = if refs > 1 {
                "holds more than one reference"
            } else {
                "has text around the reference"
            };
            Err(RefError {
                span: whole,
                message: format!(
                    "{} {what}: a predicate path must be exactly one reference, {EXPECTED}",
                    quote(text)
                ),
            })
        }
    }
}

/// The step ids the references of a binding start from, in source order (`None` for
/// `${input...}`), or the error [`parse_binding`] gives. This is what a check needs of a
/// binding, and it allocates nothing for a well-formed one. On an error, `each` has
/// already seen the references before the malformed one.
///
/// ```
/// # use packc_compiler::syntax::reference::binding_roots;
/// let mut roots = Vec::new();
/// binding_roots("${input.a} and ${ s0.output.x }", |root| roots.push(root)).unwrap();
/// assert_eq!(roots, [None, Some("s0")]);
/// assert!(binding_roots("${s0.x}", |_| {}).is_err());
/// ```
pub fn binding_roots<'t>(
    text: &'t str,
    mut each: impl FnMut(Option<&'t str>),
) -> Result<(), RefError> {
    references(text).try_for_each(|lexed| lexed.map(|l| each(l.step)))
}

/// A well-formed reference, borrowed from the text it was read from.
pub(crate) struct Lexed<'t> {
    /// The step id of a `${<step>.output...}`; `None` for `${input...}`.
    pub step: Option<&'t str>,
    /// The names after the root, joined by `.` as written (`""` when there are none).
    pub path: &'t str,
    /// Byte range of the whole `${...}`, braces included.
    pub span: Range<usize>,
}

impl<'t> Lexed<'t> {
    /// The member names after the root, in order.
    pub fn names(&self) -> impl Iterator<Item = &'t str> {
        // What `self.path.split('.')` gives, read byte by byte (paths are a name or two,
        // shorter than the setup of a string search), and none for the empty path, where
        // `split` would give one empty name.
        let mut rest = (!self.path.is_empty()).then_some(self.path);
        std::iter::from_fn(move || {
            let path = rest?;
            match path.bytes().position(|b| b == b'.') {
                Some(dot) => {
                    rest = Some(&path[dot + 1..]);
                    Some(&path[..dot])
                }
                None => {
                    rest = None;
                    Some(path)
                }
            }
        })
    }

    /// The owned [`Reference`].
    fn owned(self) -> Reference {
        let root = match self.step {
            None => RefRoot::Input,
            Some(step) => RefRoot::Step(step.to_owned()),
        };
        let path = self.names().map(str::to_owned).collect();
        Reference {
            root,
            path,
            span: self.span,
        }
    }
}

/// The reference whose `${` starts at `open`, borrowed: allocates only for an error.
#[inline]
fn lex_at(text: &str, open: usize) -> Result<Lexed<'_>, RefError> {
    match lex_quick(text, open) {
        Some(lexed) => Ok(lexed),
        None => lex_general(text, open),
    }
}

/// [`lex_at`] of a well-formed reference in one pass over its bytes: `${`, blanks,
/// names joined by `.`, blanks, `}`, with `input` or `<step>.output` first. Anything
/// else is `None`, for [`lex_general`] to read again and say what is wrong. What it
/// accepts, it reads as [`lex_general`] does: the body runs to the first `}`, and
/// neither names, dots nor blanks hold one.
#[inline]
fn lex_quick(text: &str, open: usize) -> Option<Lexed<'_>> {
    let bytes = text.as_bytes();
    let blanks = |mut i: usize| {
        while matches!(bytes.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        i
    };
    let start = blanks(open + 2);
    let (end, dots) = dotted(bytes, start)?;
    let close = blanks(end);
    if bytes.get(close) != Some(&b'}') {
        return None;
    }
    root(text, start..end, dots, open..close + 1)
}

/// The names joined by `.` that start at `at`: where the last one ends, and where the
/// first two dots are. `None` when a name is missing (at `at`, or after a dot).
#[inline]
fn dotted(bytes: &[u8], at: usize) -> Option<(usize, [Option<usize>; 2])> {
    // The two dots are kept apart, not in an array indexed by a count: an array lives in
    // memory, and reading it back whole right after writing one of its halves stalls.
    let (mut first, mut second) = (None, None);
    let mut end = at;
    loop {
        end = ident_end(bytes, end)?;
        if bytes.get(end) != Some(&b'.') {
            return Some((end, [first, second]));
        }
        if first.is_none() {
            first = Some(end);
        } else if second.is_none() {
            second = Some(end);
        }
        end += 1;
    }
}

/// The reference whose body, `text[body]`, is names joined by `.` with its first two
/// dots at `dots`: `input...` or `<step>.output...`; `None` for anything else.
// Always inlined: returned from a call, the reference is read back from memory right
// after the call wrote it, which stalls.
#[inline(always)]
fn root(
    text: &str,
    body: Range<usize>,
    dots: [Option<usize>; 2],
    span: Range<usize>,
) -> Option<Lexed<'_>> {
    let end = body.end;
    let after = |dot: Option<usize>| dot.map_or("", |d| &text[d + 1..end]);
    let first = &text[body.start..dots[0].unwrap_or(end)];
    if eq_str(first, "input") {
        return Some(Lexed {
            step: None,
            path: after(dots[0]),
            span,
        });
    }
    let second = &text[dots[0]?..dots[1].unwrap_or(end)];
    eq_str(second, ".output").then(|| Lexed {
        step: Some(first),
        path: after(dots[1]),
        span,
    })
}

/// [`lex_at`] by the general path: finds the body's end, then reads it, and says what
/// is wrong when it is not a reference.
fn lex_general(text: &str, open: usize) -> Result<Lexed<'_>, RefError> {
    let body_start = open + 2;
    let Some(close) = find_from(text, body_start, "}") else {
        return Err(RefError {
            span: open..text.len(),
            message: format!(
                "{} is not closed: a reference ends with `}}`, {EXPECTED}",
                quote(&text[open..])
            ),
        });
    };
    let span = open..close + 1;
    let source = &text[span.clone()];
    let inside = &text[body_start..close];
    let body = inside.trim_matches([' ', '\t']);
    let error = |message: String| RefError {
        span: span.clone(),
        message,
    };
    if body.is_empty() {
        return Err(error(format!("{} is empty: {EXPECTED}", quote(source))));
    }
    // Where the trimmed body is in `text`.
    let start = body_start + (inside.len() - inside.trim_start_matches([' ', '\t']).len());
    let end = start + body.len();
    let dots = match dotted(text.as_bytes(), start) {
        Some((names_end, dots)) if names_end == end => dots,
        _ => {
            return Err(error(format!(
                "{} is not a reference: {EXPECTED} (a path of names joined by `.`, without indexing, quotes or operators)",
                quote(source)
            )))
        }
    };
    if let Some(lexed) = root(text, start..end, dots, span.clone()) {
        return Ok(lexed);
    }
    let first = &text[start..dots[0].unwrap_or(end)];
    let rest = dots[0].map_or("", |d| &text[d + 1..end]);
    let ref_text = |path: &str| quote(&format!("${{{path}}}"));
    let under = |root: &str, path: &str| {
        if path.is_empty() {
            root.to_owned()
        } else {
            format!("{root}.{path}")
        }
    };
    // `${step.outptu.x}`: the second name is `output` misspelt.
    let (second, after) = rest.split_once('.').unwrap_or((rest, ""));
    if misspelt(second, "output") {
        return Err(error(format!(
            "{}: `{second}` is not `output`; write {} ({EXPECTED})",
            quote(source),
            ref_text(&under(&format!("{first}.output"), after))
        )));
    }
    // A step id without `.output`: suggest the same path under the output, and the
    // composition input when the name looks like `input` misspelt (`${inptu.text}`).
    let step = ref_text(&under(&format!("{first}.output"), rest));
    if misspelt(first, "input") {
        return Err(error(format!(
            "{}: `{first}` is neither `input` nor a step's output; write {} for the \
             composition input, or {step} for step `{first}`'s output ({EXPECTED})",
            quote(source),
            ref_text(&under("input", rest)),
        )));
    }
    Err(error(format!(
        "{} refers to step `{first}` without `.output`; write {step} ({EXPECTED})",
        quote(source),
    )))
}

/// Whether `name` looks like `word` misspelt (`outptu`, `ouput`, `inptu`): near it by
/// the "did you mean" distance, or the same letters with two neighbours swapped.
fn misspelt(name: &str, word: &str) -> bool {
    if name == word || name.is_empty() {
        return false;
    }
    if ir_spec::suggest::suggest(name, [word]).is_some() {
        return true;
    }
    let (a, b) = (name.as_bytes(), word.as_bytes());
    let differ: Vec<usize> = (0..a.len().min(b.len()))
        .filter(|&i| a[i] != b[i])
        .collect();
    a.len() == b.len()
        && differ.len() == 2
        && differ[1] == differ[0] + 1
        && a[differ[0]] == b[differ[1]]
        && a[differ[1]] == b[differ[0]]
}

/// `s` in backticks, cut to [`QUOTE_MAX`] bytes on a char boundary.
fn quote(s: &str) -> String {
    if s.len() <= QUOTE_MAX {
        return format!("`{s}`");
    }
    let mut end = QUOTE_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("`{}…`", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A path's names are what `split('.')` gives, and none for the empty path.
    #[test]
    fn names_split_at_dots() {
        for path in [
            "", "a", "ab", "a.b", "a.bc.d", "a..b", "a.", ".a", ".", "..", "x.y.",
        ] {
            let lexed = Lexed {
                step: None,
                path,
                span: 0..0,
            };
            let names: Vec<&str> = lexed.names().collect();
            let split: Vec<&str> = if path.is_empty() {
                Vec::new()
            } else {
                path.split('.').collect()
            };
            assert_eq!(names, split, "{path:?}");
        }
    }

    fn input(path: &[&str], span: Range<usize>) -> Reference {
        Reference {
            root: RefRoot::Input,
            path: path.iter().map(|s| s.to_string()).collect(),
            span,
        }
    }

    fn step(id: &str, path: &[&str], span: Range<usize>) -> Reference {
        Reference {
            root: RefRoot::Step(id.to_owned()),
            path: path.iter().map(|s| s.to_string()).collect(),
            span,
        }
    }

    fn text(s: &str) -> BindingPart {
        BindingPart::Text(s.to_owned())
    }

    fn err(s: &str) -> RefError {
        parse_binding(s).expect_err(s)
    }

    #[test]
    fn valid_examples_from_the_grammar() {
        assert_eq!(
            parse_binding("${input}"),
            Ok(Binding::Whole(input(&[], 0..8)))
        );
        assert_eq!(
            parse_binding("${input.doc.title}"),
            Ok(Binding::Whole(input(&["doc", "title"], 0..18)))
        );
        assert_eq!(
            parse_binding("${ classify.output.type }"),
            Ok(Binding::Whole(step("classify", &["type"], 0..25)))
        );
        assert_eq!(
            parse_binding("${meta.output}"),
            Ok(Binding::Whole(step("meta", &[], 0..14)))
        );
        assert_eq!(
            parse_binding("${\t input.a\t}"),
            Ok(Binding::Whole(input(&["a"], 0..13)))
        );
        assert_eq!(
            parse_binding("${input.output}"),
            Ok(Binding::Whole(input(&["output"], 0..15)))
        );
    }

    #[test]
    fn whole_versus_template() {
        // §3.5 example: {count: "${input.n}", label: "n=${input.n}", tags: "${input.tags}", list: ["${input.n}", 7]}
        assert_eq!(
            parse_binding("${input.n}"),
            Ok(Binding::Whole(input(&["n"], 0..10)))
        );
        assert_eq!(
            parse_binding("n=${input.n}"),
            Ok(Binding::Template(vec![
                text("n="),
                BindingPart::Ref(input(&["n"], 2..12))
            ]))
        );
        assert_eq!(
            parse_binding("${input.tags}"),
            Ok(Binding::Whole(input(&["tags"], 0..13)))
        );
        assert_eq!(
            parse_binding(" ${input.count}"),
            Ok(Binding::Template(vec![
                text(" "),
                BindingPart::Ref(input(&["count"], 1..15))
            ]))
        );
        assert_eq!(
            parse_binding("${input.count} "),
            Ok(Binding::Template(vec![
                BindingPart::Ref(input(&["count"], 0..14)),
                text(" ")
            ]))
        );
        assert_eq!(
            parse_binding("obj=${input.o} none=${input.z}"),
            Ok(Binding::Template(vec![
                text("obj="),
                BindingPart::Ref(input(&["o"], 4..14)),
                text(" none="),
                BindingPart::Ref(input(&["z"], 20..30)),
            ]))
        );
        assert_eq!(
            parse_binding("${input.a}${s.output}"),
            Ok(Binding::Template(vec![
                BindingPart::Ref(input(&["a"], 0..10)),
                BindingPart::Ref(step("s", &[], 10..21)),
            ]))
        );
    }

    #[test]
    fn literals() {
        for s in [
            "",
            "plain",
            "$",
            "cost: $5",
            "{input}",
            "$ {input}",
            "}",
            "{{x}}",
        ] {
            assert_eq!(parse_binding(s), Ok(Binding::Literal(s.to_owned())));
        }
        assert_eq!(
            parse_binding("$${input}"),
            Ok(Binding::Template(vec![
                text("$"),
                BindingPart::Ref(input(&[], 1..9))
            ]))
        );
    }

    #[test]
    fn malformed_bodies() {
        let e = err("${input.a + 1}");
        assert_eq!(e.span, 0..14);
        assert!(e.message.starts_with("`${input.a + 1}` is not a reference: expected `${input.path}` or `${step.output.path}`"), "{}", e.message);
        let e = err("x ${5} y");
        assert_eq!(e.span, 2..6);
        assert!(e.message.starts_with("`${5}` is not a reference"));
        for s in [
            "${}",
            "${ }",
            "${input.}",
            "${.input}",
            "${input..a}",
            "${input.a[0]}",
            "${input.\"a\"}",
            "${input . a}",
            "${input.a b}",
            "${in put}",
            "${input.é}",
            "${s.output.}",
            "${${input}}",
            "${risk.output.score > 0.8 || input.vip}",
        ] {
            let e = err(s);
            assert!(s.is_char_boundary(e.span.end), "{s}");
            assert!(e.message.contains(EXPECTED), "{s}: {}", e.message);
        }
        assert_eq!(
            err("${}").message,
            "`${}` is empty: expected `${input.path}` or `${step.output.path}`"
        );
    }

    #[test]
    fn unclosed() {
        let e = err("a ${input.x");
        assert_eq!(e.span, 2..11);
        assert!(
            e.message.starts_with("`${input.x` is not closed"),
            "{}",
            e.message
        );
        assert_eq!(err("${").span, 0..2);
        assert_eq!(err("${input}${").span, 8..10);
    }

    #[test]
    fn misspelt_output_and_input_are_named() {
        let e = err("${classify.outptu.type}");
        assert!(
            e.message
                .starts_with("`${classify.outptu.type}`: `outptu` is not `output`; write `${classify.output.type}`"),
            "{}",
            e.message
        );
        let e = err("${s.ouput}");
        assert!(e.message.contains("write `${s.output}`"), "{}", e.message);
        let e = err("${inptu.text}");
        assert!(
            e.message.contains(
                "write `${input.text}` for the composition input, or `${inptu.output.text}`"
            ),
            "{}",
            e.message
        );
        // A name that is neither is a step read without `.output`.
        let e = err("${summary.text}");
        assert!(
            e.message.contains("write `${summary.output.text}`"),
            "{}",
            e.message
        );
        assert!(!misspelt("output", "output") && !misspelt("outputs_total", "output"));
    }

    #[test]
    fn step_without_output() {
        let e = err("${s}");
        assert_eq!(e.span, 0..4);
        assert!(
            e.message
                .starts_with("`${s}` refers to step `s` without `.output`; write `${s.output}`"),
            "{}",
            e.message
        );
        let e = err("${ s.foo.bar }");
        assert!(
            e.message.contains("write `${s.output.foo.bar}`"),
            "{}",
            e.message
        );
        assert!(e.message.contains(EXPECTED));
    }

    #[test]
    fn first_error_wins_and_is_reported_even_after_valid_refs() {
        let e = err("${input.a} and ${bad expr} and ${also bad}");
        assert_eq!(e.span, 15..26);
    }

    #[test]
    fn multibyte_spans() {
        let s = "é=${input.a}✓${ s.output.b }ü";
        let b = parse_binding(s).unwrap();
        let refs: Vec<_> = b.references().collect();
        assert_eq!(refs.len(), 2);
        assert_eq!(&s[refs[0].span.clone()], "${input.a}");
        assert_eq!(&s[refs[1].span.clone()], "${ s.output.b }");
        assert_eq!(refs[0].span, 3..13);
        let e = err("日本${入力}");
        assert_eq!(&"日本${入力}"[e.span.clone()], "${入力}");
    }

    #[test]
    fn long_error_text_is_cut() {
        let s = format!("${{{}}}", "é".repeat(100));
        let e = err(&s);
        assert_eq!(e.span, 0..s.len());
        assert!(e.message.len() < QUOTE_MAX + 200, "{}", e.message);
        assert!(e.message.contains('…'));
    }

    #[test]
    fn display_is_canonical() {
        let r = parse_whole_reference("${ classify.output.type }").unwrap();
        assert_eq!(r.to_string(), "${classify.output.type}");
        assert_eq!(
            parse_whole_reference("${input}").unwrap().to_string(),
            "${input}"
        );
    }

    #[test]
    fn predicate_paths() {
        assert_eq!(
            parse_whole_reference("${input.tier}"),
            Ok(input(&["tier"], 0..13))
        );
        assert_eq!(
            parse_whole_reference("${ risk.output.score }"),
            Ok(step("risk", &["score"], 0..22))
        );
        let e = parse_whole_reference("classify.output.type").unwrap_err();
        assert_eq!(e.span, 0..20);
        assert!(e.message.contains("write"), "{}", e.message);
        assert!(
            e.message.contains("`${classify.output.type}`"),
            "{}",
            e.message
        );
        let e = parse_whole_reference(" ${input.a}").unwrap_err();
        assert!(
            e.message.contains("text around the reference"),
            "{}",
            e.message
        );
        let e = parse_whole_reference("${input.a}${input.b}").unwrap_err();
        assert!(
            e.message.contains("more than one reference"),
            "{}",
            e.message
        );
        let e = parse_whole_reference("${risk.output.score > 0.8 || input.vip}").unwrap_err();
        assert!(e.message.contains("is not a reference"));
        let e = parse_whole_reference("").unwrap_err();
        assert_eq!(e.span, 0..0);
        assert!(parse_whole_reference("a + b")
            .unwrap_err()
            .message
            .contains(EXPECTED));
        assert!(parse_whole_reference("${s.x}")
            .unwrap_err()
            .message
            .contains("without `.output`"));
    }

    #[test]
    fn errors_display_their_message() {
        let e = err("${5}");
        assert_eq!(e.to_string(), e.message);
        let _: &dyn std::error::Error = &e;
    }

    /// Checks the invariants of a successful parse: parts reassemble the input.
    fn check(s: &str, b: &Binding) {
        let mut out = String::new();
        match b {
            Binding::Literal(x) => {
                assert!(!x.contains("${"));
                out.push_str(x);
            }
            Binding::Whole(r) => out.push_str(&s[r.span.clone()]),
            Binding::Template(parts) => {
                assert!(parts.len() > 1 || s.is_empty());
                for p in parts {
                    match p {
                        BindingPart::Text(x) => {
                            assert!(!x.is_empty());
                            out.push_str(x);
                        }
                        BindingPart::Ref(r) => {
                            assert_eq!(r.span.start, out.len());
                            out.push_str(&s[r.span.clone()]);
                        }
                    }
                }
                for w in parts.windows(2) {
                    assert!(!matches!(w, [BindingPart::Text(_), BindingPart::Text(_)]));
                }
            }
        }
        assert_eq!(out, s);
    }

    #[test]
    fn exhaustive_short_strings() {
        let alphabet = ['$', '{', '}', 'a', '.', ' ', 'é'];
        fn go(alphabet: &[char], buf: &mut Vec<char>, depth: usize) {
            let s: String = buf.iter().collect();
            match parse_binding(&s) {
                Ok(b) => check(&s, &b),
                Err(e) => {
                    assert!(s.is_char_boundary(e.span.start) && s.is_char_boundary(e.span.end));
                    assert!(s[e.span.clone()].starts_with("${"));
                }
            }
            let _ = parse_whole_reference(&s);
            same_both_ways(&s);
            if depth == 0 {
                return;
            }
            for &c in alphabet {
                buf.push(c);
                go(alphabet, buf, depth - 1);
                buf.pop();
            }
        }
        go(&alphabet, &mut Vec::new(), 6);
    }

    /// Every `${` of `s` reads the same by [`lex_quick`] (when it accepts it) as by
    /// [`lex_general`], which must accept it too.
    fn same_both_ways(s: &str) {
        let mut from = 0;
        while let Some(open) = find_from(s, from, "${") {
            if let Some(quick) = lex_quick(s, open) {
                let general = lex_general(s, open)
                    .unwrap_or_else(|e| panic!("{s:?}: the quick path read what is {e}"));
                assert_eq!(
                    (quick.step, quick.path, quick.span),
                    (general.step, general.path, general.span),
                    "{s:?} at {open}"
                );
            }
            from = open + 1;
        }
    }

    #[test]
    fn the_quick_path_reads_well_formed_references() {
        let well_formed = [
            "${input}",
            "${input.a}",
            "${ \t input.a_1.B }",
            "${s0.output}",
            "${s0.output.x.y}",
            "${ step_2.output.input }",
            "${input.output.x}",
            "x ${output.output} y",
        ];
        for s in well_formed {
            let open = s.find("${").unwrap();
            assert!(lex_quick(s, open).is_some(), "{s:?}");
            same_both_ways(s);
        }
        for s in [
            "${s0}",
            "${s0.x}",
            "${input.}",
            "${input",
            "${.a}",
            "${a b}",
            "${}",
        ] {
            assert!(lex_quick(s, 0).is_none(), "{s:?}");
            assert!(lex_general(s, 0).is_err(), "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn both_paths_agree(s in "(\\$\\{|[ \t{}$._a-z0-9]|input|output|\\.output)*") {
            same_both_ways(&s);
        }

        #[test]
        fn never_panics(s in "(\\$\\{|[ \t{}$.a-z_0-9é+])*") {
            if let Ok(b) = parse_binding(&s) {
                check(&s, &b);
            }
            let _ = parse_whole_reference(&s);
        }

        #[test]
        fn arbitrary_strings(s in any::<String>()) {
            if let Ok(b) = parse_binding(&s) {
                check(&s, &b);
            }
            let _ = parse_whole_reference(&s);
        }

        #[test]
        fn generated_references_round_trip(
            root in prop_oneof![Just(RefRoot::Input), "[a-z_][a-z0-9_]{0,5}".prop_filter("not input", |s| s != "input").prop_map(RefRoot::Step)],
            path in proptest::collection::vec("[A-Za-z_][A-Za-z0-9_]{0,4}", 0..4),
        ) {
            let r = Reference { root, path, span: 0..0 };
            let src = r.to_string();
            let got = parse_whole_reference(&src).unwrap();
            prop_assert_eq!(got.span.clone(), 0..src.len());
            prop_assert_eq!(Reference { span: 0..0, ..got }, r);
        }
    }
}
