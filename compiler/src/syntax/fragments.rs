//! Fragment expansion (`workflow.md` §14, compile time 1).
//!
//! Three reference forms are found in published packs, and all three are accepted:
//!
//! | form | written | meaning |
//! | --- | --- | --- |
//! | [`FragmentForm::Dotted`] | `{{fragments.name}}` | the spec's schema guide |
//! | [`FragmentForm::Bare`] | `{{name}}` | only when `name` is a fragment and not a variable the prompt declares; `input` and `artifacts` never |
//! | [`FragmentForm::Colon`] | `{{fragment:name}}` | promptpack-python |
//!
//! `name` is an identifier (`[A-Za-z_][A-Za-z0-9_]*`) in every form, with no whitespace
//! inside the braces, as for placeholders. A fragment whose key is not an identifier
//! cannot be referenced.
//!
//! Expansion is one level deep: the fragment text is copied into the result and never
//! scanned again, so a fragment reference inside a fragment stays as written and its
//! `{{placeholders}}` become placeholders of the including prompt.
//!
//! Decisions where the spec is silent:
//! - A dotted or colon reference that names no fragment is left as written and reported
//!   in [`Expanded::unknown`]. The one exception: `{{fragments.x}}` when the prompt
//!   declares a variable named `fragments` and `x` is not a fragment is that variable's
//!   placeholder, not reported.
//! - A dotted reference to an existing fragment is the fragment even when `fragments` is
//!   also a declared variable: that is the form the spec documents.
//! - Overlapping braces follow the template rule: the leftmost `{{` that opens a
//!   reference wins, so `{{{fragments.a}}}` becomes `{` + text of `a` + `}`.

use std::borrow::Cow;
use std::ops::Range;

use super::scan::{find_from, ident_end};

/// How a fragment reference was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentForm {
    /// `{{fragments.name}}`
    Dotted,
    /// `{{name}}`
    Bare,
    /// `{{fragment:name}}`
    Colon,
}

/// One fragment reference found in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentUse {
    /// The fragment name.
    pub name: String,
    /// Byte range of the whole `{{...}}` in the original (unexpanded) text.
    pub span: Range<usize>,
    /// How the reference was written.
    pub form: FragmentForm,
}

/// The result of [`expand_fragments`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expanded {
    /// The text with every known fragment reference replaced by the fragment text.
    pub text: String,
    /// The references that were expanded, in source order.
    pub uses: Vec<FragmentUse>,
    /// `{{fragments.x}}` or `{{fragment:x}}` naming no fragment, in source order; they are
    /// left as written in [`Expanded::text`].
    pub unknown: Vec<FragmentUse>,
}

/// Replaces the fragment references of `text` by the fragment texts, one level deep.
///
/// `fragment(name)` returns the fragment text if `name` is a key of `fragments`;
/// `is_declared(name)` says whether the prompt declares a variable of that name
/// (then a bare `{{name}}` is the variable, not the fragment; `input`/`artifacts` are
/// never fragments in bare form).
pub fn expand_fragments<'f>(
    text: &str,
    fragment: impl Fn(&str) -> Option<&'f str>,
    is_declared: impl Fn(&str) -> bool,
) -> Expanded {
    let mut out = Expanded {
        text: String::with_capacity(text.len()),
        ..Expanded::default()
    };
    let mut copied_to = 0;
    let mut search_from = 0;
    while let Some(open) = find_from(text, search_from, "{{") {
        let Some((form, name, end)) = reference_at(text, open) else {
            search_from = open + 1;
            continue;
        };
        let found = resolve(form, name, &fragment, &is_declared);
        let entry = || FragmentUse {
            name: name.to_owned(),
            span: open..end,
            form,
        };
        match found {
            Some(body) => {
                out.text.push_str(&text[copied_to..open]);
                out.text.push_str(body);
                copied_to = end;
                out.uses.push(entry());
            }
            None if form == FragmentForm::Colon
                || (form == FragmentForm::Dotted && !is_declared("fragments")) =>
            {
                out.unknown.push(entry());
            }
            None => {}
        }
        // Whatever the reference turned out to be, it holds no `{{`.
        search_from = end;
    }
    out.text.push_str(&text[copied_to..]);
    out
}

/// The text [`expand_fragments`] gives, borrowed when there is no `fragment` to look
/// names up in (a pack without `fragments`), where nothing expands.
pub fn expanded_text<'t, 'f>(
    text: &'t str,
    fragment: Option<impl Fn(&str) -> Option<&'f str>>,
    is_declared: impl Fn(&str) -> bool,
) -> Cow<'t, str> {
    match fragment {
        Some(fragment) => Cow::Owned(expand_fragments(text, fragment, is_declared).text),
        None => Cow::Borrowed(text),
    }
}

/// The length in bytes of the text [`expand_fragments`] gives, without building it: a
/// template's expansion is measured against the compiler's limits before any of it is
/// copied (a 100-byte fragment referenced by a 1 MiB template of `{{f}}`s would expand
/// to 20 MB). Saturates at `usize::MAX`. Without a `fragment` lookup (a pack without
/// `fragments`) nothing expands, and the text is not scanned.
pub fn expanded_len<'f>(
    text: &str,
    fragment: Option<impl Fn(&str) -> Option<&'f str>>,
    is_declared: impl Fn(&str) -> bool,
) -> usize {
    let Some(fragment) = fragment else {
        return text.len();
    };
    let mut len = text.len();
    let mut search_from = 0;
    while let Some(open) = find_from(text, search_from, "{{") {
        let Some((form, name, end)) = reference_at(text, open) else {
            search_from = open + 1;
            continue;
        };
        if let Some(body) = resolve(form, name, &fragment, &is_declared) {
            len = (len - (end - open)).saturating_add(body.len());
        }
        search_from = end;
    }
    len
}

/// The fragment text a reference stands for, if it is a fragment reference at all.
fn resolve<'f>(
    form: FragmentForm,
    name: &str,
    fragment: &impl Fn(&str) -> Option<&'f str>,
    is_declared: &impl Fn(&str) -> bool,
) -> Option<&'f str> {
    match form {
        FragmentForm::Bare if name == "input" || name == "artifacts" || is_declared(name) => None,
        _ => fragment(name),
    }
}

/// The fragment-reference shape whose `{{` starts at `open`: its form, name and end.
/// A bare `{{name}}` is returned as [`FragmentForm::Bare`] whatever `name` is; the
/// caller decides whether it is a fragment.
fn reference_at(text: &str, open: usize) -> Option<(FragmentForm, &str, usize)> {
    let bytes = text.as_bytes();
    let first_start = open + 2;
    let first_end = ident_end(bytes, first_start)?;
    let first = &text[first_start..first_end];
    let (form, name_start) = match bytes.get(first_end)? {
        b'}' => return closes_at(bytes, first_end).map(|end| (FragmentForm::Bare, first, end)),
        b'.' if first == "fragments" => (FragmentForm::Dotted, first_end + 1),
        b':' if first == "fragment" => (FragmentForm::Colon, first_end + 1),
        _ => return None,
    };
    let name_end = ident_end(bytes, name_start)?;
    let end = closes_at(bytes, name_end)?;
    Some((form, &text[name_start..name_end], end))
}

/// The position after `}}` if `}}` starts at `at`.
fn closes_at(bytes: &[u8], at: usize) -> Option<usize> {
    bytes
        .get(at..at + 2)
        .filter(|b| *b == b"}}")
        .map(|_| at + 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FRAGMENTS: &[(&str, &str)] = &[
        ("intro", "We are ACME."),
        ("nested", "See {{fragments.intro}} and {{who}}."),
        ("company", "ACME Corp"),
        ("input", "never bare"),
        ("uni", "ünï ✓"),
    ];

    fn lookup(name: &str) -> Option<&'static str> {
        FRAGMENTS.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    fn expand(text: &str, declared: &[&str]) -> Expanded {
        expand_fragments(text, lookup, |n| declared.contains(&n))
    }

    fn used(name: &str, span: Range<usize>, form: FragmentForm) -> FragmentUse {
        FragmentUse {
            name: name.to_owned(),
            span,
            form,
        }
    }

    #[test]
    fn expanded_text_borrows_when_there_are_no_fragments() {
        let text = "{{fragment:intro}} {{x}}";
        let none: Option<fn(&str) -> Option<&'static str>> = None;
        let borrowed = expanded_text(text, none, |_| false);
        assert!(matches!(borrowed, Cow::Borrowed(t) if t == text));
        let owned = expanded_text(text, Some(lookup), |_| false);
        assert_eq!(owned, expand(text, &[]).text);
        assert_eq!(owned, "We are ACME. {{x}}");
    }

    #[test]
    fn three_forms() {
        let e = expand(
            "A {{fragments.intro}} B {{company}} C {{fragment:intro}}",
            &[],
        );
        assert_eq!(e.text, "A We are ACME. B ACME Corp C We are ACME.");
        assert_eq!(
            e.uses,
            [
                used("intro", 2..21, FragmentForm::Dotted),
                used("company", 24..35, FragmentForm::Bare),
                used("intro", 38..56, FragmentForm::Colon),
            ]
        );
        assert!(e.unknown.is_empty());
    }

    #[test]
    fn declared_variable_wins_over_bare_fragment() {
        let e = expand("{{company}} {{fragments.company}}", &["company"]);
        assert_eq!(e.text, "{{company}} ACME Corp");
        assert_eq!(e.uses, [used("company", 12..33, FragmentForm::Dotted)]);
    }

    #[test]
    fn reserved_roots_are_never_bare_fragments() {
        let e = expand("{{input}} {{artifacts}} {{fragments.input}}", &[]);
        assert_eq!(e.text, "{{input}} {{artifacts}} never bare");
        assert_eq!(e.uses.len(), 1);
        assert!(e.unknown.is_empty());
    }

    #[test]
    fn unknown_dotted_and_colon_are_reported_and_kept() {
        let e = expand("x {{fragments.nope}} {{fragment:gone}} {{plain}}", &[]);
        assert_eq!(e.text, "x {{fragments.nope}} {{fragment:gone}} {{plain}}");
        assert!(e.uses.is_empty());
        assert_eq!(
            e.unknown,
            [
                used("nope", 2..20, FragmentForm::Dotted),
                used("gone", 21..38, FragmentForm::Colon),
            ]
        );
    }

    #[test]
    fn declared_fragments_variable() {
        let e = expand("{{fragments.nope}} {{fragments.intro}}", &["fragments"]);
        assert_eq!(e.text, "{{fragments.nope}} We are ACME.");
        assert!(e.unknown.is_empty());
        assert_eq!(e.uses.len(), 1);
    }

    #[test]
    fn one_level_only() {
        let e = expand("[{{nested}}]", &[]);
        assert_eq!(e.text, "[See {{fragments.intro}} and {{who}}.]");
        assert_eq!(e.uses, [used("nested", 1..11, FragmentForm::Bare)]);
    }

    #[test]
    fn malformed_forms_are_untouched() {
        for s in [
            "{{ fragments.intro }}",
            "{{fragments.intro }}",
            "{{fragment: intro}}",
            "{{fragments.intro.x}}",
            "{{fragments[0]}}",
            "{{fragments}}",
            "{{fragment:}}",
            "{{fragment:intro}",
            "{{fragments:intro}}",
            "{{fragment.intro}}",
            "{{ intro }}",
            "{{intro",
            "{{intro[0]}}",
        ] {
            let e = expand(s, &[]);
            assert_eq!(e.text, s);
            assert!(e.uses.is_empty() && e.unknown.is_empty(), "{s:?}");
        }
    }

    #[test]
    fn braces_and_multibyte() {
        let s = "é{{{fragments.uni}}}名{{uni}}";
        let e = expand(s, &[]);
        assert_eq!(e.text, "é{ünï ✓}名ünï ✓");
        assert_eq!(&s[e.uses[0].span.clone()], "{{fragments.uni}}");
        assert_eq!(&s[e.uses[1].span.clone()], "{{uni}}");
        assert_eq!(e.uses[0].span, 3..20);
    }

    #[test]
    fn no_fragments_is_identity() {
        let s = "Hello {{name}}, {{fragments.x}}";
        let e = expand_fragments(s, |_| None, |_| false);
        assert_eq!(e.text, s);
        assert_eq!(e.unknown.len(), 1);
    }

    #[test]
    fn expanded_text_then_parses_as_template() {
        use crate::syntax::template::{parse_template, Segment};
        let e = expand("{{fragment:nested}}", &["who"]);
        let t = parse_template(&e.text);
        let roots: Vec<_> = t.placeholders().map(|p| p.root.as_str()).collect();
        assert_eq!(roots, ["fragments", "who"]);
        assert!(matches!(&t.segments[0], Segment::Text(x) if x == "See "));
    }

    proptest! {
        #[test]
        fn never_panics(s in "[{}a-z_.:\\[\\]0-9 é]{0,40}") {
            let e = expand_fragments(&s, |n| (n == "a" || n == "b").then_some("<F>"), |n| n == "b");
            for u in e.uses.iter().chain(&e.unknown) {
                prop_assert!(s.is_char_boundary(u.span.start) && s.is_char_boundary(u.span.end));
                prop_assert!(s[u.span.clone()].starts_with("{{") && s[u.span.clone()].ends_with("}}"));
            }
            let len = expanded_len(&s, Some(|n: &str| (n == "a" || n == "b").then_some("<F>")), |n| n == "b");
            prop_assert_eq!(len, e.text.len());
            if e.uses.is_empty() {
                prop_assert_eq!(e.text, s);
            }
        }

        #[test]
        fn arbitrary_strings(s in any::<String>()) {
            let e = expand_fragments(&s, |_| Some("x"), |_| false);
            prop_assert!(e.text.len() <= s.len() + e.uses.len());
        }
    }
}
