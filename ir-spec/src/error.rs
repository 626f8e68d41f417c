//! Why bytes are not a loadable artifact: the one error of [`Artifact::decode`](crate::Artifact::decode),
//! shared by the container reader, the module decoder and the reader's
//! [`DecodeLimits`](crate::DecodeLimits).

use thiserror::Error;

use crate::container::ContainerError;
use crate::InvalidModule;

/// Why bytes are not a loadable artifact.
///
/// Each variant has a stable name ([`ArtifactError::name`]), the one FORMAT.md §1
/// "Reading, in order" gives it; `ir-spec/tools/ppk_dump.py` reports the same names.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArtifactError {
    /// The container is unreadable: wrong magic, version, checksum or layout (named by
    /// the [`ContainerError`]).
    #[error(transparent)]
    Container(#[from] ContainerError),
    /// `malformed_module`: a section does not decode as its payload (FORMAT.md §2): the
    /// `MODL` section is not exactly one postcard-encoded module or nests predicates or
    /// bindings too deeply, or `spec`, `GARD` or `agov` is not what it holds. The text
    /// names the section.
    #[error("malformed .ppk file: {0}")]
    Decode(String),
    /// `invalid_module`: the module decoded but fails verification (FORMAT.md §3).
    #[error("malformed .ppk file: {0}")]
    Invalid(#[from] InvalidModule),
    /// `limit_exceeded`: the module holds more of something than the reader's
    /// [`DecodeLimits`](crate::DecodeLimits) allow (a limit of this reader, not of the format).
    #[error("the artifact has more than {max} {what}, past the reader's limit `{limit}`")]
    Limit {
        /// The [`DecodeLimits`](crate::DecodeLimits) field, e.g. `max_total_steps`.
        limit: &'static str,
        /// What was counted, e.g. `steps`.
        what: &'static str,
        /// The limit's value.
        max: usize,
    },
}

impl ArtifactError {
    /// The error's stable name, as FORMAT.md §1 "Reading, in order" lists it.
    pub fn name(&self) -> &'static str {
        match self {
            ArtifactError::Container(e) => e.name(),
            ArtifactError::Decode(_) => "malformed_module",
            ArtifactError::Invalid(_) => "invalid_module",
            ArtifactError::Limit { .. } => "limit_exceeded",
        }
    }
}
