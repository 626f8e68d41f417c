//! The pack as the checks and lowering read it: a JSON document whose strings borrow
//! from the text they were parsed from, and whose objects are member lists.
//!
//! A pack parsed into `serde_json::Value` allocates every string and member name, builds
//! a hash table for every object and hashes each name into it, and frees all of it
//! again: about two thirds of checking a large JSON pack. A [`Node`] parsed from a JSON
//! text ([`parse`]) borrows its strings from the text (a string is copied only when it has
//! an escape) and keeps its arrays' and objects' lists in an [`Arena`], which the caller
//! owns and frees at once: no node is allocated or freed on its own, and a document has
//! nothing to drop. A pack loaded from YAML is read through [`Node::borrow`], which borrows
//! the loaded `serde_json::Value`'s strings.
//!
//! The methods are named as `serde_json::Value`'s are (`as_str`, `as_object`, `get`, …),
//! and objects keep their members in source order, as `serde_json`'s `preserve_order`
//! map does.

use std::fmt;

use serde_json::Number;

use crate::load::Limits;

/// Where a document's lists (and its strings that had escapes, unescaped) are kept:
/// `bumpalo`'s arena, freed as a whole when it is dropped.
pub use bumpalo::Bump as Arena;

/// The most memory [`with_arena`] keeps for a thread's next call: an arena that grew
/// larger (a pack of tens of megabytes) is freed.
pub const ARENA_KEPT_MAX: usize = 16 << 20;

/// Runs `read` with an empty arena: the one this thread's last call used, emptied, when
/// there is one, else a new one.
///
/// An arena emptied keeps its largest block of memory, so a host that checks or builds
/// pack after pack on one thread reuses the memory of the last one instead of asking the
/// system for fresh pages each time (each page a fault to fill: on the 1,000 × 5
/// generated pack, about a tenth of a check's time). At most [`ARENA_KEPT_MAX`] bytes are
/// kept, and only between calls; a call made while another is reading (`read` calling
/// back) gets an arena of its own.
pub fn with_arena<R>(read: impl FnOnce(&Arena) -> R) -> R {
    thread_local! {
        static SPARE: std::cell::Cell<Option<Arena>> = const { std::cell::Cell::new(None) };
    }
    let mut arena = SPARE.with(std::cell::Cell::take).unwrap_or_default();
    let result = read(&arena);
    arena.reset();
    if arena.allocated_bytes() <= ARENA_KEPT_MAX {
        SPARE.with(|spare| spare.set(Some(arena)));
    }
    result
}

/// One node of a JSON document, its strings borrowed from `'s` where they can be.
///
/// The tag is a whole word (`repr(u64)`), so that a node is copied in words: with a
/// one-byte tag, the bytes beside it were copied piece by piece and then read back as one
/// word, a read the processor cannot forward from those writes, and stalls on.
#[derive(Clone, Debug, PartialEq)]
#[repr(u64)]
pub enum Node<'s> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as `serde_json` reads it.
    Number(Number),
    /// A string.
    String(Str<'s>),
    /// An array.
    Array(&'s [Node<'s>]),
    /// An object, its members in source order.
    Object(Obj<'s>),
}

/// A string of a document: borrowed from the source, or from the arena when it had to be
/// unescaped. It prints as a `str` does, `{:?}` included (diagnostics quote strings so).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Str<'s>(&'s str);

impl<'s> Str<'s> {
    /// The string.
    #[inline]
    pub fn as_str(&self) -> &'s str {
        self.0
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.0
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Debug for Str<'_> {
    /// As `str`'s: the string quoted and escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

/// An object's members in source order. Objects with more than
/// [`SCAN_MAX`](ir_spec::json::SCAN_MAX) members also keep a hash table of their
/// members' indices, so that a lookup hashes the name once rather than comparing it with
/// every member's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Obj<'s> {
    entries: &'s [(Str<'s>, Node<'s>)],
    /// For a large object: open addressing, linear probing, a power of two at least twice
    /// the members; each slot is a member's index + 1, or 0 when empty.
    table: Option<&'s [u32]>,
}

/// The hash of a member name in an object's table.
#[inline]
fn name_hash(name: &str) -> usize {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(name) as usize
}

impl PartialEq for Obj<'_> {
    /// Objects are equal when they have the same members, in any order (JSON equality).
    fn eq(&self, other: &Obj<'_>) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(k, v)| other.get(k).is_some_and(|w| v == w))
    }
}

impl<'s> Obj<'s> {
    /// An object of `entries` (its hash table, when it needs one, kept in `arena`); `None`
    /// when two have the same name.
    // Inlined, so that the parser does not read the object back from memory a call wrote
    // it to (see `Parser::composite`); a large object's table is built out of line.
    #[inline]
    pub fn new(entries: &'s [(Str<'s>, Node<'s>)], arena: &'s Arena) -> Option<Obj<'s>> {
        if entries.len() > ir_spec::json::SCAN_MAX {
            return Some(Obj {
                entries,
                table: Some(Obj::table(entries, arena)?),
            });
        }
        for (i, (k, _)) in entries.iter().enumerate() {
            if entries[..i]
                .iter()
                .any(|(j, _)| ir_spec::json::eq_str(j, k))
            {
                return None;
            }
        }
        Some(Obj {
            entries,
            table: None,
        })
    }

    /// The hash table of a large object's `entries`; `None` when two have the same name.
    #[inline(never)]
    fn table(entries: &'s [(Str<'s>, Node<'s>)], arena: &'s Arena) -> Option<&'s [u32]> {
        // Member indices are stored + 1 in a `u32`; a document's nodes are bounded far
        // below that by `max_nodes`.
        let n = u32::try_from(entries.len())
            .ok()
            .filter(|&n| n < u32::MAX)?;
        let table = arena.alloc_slice_fill_copy((entries.len() * 2).next_power_of_two(), 0u32);
        let mask = table.len() - 1;
        for (i, (k, _)) in (1..=n).zip(entries) {
            let mut slot = name_hash(k) & mask;
            while table[slot] != 0 {
                if ir_spec::json::eq_str(&entries[table[slot] as usize - 1].0, k) {
                    return None;
                }
                slot = (slot + 1) & mask;
            }
            table[slot] = i;
        }
        Some(&*table)
    }

    /// The member `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&'s Node<'s>> {
        let Some(table) = self.table else {
            return self
                .entries
                .iter()
                .find(|(k, _)| ir_spec::json::eq_str(k, key))
                .map(|(_, v)| v);
        };
        let mask = table.len() - 1;
        let mut slot = name_hash(key) & mask;
        loop {
            let (k, v) = self.entries.get((table[slot] as usize).checked_sub(1)?)?;
            if ir_spec::json::eq_str(k, key) {
                return Some(v);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The member `key`, or `null` when there is none.
    #[inline]
    pub fn field(&self, key: &str) -> &'s Node<'s> {
        self.get(key).unwrap_or(&NULL)
    }

    /// Whether the object has a member `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// How many members it has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Its members (name, value) in source order.
    pub fn as_slice(&self) -> &'s [(Str<'s>, Node<'s>)] {
        self.entries
    }

    /// Its members in source order.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&Str<'s>, &Node<'s>)> + ExactSizeIterator {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Its members' names in source order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Str<'s>> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Its members' values in source order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Node<'s>> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }
}

impl<'a, 's> IntoIterator for &'a Obj<'s> {
    type Item = (&'a Str<'s>, &'a Node<'s>);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Str<'s>, Node<'s>)>,
        fn(&'a (Str<'s>, Node<'s>)) -> (&'a Str<'s>, &'a Node<'s>),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

/// `null`, for a lookup that finds nothing.
static NULL: Node<'static> = Node::Null;

impl<'s> Node<'s> {
    /// The node of a `serde_json` value, borrowing its strings (its lists kept in `arena`).
    pub fn borrow(v: &'s serde_json::Value, arena: &'s Arena) -> Node<'s> {
        use serde_json::Value;
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(Str(s)),
            Value::Array(a) => {
                Node::Array(arena.alloc_slice_fill_iter(a.iter().map(|v| Node::borrow(v, arena))))
            }
            Value::Object(o) => {
                let entries = arena.alloc_slice_fill_iter(
                    o.iter()
                        .map(|(k, v)| (Str(k.as_str()), Node::borrow(v, arena))),
                );
                // A map's names are distinct.
                Node::Object(Obj::new(entries, arena).unwrap_or_default())
            }
        }
    }

    /// The same document as a `serde_json` value (for the schema validator's error
    /// report and the values the IR keeps as JSON).
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.as_str().to_owned()),
            Node::Array(a) => Value::Array(a.iter().map(Node::to_value).collect()),
            Node::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// The member `key` of an object; `None` for anything else.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Node<'s>> {
        self.as_object()?.get(key)
    }

    /// The member `key`, or `null` when there is none, as `value[key]` reads it.
    #[inline]
    pub fn field(&self, key: &str) -> &Node<'s> {
        self.get(key).unwrap_or(&NULL)
    }

    /// The string, if this is one.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The object, if this is one.
    #[inline]
    pub fn as_object(&self) -> Option<&Obj<'s>> {
        match self {
            Node::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The array, if this is one.
    #[inline]
    pub fn as_array(&self) -> Option<&'s [Node<'s>]> {
        match self {
            Node::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Node::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The number as a `u64`, if it is one that fits.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_number()?.as_u64()
    }

    /// The number as an `i64`, if it is one that fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_number()?.as_i64()
    }

    /// The number as an `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number()?.as_f64()
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }

    /// Whether this is `true` or `false`.
    pub fn is_boolean(&self) -> bool {
        matches!(self, Node::Bool(_))
    }

    /// Whether this is a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Node::Number(_))
    }

    /// Whether this is a number that fits a `u64`.
    pub fn is_u64(&self) -> bool {
        self.as_u64().is_some()
    }

    /// Whether this is a number that fits an `i64`.
    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// Whether this is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Node::String(_))
    }

    /// Whether this is an array.
    pub fn is_array(&self) -> bool {
        matches!(self, Node::Array(_))
    }

    /// Whether this is an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Node::Object(_))
    }
}

impl<'s> std::ops::Index<&str> for Node<'s> {
    type Output = Node<'s>;

    /// The member `key`, or `null`.
    fn index(&self, key: &str) -> &Node<'s> {
        self.field(key)
    }
}

impl<'s> std::ops::Index<&str> for Obj<'s> {
    type Output = Node<'s>;

    /// The member `key`, or `null`.
    fn index(&self, key: &str) -> &Node<'s> {
        self.field(key)
    }
}

impl fmt::Display for Node<'_> {
    /// The node as compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_value(), f)
    }
}

impl PartialEq<serde_json::Value> for Node<'_> {
    fn eq(&self, other: &serde_json::Value) -> bool {
        let arena = Arena::new();
        *self == Node::borrow(other, &arena)
    }
}

/// Parse strict JSON within `limits` (depth, nodes and string length), refusing duplicate
/// keys, into a document that borrows `text`'s strings. `None` when the text is not such
/// a document; the caller then loads it the slow way for a located diagnostic. It accepts
/// exactly what [`json_fast::parse`](crate::load::json_fast::parse) accepts, and reads
/// numbers and escaped strings as `serde_json` does (it hands those tokens to it).
pub fn parse<'s>(text: &'s str, arena: &'s Arena, limits: &Limits) -> Option<Node<'s>> {
    let text = text.trim_start_matches('\u{feff}');
    let mut parser = Parser {
        arena,
        text,
        bytes: text.as_bytes(),
        at: 0,
        nodes: 0,
        // `serde_json` refuses a 128th level of nesting, whatever the limit says.
        depth_left: limits.max_depth.min(ir_spec::MAX_JSON_NESTING),
        limits,
        items: Vec::new(),
        members: Vec::new(),
    };
    parser.item()?;
    parser.skip_space();
    (parser.at == parser.bytes.len())
        .then(|| parser.items.pop())
        .flatten()
}

/// Where [`Parser::composite`] writes the node it read: the value of the innermost open
/// object's last member, or the last of the open arrays' items.
#[derive(Clone, Copy)]
enum Slot {
    Member(usize),
    Item(usize),
}

/// A recursive-descent reader of one JSON text.
struct Parser<'s, 'l> {
    arena: &'s Arena,
    text: &'s str,
    bytes: &'s [u8],
    /// The next byte to read.
    at: usize,
    nodes: usize,
    /// Arrays and objects that may still open inside the current one.
    depth_left: usize,
    limits: &'l Limits,
    /// The items of the open arrays, innermost last: an array is copied into the arena
    /// once, at its final size.
    items: Vec<Node<'s>>,
    /// The members of the open objects, innermost last.
    members: Vec<(Str<'s>, Node<'s>)>,
}

impl<'s> Parser<'s, '_> {
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// Consume `byte` (after whitespace) if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.bytes.get(self.at) == Some(&byte);
        self.at += usize::from(found);
        found
    }

    fn node(&mut self) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= self.limits.max_nodes).then_some(())
    }

    /// The next value, pushed onto the open arrays' items.
    #[inline(always)]
    fn item(&mut self) -> Option<()> {
        self.skip_space();
        if self.bytes.get(self.at) == Some(&b'"') {
            self.node()?;
            let s = self.string()?;
            self.items.push(Node::String(s));
            return Some(());
        }
        let slot = Slot::Item(self.items.len());
        self.items.push(Node::Null);
        self.composite(slot)
    }

    /// The next value, pushed onto the open objects' members as the value of `key`.
    #[inline(always)]
    fn member(&mut self, key: Str<'s>) -> Option<()> {
        self.skip_space();
        if self.bytes.get(self.at) == Some(&b'"') {
            self.node()?;
            let s = self.string()?;
            self.members.push((key, Node::String(s)));
            return Some(());
        }
        let slot = Slot::Member(self.members.len());
        self.members.push((key, Node::Null));
        self.composite(slot)
    }

    /// The next value, not a string ([`Parser::item`] and [`Parser::member`] read those
    /// inline, as most values of a pack are strings), written into `slot`.
    ///
    /// The node is written where it goes rather than returned: a 40-byte node comes back
    /// from a call through memory, and reading it there right after the callee wrote it
    /// stalls the processor (the read spans two of the callee's writes, which it cannot
    /// forward), a stall per object or array of the document.
    fn composite(&mut self, slot: Slot) -> Option<()> {
        self.node()?;
        let node = match *self.bytes.get(self.at)? {
            b'{' => self.nested(Self::object)?,
            b'[' => self.nested(Self::array)?,
            b't' => self.literal("true", Node::Bool(true))?,
            b'f' => self.literal("false", Node::Bool(false))?,
            b'n' => self.literal("null", Node::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        };
        match slot {
            Slot::Member(i) => self.members[i].1 = node,
            Slot::Item(i) => self.items[i] = node,
        }
        Some(())
    }

    /// An object or array (its opening byte is next), read by `read` one level deeper.
    #[inline]
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Option<Node<'s>>) -> Option<Node<'s>> {
        self.at += 1;
        self.depth_left = self.depth_left.checked_sub(1)?;
        let node = read(self);
        self.depth_left += 1;
        node
    }

    fn literal(&mut self, word: &str, node: Node<'s>) -> Option<Node<'s>> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            node
        })
    }

    /// A number token, read by `serde_json` (which decides between integer and float,
    /// and rounds, as the rest of the tools do).
    fn number(&mut self) -> Option<Node<'s>> {
        let start = self.at;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
        let number: Number = serde_json::from_str(&self.text[start..self.at]).ok()?;
        // Non-finite numbers cannot come out of JSON text; refuse rather than guess.
        number
            .as_f64()
            .is_some_and(f64::is_finite)
            .then_some(Node::Number(number))
    }

    /// A string token (the opening quote is next), borrowed unless it has an escape,
    /// which `serde_json` decodes.
    #[inline(always)]
    fn string(&mut self) -> Option<Str<'s>> {
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            at += find_special(self.bytes.get(at..)?)?;
            match self.bytes[at] {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    // The escaped byte is never the end (`\"`); `serde_json` checks the
                    // escape itself below.
                    at += 2;
                }
                _ => return None, // a control character
            }
        }
        self.at = at + 1;
        let s = if escaped {
            let decoded: String = serde_json::from_str(&self.text[start - 1..=at]).ok()?;
            Str(self.arena.alloc_str(&decoded))
        } else {
            Str(&self.text[start..at])
        };
        (s.len() <= self.limits.max_string_bytes).then_some(s)
    }

    fn array(&mut self) -> Option<Node<'s>> {
        let start = self.items.len();
        if !self.eat(b']') {
            loop {
                self.item()?;
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        Some(Node::Array(
            self.arena.alloc_slice_fill_iter(self.items.drain(start..)),
        ))
    }

    fn object(&mut self) -> Option<Node<'s>> {
        let start = self.members.len();
        if !self.eat(b'}') {
            loop {
                self.skip_space();
                if self.bytes.get(self.at) != Some(&b'"') {
                    return None;
                }
                let key = self.string()?;
                if !self.eat(b':') {
                    return None;
                }
                self.member(key)?;
                if self.eat(b'}') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        let entries = self
            .arena
            .alloc_slice_fill_iter(self.members.drain(start..));
        Obj::new(entries, self.arena).map(Node::Object)
    }
}

/// The offset of the first `"`, `\` or control character (below 0x20) in `bytes`, eight
/// bytes at a time.
#[inline]
fn find_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero: its high bit in the result. Bits above the lowest one can be
    // wrong (a borrow carries), so only the lowest is read.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let hits = zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if hits != 0 {
            return Some(offset + hits.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| offset + i)
}

/// A test's document of `v`, its copy of `v` and its arena leaked.
#[cfg(test)]
pub(crate) fn leaked(v: &serde_json::Value) -> Node<'static> {
    let v = Box::leak(Box::new(v.clone()));
    Node::borrow(v, Box::leak(Box::new(Arena::new())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node is five words, its tag one of them, and `Option<Node>` is no larger.
    #[test]
    fn node_layout() {
        assert_eq!(std::mem::size_of::<Node<'_>>(), 40);
        assert_eq!(std::mem::size_of::<Option<Node<'_>>>(), 40);
    }

    /// A thread's next call reads with the memory its last one used; a call made inside
    /// another gets an arena of its own; an arena grown past the cap is not kept.
    #[test]
    fn arenas_are_kept_between_calls() {
        std::thread::spawn(|| {
            let first = with_arena(|arena| {
                arena.alloc_slice_fill_copy(1 << 20, 0u8);
                arena.allocated_bytes()
            });
            assert!(first >= 1 << 20);
            with_arena(|arena| {
                assert!(arena.allocated_bytes() >= 1 << 20, "the block was kept");
                with_arena(|inner| assert!(inner.allocated_bytes() < 1 << 20));
                arena.alloc_slice_fill_copy(ARENA_KEPT_MAX + 1, 0u8);
            });
            with_arena(|arena| assert!(arena.allocated_bytes() < 1 << 20, "too large to keep"));
        })
        .join()
        .unwrap();
    }
    use serde_json::json;

    #[test]
    fn parses_what_the_value_parser_parses() {
        let arena = Arena::new();
        let limits = Limits::default();
        let many: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
        for text in [
            r#"{"a": [1, 2.5, -3, true, null, "x"], "b": {"c": {}}, "e\n": "q\"t"}"#.to_owned(),
            format!("{{{many}\"last\": [{{}}, []]}}"),
            "\u{feff} {\"\\u00e9\": \"\\ud83d\\ude00\"}".to_owned(),
        ] {
            let value = crate::load::json_fast::parse(&text, &limits).unwrap();
            let node = parse(&text, &arena, &limits).unwrap();
            assert_eq!(node.to_value(), value, "{text}");
            assert_eq!(node, Node::borrow(&value, &arena), "{text}");
        }
    }

    #[test]
    fn refuses_what_the_value_parser_refuses() {
        let arena = Arena::new();
        let limits = Limits::default();
        let many: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
        let shallow = Limits {
            max_depth: 2,
            ..Limits::default()
        };
        let short = Limits {
            max_string_bytes: 3,
            ..Limits::default()
        };
        let few = Limits {
            max_nodes: 3,
            ..Limits::default()
        };
        let cases = [
            (r#"{"a": 1, "a": 2}"#.to_owned(), &limits),
            (format!("{{{many}\"k7\": 1}}"), &limits),
            (r#"{"a": [1,}"#.to_owned(), &limits),
            (r#"{"a": 1} {}"#.to_owned(), &limits),
            (r#"{"a": {"b": {}}}"#.to_owned(), &shallow),
            (r#"{"a": {"b": 1}}"#.to_owned(), &shallow),
            (r#"{"abc": "xyz"}"#.to_owned(), &short),
            (r#"{"abcd": "x"}"#.to_owned(), &short),
            (r#"{"a": "x\nyz"}"#.to_owned(), &short),
            (r#"{"a": [1, 2]}"#.to_owned(), &few),
            (r#"{"a": [1]}"#.to_owned(), &few),
        ];
        for (text, limits) in cases {
            let value = crate::load::json_fast::parse(&text, limits);
            let node = parse(&text, &arena, limits);
            assert_eq!(node.is_some(), value.is_some(), "{text}");
        }
    }

    #[test]
    fn nesting_is_refused_where_the_value_parser_refuses_it() {
        let arena = Arena::new();
        for max_depth in [2, 126, 127, 128, 200] {
            let limits = Limits {
                max_depth,
                ..Limits::default()
            };
            for depth in [1, 2, 3, 125, 126, 127, 128, 129, 140] {
                for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
                    let text = format!(
                        "{{\"x\": {}1{}}}",
                        open.repeat(depth - 1),
                        close.repeat(depth - 1)
                    );
                    let value = crate::load::json_fast::parse(&text, &limits);
                    let node = parse(&text, &arena, &limits);
                    assert_eq!(
                        node.is_some(),
                        value.is_some(),
                        "{max_depth} {depth} {open}"
                    );
                }
            }
        }
    }

    #[test]
    fn special_bytes_are_found_at_every_position() {
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 31, 40] {
            assert_eq!(find_special(&vec![b'a'; len]), None, "{len}");
            for at in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    // Bytes above the first never hide it.
                    for later in at + 1..len {
                        bytes[later] = [b'"', 0x01, 0xff][later % 3];
                    }
                    assert_eq!(find_special(&bytes), Some(at), "{len} {at} {special}");
                }
                let mut bytes = vec![0xc3; len];
                bytes[at] = b' ';
                assert_eq!(
                    find_special(&bytes),
                    None,
                    "{len} {at}: 0x20 and up are plain"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_document_parses_as_the_value_parser_reads_it(
            value in ir_spec::testing::json_value(),
            pretty in proptest::bool::ANY,
        ) {
            let arena = Arena::new();
            let value = serde_json::json!({"v": value});
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let node = parse(&text, &arena, &Limits::default()).unwrap();
            proptest::prop_assert_eq!(node.to_value(), value);
        }

        #[test]
        fn any_edit_is_accepted_or_refused_as_the_value_parser_does(
            value in ir_spec::testing::json_value(),
            edits in proptest::collection::vec(
                (proptest::num::usize::ANY, proptest::sample::select(vec![
                    "", "\"", "\\", ",", ":", "{", "}", "[", "]", " ", "\t", "1", "-", ".", "e",
                    "0", "t", "\u{1}", "\\u", "\\ud800", "\\n", "é", "null", "tru", "1e999",
                ])),
                1..4,
            ),
        ) {
            let arena = Arena::new();
            let mut text = serde_json::json!({"v": value}).to_string();
            for (at, insert) in edits {
                let mut at = at % (text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                // An empty edit deletes the character at `at`; any other is inserted there.
                let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                if insert.is_empty() {
                    text.replace_range(at..end, "");
                } else {
                    text.insert_str(at, insert);
                }
            }
            let limits = Limits::default();
            let value = crate::load::json_fast::parse(&text, &limits);
            let node = parse(&text, &arena, &limits);
            proptest::prop_assert_eq!(node.map(|n| n.to_value()), value, "{}", text);
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let arena = Arena::new();
        let text = r#"{"plain": "text", "esc\u0061ped": "a\tb"}"#;
        let node = parse(text, &arena, &Limits::default()).unwrap();
        let obj = node.as_object().unwrap();
        let in_text = |s: &str| text.as_bytes().as_ptr_range().contains(&s.as_ptr());
        let kinds: Vec<(bool, bool)> = obj
            .iter()
            .map(|(k, v)| (in_text(k), in_text(v.as_str().unwrap_or_default())))
            .collect();
        assert_eq!(kinds, [(true, true), (false, false)]);
        assert_eq!(node["escaped"].as_str(), Some("a\tb"));
    }

    #[test]
    fn members_are_found_in_small_and_large_objects() {
        let arena = Arena::new();
        let small = json!({"id": 1, "name": "n", "": 2});
        let large =
            serde_json::Value::Object((0..40).map(|i| (format!("k{i}"), json!(i))).collect());
        for v in [&small, &large, &json!([1]), &json!("s"), &json!(null)] {
            let node = Node::borrow(v, &arena);
            for key in ["id", "name", "", "k0", "k39", "k40", "missing"] {
                assert_eq!(
                    node.get(key).map(Node::to_value).as_ref(),
                    v.get(key),
                    "{v} {key}"
                );
                assert_eq!(node[key].to_value(), v[key], "{v} {key}");
            }
        }
        let o = Node::borrow(&large, &arena);
        let o = o.as_object().unwrap();
        let names: Vec<&str> = o.keys().map(|k| k.as_str()).collect();
        let expected: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        assert_eq!(names, expected, "members keep their source order");
    }

    #[test]
    fn strings_print_as_str_prints() {
        let arena = Arena::new();
        let node = parse(r#"{"s": "say \"hi\"\n"}"#, &arena, &Limits::default()).unwrap();
        let Some(Node::String(s)) = node.get("s") else {
            panic!("a string member")
        };
        assert_eq!(format!("{s:?}"), format!("{:?}", "say \"hi\"\n"));
        assert_eq!(format!("{s}"), "say \"hi\"\n");
    }

    #[test]
    fn objects_compare_as_json_objects() {
        let arena = Arena::new();
        let x = json!({"x": 1, "y": [true]});
        let a = Node::borrow(&x, &arena);
        let b = json!({"y": [true], "x": 1});
        assert_eq!(a, b);
        assert_ne!(a, json!({"x": 1}));
        assert_eq!(a.to_string(), r#"{"x":1,"y":[true]}"#);
    }
}
