//! Loading pack source text into a JSON value with a span for every node.
//!
//! `.yaml`, `.yml` and `.json` files go through one parser: YAML 1.2 (saphyr), of which
//! JSON is a subset. The result is a [`Loaded`]: the document as a `serde_json::Value`
//! (mapping members in source order) and a [`SpanIndex`] from each node's JSON pointer
//! to the byte spans of its key and value, which later stages use to turn the pointers
//! they blame into `file:line:col`. The checks and lowering read it as a
//! [`Node`](crate::doc::Node) ([`Loaded::doc`]). A JSON pack that parses cleanly takes
//! a faster path that builds neither the value nor the spans ([`crate::check_bytes`]).
//!
//! Scalars follow the YAML 1.2 core schema (`null`, `~`, `true`, `0x1F`, `1.5e3`, ...;
//! quoted scalars are always strings); `.inf` and `.nan` have no JSON form and are
//! refused. Non-string keys (`1: x`) keep their text as the key. Anchors and aliases are
//! expanded by copy.
//!
//! Everything malformed is one `parse_error` naming where it is: bytes that are not
//! UTF-8, an empty file, several documents, a duplicate key, nesting past
//! [`Limits::max_depth`], alias expansion past [`Limits::max_nodes`]. A source larger
//! than [`Limits::max_source_bytes`] is a `limit_exceeded` before any parsing; a loaded
//! document past the other [`Limits`] (a string too long, too many steps, states,
//! compositions…) is a located `limit_exceeded` from [`check_limits`].

mod build;
pub mod json_fast;
pub mod json_spans;
mod limits;
mod offsets;
mod scalar;
mod span_index;
pub mod strict_json;
#[cfg(test)]
mod tests;
mod yaml_help;

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub use limits::{check_limits, check_limits_parsed};
pub use span_index::{NodeSpan, SpanIndex};

use crate::diag::{DiagKind, Diagnostic};

/// Bounds on what a source may cost to load and check, so a hostile file fails fast.
///
/// Every field is the embedder's to set (`packc check` / `build`: `--max-source-bytes`,
/// `--limit NAME=N`). The first three bound the parser and are checked while loading;
/// the rest are checked on the loaded document, before the schema and the semantic
/// checks run. A pack past one gets one diagnostic naming the field: `limit_exceeded`
/// (located at the string or collection that is too large), except nesting and node
/// count, which are `parse_error`s (conformance README). The count defaults are those of
/// the artifact reader ([`ir_spec::DecodeLimits`]), so whatever compiles under the
/// defaults also loads under the defaults.
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
    /// The longest string scalar, value or mapping key, in UTF-8 bytes (1 MiB by default).
    /// A prompt's `system_template` is also held to it once its fragments are expanded.
    pub max_string_bytes: usize,
    /// The most text all prompts' `system_template`s together may hold once their
    /// fragments are expanded (64 MiB by default, the artifact reader's size limit: the
    /// expanded text is what the artifact stores). Fragments are copied into every
    /// template that names them, so without it a small pack could expand to gigabytes.
    pub max_total_template_bytes: usize,
    /// The most `compositions` (10,000 by default).
    pub max_compositions: usize,
    /// The most steps in one composition, parallel branches included (10,000 by default).
    pub max_steps_per_composition: usize,
    /// The most steps in all compositions together (100,000 by default).
    pub max_total_steps: usize,
    /// The most `workflow.states` (10,000 by default).
    pub max_states: usize,
    /// The most `prompts` (10,000 by default).
    pub max_prompts: usize,
    /// The most `tools` (10,000 by default).
    pub max_tools: usize,
    /// The most `agents.members` (10,000 by default).
    pub max_agents: usize,
    /// The most attempts one step's `retry.max_attempts` may ask for (100 by default):
    /// each attempt is a host call, a live model call under `packc run --provider`.
    pub max_attempts: usize,
    /// The most patterns of all prompts together, variable `validation.pattern`s and
    /// `regex` validators' `params.pattern`s (1,000 by default): each is compiled when
    /// the artifact is loaded.
    pub max_patterns: usize,
    /// The most memory one compiled pattern (variable or validator) may take, in bytes
    /// (256 KiB by default; the `regex` crate's `size_limit`, which bounds the time
    /// compiling it takes).
    pub max_pattern_size: usize,
    /// The most UTF-8 bytes the words of all `banned_words` validators together may
    /// hold, lowercased (256 KiB by default, about 30,000 words of eight letters): each
    /// list is compiled into one regex when the artifact is loaded.
    pub max_banned_word_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        use ir_spec::limits as d;
        Limits {
            max_source_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_nodes: 1_000_000,
            max_string_bytes: 1024 * 1024,
            max_total_template_bytes: ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES,
            max_compositions: d::DEFAULT_MAX_COMPOSITIONS,
            max_steps_per_composition: d::DEFAULT_MAX_STEPS_PER_COMPOSITION,
            max_total_steps: d::DEFAULT_MAX_TOTAL_STEPS,
            max_states: d::DEFAULT_MAX_STATES,
            max_prompts: d::DEFAULT_MAX_PROMPTS,
            max_tools: d::DEFAULT_MAX_TOOLS,
            max_agents: d::DEFAULT_MAX_AGENTS,
            max_attempts: d::DEFAULT_MAX_ATTEMPTS,
            max_patterns: d::DEFAULT_MAX_PATTERNS,
            max_pattern_size: d::DEFAULT_MAX_PATTERN_SIZE,
            max_banned_word_bytes: d::DEFAULT_MAX_BANNED_WORD_BYTES,
        }
    }
}

impl Limits {
    /// No limit at all: for reading again a text that was read within limits.
    pub(crate) fn none() -> Limits {
        Limits {
            max_source_bytes: usize::MAX,
            max_depth: usize::MAX,
            max_nodes: usize::MAX,
            max_string_bytes: usize::MAX,
            max_total_template_bytes: usize::MAX,
            max_compositions: usize::MAX,
            max_steps_per_composition: usize::MAX,
            max_total_steps: usize::MAX,
            max_states: usize::MAX,
            max_prompts: usize::MAX,
            max_tools: usize::MAX,
            max_agents: usize::MAX,
            max_attempts: usize::MAX,
            max_patterns: usize::MAX,
            max_pattern_size: usize::MAX,
            max_banned_word_bytes: usize::MAX,
        }
    }

    /// The name of every field, as [`Limits::set`] takes them.
    pub const NAMES: &'static [&'static str] = &[
        "max_source_bytes",
        "max_depth",
        "max_nodes",
        "max_string_bytes",
        "max_total_template_bytes",
        "max_compositions",
        "max_steps_per_composition",
        "max_total_steps",
        "max_states",
        "max_prompts",
        "max_tools",
        "max_agents",
        "max_attempts",
        "max_patterns",
        "max_pattern_size",
        "max_banned_word_bytes",
    ];

    /// Sets the field called `name` (one of [`Limits::NAMES`]) to `value`.
    pub fn set(&mut self, name: &str, value: usize) -> Result<(), String> {
        let field = match name {
            "max_source_bytes" => &mut self.max_source_bytes,
            "max_depth" => &mut self.max_depth,
            "max_nodes" => &mut self.max_nodes,
            "max_string_bytes" => &mut self.max_string_bytes,
            "max_total_template_bytes" => &mut self.max_total_template_bytes,
            "max_compositions" => &mut self.max_compositions,
            "max_steps_per_composition" => &mut self.max_steps_per_composition,
            "max_total_steps" => &mut self.max_total_steps,
            "max_states" => &mut self.max_states,
            "max_prompts" => &mut self.max_prompts,
            "max_tools" => &mut self.max_tools,
            "max_agents" => &mut self.max_agents,
            "max_attempts" => &mut self.max_attempts,
            "max_patterns" => &mut self.max_patterns,
            "max_pattern_size" => &mut self.max_pattern_size,
            "max_banned_word_bytes" => &mut self.max_banned_word_bytes,
            _ => {
                return Err(format!(
                    "unknown limit `{name}`; the limits are {}",
                    Limits::NAMES.join(", ")
                ))
            }
        };
        *field = value;
        Ok(())
    }
}

/// A loaded document: its value and where each of its nodes is written.
///
/// A JSON pack checked on the fast path keeps only its text (in its lazy span index):
/// the checks and lowering read it as a [`Node`](crate::doc::Node) that borrows the
/// text ([`Loaded::doc`]), and the `serde_json` value is parsed only if something asks
/// for it ([`Loaded::value`]).
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The document, aliases expanded: set by the loader, or parsed from the JSON text
    /// when first asked for.
    value: std::sync::OnceLock<serde_json::Value>,
    /// The byte spans of its nodes, by JSON pointer.
    pub spans: SpanIndex,
}

impl Loaded {
    /// A document loaded as `value`, written where `spans` say.
    pub fn new(value: serde_json::Value, spans: SpanIndex) -> Loaded {
        Loaded {
            value: std::sync::OnceLock::from(value),
            spans,
        }
    }

    /// A JSON document that parsed within the limits: `spans` is its lazy index
    /// ([`SpanIndex::of_json`]), which keeps the text.
    pub(crate) fn json(spans: SpanIndex) -> Loaded {
        Loaded {
            value: std::sync::OnceLock::new(),
            spans,
        }
    }

    /// The document as a `serde_json` value.
    pub fn value(&self) -> &serde_json::Value {
        self.value.get_or_init(|| {
            // The text parsed within the caller's limits when it was checked, so it
            // parses within none.
            self.spans
                .json_text()
                .and_then(|text| json_fast::parse(text, &Limits::none()))
                .unwrap_or_default()
        })
    }

    /// The document as a `serde_json` value, taken.
    pub fn into_value(self) -> serde_json::Value {
        self.value();
        self.value.into_inner().unwrap_or_default()
    }

    /// The document as the checks and lowering read it, its lists kept in `arena`:
    /// borrowed from the value when there is one, else parsed from the JSON text,
    /// borrowing its strings.
    pub fn doc<'a>(&'a self, arena: &'a crate::doc::Arena) -> crate::doc::Node<'a> {
        if let Some(value) = self.value.get() {
            return crate::doc::Node::borrow(value, arena);
        }
        self.spans
            .json_text()
            .and_then(|text| crate::doc::parse(text, arena, &Limits::none()))
            .unwrap_or(crate::doc::Node::Null)
    }
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
        format!("the file is {size} bytes, more than the limit of {max} bytes (`max_source_bytes`)"),
    )
    .help("sources this large are refused to guard against malicious input; raise the limit (`--max-source-bytes`) if the file is trusted")
}

/// A `parse_error` at a byte span.
fn parse_error(message: impl Into<String>, span: Range<usize>) -> Diagnostic {
    Diagnostic::new(DiagKind::ParseError, message).at_span(span)
}
