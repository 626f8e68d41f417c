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
//! Modules:
//! - `exec`: the futures and shared state behind `resume`;
//! - `workflow`: turns, transitions, budgets, artifacts, agents (`workflow.md`);
//! - `compose`: compositions (`compositions.md`);
//! - `toolloop`: the model/tool loop shared by prompt states and agent steps;
//! - `render`: `system_template` rendering (`workflow.md` §14);
//! - [`value`]: JSON equality and the text form;
//! - [`driver`]: a blocking driver over a [`driver::Host`].
#![forbid(unsafe_code)]

mod api;
mod compose;
pub mod driver;
mod exec;
mod render;
mod run;
mod toolloop;
pub mod value;
mod workflow;

pub use api::*;
pub use run::{Run, RunOptions};
