//! Hosts for the packc VM, and the conformance case runner behind `packc test`.
//!
//! The case runner (always built):
//! - [`case`]: the case-file model (`shared/conformance/README.md`, "Shape of a case"),
//!   read strictly: an unknown member or a member of the wrong type is a located error.
//! - [`scripted`]: [`ScriptedHost`], which answers model and tool calls from a case's
//!   `run.host` queues, reads `host.clock`, and supplies `host.variables`.
//! - [`queues`]: the names a script's answer queues are keyed by, checked against the
//!   pack (a queue no call consumes).
//! - [`runner`]: compiles a case's pack, runs it with the scripted host, and compares
//!   the result with `expect`, describing every difference it finds.
//! - [`calls`]: the calls a host answered, each with its answer (`packc run --format
//!   json`'s `calls`, and what `packc test` compares an `answer` in `expect.calls` with).
//! - [`yaml`]: a small YAML writer for the case files packc writes.
//! - [`governance`]: admission by environment (RFC 0013).
//!
//! The live host (feature `live`, on by default; without it no HTTP client is built):
//! - `live`: model calls over the OpenAI-compatible Chat Completions API, tools bound to
//!   commands or HTTP endpoints, `output_schema` checks.
//! - `record`: a live run written as a case file that `packc test` replays.
//! - `mock` (feature `mock`): a mock OpenAI-compatible server for tests.
#![forbid(unsafe_code)]

pub mod calls;
pub mod case;
mod case_format;
pub mod governance;
pub mod json_arg;
#[cfg(feature = "live")]
pub mod live;
#[cfg(feature = "mock")]
pub mod mock;
pub mod queues;
#[cfg(feature = "live")]
pub mod record;
pub mod runner;
pub mod scripted;
pub mod yaml;

pub use case::{Case, CaseError, Expect, PackSource, Problem, RunSpec};
pub use governance::{admission, member_admission, Refused};
pub use queues::{unknown_queues, UnknownQueue};
pub use runner::{
    check_case, execute, run_case, run_case_file, run_case_file_with, run_case_with, Actual,
    CaseResult, RunCaseOptions,
};
pub use scripted::{parse_answer, ScriptedHost};
pub use yaml::to_yaml;

#[cfg(feature = "live")]
pub use live::{
    Binding, BindingsError, Ended, GuardFailure, GuardHandler, Job, LiveConfig, LiveHost, LiveRun,
    ModelEndpoint, Observer, Redactor, ReplyError, Stats, TimeoutError, ToolBindings, Transport,
    TransportConfig,
};
#[cfg(feature = "live")]
pub use record::{to_case, CaseSpec, RecordError, Recording};
