//! The embedded schemas as static trees, generated from their JSON by `build.rs`: what
//! [`super::quick`] walks, read in place with no parse and no allocation.

use std::fmt;
use std::sync::OnceLock;

use super::quick::Ready;

/// A node of a JSON document held in static memory.
#[derive(Debug, PartialEq)]
pub(crate) enum Node {
    /// `null` (which no embedded schema holds today).
    #[allow(dead_code)]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as `serde_json` writes it.
    Num(&'static str),
    /// A string.
    Str(&'static str),
    /// An array.
    Arr(&'static [Node]),
    /// An object.
    Obj(&'static Object),
}

/// An object of a schema document: its members, and its keywords as [`super::quick`]
/// reads them, made ready the first time a walk meets the object in the process.
pub(crate) struct Object {
    /// The members, in document order.
    pub(crate) members: &'static [(&'static str, Node)],
    /// The keywords, once read (the schema an object is in never changes, so they are
    /// read once a process). The slot is held apart from the object, so that the static
    /// trees stay read-only data, shared with the executable's file.
    pub(super) ready: &'static OnceLock<Ready>,
}

impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        self.members == other.members
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.members.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

include!(concat!(env!("OUT_DIR"), "/schema_tree.rs"));

/// The member `key` among an object's `members`.
pub(crate) fn member(members: &'static [(&'static str, Node)], key: &str) -> Option<&'static Node> {
    members.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

impl Node {
    /// The member `key` of an object.
    pub(crate) fn get(&'static self, key: &str) -> Option<&'static Node> {
        match self {
            Node::Obj(object) => member(object.members, key),
            _ => None,
        }
    }

    /// The string, when this is one.
    pub(crate) fn as_str(&self) -> Option<&'static str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number, when this is one.
    pub(crate) fn as_number(&self) -> Option<serde_json::Number> {
        match self {
            Node::Num(text) => text.parse().ok(),
            _ => None,
        }
    }

    /// The node at JSON pointer `pointer` (RFC 6901) below this one.
    pub(crate) fn pointer(&'static self, pointer: &str) -> Option<&'static Node> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |node, token| {
            // Escaped tokens are rare: the `$ref`s of a walk resolve without allocating.
            let token: std::borrow::Cow<str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            match node {
                Node::Obj(_) => node.get(&token),
                Node::Arr(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            }
        })
    }

    /// `value` as a node, leaked: for tests, which build schemas at run time.
    #[cfg(test)]
    pub(crate) fn leak(value: &serde_json::Value) -> &'static Node {
        Box::leak(Box::new(Node::of(value)))
    }

    #[cfg(test)]
    fn of(value: &serde_json::Value) -> Node {
        use serde_json::Value;
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Num(Box::leak(n.to_string().into_boxed_str())),
            Value::String(s) => Node::Str(Box::leak(s.clone().into_boxed_str())),
            Value::Array(items) => Node::Arr(Box::leak(items.iter().map(Node::of).collect())),
            Value::Object(members) => Node::Obj(Box::leak(Box::new(Object {
                ready: Box::leak(Box::default()),
                members: Box::leak(
                    members
                        .iter()
                        .map(|(k, v)| (&*Box::leak(k.clone().into_boxed_str()), Node::of(v)))
                        .collect(),
                ),
            }))),
        }
    }
}
