//! Strict JSON (RFC 8259) for files named `*.json`.
//!
//! The loader reads YAML 1.2, of which JSON is a subset, so on its own it would accept a
//! `.json` pack with a trailing comma, an unquoted key or a `# comment`, which other
//! runtimes' JSON loaders refuse. A file that says it is JSON is first held to JSON
//! here; the document itself (and every span) still comes from the one loader.

use serde::de::IgnoredAny;

use crate::diag::{DiagKind, Diagnostic};

/// `Ok` when `text` is one strict JSON document; else a `parse_error` at the place
/// `serde_json` stopped. Nesting deeper than `serde_json`'s own limit is left to the
/// loader, which holds it to `Limits::max_depth`.
pub fn check(text: &str) -> Result<(), Diagnostic> {
    // A byte-order mark is not part of the JSON text (RFC 8259 §8.1 lets a reader ignore it).
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let body = &text[bom..];
    let err = match serde_json::from_str::<IgnoredAny>(body) {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    if err.to_string().starts_with("recursion limit exceeded") {
        return Ok(());
    }
    let mut offset = offset_of(body, err.line(), err.column());
    // serde_json's message ends with its own " at line L column C"; the place is ours.
    let full = err.to_string();
    let mut message = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(m, _)| m)
        .to_owned();
    // `[1, 2,]` / `{"a": 1,}`: serde_json stops at the bracket; the mistake is the comma.
    let before = body[..offset].trim_end();
    if before.ends_with(',') && body[offset..].starts_with(['}', ']']) {
        offset = before.len() - 1;
        message = "a trailing comma (JSON allows none after the last item or member)".into();
    }
    let end = body[offset..]
        .chars()
        .next()
        .map_or(offset, |c| offset + c.len_utf8());
    Err(
        Diagnostic::new(DiagKind::ParseError, format!("not valid JSON: {message}"))
            .at_span(bom + offset..bom + end)
            .help("a `.json` file is read as strict JSON (RFC 8259): no trailing commas, no comments, every key in double quotes; to write YAML, name the file `.yaml`"),
    )
}

/// The byte offset of serde_json's 1-based line and column (column 0: the line's start).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut offset = (line_start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Site;

    fn at(text: &str) -> usize {
        match check(text).unwrap_err().site {
            Site::Span(r) => r.start,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_what_json_refuses_where_it_is() {
        assert!(check("{\"a\": [1, 2], \"b\": {\"c\": null}}\n").is_ok());
        assert!(check("\u{feff}{\"a\": 1}").is_ok());
        let trailing = "{\n  \"a\": 1,\n}\n";
        assert_eq!(at(trailing), trailing.find(',').unwrap());
        let unquoted = "{\n  \"a\": 1,\n  b: 2\n}\n";
        assert_eq!(at(unquoted), unquoted.find('b').unwrap());
        let comment = "{\n  # a comment\n  \"a\": 1\n}\n";
        assert_eq!(at(comment), comment.find('#').unwrap());
    }
}
