//! Walking a pack object's members in source order.

use crate::doc::Node;

/// The members of `v` in source order when it is an object; none for anything else, or
/// for no value.
pub(crate) fn entries<'a, 's>(
    v: Option<&'a Node<'s>>,
) -> impl Iterator<Item = (&'a str, &'a Node<'s>)> {
    v.and_then(Node::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v))
}
