//! Run-time errors: [`RunError`], and its [`ErrorKind`]s in one table.
//!
//! Each row of [`run_error_kinds!`] is a kind: its stable name (the conformance README's
//! "Runtime error kinds", letter for letter; new kinds are added, none is renamed),
//! what triggers it, and where a test triggers it: a case file (`tests/cases`,
//! `examples/cases` or the shared conformance cases) that expects the kind, or, for the
//! kinds a case cannot reach (the host or the embedder misusing the VM), the test that
//! does. `tests/error_kinds.rs` checks every row against its trigger.

use serde::{Deserialize, Serialize};

/// Defines [`ErrorKind`] from its table: `Variant = "name", "trigger";` per kind, each
/// with a doc comment saying what triggers it.
macro_rules! run_error_kinds {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $trigger:literal; )*) => {
        /// The kinds of run-time error (conformance README, "Runtime error kinds").
        /// [`ErrorKind::as_str`] gives the stable snake_case name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ErrorKind {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorKind {
            /// Every kind, in table order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant),*];

            /// The stable snake_case name.
            pub const fn as_str(self) -> &'static str {
                match self { $(ErrorKind::$variant => $name,)* }
            }

            /// Where a test triggers this kind: a case file name (`*.case.yaml`, found in
            /// `tests/cases`, `examples/cases` or the shared conformance cases), a test
            /// file and test name (`vm/tests/protocol.rs::name`) for a kind no case
            /// reaches, or `-` for [`ErrorKind::Internal`], which only a bug triggers.
            pub const fn trigger(self) -> &'static str {
                match self { $(ErrorKind::$variant => $trigger,)* }
            }

            /// The kind with this stable name, if any.
            pub fn from_name(name: &str) -> Option<ErrorKind> {
                match name { $($name => Some(ErrorKind::$variant),)* _ => None }
            }
        }
    };
}

run_error_kinds! {
    /// A host call failed (an error answer, or tool calls where none may be), after the
    /// step's retry budget.
    HostError = "host_error", "comp-parallel-branch-error.case.yaml";
    /// A `${...}` path did not resolve at run time (a field the step output lacks).
    UnresolvedBinding = "unresolved_binding", "comp-skip-binding-runtime-error.case.yaml";
    /// An ordered comparison met a non-number, or `in` / `not_in` met a non-list.
    TypeError = "type_error", "comp-pred-ordered-type-error.case.yaml";
    /// An event the current state's `on_event` does not name, or a caller event sent to
    /// an `internal` or `composition` state.
    InvalidEvent = "invalid_event", "wf-internal-rejects-caller-event.case.yaml";
    /// An event sent to a run in a terminal state.
    TerminalState = "terminal_state", "wf-terminal-state-event.case.yaml";
    /// A state's `max_visits` reached with no `on_max_visits`.
    MaxVisitsExceeded = "max_visits_exceeded", "wf-max-visits-exceeded.case.yaml";
    /// A workflow `engine.budget` limit reached (`max_total_visits`, `max_tool_calls`,
    /// `max_wall_time_sec`).
    BudgetExhausted = "budget_exhausted", "wf-budget-tool-calls.case.yaml";
    /// A tool loop ran past its cap: an agent step with only `tool_called` termination
    /// past 50 model calls, or a prompt state's loop past `tool_policy.max_rounds`.
    AgentStepLimit = "agent_step_limit", "run-err-agent-step-limit.case.yaml";
    /// A required template variable is missing, or a value fails its declared type or
    /// validation.
    InvalidVariable = "invalid_variable", "tpl-missing-required.case.yaml";
    /// The composition's output step did not run (a branch skipped it).
    NoOutput = "no_output", "comp-no-output.case.yaml";
    /// A limit the embedder set was reached ([`RunOptions`](crate::RunOptions): value
    /// sizes, host calls, built text, snapshot size); a run-wide failure.
    LimitExceeded = "limit_exceeded", "vm/tests/limits.rs::turn_input_bytes";
    /// A validator triggered on a structured answer (the call has an `output_schema`, or
    /// the answer is JSON), which is never rewritten (`later-versions.md` §4). Retried by
    /// a `retry` modifier like a host error.
    GuardrailBlocked = "guardrail_blocked", "guard-json-answer-blocked.case.yaml";
    /// Not a pack error: the host broke the resume protocol (an answer to a call that is
    /// not outstanding, a turn, event or finish while calls are outstanding, anything but
    /// a clock reading after `Need::Clock`, a second start, any input to a finished run).
    /// The run is left exactly as it was.
    Protocol = "protocol", "vm/tests/protocol.rs::answering_twice_inside_a_parallel_step";
    /// Not a pack error: the VM broke a promise of its own (a step that ended without a
    /// result, a wait with no call outstanding). A bug, which no test can trigger: report
    /// it with the pack and the host's inputs.
    Internal = "internal", "-";
    /// The embedder named a target the module does not have ([`Target::parse`](crate::Target::parse)
    /// (crate::Target::parse), [`Run::new`](crate::Run::new)), or one of the wrong shape.
    InvalidTarget = "invalid_target", "vm/tests/api.rs::an_unknown_target_is_invalid_target";
    /// The module handed to [`Program::new`](crate::Program::new) is not valid (ids out
    /// of range, steps out of order, a format version the VM does not know).
    InvalidModule = "invalid_module", "vm/tests/api.rs::an_invalid_module_is_refused_once";
}

/// A run-time error: the run has ended (except for `protocol` errors, which leave the
/// run as it was).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{}: {message}", kind.as_str())]
pub struct RunError {
    /// The kind.
    pub kind: ErrorKind,
    /// What happened.
    pub message: String,
}

impl RunError {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        RunError {
            kind,
            message: message.into(),
        }
    }
}
