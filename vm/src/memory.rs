//! What a workflow remembers across states and turns, and what calls read from it:
//! artifacts (`workflow.md` §11) and the conversation history (`workflow.md` §12).

use ir_spec::ArtifactMode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An artifact value (`workflow.md` §11).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Artifact {
    /// Set by a `replace` writer.
    Value(#[serde(with = "crate::text::value_text")] Value),
    /// The entries written by `append` writers.
    List(#[serde(with = "crate::text::values_text")] Vec<Value>),
}

impl Artifact {
    /// The value as JSON: a list of entries is an array.
    pub fn to_json(&self) -> Value {
        match self {
            Artifact::Value(v) => v.clone(),
            Artifact::List(l) => Value::Array(l.clone()),
        }
    }

    /// Applies a write of `v` by a writer in `mode`.
    pub fn write(slot: &mut Option<Artifact>, mode: ArtifactMode, v: &Value) {
        *slot = Some(match (mode, slot.take()) {
            (ArtifactMode::Replace, _) => Artifact::Value(v.clone()),
            (ArtifactMode::Append, None) => Artifact::List(vec![v.clone()]),
            (ArtifactMode::Append, Some(Artifact::Value(old))) => {
                Artifact::List(vec![old, v.clone()])
            }
            (ArtifactMode::Append, Some(Artifact::List(mut l))) => {
                l.push(v.clone());
                Artifact::List(l)
            }
        });
    }
}

/// An exchange of the conversation history (`workflow.md` §12).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Exchange {
    #[serde(with = "crate::text::value_text")]
    pub input: Value,
    #[serde(with = "crate::text::value_text")]
    pub output: Value,
}
