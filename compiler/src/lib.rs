//! The packc front end.
//!
//! The pipeline, one stage per module, data flowing one way:
//!
//! 1. [`load`]: source text (YAML 1.2 or JSON) → a JSON value plus a [`load::SpanIndex`]
//!    from JSON pointer to byte span. Malformed input is a `parse_error`, an oversized one
//!    `limit_exceeded`.
//! 2. [`schema`]: the value is checked against the official v1.4.0 schema extended with
//!    the v1.5 additions (RFC 0010 compositions, RFC 0011 `AgentDef.state`).
//! 3. [`model`]: the value is read leniently into a typed pack model whose nodes keep their
//!    JSON pointers.
//! 4. [`check`]: the semantic rules of `shared/semantics/compositions.md` §2 and
//!    `workflow.md` §16, reported as located [`diag::Diagnostic`]s.
//! 5. [`render`]: diagnostics printed like rustc's (ariadne) or as JSON lines.
//!
//! Every stage blames nodes by JSON pointer; only [`render`] turns pointers into
//! `file:line:col`.
#![forbid(unsafe_code)]

pub mod diag;
pub mod load;
pub mod syntax;
