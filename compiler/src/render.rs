//! Printing diagnostics: like rustc's with ariadne, or one JSON object per line.
//!
//! This is the only place where JSON pointers become `file:line:col`.
//!
//! Output is linear in the number of diagnostics whatever the pack's shape: positions come
//! from an index of the text built once per file ([`TextIndex`]), a report shows the lines
//! it blames and no others, and a line longer than [`MAX_LINE_CHARS`] is shown cut to a
//! window around what it blames (`…` marks the cuts). Pack text is untrusted: control
//! characters in the source lines, the messages and the file name are escaped
//! ([`escape_control`], [`display_text`]) so a pack cannot drive the reader's terminal.
//! JSON text is printed by [`json_line`] and [`json_pretty`], which also escape the
//! controls serde_json leaves as they are (DEL and the C1 controls).

use std::borrow::Cow;
use std::io::{self, Write};
use std::ops::Range;

use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};
use serde_json::json;

use crate::diag::{Diagnostic, Severity, Site};
use crate::load::SpanIndex;

/// A source file as the renderer sees it: its display name, its text, and the span index
/// of its document when it parsed.
pub struct RenderSource<'a> {
    /// The name printed in `file:line:col`.
    pub name: &'a str,
    /// The text (lossily decoded if it was not UTF-8).
    pub text: &'a str,
    /// Pointer → span, when the document parsed.
    pub spans: Option<&'a SpanIndex>,
}

impl<'a> RenderSource<'a> {
    /// The source `checked` was checked from: `text` under `name`, with the span index of
    /// its document when it parsed.
    pub fn of_checked(name: &'a str, text: &'a str, checked: &'a crate::Checked) -> Self {
        RenderSource {
            name,
            text,
            spans: checked.loaded.as_ref().map(|l| &l.spans),
        }
    }

    /// The byte range a site designates: a member's key for pointers to mapping members,
    /// the node itself otherwise, the nearest existing ancestor when the node is absent.
    pub fn span_of(&self, site: &Site) -> Option<Range<usize>> {
        let span = match site {
            Site::Span(r) => r.clone(),
            Site::Pointer(p) => self.member_span(p)?,
            Site::Whole => return None,
        };
        let start = floor_boundary(self.text, span.start);
        let mut end = span.end.clamp(start, self.text.len());
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        Some(start..end)
    }

    /// A present mapping member written on one line is shown whole (`id: summary`); a
    /// longer one by its key; anything else by its node or nearest existing ancestor.
    fn member_span(&self, pointer: &str) -> Option<Range<usize>> {
        let spans = self.spans?;
        if let Some(node) = spans.get(pointer) {
            if let Some(key) = &node.key {
                let whole = key.start..node.value.end.max(key.end);
                let one_line = self
                    .text
                    .get(whole.clone())
                    .is_some_and(|t| !t.contains('\n'));
                return Some(if one_line { whole } else { key.clone() });
            }
        }
        spans.key_or_value(pointer)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_boundary(self.text, offset);
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    /// Where a diagnostic points, as `(line, column)`, if anywhere.
    pub fn position(&self, d: &Diagnostic) -> Option<(usize, usize)> {
        self.primary_span(d).map(|s| self.line_col(s.start))
    }

    /// `diags` (sorted by node, as the checks give them) in the order of the places they
    /// point at: a diagnostic narrowed to a text inside its node ([`Diagnostic::within`],
    /// a placeholder in a template) comes where that text is, so two on one line are
    /// printed left to right. The sort is stable, and skipped when none is narrowed.
    pub fn in_source_order<'d>(&self, diags: &'d [Diagnostic]) -> Vec<&'d Diagnostic> {
        let mut ordered: Vec<&Diagnostic> = diags.iter().collect();
        if diags.iter().any(|d| d.within.is_some()) {
            ordered.sort_by_cached_key(|d| self.primary_span(d).map_or(0, |s| s.start));
        }
        ordered
    }

    /// The byte range a diagnostic's primary label designates: its site, narrowed to the
    /// text it names ([`Diagnostic::within`]) when that text is found in the node's
    /// source (a placeholder on line 12 of a block-scalar template is shown on line 12).
    pub fn primary_span(&self, d: &Diagnostic) -> Option<Range<usize>> {
        if let (Some(needle), Site::Pointer(p), Some(spans)) = (&d.within, &d.site, self.spans) {
            if let Some(node) = spans.get(p) {
                let value =
                    node.value.start.min(self.text.len())..node.value.end.min(self.text.len());
                // The first occurrence not followed by a name character when the needle
                // ends in one: `{{who` is not found inside `{{whoever}}`.
                let text = self.text.get(value.clone()).unwrap_or_default();
                // A needle ending in one brace (`{{name}`) is not found inside `{{name}}`.
                let name_char = |c: char| c.is_alphanumeric() || c == '_';
                let open_ended = needle.ends_with(name_char);
                let one_brace = needle.ends_with('}') && !needle.ends_with("}}");
                let found = text.match_indices(&**needle).find(|(at, _)| {
                    let after = &text[at + needle.len()..];
                    !(open_ended && after.starts_with(name_char)
                        || one_brace && after.starts_with('}'))
                });
                if let Some((at, _)) = found {
                    let start = value.start + at;
                    return self.span_of(&Site::Span(start..start + needle.len()));
                }
            }
        }
        self.span_of(&d.site)
    }
}

/// The largest char boundary of `text` at or before `offset`.
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Lines longer than this (in characters) are shown cut around the span they carry.
pub const MAX_LINE_CHARS: usize = 240;

/// Characters kept on each side of a span on a cut line.
const CUT_CONTEXT: usize = 60;

/// Characters of one span shown at most on a cut line.
const CUT_SPAN: usize = 120;

/// Byte offsets → lines and character counts, built once per text in linear time so that
/// locating each diagnostic costs `O(log n)` plus a bounded scan.
pub struct TextIndex<'a> {
    text: &'a str,
    /// Byte offset where each line starts (lines end at `\n`).
    line_starts: Vec<usize>,
    /// Characters before byte `k * BLOCK`, for every `k`.
    chars_at_block: Vec<usize>,
}

const BLOCK: usize = 1024;

impl<'a> TextIndex<'a> {
    /// Index `text`.
    pub fn new(text: &'a str) -> TextIndex<'a> {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        line_starts.extend(memchr_iter(bytes).map(|i| i + 1));
        let mut chars_at_block = Vec::with_capacity(bytes.len() / BLOCK + 1);
        let mut chars = 0;
        for block in bytes.chunks(BLOCK) {
            chars_at_block.push(chars);
            chars += count_chars(block);
        }
        chars_at_block.push(chars);
        TextIndex {
            text,
            line_starts,
            chars_at_block,
        }
    }

    /// Characters in `text[..offset]` (`offset` clamped to the text).
    pub fn chars_before(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        let block = offset / BLOCK;
        self.chars_at_block[block] + count_chars(&self.text.as_bytes()[block * BLOCK..offset])
    }

    /// 0-based line of a byte offset.
    fn line_of(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// The byte range of line `line` without its `\n`.
    fn line_range(&self, line: usize) -> Range<usize> {
        let start = self.line_starts[line];
        let end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |next| next - 1);
        start..end.max(start)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = floor_boundary(self.text, offset);
        let line = self.line_of(offset);
        let col = self.chars_before(offset) - self.chars_before(self.line_starts[line]);
        (line + 1, col + 1)
    }
}

fn memchr_iter(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i)
}

/// Characters in a slice of UTF-8 bytes (the bytes that do not continue a character).
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// Whether `c` would be interpreted by a terminal rather than shown: the C0 controls but
/// `\t` and `\n`, DEL, and the C1 controls (`U+0080`–`U+009F`).
pub fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every control character ([`is_control`]) written as a visible escape
/// (`\u{1b}`), for messages, names and any other untrusted text printed for humans.
/// Text without one is returned as is.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `value` as compact JSON text, safe to print ([`json_safe`]).
pub fn json_line(value: &serde_json::Value) -> String {
    json_safe(value.to_string())
}

/// `value` as JSON text indented two spaces a level, safe to print ([`json_safe`]).
pub fn json_pretty(value: &serde_json::Value) -> String {
    // Serializing a `Value` cannot fail: its map keys are strings.
    json_safe(serde_json::to_string_pretty(value).unwrap_or_default())
}

/// JSON text with the control characters serde_json leaves as they are (DEL, the C1
/// controls `U+0080`–`U+009F`, `U+2028` and `U+2029`: [`is_control`] past ASCII's C0)
/// written as `\uXXXX` escapes. It parses to the same value: outside its strings JSON
/// text holds only ASCII without DEL, so each such character is inside a string, where
/// its escape means the same character. serde_json already escapes the C0 controls.
pub fn json_safe(json: String) -> String {
    let unescaped = |c: char| c >= '\u{7f}' && is_control(c);
    if !json.chars().any(unescaped) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if unescaped(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every control character replaced by one visible character (a Unicode
/// control picture such as `␛` for the C0 ones, `�` for the others), so that character
/// positions in it are those of `text`: used for source lines, where labels point at
/// character columns. A `\r` that ends a line (`\r\n`) is kept.
pub fn display_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push(c),
            c if is_control(c) && (c as u32) < 0x20 => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'))
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if is_control(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Print diagnostics the way rustc does: kind, `file:line:col`, the source lines, a label
/// on every place involved, and the help line.
///
/// Every diagnostic given is printed; a caller that wants a cap slices `diags` (the CLI's
/// `--max-diagnostics`). Output is buffered here, so `out` may be unbuffered.
pub fn human(
    src: &RenderSource<'_>,
    diags: &[Diagnostic],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, out);
    let name = escape_control(src.name).into_owned();
    let index = TextIndex::new(src.text);
    // What ariadne shows, built at the first diagnostic it draws: a diagnostic on a line
    // too long to show whole is cut by hand ([`write_cut`]), and a pack that is one long
    // line (1 MB of generated JSON) would pay for laying out every line of it for nothing.
    let mut source: Option<Source<Cow<str>>> = None;
    for d in src.in_source_order(diags) {
        let sites: Vec<Range<usize>> = std::iter::once(&d.site)
            .chain(d.labels.iter().map(|l| &l.site))
            .filter_map(|site| src.span_of(site))
            .collect();
        if sites.is_empty() {
            // About the whole file (empty, too large): ariadne would show neither the
            // file nor the help without a place to point at.
            write_spanless(&name, d, color, &mut out)?;
            continue;
        }
        // ariadne shows the first and the last line of a span (those between are elided).
        let long_line = |offset: usize| {
            let line = index.line_range(index.line_of(offset));
            index.chars_before(line.end) - index.chars_before(line.start) > MAX_LINE_CHARS
        };
        let long = sites.iter().any(|span| {
            long_line(span.start) || long_line(span.end.saturating_sub(1).max(span.start))
        });
        if long {
            write_cut(src, &index, &name, d, &mut out)?;
            continue;
        }
        let char_span = |s: Range<usize>| index.chars_before(s.start)..index.chars_before(s.end);
        let (kind, label_color) = match d.severity {
            Severity::Error => (ReportKind::Error, Color::Red),
            Severity::Warning => (ReportKind::Warning, Color::Yellow),
            // ariadne paints a custom kind's name even with colour off: see below.
            Severity::Note => (ReportKind::Custom("Note", Color::Cyan), Color::Cyan),
        };
        let primary = src.primary_span(d).map(char_span);
        let anchor = primary.clone().unwrap_or(0..0);
        let mut report = Report::build(kind, (name.clone(), anchor.clone()))
            .with_config(
                Config::default()
                    .with_color(color)
                    .with_index_type(IndexType::Char),
            )
            .with_code(d.kind.as_str())
            .with_message(escape_control(&d.message));
        if let Some(span) = primary {
            report = report.with_label(
                Label::new((name.clone(), span.clone()))
                    .with_message(primary_label(d))
                    .with_color(label_color)
                    .with_order(order(&span)),
            );
        }
        for label in &d.labels {
            if let Some(span) = src.span_of(&label.site).map(char_span) {
                report = report.with_label(
                    Label::new((name.clone(), span.clone()))
                        .with_message(escape_control(&label.message))
                        .with_color(Color::Blue)
                        .with_order(order(&span)),
                );
            }
        }
        if let Some(help) = &d.help {
            report = report.with_help(escape_control(help));
        }
        let source = source.get_or_insert_with(|| Source::from(display_text(src.text)));
        if color || d.severity != Severity::Note {
            report.finish().write((name.clone(), &*source), &mut out)?;
        } else {
            // A note's kind is a custom one, whose colour ariadne writes whatever the
            // config says; without colour, its escapes are taken out (the text itself
            // holds none: `escape_control` showed them).
            let mut painted = Vec::new();
            report
                .finish()
                .write((name.clone(), &*source), &mut painted)?;
            out.write_all(&without_sgr(&painted))?;
        }
    }
    out.flush()
}

/// The text of a diagnostic's own label: its kind, and the pointer it blames.
fn primary_label(d: &Diagnostic) -> String {
    match d.pointer() {
        Some(p) if !p.is_empty() => {
            format!("{} (at {})", d.kind.as_str(), escape_control(p))
        }
        _ => d.kind.as_str().to_string(),
    }
}

/// A diagnostic whose line is too long to show whole: the same frame as the ariadne
/// reports, each place shown on its own line cut to a window around it.
/// A diagnostic with no place in the text: its kind and message, the file, the help.
fn write_spanless(name: &str, d: &Diagnostic, color: bool, out: &mut dyn Write) -> io::Result<()> {
    let (word, paint) = match d.severity {
        Severity::Error => ("Error", "\x1b[31m"),
        Severity::Warning => ("Warning", "\x1b[33m"),
        Severity::Note => ("Note", "\x1b[36m"),
    };
    let head = format!("[{}] {word}:", d.kind.as_str());
    if color {
        write!(out, "{paint}{head}\x1b[0m")?;
    } else {
        write!(out, "{head}")?;
    }
    writeln!(out, " {}", escape_control(&d.message))?;
    writeln!(out, "   ╭─[ {name} ]")?;
    if let Some(help) = &d.help {
        writeln!(out, "   │ Help: {}", escape_control(help))?;
    }
    writeln!(out, "───╯")
}

fn write_cut(
    src: &RenderSource<'_>,
    index: &TextIndex<'_>,
    name: &str,
    d: &Diagnostic,
    out: &mut dyn Write,
) -> io::Result<()> {
    let word = match d.severity {
        Severity::Error => "Error",
        Severity::Warning => "Warning",
        Severity::Note => "Note",
    };
    writeln!(
        out,
        "[{}] {word}: {}",
        d.kind.as_str(),
        escape_control(&d.message)
    )?;
    let places = std::iter::once((src.primary_span(d), primary_label(d)))
        .chain(d.labels.iter().map(|l| {
            (
                src.span_of(&l.site),
                escape_control(&l.message).into_owned(),
            )
        }))
        .filter_map(|(span, label)| span.map(|span| (span, label)));
    for (i, (span, label)) in places.enumerate() {
        let (line, col) = index.line_col(span.start);
        let corner = if i == 0 { '╭' } else { '├' };
        writeln!(out, "   {corner}─[ {name}:{line}:{col} ]")?;
        let range = index.line_range(line - 1);
        // The window, found by walking a bounded number of characters either side of the
        // span (never the whole line: a one-line pack may hold all the diagnostics).
        let start = span.start.clamp(range.start, range.end);
        let before = &src.text[range.start..start];
        let back = before
            .chars()
            .rev()
            .take(CUT_CONTEXT)
            .map(char::len_utf8)
            .sum::<usize>();
        let from = start - back;
        let after = &src.text[start..range.end];
        let len = after
            .chars()
            .take(CUT_SPAN)
            .scan(start, |at, c| {
                *at += c.len_utf8();
                Some(*at)
            })
            .take_while(|&end| end <= span.end.max(start + 1))
            .count()
            .max(1);
        let to = after
            .char_indices()
            .nth(len + CUT_CONTEXT)
            .map_or(range.end, |(i, _)| start + i);
        let shown = &src.text[from..to];
        let cut_before = from > range.start;
        let cut_after = to < range.end;
        let at = before.len() - (from - range.start);
        let at = src.text[from..from + at].chars().count();
        let number = line.to_string();
        let pad = " ".repeat(number.len());
        writeln!(
            out,
            " {number} │ {}{}{}",
            if cut_before { "…" } else { "" },
            display_text(shown),
            if cut_after { "…" } else { "" }
        )?;
        let indent = " ".repeat(at + usize::from(cut_before));
        writeln!(out, " {pad} │ {indent}{} {label}", "─".repeat(len))?;
    }
    if let Some(help) = &d.help {
        writeln!(out, "   │ Help: {}", escape_control(help))?;
    }
    writeln!(out, "───╯")
}

/// Print one JSON object per diagnostic and line ([`json`](fn@json), printed by [`json_line`]),
/// locating them all with one index of the text: linear in the number of diagnostics.
pub fn json_lines(
    src: &RenderSource<'_>,
    diags: &[Diagnostic],
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, out);
    let index = TextIndex::new(src.text);
    for d in src.in_source_order(diags) {
        let pos = src.primary_span(d).map(|s| index.line_col(s.start));
        writeln!(out, "{}", json_line(&json_at(src, d, pos)))?;
    }
    out.flush()
}

/// Labels in source order: ariadne starts a new excerpt, headed by the primary
/// label's `file:line:col`, whenever a label lies above the one before it, so a
/// secondary label above the primary would get a header naming the primary's place.
/// In source order all labels of a file share one excerpt under one header.
fn order(span: &std::ops::Range<usize>) -> i32 {
    i32::try_from(span.start).unwrap_or(i32::MAX)
}

/// One diagnostic as a JSON object: kind, severity, message, file, line, column, pointer,
/// help and related (line and column are 1-based, `null` when the diagnostic points
/// nowhere; `related` lists the other places involved, each `{message, line, column,
/// pointer}`).
pub fn json(src: &RenderSource<'_>, d: &Diagnostic) -> serde_json::Value {
    json_at(src, d, src.position(d))
}

fn json_at(
    src: &RenderSource<'_>,
    d: &Diagnostic,
    pos: Option<(usize, usize)>,
) -> serde_json::Value {
    // The other places involved (a misspelt member beside the missing one, the first of
    // two duplicates), each with its own message.
    let related: Vec<serde_json::Value> = d
        .labels
        .iter()
        .map(|l| {
            let at = src.span_of(&l.site).map(|s| src.line_col(s.start));
            let pointer = match &l.site {
                Site::Pointer(p) => Some(p.as_str()),
                _ => None,
            };
            json!({
                "message": l.message,
                "line": at.map(|p| p.0),
                "column": at.map(|p| p.1),
                "pointer": pointer,
            })
        })
        .collect();
    json!({
        "kind": d.kind.as_str(),
        "severity": d.severity.as_str(),
        "message": d.message,
        "file": src.name,
        "line": pos.map(|p| p.0),
        "column": pos.map(|p| p.1),
        "pointer": d.pointer(),
        "help": d.help,
        "related": related,
    })
}

/// `text` without its SGR escapes (`ESC [ … m`, colours and styles).
fn without_sgr(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == 0x1b && text.get(i + 1) == Some(&b'[') {
            let end = text[i + 2..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b';'))
                .map(|n| i + 2 + n);
            if let Some(end) = end.filter(|&e| text[e] == b'm') {
                i = end + 1;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::DiagKind;

    #[test]
    fn the_index_locates_like_a_scan() {
        let text = "a: 1\nbé: \"ü\u{1F600}x\"\n\n".repeat(200) + "last";
        let src = RenderSource {
            name: "t",
            text: &text,
            spans: None,
        };
        let index = TextIndex::new(&text);
        for offset in (0..=text.len() + 3).step_by(7) {
            assert_eq!(index.line_col(offset), src.line_col(offset), "{offset}");
            let floor = floor_boundary(&text, offset);
            assert_eq!(index.chars_before(floor), text[..floor].chars().count());
        }
    }

    #[test]
    fn json_text_escapes_what_serde_json_leaves() {
        let text = "a\u{1b}]0;t\u{7}\u{7f}\u{9b}31m\u{85}\u{2028}é";
        let value = json!({ "k\u{9b}": text });
        let line = json_line(&value);
        assert_eq!(
            line,
            r#"{"k\u009b":"a\u001b]0;t\u0007\u007f\u009b31m\u0085\u2028é"}"#
        );
        assert!(!line.chars().any(is_control));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap(),
            value
        );
        let pretty = json_pretty(&value);
        assert!(!pretty.chars().any(is_control));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&pretty).unwrap(),
            value
        );
        assert_eq!(json_line(&json!(["é", 1])), r#"["é",1]"#);
    }

    #[test]
    fn control_characters_are_escaped_and_columns_kept() {
        assert_eq!(escape_control("a\u{1b}[31mb\u{7}"), "a\\u{1b}[31mb\\u{7}");
        assert!(matches!(escape_control("plain\ttext\n"), Cow::Borrowed(_)));
        let shown = display_text("k\u{1b}]0;x\u{7}: \u{9b}v\r\n");
        assert_eq!(shown, "k\u{241b}]0;x\u{2407}: \u{fffd}v\r\n");
        assert_eq!(
            shown.chars().count(),
            "k\u{1b}]0;x\u{7}: \u{9b}v\r\n".chars().count()
        );
    }

    fn rendered(text: &str, d: Diagnostic) -> String {
        let src = RenderSource {
            name: "evil\u{1b}[2J.yaml",
            text,
            spans: None,
        };
        let mut out = Vec::new();
        human(&src, &[d], false, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn no_control_character_reaches_the_terminal() {
        let text = "key\u{1b}[31m: value\u{9b}\n";
        let d = Diagnostic::new(DiagKind::SchemaViolation, "bad key `key\u{1b}[31m`")
            .at_span(0..4)
            .help("rename `\u{7}`");
        let out = rendered(text, d);
        assert!(!out.chars().any(is_control_but_newline), "{out:?}");
        assert!(out.contains("bad key `key\\u{1b}[31m`"), "{out}");
        assert!(out.contains("evil\\u{1b}[2J.yaml:1:1"), "{out}");
        assert!(out.contains("key\u{241b}[31m: value"), "{out}");
    }

    fn is_control_but_newline(c: char) -> bool {
        c.is_control() && c != '\n'
    }

    #[test]
    fn a_long_line_is_cut_around_the_span() {
        let text = format!("{}TARGET{}\nnext\n", "x".repeat(5000), "y".repeat(5000));
        let d = Diagnostic::new(DiagKind::SchemaViolation, "here").at_span(5000..5006);
        let out = rendered(&text, d);
        assert!(out.contains(":1:5001 ]"), "{out}");
        let line = out.lines().find(|l| l.contains("TARGET")).unwrap();
        assert_eq!(
            line,
            format!(" 1 │ …{}TARGET{}…", "x".repeat(60), "y".repeat(60))
        );
        let under = out.lines().find(|l| l.contains("──────")).unwrap();
        assert_eq!(
            under,
            format!("   │ {}────── schema_violation", " ".repeat(61))
        );
        assert!(out.len() < 600, "{}", out.len());
        // A span over several lines whose last line is long is cut too.
        let text = format!("a:\n  b: {}\n", "z".repeat(5000));
        let d = Diagnostic::new(DiagKind::SchemaViolation, "here").at_span(0..text.len() - 1);
        let out = rendered(&text, d);
        assert!(out.len() < 600, "{}", out.len());
        assert!(out.contains(":1:1 ]"), "{out}");
    }
}
