//! packc's batch engine: one run of a pack per row of a dataset, thousands in flight on a
//! few threads, restartable after a crash without losing or repeating a row.
//!
//! The model: a [`Row`] is one input; the [`Engine`] runs each row's [`Run`](packc_vm::Run)
//! as a tokio task, and the calls the VM asks for go to the [`AsyncHost`]: model calls
//! over one pooled HTTP client through a shared [`Gate`](http::Gate) (the global cap on
//! calls in flight, `rpm` and `tpm`, and a 429's back-off for everyone), tool calls to the
//! blocking live host's bindings on tokio's blocking pool. The requests, the reading of
//! answers and the redaction are the blocking live host's ([`packc_host::live`]). Each
//! row ends in a [`RowResult`]: its id, its output or [`RowError`], calls, tokens and
//! wall time. A row that cannot be read or does not match the target's `input_schema`
//! fails alone; the batch goes on.
//!
//! Results go to a [`Sink`]: [`Collect`] keeps them in memory ([`Engine::run_values`]
//! runs a block of rows and returns their results, which is what the Python binding
//! calls), and [`Journal`] writes the output file of `packc batch` and keeps a SQLite
//! journal beside it: each row's latest snapshot while it runs and its line when it is
//! done, so the same command after a kill resumes where the batch was.
//!
//! ```no_run
//! use packc_batch::{BatchOptions, Engine};
//! use packc_host::live::{LiveConfig, ModelEndpoint};
//!
//! # fn main() -> Result<(), packc_batch::BatchError> {
//! let artifact = std::fs::read("pack.ppk").unwrap();
//! let live = LiveConfig {
//!     model: Some(ModelEndpoint {
//!         base_url: "http://127.0.0.1:8080/v1".into(),
//!         model: "local".into(),
//!         api_key: None,
//!     }),
//!     ..LiveConfig::default()
//! };
//! let engine = Engine::from_artifact(&artifact, "workflow", live, BatchOptions::default())?;
//! let results = engine.run_values(vec![serde_json::json!({"text": "a document"})])?;
//! println!("{}", results[0].line());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod engine;
mod host;
pub mod http;
mod journal;
#[cfg(feature = "mock")]
pub mod mock;
mod result;
pub mod rows;

pub use engine::{
    BatchOptions, Collect, Engine, Progress, Resume, Saved, Sink, Stop, Summary, MAX_CONCURRENCY,
    MAX_THREADS,
};
pub use host::AsyncHost;
pub use journal::{Identity, Journal};
pub use result::{RowError, RowResult};
pub use rows::{Input, InputFormat, Row};

/// Why a batch could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The batch is refused before any call: what to do is in the message.
    #[error("{0}")]
    Refused(String),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// The journal could not be read or written.
    #[error("journal: {0}")]
    Journal(String),
}
