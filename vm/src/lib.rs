//! The packc virtual machine: runs a lowered pack ([`ir_spec::Module`]) sans-IO, as an
//! explicit state machine.
//!
//! Like quinn-proto or rustls, the VM never performs I/O, never reads a clock and never
//! draws randomness.
//!
//! The model first. A module is checked once and turned into a [`Program`]: the module
//! plus tables derived from it (compiled predicates with pre-typed constants and
//! short-circuit jumps, compiled variable and validator patterns, buffer sizes). A
//! [`Run`] executes a program against a [`Target`]; it is plain data that the host
//! drives:
//!
//! ```text
//! run.resume(Input::Start)          -> Need::Caller    the run waits for a turn
//! run.resume(Input::Turn(json))     -> Need::Calls     calls were issued: read run.pending()
//! run.resume(Input::Answer(id, a))  -> Need::Calls     ... and so on ...
//! run.resume(Input::Finish)         -> Need::Done      read run.outcome()
//! ```
//!
//! [`Need`] carries no heap data. The outstanding calls are [`CallView`]s borrowed from
//! the run and the module: `prompt_task()` and `tool()` are `&str`s of the module, the
//! input is a [`BoundInput`] that borrows a whole referenced value and builds templates
//! and objects only on request, and the system prompt renders into the host's buffer on
//! request. Whatever can fail in rendering (`invalid_variable`) is checked before the
//! call is issued, without building the text.
//!
//! The host imports are those of `shared/semantics/workflow.md` §1: model and tool calls
//! (answered by [`Input::Answer`]), the clock ([`Need::Clock`], only when a workflow sets
//! `max_wall_time_sec`) and host variables ([`RunOptions`]). Inside a parallel step each
//! branch has one call outstanding; they may be answered in any order, one at a time.
//!
//! Answers move into the output slots; a parallel step's merged output is walked over
//! its branches' slots rather than built. The trace is kept as compact [`TraceEvent`]s,
//! formatted only by [`Run::trace_lines`]; the call log is kept only when
//! [`RunOptions::record_calls`] is on. So from taking an answer to yielding the next call
//! the VM allocates nothing beyond the answer itself (pinned by `tests/alloc.rs`).
//!
//! # Snapshots
//!
//! Between two resumes a run can be saved to bytes ([`Run::snapshot`]) and continued
//! later, on another machine, from the program plus those bytes ([`Run::restore_with`],
//! given the embedder's [`RunOptions`]; [`Run::restore`] uses the defaults). A
//! snapshot is the run's state (O(state), not O(history)): restoring decodes it and
//! replays nothing. It carries no options: the limits, `max_host_calls` and
//! `record_calls` of a restored run are the restorer's, never the snapshot writer's. The restored run has the same trace, call log and outstanding calls,
//! under the same call ids, so the host answers them as if nothing happened;
//! [`Run::pending`] tells a host that kept no state of its own what the run waits for.
//! Damaged bytes, a snapshot of another module or of another format version are a
//! [`SnapshotError`], never a panic. The format is in [`snapshot`].
//!
//! # Limits
//!
//! A run guards itself against a misbehaving host with the embedder's limits in
//! [`RunOptions`]: the size and nesting of every value handed in (turns, answers, events,
//! host variables), the number of host calls, the tool calls one model answer starts, and
//! the size of a snapshot ([`Run::try_snapshot`], [`Run::restore_with`]). Past one the run fails with
//! `limit_exceeded` naming it; see [`limits`] for how values are measured. Protocol
//! misuse (an answer to a call that is not outstanding, a turn while calls are out, any
//! input to a finished run…) is a `protocol` error that leaves the run exactly as it was.
//!
//! # Threads
//!
//! A [`CallView`] borrows the run, so a host that runs calls concurrently copies out
//! what a worker needs (`prompt_task`, `input().to_value()`, `system()`…) as plain
//! `Send` data, and feeds the answers back, one [`Run::resume`] at a time, in whatever
//! order they finish. The branches' logs stay in declaration order regardless.
//! `examples/threaded_host.rs` does this with one thread per call on the RFC 0010
//! Example 3 pack (`cargo run -p packc-vm --example threaded_host`).
//!
//! A blocking [`driver`] runs a script of turns against a [`driver::Host`], for simple
//! embedders and tests.
//!
//! Modules, each importing only those below it (`tests/imports.rs` fails on a circle):
//! - `run`: [`Run`], its configuration and state, the host protocol; `inspect`: what a
//!   host reads from a run; [`snapshot`]: saving and restoring one;
//! - `workflow`: the workflow's part: transitions, budgets, artifacts, caller events
//!   (`workflow.md`); `walk`: the composition walk (`compositions.md` §4–§10);
//! - `lane`: the machine of the executions that issue host calls: leaf steps with
//!   retry, the model/tool loop of agent steps and prompt states, parallel branches
//!   (`compositions.md` §6, §8), and validators around model calls (`later-versions.md`
//!   §4);
//! - `view`: [`CallView`] and [`BoundInput`], a host's reading of a lane's call (and the
//!   call log's record of it);
//! - `ctx`: what the lanes read of the run; `job`: a lane's data (its job, phase and
//!   transcript); `render`: `system_template` checking and rendering (`workflow.md`
//!   §14); `memory`: artifacts and the history;
//! - `pred`: compiled predicates (`compositions.md` §7); [`value`]: borrowed values,
//!   references and bindings; `guard`: validators' matching;
//! - `program`: [`Program`], built once per module; `config`, `options`: [`RunOptions`];
//!   [`limits`]: the embedder's limits on values handed in; `trace`: [`TraceEvent`] and
//!   the log; `error`: [`ErrorKind`] as one table, and [`RunError`];
//! - [`driver`]: the drive loop over a [`driver::Host`].
#![forbid(unsafe_code)]

mod api;
mod config;
mod ctx;
pub mod driver;
mod error;
mod guard;
mod hash;
mod inspect;
mod job;
mod json;
mod lane;
pub mod limits;
mod memory;
mod options;
mod pred;
mod program;
mod render;
mod run;
mod small;
pub mod snapshot;
mod state;
mod suggest;
mod text;
mod trace;
pub mod value;
mod view;
mod walk;
mod workflow;

pub use api::{
    Answer, CallId, CallRecord, EvalRequest, Input, Need, Outcome, OwnedOutcome, Target,
    ToolRequest,
};
pub use error::{ErrorKind, RunError};
pub use guard::{GuardAction, GuardEffect};
pub use options::RunOptions;
pub use program::{LoadError, Program};
pub use run::Run;
pub use snapshot::SnapshotError;
pub use trace::{At, TraceEvent};
pub use view::{BoundInput, CallView, GuardCall, OfferedTool};

/// Internals the benchmarks and profiling examples measure on their own (`benches/vm.rs`,
/// `examples/pred_profile.rs`): not part of the embedder's API, and free to change
/// with any release.
#[doc(hidden)]
pub mod internals {
    pub use crate::guard::judge_prompt;
    pub use crate::pred::Compiled;
}
