//! The small languages inside pack strings: `{{var}}` templates and `${...}` references.
//!
//! Each lexer runs once, at compile time, and never fails on its input in a way that
//! panics: every string a pack can hold gets an answer.
//!
//! - [`fragments`]: `{{fragments.name}}`, `{{name}}` and `{{fragment:name}}` are replaced by
//!   the fragment text, one level deep (`workflow.md` §14, compile time 1).
//! - [`template`]: the expanded `system_template` is split into literal text and
//!   `{{path}}` placeholders (`workflow.md` §14, syntax). Anything that is not a
//!   placeholder is literal text, so parsing never fails.
//! - [`reference`](mod@reference): the `${input.path}` / `${step.output.path}` references inside
//!   composition bindings and predicate paths (`compositions.md` §3.1, §3.5, §7.1). Here
//!   a malformed `${` is an error, which the checker reports as `unresolved_binding`.
//! - [`text_form`](mod@text_form): how a JSON value is written into text by either syntax
//!   (`compositions.md` §3.6).
//!
//! Spans are byte ranges into the scanned string and always fall on `char` boundaries.

pub mod fragments;
pub mod reference;
mod scan;
pub mod template;

pub use fragments::{
    expand_fragments, expanded_len, expanded_text, Expanded, FragmentForm, FragmentUse,
};
pub use ir_spec::text_form::{self, text_form, write_text_form};
pub use reference::{
    binding_roots, parse_binding, parse_whole_reference, Binding, BindingPart, RefError, RefRoot,
    Reference,
};
pub use template::{
    foreign_syntax, parse_template, placeholder_roots, spaced_placeholders, Foreign, PathSeg,
    Placeholder, Segment, Template,
};
