//! Printing diagnostics: like rustc's with ariadne, or one JSON object per line.
//!
//! This is the only place where JSON pointers become `file:line:col`.

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

impl RenderSource<'_> {
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

    /// A byte span (on char boundaries) as a char span, which is what ariadne indexes by.
    fn char_span(&self, span: Range<usize>) -> Range<usize> {
        let start = self.text[..span.start].chars().count();
        start..start + self.text[span.start..span.end].chars().count()
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
        self.span_of(&d.site).map(|s| self.line_col(s.start))
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

/// Print diagnostics the way rustc does: kind, `file:line:col`, the source lines, a label
/// on every place involved, and the help line.
pub fn human(
    src: &RenderSource<'_>,
    diags: &[Diagnostic],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let name = src.name.to_string();
    let source = Source::from(src.text);
    for d in diags {
        let (kind, label_color) = match d.severity {
            Severity::Error => (ReportKind::Error, Color::Red),
            Severity::Warning => (ReportKind::Warning, Color::Yellow),
            Severity::Note => (ReportKind::Custom("Note", Color::Cyan), Color::Cyan),
        };
        let primary = src.span_of(&d.site).map(|s| src.char_span(s));
        let anchor = primary.clone().unwrap_or(0..0);
        let mut report = Report::build(kind, (name.clone(), anchor.clone()))
            .with_config(
                Config::default()
                    .with_color(color)
                    .with_index_type(IndexType::Char),
            )
            .with_code(d.kind.as_str())
            .with_message(&d.message);
        if let Some(span) = primary {
            let text = match d.pointer() {
                Some(p) if !p.is_empty() => format!("{} (at {p})", d.kind.as_str()),
                _ => d.kind.as_str().to_string(),
            };
            report = report.with_label(
                Label::new((name.clone(), span))
                    .with_message(text)
                    .with_color(label_color),
            );
        }
        for label in &d.labels {
            if let Some(span) = src.span_of(&label.site).map(|s| src.char_span(s)) {
                report = report.with_label(
                    Label::new((name.clone(), span))
                        .with_message(&label.message)
                        .with_color(Color::Blue),
                );
            }
        }
        if let Some(help) = &d.help {
            report = report.with_help(help);
        }
        report
            .finish()
            .write((name.clone(), source.clone()), &mut *out)?;
    }
    Ok(())
}

/// One diagnostic as a JSON object: kind, severity, message, file, line, column, pointer
/// (line and column are 1-based, `null` when the diagnostic points nowhere).
pub fn json(src: &RenderSource<'_>, d: &Diagnostic) -> serde_json::Value {
    let pos = src.position(d);
    json!({
        "kind": d.kind.as_str(),
        "severity": d.severity.as_str(),
        "message": d.message,
        "file": src.name,
        "line": pos.map(|p| p.0),
        "column": pos.map(|p| p.1),
        "pointer": d.pointer(),
        "help": d.help,
    })
}
