//! saphyr parser events → a JSON value and its span index, without recursion.
//!
//! The parser is pulled one event at a time (`Parser::next_event`; its own `load` recurses
//! once per nesting level). Open sequences and mappings live on an explicit stack whose
//! height is checked against [`Limits::max_depth`] before each push, so 10,000 levels of
//! nesting end in a `parse_error`, not a stack overflow, and no value deeper than the
//! limit is ever built (dropping or cloning a `serde_json::Value` recurses too).
//!
//! An alias is expanded by copying the anchored value, but only after checking that the
//! copy keeps the document within [`Limits::max_nodes`] (counting the copy's nodes, known
//! from when the anchor was loaded) and keeps the string bytes that aliases copy within
//! [`Limits::max_source_bytes`]. A billion-laughs document thus fails as soon as its
//! expansion passes the limit, having copied at most the limit. Anchored values are not
//! cloned when the anchor is defined: an anchor remembers the path to its node, and the
//! node is looked up (in the finished part of the tree) when an alias uses it.

use std::collections::HashMap;
use std::ops::Range;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span, Tag};
use serde_json::{Map, Value};

use super::offsets::Offsets;
use super::scalar::{self, ScalarError};
use super::span_index::{Kind, NodeSpan, Slot, SpanIndex};
use super::{parse_error, Limits, Loaded};
use crate::diag::{DiagKind, Diagnostic, Label, Site};

/// The largest flow nesting saphyr accepts (its flow level is a `u8`).
const SAPHYR_FLOW_LIMIT: usize = 255;

/// Load the one document of `text`.
pub(super) fn load(text: &str, limits: &Limits) -> Result<Loaded, Diagnostic> {
    let mut builder = Builder::new(text, limits);
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| builder.scan_error(&e))?;
        if builder.event(event, span)? {
            break;
        }
    }
    builder.finish()
}

/// Where a node sits in its parent; a path of these leads from the root to an anchor.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Index(usize),
    Key(String),
}

/// A mapping key read, waiting for its value.
struct PendingKey {
    text: String,
    span: Range<usize>,
}

enum Container {
    Seq(Vec<Value>),
    Map(Map<String, Value>, Option<PendingKey>),
}

/// An open sequence or mapping.
struct Frame {
    container: Container,
    /// Its node in the span index.
    id: u32,
    /// The furthest byte any of its children reaches (a block collection's end event
    /// sits after trailing blank lines and comments, so its end comes from its children).
    end: usize,
    /// Its anchor id, 0 for none.
    anchor: usize,
    /// The node and string-byte counters before it started, to size its anchor.
    nodes_before: usize,
    bytes_before: usize,
    /// Where it goes in its parent (`None` for the root).
    seg: Option<Seg>,
}

enum Anchor {
    /// The anchored node is still being read: an alias to it would copy itself.
    Open,
    /// A finished node: its path from the root, its index node, and the nodes and string
    /// bytes a copy of it costs.
    Node {
        path: Vec<Seg>,
        id: u32,
        nodes: usize,
        bytes: usize,
    },
    /// An anchored mapping key: its text.
    Key(String),
}

struct Builder<'t> {
    text: &'t str,
    limits: &'t Limits,
    offsets: Offsets<'t>,
    frames: Vec<Frame>,
    index: SpanIndex,
    root: Option<Value>,
    /// Whether the root is an empty plain scalar (`---` and nothing else).
    root_blank: bool,
    documents: usize,
    /// Value nodes produced, alias copies included.
    nodes: usize,
    /// String bytes (keys and string values) produced, alias copies included.
    bytes: usize,
    /// String bytes produced by alias copies alone.
    alias_bytes: usize,
    anchors: HashMap<usize, Anchor>,
    /// Where the last event ended, to find a block scalar's `|` or `>`.
    last_end: usize,
}

impl<'t> Builder<'t> {
    fn new(text: &'t str, limits: &'t Limits) -> Builder<'t> {
        Builder {
            text,
            limits,
            offsets: Offsets::new(text),
            frames: Vec::new(),
            index: SpanIndex::default(),
            root: None,
            root_blank: false,
            documents: 0,
            nodes: 0,
            bytes: 0,
            alias_bytes: 0,
            anchors: HashMap::new(),
            last_end: 0,
        }
    }

    /// Handle one event; `true` at the end of the stream.
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<bool, Diagnostic> {
        let range = self.offsets.byte(span.start.index())..self.offsets.byte(span.end.index());
        match event {
            Event::StreamEnd => return Ok(true),
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(self
                        .error("the file holds more than one YAML document", range)
                        .help("keep one document per file: remove this `---` and what follows, or split the file"));
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let range = self.scalar_range(range, style);
                if self.awaiting_key() {
                    self.key(text.into_owned(), anchor, tag.as_deref(), range)?;
                } else {
                    let blank = text.is_empty() && style == ScalarStyle::Plain && tag.is_none();
                    let value = scalar::resolve(text, style, tag.as_deref())
                        .map_err(|e| self.scalar_error(e, range.clone()))?;
                    if self.frames.is_empty() {
                        self.root_blank = blank && anchor == 0;
                    }
                    self.scalar(value, anchor, range)?;
                }
            }
            Event::Alias(id) => self.alias(id, range)?,
            Event::SequenceStart(anchor, tag) => self.open(false, anchor, tag.as_deref(), range)?,
            Event::MappingStart(anchor, tag) => self.open(true, anchor, tag.as_deref(), range)?,
            Event::SequenceEnd | Event::MappingEnd => self.close(range),
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
        }
        self.last_end = self.offsets.byte(span.end.index());
        Ok(false)
    }

    fn finish(self) -> Result<Loaded, Diagnostic> {
        match self.root {
            Some(value) if !self.root_blank => Ok(Loaded::new(value, self.index)),
            _ => Err(Diagnostic::new(DiagKind::ParseError, "the file is empty")
                .help("a pack file holds one YAML mapping or JSON object")),
        }
    }

    fn error(&self, message: impl Into<String>, range: Range<usize>) -> Diagnostic {
        let range = if range.is_empty() {
            self.offsets.point(range.start)
        } else {
            range
        };
        parse_error(message, range)
    }

    fn scalar_error(&self, e: ScalarError, range: Range<usize>) -> Diagnostic {
        let d = self.error(e.message, range);
        match e.help {
            Some(help) => d.help(help),
            None => d,
        }
    }

    fn scan_error(&self, e: &ScanError) -> Diagnostic {
        let at = self.offsets.byte(e.marker().index());
        let info = e.info();
        if info == "recursion limit exceeded" {
            return self.depth_error(at..at);
        }
        if info.ends_with("found unknown anchor") {
            let name = self.alias_name(at..self.text.len());
            return self
                .error(
                    format!("the alias `*{name}` names no anchor defined before it"),
                    at..at,
                )
                .help(format!(
                    "define the anchor (`&{name}`) on a node above this alias"
                ));
        }
        if info.contains("tab") {
            // The scanner's mark is where it stopped, which for a tab starting a line is
            // the end of the line before: blame the tab itself.
            let line_start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
            let tab = self.text[line_start..]
                .find('\t')
                .map_or(at, |i| line_start + i);
            return self
                .error(
                    format!("the file is not valid YAML or JSON: {info}"),
                    tab..tab + 1,
                )
                .help("YAML does not allow tabs for indentation; use spaces");
        }
        let d = self.error(
            format!("the file is not valid YAML or JSON: {info}"),
            at..at,
        );
        match super::yaml_help::help(self.text, at, info) {
            Some(help) => d.help(help),
            None => d,
        }
    }

    fn depth_error(&self, at: Range<usize>) -> Diagnostic {
        let max = self.limits.max_depth;
        if max >= SAPHYR_FLOW_LIMIT {
            self.error(
                format!("flow collections (`[...]`, `{{...}}`) nest deeper than the parser's limit of {SAPHYR_FLOW_LIMIT} levels"),
                at,
            )
        } else {
            self.error(format!("the document nests deeper than the limit of {max} levels (`max_depth`)"), at)
        }
        .help("flatten the structure; deep nesting is refused to guard against malicious input")
    }

    /// The name of the alias whose `*` starts `range`.
    fn alias_name(&self, range: Range<usize>) -> &'t str {
        let text = self.text.get(range).unwrap_or_default();
        let name = text.strip_prefix('*').unwrap_or(text);
        let end = name
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '{' | '}'))
            .unwrap_or(name.len());
        &name[..end]
    }

    /// A scalar's value span: trailing blanks dropped, and for a block scalar the `|` or
    /// `>` header included (saphyr's span starts at its content).
    fn scalar_range(&self, range: Range<usize>, style: ScalarStyle) -> Range<usize> {
        let bytes = self.text.as_bytes();
        let mut start = range.start;
        let mut end = range.end.min(bytes.len());
        let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
        if block && !matches!(bytes.get(start), Some(b'|' | b'>' | b'&' | b'!')) {
            if let Some(header) = self.block_header(self.last_end.min(start), start) {
                start = header;
            }
        }
        while end > start && matches!(bytes.get(end - 1), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            end -= 1;
        }
        start..end.max(start)
    }

    /// The `|` or `>` between the previous event and a block scalar's content: only
    /// blanks, `:`, `-`, `?` and comments may come before it.
    fn block_header(&self, from: usize, to: usize) -> Option<usize> {
        let bytes = self.text.as_bytes().get(from..to)?;
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'|' | b'>' => return Some(from + i),
                b' ' | b'\t' | b'\r' | b'\n' | b':' | b'-' | b'?' => i += 1,
                b'#' => {
                    while bytes.get(i).is_some_and(|&b| b != b'\n') {
                        i += 1;
                    }
                }
                _ => return None,
            }
        }
        None
    }

    fn awaiting_key(&self) -> bool {
        matches!(
            self.frames.last(),
            Some(Frame {
                container: Container::Map(_, None),
                ..
            })
        )
    }

    /// Where the next value goes in the innermost open collection.
    fn seg(&self) -> Option<Seg> {
        match &self.frames.last()?.container {
            Container::Seq(items) => Some(Seg::Index(items.len())),
            Container::Map(_, key) => key.as_ref().map(|k| Seg::Key(k.text.clone())),
        }
    }

    /// The path from the root to a node at `seg` in the innermost open collection.
    fn path(&self, seg: Option<Seg>) -> Vec<Seg> {
        self.frames
            .iter()
            .filter_map(|f| f.seg.clone())
            .chain(seg)
            .collect()
    }

    /// Count `n` more value nodes against [`Limits::max_nodes`].
    fn count(&mut self, n: usize, range: &Range<usize>) -> Result<(), Diagnostic> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.limits.max_nodes {
            return Err(self
                .error(
                    format!(
                        "the document has more than {} nodes (`max_nodes`)",
                        self.limits.max_nodes
                    ),
                    range.clone(),
                )
                .help("split the pack into smaller files"));
        }
        Ok(())
    }

    /// Record a new value node in the span index, under the innermost open collection.
    fn add_node(&mut self, value: Range<usize>, kind: Kind) -> Result<u32, Diagnostic> {
        let (key, slot) = match self.frames.last() {
            None => (None, Slot::Detached),
            Some(frame) => match &frame.container {
                Container::Seq(_) => (None, Slot::Item(frame.id)),
                Container::Map(_, Some(key)) => {
                    (Some(key.span.clone()), Slot::Member(frame.id, &key.text))
                }
                Container::Map(_, None) => (None, Slot::Detached),
            },
        };
        let span = NodeSpan {
            key,
            value: value.clone(),
        };
        match self.index.add(slot, span, kind) {
            Some(id) => Ok(id),
            None => Err(self.error("the document has too many nodes", value)),
        }
    }

    /// Put a finished value in the innermost open collection (or make it the root).
    fn place(&mut self, value: Value, end: usize) {
        match self.frames.last_mut() {
            None => self.root = Some(value),
            Some(frame) => {
                frame.end = frame.end.max(end);
                match &mut frame.container {
                    Container::Seq(items) => items.push(value),
                    Container::Map(map, key) => {
                        if let Some(key) = key.take() {
                            map.insert(key.text, value);
                        }
                    }
                }
            }
        }
    }

    fn key(
        &mut self,
        text: String,
        anchor: usize,
        tag: Option<&Tag>,
        range: Range<usize>,
    ) -> Result<(), Diagnostic> {
        if let Some(tag) = tag {
            scalar::check_key_tag(tag).map_err(|e| self.scalar_error(e, range.clone()))?;
        }
        let Some(frame) = self.frames.last() else {
            return Ok(());
        };
        if let Container::Map(map, _) = &frame.container {
            if map.contains_key(&text) {
                let mut d = self
                    .error(
                        format!("the key `{text}` appears twice in this mapping"),
                        range,
                    )
                    .help(
                        "keep one of the two entries: a later one would silently replace the first",
                    );
                if let Some(first) = self.index.member_key(frame.id, &text) {
                    d.labels.push(Label {
                        site: Site::Span(first),
                        message: "first defined here".to_owned(),
                    });
                }
                return Err(d);
            }
        }
        self.bytes = self.bytes.saturating_add(text.len());
        if anchor != 0 {
            self.anchors.insert(anchor, Anchor::Key(text.clone()));
        }
        if let Some(frame) = self.frames.last_mut() {
            frame.end = frame.end.max(range.end);
            if let Container::Map(_, key) = &mut frame.container {
                *key = Some(PendingKey { text, span: range });
            }
        }
        Ok(())
    }

    fn scalar(
        &mut self,
        value: Value,
        anchor: usize,
        range: Range<usize>,
    ) -> Result<(), Diagnostic> {
        self.count(1, &range)?;
        let len = value.as_str().map_or(0, str::len);
        self.bytes = self.bytes.saturating_add(len);
        let id = self.add_node(range.clone(), Kind::Leaf)?;
        if anchor != 0 {
            let path = self.path(self.seg());
            let record = Anchor::Node {
                path,
                id,
                nodes: 1,
                bytes: len,
            };
            self.anchors.insert(anchor, record);
        }
        self.place(value, range.end);
        Ok(())
    }

    fn alias(&mut self, anchor: usize, range: Range<usize>) -> Result<(), Diagnostic> {
        let name = self.alias_name(range.clone());
        if self.awaiting_key() {
            return Err(self
                .error(
                    format!("the alias `*{name}` cannot be used as a mapping key"),
                    range,
                )
                .help("write the key out in full"));
        }
        let (value, kind, nodes, bytes) = match self.anchors.get(&anchor) {
            Some(Anchor::Key(text)) => (Value::String(text.clone()), Kind::Leaf, 1, text.len()),
            Some(&Anchor::Node {
                ref path,
                id,
                nodes,
                bytes,
            }) => {
                let within_nodes = self.nodes.saturating_add(nodes) <= self.limits.max_nodes;
                let within_bytes =
                    self.alias_bytes.saturating_add(bytes) <= self.limits.max_source_bytes;
                if !(within_nodes && within_bytes) {
                    return Err(self
                        .error("alias expansion too large (possible alias bomb)", range)
                        .help(format!(
                            "expanding `*{name}` would take the document past {} nodes or copy more than {} bytes of text; use fewer nested aliases",
                            self.limits.max_nodes, self.limits.max_source_bytes
                        )));
                }
                match self.find(path) {
                    Some(value) => (value.clone(), Kind::Alias(id), nodes, bytes),
                    None => return Err(self.self_alias(name, range)),
                }
            }
            Some(Anchor::Open) | None => return Err(self.self_alias(name, range)),
        };
        self.count(nodes, &range)?;
        self.bytes = self.bytes.saturating_add(bytes);
        self.alias_bytes = self.alias_bytes.saturating_add(bytes);
        self.add_node(range.clone(), kind)?;
        self.place(value, range.end);
        Ok(())
    }

    fn self_alias(&self, name: &str, range: Range<usize>) -> Diagnostic {
        self.error(
            format!("the alias `*{name}` is used inside the node it names"),
            range,
        )
        .help("a node cannot contain a copy of itself")
    }

    /// The finished value at `path`: down the open collections while the path follows
    /// them, then into finished values. `None` if the path ends at an open collection.
    fn find(&self, path: &[Seg]) -> Option<&Value> {
        for (depth, frame) in self.frames.iter().enumerate() {
            let seg = path.get(depth)?;
            let open_child = self.frames.get(depth + 1).and_then(|f| f.seg.as_ref());
            if open_child == Some(seg) {
                continue;
            }
            let mut value = match (&frame.container, seg) {
                (Container::Seq(items), Seg::Index(i)) => items.get(*i)?,
                (Container::Map(map, _), Seg::Key(k)) => map.get(k)?,
                _ => return None,
            };
            for seg in path.get(depth + 1..)? {
                value = match (value, seg) {
                    (Value::Array(items), Seg::Index(i)) => items.get(*i)?,
                    (Value::Object(map), Seg::Key(k)) => map.get(k)?,
                    _ => return None,
                };
            }
            return Some(value);
        }
        None
    }

    fn open(
        &mut self,
        mapping: bool,
        anchor: usize,
        tag: Option<&Tag>,
        range: Range<usize>,
    ) -> Result<(), Diagnostic> {
        if self.awaiting_key() {
            let what = if mapping { "mapping" } else { "sequence" };
            return Err(self
                .error(
                    format!("a mapping key must be a scalar, not a {what}"),
                    range,
                )
                .help("JSON object keys are strings: write the key as text"));
        }
        if let Some(tag) = tag {
            scalar::check_container_tag(tag, mapping)
                .map_err(|e| self.scalar_error(e, range.clone()))?;
        }
        if self.frames.len() >= self.limits.max_depth {
            return Err(self.depth_error(range.start..range.start));
        }
        let nodes_before = self.nodes;
        self.count(1, &range)?;
        let seg = self.seg();
        let kind = if mapping {
            Kind::Map(Vec::new())
        } else {
            Kind::Seq(Vec::new())
        };
        let id = self.add_node(range.clone(), kind)?;
        if anchor != 0 {
            self.anchors.insert(anchor, Anchor::Open);
        }
        let container = if mapping {
            Container::Map(Map::new(), None)
        } else {
            Container::Seq(Vec::new())
        };
        self.frames.push(Frame {
            container,
            id,
            end: range.end,
            anchor,
            nodes_before,
            bytes_before: self.bytes,
            seg,
        });
        Ok(())
    }

    fn close(&mut self, range: Range<usize>) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        // A flow collection's end event is its `]` or `}`; a block one's is empty.
        let end = if range.is_empty() {
            frame.end
        } else {
            range.end.max(frame.end)
        };
        self.index.set_end(frame.id, end);
        if frame.anchor != 0 {
            let record = Anchor::Node {
                path: self.path(frame.seg),
                id: frame.id,
                nodes: self.nodes.saturating_sub(frame.nodes_before),
                bytes: self.bytes.saturating_sub(frame.bytes_before),
            };
            self.anchors.insert(frame.anchor, record);
        }
        let value = match frame.container {
            Container::Seq(items) => Value::Array(items),
            Container::Map(map, _) => Value::Object(map),
        };
        self.place(value, end);
    }
}
