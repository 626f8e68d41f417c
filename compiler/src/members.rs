//! Walking a pack object's members in source order, and reading its fragments.

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

/// A pack's `fragments` member as the lookup [`crate::syntax::expanded_text`] and
/// [`crate::syntax::expanded_len`] take: a fragment's text by name; `None` when the pack
/// has no `fragments` object, where nothing expands.
pub(crate) fn fragments<'a, 's>(
    member: Option<&'a Node<'s>>,
) -> Option<impl Fn(&str) -> Option<&'a str>> {
    let fragments = member?.as_object()?;
    Some(move |name: &str| fragments.get(name)?.as_str())
}
