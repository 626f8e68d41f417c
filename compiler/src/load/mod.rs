//! Loading pack source text into a JSON value with a span for every node.
//!
//! `.yaml`, `.yml` and `.json` files go through one parser: YAML 1.2 (saphyr), of which
//! JSON is a subset. The result is a [`Loaded`]: the document as a `serde_json::Value`
//! (mapping members in source order) and a [`SpanIndex`] from each node's JSON pointer
//! to the byte spans of its key and value, which later stages use to turn the pointers
//! they blame into `file:line:col`.
//!
//! Scalars follow the YAML 1.2 core schema (`null`, `~`, `true`, `0x1F`, `1.5e3`, ...;
//! quoted scalars are always strings); `.inf` and `.nan` have no JSON form and are
//! refused. Non-string keys (`1: x`) keep their text as the key. Anchors and aliases are
//! expanded by copy.
//!
//! Everything malformed is one `parse_error` naming where it is: bytes that are not
//! UTF-8, an empty file, several documents, a duplicate key, nesting past
//! [`Limits::max_depth`], alias expansion past [`Limits::max_nodes`]. A source larger
//! than [`Limits::max_source_bytes`] is a `limit_exceeded` before any parsing.

mod build;
pub mod json_fast;
mod offsets;
mod scalar;
mod span_index;
#[cfg(test)]
mod tests;

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub use span_index::{NodeSpan, SpanIndex};

use crate::diag::{DiagKind, Diagnostic};

/// Bounds on what a source may cost to load, so a hostile file fails fast.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest source accepted, in bytes (16 MiB by default). Also bounds the string
    /// bytes that alias expansion may copy in total.
    pub max_source_bytes: usize,
    /// The deepest nesting of sequences and mappings accepted (128 by default); the root
    /// collection is level 1.
    pub max_depth: usize,
    /// The most value nodes a document may hold once its aliases are expanded
    /// (1,000,000 by default).
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_source_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_nodes: 1_000_000,
        }
    }
}

/// A loaded document: its value and where each of its nodes is written.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The document, aliases expanded.
    pub value: serde_json::Value,
    /// The byte spans of its nodes, by JSON pointer.
    pub spans: SpanIndex,
}

/// Load a source from its bytes: size check (`limit_exceeded`), UTF-8 check
/// (`parse_error` at the first bad byte), then [`load_str`].
pub fn load_bytes(bytes: &[u8], limits: &Limits) -> Result<Loaded, Diagnostic> {
    if bytes.len() > limits.max_source_bytes {
        return Err(too_large(bytes.len() as u64, limits.max_source_bytes));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let start = e.valid_up_to();
        let end = e.error_len().map_or(bytes.len(), |len| start + len);
        parse_error("the file is not valid UTF-8", start..end)
            .help("save the file as UTF-8 (packs are UTF-8 text)")
    })?;
    load_str(text, limits)
}

/// Load a source text: YAML 1.2 or JSON, exactly one document, within `limits` (the size
/// limit included).
pub fn load_str(text: &str, limits: &Limits) -> Result<Loaded, Diagnostic> {
    if text.len() > limits.max_source_bytes {
        return Err(too_large(text.len() as u64, limits.max_source_bytes));
    }
    // saphyr is fuzzed but young: a panic inside it must not take the compiler down.
    catch_unwind(AssertUnwindSafe(|| build::load(text, limits))).unwrap_or_else(|_| {
        Err(
            Diagnostic::new(DiagKind::ParseError, "the YAML parser failed on this file")
                .help("this is a bug in packc or its YAML parser; please report it with the file"),
        )
    })
}

/// The `limit_exceeded` diagnostic for a source of `size` bytes over the limit of `max`.
pub fn too_large(size: u64, max: usize) -> Diagnostic {
    Diagnostic::new(
        DiagKind::LimitExceeded,
        format!("the file is {size} bytes, more than the limit of {max} bytes"),
    )
    .help("sources this large are refused to guard against malicious input; raise the limit if the file is trusted")
}

/// A `parse_error` at a byte span.
fn parse_error(message: impl Into<String>, span: Range<usize>) -> Diagnostic {
    Diagnostic::new(DiagKind::ParseError, message).at_span(span)
}
