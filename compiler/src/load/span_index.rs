//! Where each node of a loaded document is written, looked up by JSON pointer.
//!
//! The index is a tree of nodes mirroring the document rather than a map from pointer
//! strings: a pointer string per node costs the node's depth times its keys' length,
//! which a long key above many nodes makes quadratic. Mapping members are found through
//! one hash table keyed by (parent, key), sequence items by position.
//!
//! An alias (`*name`) is one node of its own (its key and the `*name` text) that links to
//! the anchored node: the members and items below an alias report the spans where the
//! anchor wrote them, and expanding an alias costs the index nothing.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use indexmap::{Equivalent, IndexMap};

use super::Loaded;

/// Where one node is written: byte offsets into the source text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NodeSpan {
    /// The key, for a member of a mapping (quotes included for a quoted key).
    pub key: Option<Range<usize>>,
    /// The node itself, with its anchor and tag if it has any.
    pub value: Range<usize>,
}

/// What a node holds, as far as lookups are concerned.
#[derive(Clone, Debug)]
pub(super) enum Kind {
    /// A scalar.
    Leaf,
    /// A sequence: the node ids of its items, in order.
    Seq(Vec<u32>),
    /// A mapping: the positions of its members in [`SpanIndex::members`], in order.
    Map(Vec<u32>),
    /// An alias: the node id of the anchored node it copies.
    Alias(u32),
}

#[derive(Clone, Debug)]
struct Node {
    span: NodeSpan,
    kind: Kind,
}

/// Where a new node goes.
pub(super) enum Slot<'k> {
    /// The document root, or a node only reachable through aliases.
    Detached,
    /// The next item of this sequence.
    Item(u32),
    /// The member of this mapping with this key.
    Member(u32, &'k str),
}

/// The byte spans of every node of a document, by JSON pointer (RFC 6901).
///
/// ```
/// # use packc_compiler::load::{load_str, Limits};
/// let text = "tools:\n  a/b: {k: 1}\n";
/// let loaded = load_str(text, &Limits::default()).unwrap();
/// let span = loaded.spans.get("/tools/a~1b/k").unwrap();
/// assert_eq!(&text[span.key.clone().unwrap()], "k");
/// assert_eq!(&text[span.value.clone()], "1");
/// ```
///
/// An index of a JSON text may also be lazy ([`SpanIndex::of_json`]): it keeps the text
/// and finds each node when asked, reading only the path to it.
#[derive(Clone, Debug, Default)]
pub struct SpanIndex {
    /// Node 0 is the root.
    nodes: Vec<Node>,
    /// Mapping members: (mapping node id, key) → member node id.
    members: IndexMap<(u32, Box<str>), u32>,
    /// What a lazy index reads ([`SpanIndex::of_json`]); its own `nodes` stay empty.
    json: Option<Arc<Lazy>>,
}

/// A JSON text looked up lazily: the first [`LAZY_LOOKUPS`] lookups each scan the path
/// they ask about; past that, every node is indexed once and the index answers.
#[derive(Debug)]
struct Lazy {
    text: Box<str>,
    lookups: AtomicUsize,
    full: OnceLock<SpanIndex>,
}

/// Lookups a lazy index answers by scanning before it indexes the whole text (a pack
/// with thousands of diagnostics would otherwise be read thousands of times).
const LAZY_LOOKUPS: usize = 32;

impl Lazy {
    fn full(&self) -> &SpanIndex {
        self.full
            .get_or_init(|| super::json_spans::index(&self.text).unwrap_or_default())
    }
}

/// A borrowed `(u32, Box<str>)` key, hashed the same way, so lookups need no allocation.
struct MemberRef<'a>(u32, &'a str);

impl Hash for MemberRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
        self.1.hash(state);
    }
}

impl Equivalent<(u32, Box<str>)> for MemberRef<'_> {
    fn equivalent(&self, key: &(u32, Box<str>)) -> bool {
        self.0 == key.0 && self.1 == &*key.1
    }
}

impl SpanIndex {
    /// A lazy index of the JSON document `text` (which must be one): each lookup scans
    /// the text for the path it asks about, and gives the spans the loader would have
    /// recorded. For a checked JSON pack with a few diagnostics to locate, this costs a
    /// fraction of indexing every node.
    pub fn of_json(text: &str) -> SpanIndex {
        SpanIndex::of_json_text(text.into())
    }

    /// [`SpanIndex::of_json`] of a text the caller owns already.
    pub(crate) fn of_json_text(text: Box<str>) -> SpanIndex {
        let lazy = Lazy {
            text,
            lookups: AtomicUsize::new(0),
            full: OnceLock::new(),
        };
        SpanIndex {
            json: Some(Arc::new(lazy)),
            ..SpanIndex::default()
        }
    }

    /// The spans of the node at exactly this pointer (`""` is the root).
    pub fn get(&self, pointer: &str) -> Option<NodeSpan> {
        match self.find(pointer)? {
            (span, true) => Some(span),
            (_, false) => None,
        }
    }

    /// The value span of the node at this pointer or, if there is none, of its longest
    /// existing ancestor (a missing member is blamed on the mapping that lacks it).
    pub fn locate(&self, pointer: &str) -> Option<Range<usize>> {
        self.find(pointer).map(|(span, _)| span.value)
    }

    /// The key span of a mapping member, the value span of any other node; for a pointer
    /// that names no node, the value span of its longest existing ancestor (as
    /// [`SpanIndex::locate`]).
    pub fn key_or_value(&self, pointer: &str) -> Option<Range<usize>> {
        let (span, exact) = self.find(pointer)?;
        match (span.key, exact) {
            (Some(key), true) => Some(key),
            _ => Some(span.value),
        }
    }

    /// The spans of the deepest node the pointer reaches, and whether it reaches it in full.
    fn find(&self, pointer: &str) -> Option<(NodeSpan, bool)> {
        if let Some(lazy) = &self.json {
            if lazy.full.get().is_none()
                && lazy.lookups.fetch_add(1, Ordering::Relaxed) < LAZY_LOOKUPS
            {
                return super::json_spans::find(&lazy.text, pointer);
            }
            return lazy.full().find(pointer);
        }
        let (id, exact) = self.walk(pointer)?;
        Some((self.node(id)?.span.clone(), exact))
    }

    /// This index with every node recorded (a lazy one indexes its text, once).
    fn recorded(&self) -> &SpanIndex {
        match &self.json {
            Some(lazy) => lazy.full(),
            None => self,
        }
    }

    /// The number of nodes recorded. The nodes an alias copies are recorded once, under
    /// their anchor; the alias itself is one node.
    pub fn len(&self) -> usize {
        self.recorded().nodes.len()
    }

    /// The text of a lazy JSON index ([`SpanIndex::of_json`]).
    pub(crate) fn json_text(&self) -> Option<&str> {
        self.json.as_deref().map(|lazy| &*lazy.text)
    }

    /// Whether no node is recorded (nothing was loaded).
    pub fn is_empty(&self) -> bool {
        self.json.is_none() && self.nodes.is_empty()
    }

    /// The part of a document at `pointer`, as a document of its own: `value` (the caller
    /// passes the value found at `pointer`) with the spans of that node and its
    /// descendants, now rooted at `""`. Spans stay offsets into the original text. A
    /// pointer that names no node gives an empty index.
    pub fn subtree(&self, pointer: &str, value: serde_json::Value) -> Loaded {
        let all = self.recorded();
        let mut spans = SpanIndex::default();
        if let Some((id, true)) = all.walk(pointer) {
            all.copy_into(id, &mut spans);
        }
        Loaded::new(value, spans)
    }

    /// Add a node at `slot`; `None` once the ids run out.
    pub(super) fn add(&mut self, slot: Slot<'_>, span: NodeSpan, kind: Kind) -> Option<u32> {
        let id = u32::try_from(self.nodes.len()).ok()?;
        match slot {
            Slot::Detached => {}
            Slot::Item(parent) => {
                if let Some(Kind::Seq(items)) = self.kind_mut(parent) {
                    items.push(id);
                }
            }
            Slot::Member(parent, key) => {
                let (position, _) = self.members.insert_full((parent, key.into()), id);
                let position = u32::try_from(position).ok()?;
                if let Some(Kind::Map(members)) = self.kind_mut(parent) {
                    members.push(position);
                }
            }
        }
        self.nodes.push(Node { span, kind });
        Some(id)
    }

    /// Set where a container ends, once its end is known.
    pub(super) fn set_end(&mut self, id: u32, end: usize) {
        if let Some(node) = self.nodes.get_mut(id as usize) {
            node.span.value.end = end.max(node.span.value.start);
        }
    }

    /// The key span of the member `key` of mapping `id`.
    pub(super) fn member_key(&self, id: u32, key: &str) -> Option<Range<usize>> {
        let child = *self.members.get(&MemberRef(id, key))?;
        self.node(child)?.span.key.clone()
    }

    fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.get(id as usize)
    }

    fn kind_mut(&mut self, id: u32) -> Option<&mut Kind> {
        self.nodes.get_mut(id as usize).map(|n| &mut n.kind)
    }

    /// The deepest node the pointer reaches, and whether it reaches it in full. `None`
    /// for an empty index or a string that is not a JSON pointer.
    fn walk(&self, pointer: &str) -> Option<(u32, bool)> {
        if self.nodes.is_empty() {
            return None;
        }
        if pointer.is_empty() {
            return Some((0, true));
        }
        let mut id = 0;
        for token in pointer.strip_prefix('/')?.split('/') {
            match self.child(id, token) {
                Some(child) => id = child,
                None => return Some((id, false)),
            }
        }
        Some((id, true))
    }

    /// The child of node `id` named by one (escaped) pointer token, through an alias.
    fn child(&self, id: u32, token: &str) -> Option<u32> {
        let id = match self.node(id)?.kind {
            Kind::Alias(target) => target,
            _ => id,
        };
        match &self.node(id)?.kind {
            Kind::Seq(items) => items.get(array_index(token)?).copied(),
            Kind::Map(_) => {
                let key = unescape(token)?;
                self.members.get(&MemberRef(id, &key)).copied()
            }
            Kind::Leaf | Kind::Alias(_) => None,
        }
    }

    /// Copy node `root` and everything reachable from it into `out`, `root` becoming
    /// node 0 (with no key). Alias targets outside the subtree are copied detached.
    fn copy_into(&self, root: u32, out: &mut SpanIndex) {
        let mut copied: HashMap<u32, u32> = HashMap::new();
        let mut aliases: Vec<(u32, u32)> = Vec::new();
        let mut pending: Vec<u32> = vec![root];
        while let Some(start) = pending.pop() {
            if copied.contains_key(&start) {
                continue;
            }
            // (old id, where its copy goes), popped in document order.
            let mut stack: Vec<(u32, CopyTo)> = vec![(start, CopyTo::Detached)];
            while let Some((old, to)) = stack.pop() {
                let Some(node) = self.node(old) else { continue };
                let slot = match to {
                    CopyTo::Detached => Slot::Detached,
                    CopyTo::Item(new_parent) => Slot::Item(new_parent),
                    CopyTo::Member(new_parent, position) => {
                        match self.members.get_index(position as usize) {
                            Some(((_, key), _)) => Slot::Member(new_parent, key),
                            None => continue,
                        }
                    }
                };
                let span = NodeSpan {
                    key: match slot {
                        Slot::Member(..) => node.span.key.clone(),
                        _ => None,
                    },
                    value: node.span.value.clone(),
                };
                let kind = match &node.kind {
                    Kind::Leaf => Kind::Leaf,
                    Kind::Seq(_) => Kind::Seq(Vec::new()),
                    Kind::Map(_) => Kind::Map(Vec::new()),
                    Kind::Alias(target) => Kind::Alias(*target),
                };
                let Some(new) = out.add(slot, span, kind) else {
                    return;
                };
                copied.insert(old, new);
                match &node.kind {
                    Kind::Leaf => {}
                    Kind::Seq(items) => {
                        stack.extend(items.iter().rev().map(|&item| (item, CopyTo::Item(new))));
                    }
                    Kind::Map(members) => stack.extend(members.iter().rev().filter_map(|&p| {
                        let (_, &child) = self.members.get_index(p as usize)?;
                        Some((child, CopyTo::Member(new, p)))
                    })),
                    Kind::Alias(target) => {
                        aliases.push((new, *target));
                        pending.push(*target);
                    }
                }
            }
        }
        for (alias, target) in aliases {
            if let (Some(&new_target), Some(kind)) = (copied.get(&target), out.kind_mut(alias)) {
                *kind = Kind::Alias(new_target);
            }
        }
    }
}

/// Where [`SpanIndex::copy_into`] puts the copy of a node.
#[derive(Clone, Copy)]
enum CopyTo {
    Detached,
    /// The next item of this (new) sequence.
    Item(u32),
    /// A member of this (new) mapping, with the key of this (old) member position.
    Member(u32, u32),
}

/// An array index token: `0` or digits without a leading zero (RFC 6901 §4).
pub(super) fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0"
        || (!token.starts_with('0')
            && !token.is_empty()
            && token.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        token.parse().ok()
    } else {
        None
    }
}

/// Undo RFC 6901 escaping (`~1` → `/`, `~0` → `~`); `None` for a bad escape.
pub(super) fn unescape(token: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !token.contains('~') {
        return Some(token.into());
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next()? {
                '0' => out.push('~'),
                '1' => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out.into())
}
