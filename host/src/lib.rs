//! Hosts for the packc VM, and the conformance case runner behind `packc test`.
//!
//! - [`case`]: the case-file model (`shared/conformance/README.md`, "Shape of a case").
//! - [`scripted`]: [`ScriptedHost`], which answers model and tool calls from a case's
//!   `run.host` queues, reads `host.clock`, and supplies `host.variables`.
//! - [`runner`]: compiles a case's pack, runs it with the scripted host, and compares
//!   the result with `expect`, describing every difference it finds.
//! - [`live`]: the live host: model calls over the OpenAI-compatible Chat Completions
//!   API, tools bound to commands or HTTP endpoints, `output_schema` checks.
//! - [`record`]: a live run written as a case file that `packc test` replays.
//! - [`yaml`]: a small YAML writer for the case files it writes.
//! - [`governance`]: admission by environment (RFC 0013).
//! - `mock` (feature `mock`): a mock OpenAI-compatible server for tests.
#![forbid(unsafe_code)]

pub mod case;
pub mod governance;
pub mod live;
#[cfg(feature = "mock")]
pub mod mock;
pub mod record;
pub mod runner;
pub mod scripted;
pub mod yaml;

pub use case::{Case, CaseError, Expect, PackSource, RunSpec};
pub use runner::{
    check_case, execute, run_case, run_case_file, run_case_file_with, run_case_with, Actual,
    CaseResult, RunCaseOptions,
};
pub use scripted::{parse_answer, ScriptedHost};
