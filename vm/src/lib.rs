//! The packc virtual machine: runs a lowered pack ([`ir_spec::Module`]) sans-IO.
//!
//! Like quinn-proto or rustls, the VM never performs I/O, never reads a clock and never
//! draws randomness. A [`Run`] is a value; the host drives it:
//!
//! ```text
//! run.resume(Input::Start)        -> Need::Caller            the run waits for a turn
//! run.resume(Input::Turn(json))   -> Need::Calls([model..])   a model call was issued
//! run.resume(Input::Answer(id,a)) -> Need::Calls([tool..])    ... and so on ...
//! run.resume(Input::Finish)       -> Need::Done(Outcome)      output + final state
//! ```
//!
//! The host imports are those of `shared/semantics/workflow.md` §1: model calls and tool
//! calls ([`HostCall`], answered by [`Input::Answer`]), the clock ([`Need::Clock`], only
//! when a workflow sets `max_wall_time_sec`) and host variables ([`RunOptions`]). Inside a
//! parallel step several calls are outstanding at once (each branch issues its first
//! call in declaration order); they may be answered in any order, one at a time.
//!
//! The trace ([`Run::trace`]), the call log ([`Run::calls`]) and eval requests
//! ([`Run::evals`]) are kept in walk order, parallel branches one after another.
//!
//! # Snapshots
//!
//! Between two resumes a run can be saved to bytes ([`Run::snapshot`]) and continued
//! later, on another machine, from the module plus those bytes ([`Run::restore`]). The
//! restored run has the same trace, call log and outstanding calls, under the same call
//! ids, so the host answers them as if nothing happened; [`Run::pending`] and
//! [`Run::outstanding`] tell a host that kept no state of its own what the run waits
//! for. Because the VM is deterministic, a snapshot is a replay log: the module's
//! fingerprint, the target and options, and every input accepted so far; restoring
//! replays them and checks that each replayed resume returns what it returned the first
//! time. Time and size are O(inputs so far). Damaged bytes, a snapshot of another
//! module or of another format version are a [`SnapshotError`], never a panic. The
//! format is in [`snapshot`].
//!
//! # Threads
//!
//! A run is `!Send`: it stays on one thread, and a host that runs calls concurrently
//! sends the [`HostCall`]s (plain `Send` data) to its workers and feeds the answers back,
//! one [`Run::resume`] at a time, in whatever order they finish. The branches' logs
//! stay in declaration order regardless. `examples/threaded_host.rs` does this with one
//! thread per call on the RFC 0010 Example 3 pack
//! (`cargo run -p packc-vm --example threaded_host`).
//!
//! Modules:
//! - `exec`: the futures and shared state behind `resume`;
//! - `workflow`: turns, transitions, budgets, artifacts, agents (`workflow.md`);
//! - `compose`: compositions (`compositions.md`);
//! - `toolloop`: the model/tool loop shared by prompt states and agent steps;
//! - `render`: `system_template` rendering (`workflow.md` §14);
//! - [`value`]: JSON equality and the text form;
//! - [`snapshot`]: the snapshot format and the replay behind [`Run::restore`];
//! - [`driver`]: a blocking driver over a [`driver::Host`].
#![forbid(unsafe_code)]

mod api;
mod compose;
pub mod driver;
mod exec;
mod render;
mod run;
pub mod snapshot;
mod toolloop;
pub mod value;
mod workflow;

pub use api::*;
pub use run::{Run, RunOptions};
pub use snapshot::SnapshotError;
