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

/// A name as a hash-map key: hashed as `str` is, compared by
/// [`ir_spec::json::eq_str`], inline for the short names of a pack rather than by a call
/// to the C library's `memcmp`, which is what most lookups of a check or lowering ended in.
#[derive(Clone, Copy, Debug, Eq)]
pub(crate) struct Name<'a>(pub(crate) &'a str);

impl PartialEq for Name<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        ir_spec::json::eq_str(self.0, other.0)
    }
}

impl std::hash::Hash for Name<'_> {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::Name;
    use rustc_hash::FxHashMap;

    #[test]
    fn names_are_keys_as_their_text_is() {
        let words = [
            "",
            "a",
            "ab",
            "abcd",
            "abcde",
            "abcdefgh",
            "abcdefghi",
            "a".repeat(17).leak(),
        ];
        let map: FxHashMap<Name, usize> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (Name(w), i))
            .collect();
        for (i, w) in words.iter().enumerate() {
            // Another copy of the text: keys match by their bytes, not by where they are.
            let copy = String::from(*w);
            assert_eq!(map.get(&Name(&copy)), Some(&i), "{w:?}");
            let other = copy + "x";
            assert_eq!(
                map.contains_key(&Name(&other)),
                words.contains(&other.as_str()),
                "{other:?}"
            );
        }
        assert_eq!(map.len(), words.len());
    }
}
