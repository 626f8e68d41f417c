//! [`RunOptions`]: what the embedder sets once for a run (host variables, the call log,
//! the limits), and the limits' defaults.

use serde_json::{Map, Value};

/// The default of [`RunOptions::max_value_bytes`]: 16 MiB.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 16 << 20;
/// The default of [`RunOptions::max_value_depth`]: 64 levels.
pub const DEFAULT_MAX_VALUE_DEPTH: usize = 64;
/// The default of [`RunOptions::max_built_bytes`]: 16 MiB.
pub const DEFAULT_MAX_BUILT_BYTES: usize = 16 << 20;
/// The default of [`RunOptions::max_snapshot_bytes`]: 64 MiB.
pub const DEFAULT_MAX_SNAPSHOT_BYTES: usize = 64 << 20;
/// The default of [`RunOptions::max_tool_calls_per_answer`]: 64.
pub const DEFAULT_MAX_TOOL_CALLS_PER_ANSWER: usize = 64;

/// How a run starts: host variables, the call log, and the embedder's limits.
///
/// The limits guard a run against a misbehaving or hostile host or caller. Past one, the
/// run fails with `limit_exceeded` and a message naming the field (a run-wide failure,
/// not a step's `host_error`). A restored run keeps the options it started with (its
/// snapshot carries them).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Host variables: template variables the host supplies (`workflow.md` §14). Each is
    /// a value held to `max_value_bytes` and `max_value_depth`
    /// ([`Run::new`](crate::Run::new) refuses one past them with `limit_exceeded`).
    pub host_variables: Map<String, Value>,
    /// The embedder's cap on host calls (model and tool calls) per run: the call past it
    /// fails the run with `limit_exceeded`, as a run-wide failure. `None` (the default):
    /// no cap.
    pub max_host_calls: Option<u64>,
    /// The largest value the host may hand in: a turn's input, an answer (its output and
    /// event, its tool requests, or its error message), an event name, a host
    /// variable. Counted as one per JSON value plus the bytes of every string and object
    /// key, by a walk that stops once past the limit (16 MiB by default,
    /// [`DEFAULT_MAX_VALUE_BYTES`](DEFAULT_MAX_VALUE_BYTES)). The walk
    /// costs about 40 instructions per JSON value; a host that trusts its values sets
    /// this and `max_value_depth` to `usize::MAX`, and nothing is walked.
    pub max_value_bytes: usize,
    /// The deepest nesting of arrays and objects in a value the host hands in (64 by
    /// default). Values are walked, cloned and written to snapshots recursively, and a
    /// snapshot's JSON texts are read back with serde_json's limit of 128 levels: keep
    /// this well below that.
    pub max_value_depth: usize,
    /// The largest snapshot [`Run::try_snapshot`](crate::Run::try_snapshot) writes (64
    /// MiB by default); [`Run::restore_with`](crate::Run::restore_with) refuses larger
    /// bytes by the restorer's own value of it.
    pub max_snapshot_bytes: usize,
    /// The most text a call's input or system prompt may build (16 MiB by default,
    /// [`DEFAULT_MAX_BUILT_BYTES`](DEFAULT_MAX_BUILT_BYTES)): the bytes of
    /// the rendered `system_template`, and of the text form (`compositions.md` §3.6) of a
    /// step's `input` or `args` when the binding builds a value (an interpolation, an
    /// array or object) rather than naming one. A template repeating `{{input}}` or a
    /// binding repeating `${input}` would otherwise build copies of a large value without
    /// bound. Both are measured when the step starts, without building them; past the
    /// limit the run fails with `limit_exceeded` before the call is issued, so a host
    /// never builds more. `usize::MAX` measures nothing.
    pub max_built_bytes: usize,
    /// The most tool calls one model answer may start in an agent step or a prompt
    /// state's tool loop (64 by default,
    /// [`DEFAULT_MAX_TOOL_CALLS_PER_ANSWER`](DEFAULT_MAX_TOOL_CALLS_PER_ANSWER)).
    /// The requests of an answer past this many are not issued: each gets an error
    /// result the model reads on its next turn, so one answer asking for thousands of
    /// calls starts at most this many. The pack's own `max_tool_calls_per_turn` and
    /// `max_tool_calls` budgets apply as well.
    pub max_tool_calls_per_answer: usize,
    /// Keep the call log ([`Run::calls`](crate::Run::calls)): every call's prompt or
    /// tool, its materialized input and rendered system prompt. Off, a run records
    /// nothing per call (what benchmarks and production hosts want).
    pub record_calls: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            host_variables: Map::new(),
            max_host_calls: None,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            max_value_depth: DEFAULT_MAX_VALUE_DEPTH,
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            max_built_bytes: DEFAULT_MAX_BUILT_BYTES,
            max_tool_calls_per_answer: DEFAULT_MAX_TOOL_CALLS_PER_ANSWER,
            record_calls: false,
        }
    }
}
