//! What one row gives: [`RowResult`], written as one line of the output.

use serde_json::{json, Map, Value};

/// Why a row failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowError {
    /// The kind: a run-time error kind of the VM (`host_error`, `limit_exceeded`, ...),
    /// [`RowError::INVALID_ROW`] / [`RowError::INVALID_INPUT`] for a row that never ran, or
    /// [`RowError::CANCELLED`] for a row a cancel stopped.
    pub kind: String,
    /// What happened.
    pub message: String,
    /// Where: the input line (`line 17`), the failing path of the input (`/text`), or the
    /// step or state the run was at (`step extract_paper`); `None` when nothing narrower
    /// than the row applies.
    pub at: Option<String>,
}

impl RowError {
    /// A row that could not be read: not JSON, not UTF-8, a CSV record of the wrong length.
    pub const INVALID_ROW: &'static str = "invalid_row";
    /// A row whose input does not match the target's `input_schema`.
    pub const INVALID_INPUT: &'static str = "invalid_input";
    /// A row of a block that was cancelled ([`Engine::cancel`](crate::Engine::cancel))
    /// before it finished: [`Engine::run_rows`](crate::Engine::run_rows) still gives it a
    /// result, so the results line up with the rows.
    pub const CANCELLED: &'static str = "cancelled";
    /// A host call failed: the model server, a tool binding or a host validator
    /// answered with an error (the VM's `host_error`).
    pub const HOST_ERROR: &'static str = "host_error";

    /// Whether `kind` is a failure of the row itself ([`RowError::INVALID_ROW`],
    /// [`RowError::INVALID_INPUT`]): running it again fails again.
    pub fn is_own_kind(kind: &str) -> bool {
        kind == RowError::INVALID_ROW || kind == RowError::INVALID_INPUT
    }

    /// Whether this row failed for its own sake (see [`RowError::is_own_kind`]).
    pub fn is_the_rows_own(&self) -> bool {
        RowError::is_own_kind(&self.kind)
    }

    /// A new error.
    pub fn new(kind: &str, message: impl Into<String>, at: Option<String>) -> RowError {
        RowError {
            kind: kind.to_owned(),
            message: message.into(),
            at,
        }
    }
}

/// One row's result.
#[derive(Clone, Debug, PartialEq)]
pub struct RowResult {
    /// The row's position in the input, from 0 (malformed rows count).
    pub index: u64,
    /// The row's id: its `id` member (or CSV column), else its line number (JSON Lines)
    /// or record number (CSV, from 1).
    pub id: Value,
    /// The run's output, or why the row failed.
    pub outcome: Result<Value, RowError>,
    /// Host calls answered (model, tool, guard and extension calls), over restarts: a
    /// call that was in flight when the batch stopped, and asked again, counts once.
    pub calls: u64,
    /// Tokens the model API reported for those answers.
    pub tokens: u64,
    /// Wall time of the row in milliseconds, summed over restarts.
    pub wall_ms: u64,
}

impl RowResult {
    /// The output line: `{"id", "output" | "error": {"kind", "message", "where"}, "calls",
    /// "tokens", "wall_ms"}`.
    pub fn to_json(&self) -> Value {
        let mut line = Map::new();
        line.insert("id".into(), self.id.clone());
        match &self.outcome {
            Ok(output) => {
                line.insert("output".into(), output.clone());
            }
            Err(e) => {
                let mut error = Map::new();
                error.insert("kind".into(), json!(e.kind));
                error.insert("message".into(), json!(e.message));
                if let Some(at) = &e.at {
                    error.insert("where".into(), json!(at));
                }
                line.insert("error".into(), Value::Object(error));
            }
        }
        line.insert("calls".into(), json!(self.calls));
        line.insert("tokens".into(), json!(self.tokens));
        line.insert("wall_ms".into(), json!(self.wall_ms));
        Value::Object(line)
    }

    /// [`RowResult::to_json`] as one line of text, without the newline.
    pub fn line(&self) -> String {
        self.to_json().to_string()
    }

    /// Whether the row failed.
    pub fn failed(&self) -> bool {
        self.outcome.is_err()
    }
}

/// Whether an output line ([`RowResult::line`]) is a failed row's: it has an `error`.
pub(crate) fn is_failure_line(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|v| v.get("error").is_some())
}
