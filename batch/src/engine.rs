//! The engine: rows in, one run each, many in flight on a tokio runtime of its own.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use packc_host::live::{Job, LiveConfig};
use packc_vm::{Answer, CallId, Input, Need, Program, Run, RunError, RunOptions, Target};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::host::AsyncHost;
use crate::http::Limits;
use crate::result::{RowError, RowResult};
use crate::rows::Row;
use crate::BatchError;

/// How a batch runs.
#[derive(Clone, Debug)]
pub struct BatchOptions {
    /// The most model calls in flight at once, over all rows (`--concurrency`); at most
    /// [`MAX_CONCURRENCY`].
    pub concurrency: usize,
    /// The most rows in flight at once; 0: four times `concurrency`.
    pub rows_in_flight: usize,
    /// The most tool, guard and extension calls in flight at once; at most
    /// [`MAX_CONCURRENCY`].
    pub tool_concurrency: usize,
    /// The most model requests a minute, over all rows (`--rpm`).
    pub rpm: Option<u32>,
    /// The most tokens a minute, over all rows, as the API reports them (`--tpm`).
    pub tpm: Option<u64>,
    /// Stop starting rows once this many have failed (`--max-failures`); the rows in
    /// flight then finish.
    pub max_failures: Option<u64>,
    /// Stop starting rows once this many rows in a row have failed with
    /// [`RowError::HOST_ERROR`] (`--max-failures-in-a-row`): the model server down, a
    /// key refused, a tool binding broken. A row that finishes, or fails for another
    /// reason, starts the count again; a row that fails for its own sake
    /// ([`RowError::INVALID_ROW`], [`RowError::INVALID_INPUT`]) neither counts nor
    /// starts it again. The rows in flight then finish.
    pub max_failures_in_a_row: Option<u64>,
    /// The runtime's worker threads; 0: one per core, at most 4. At most
    /// [`MAX_THREADS`]: the engine refuses more rather than exhaust the system's threads.
    pub threads: usize,
    /// The run options of every row (host variables, `max_host_calls`, limits).
    pub run: RunOptions,
    /// The target's `input_schema`: rows that do not match it fail with
    /// [`RowError::INVALID_INPUT`] before any call.
    pub input_schema: Option<Value>,
}

/// The most worker threads an [`Engine`] starts ([`BatchOptions::threads`]). Rows wait
/// on the network, not on the processor: a few threads carry thousands of calls in
/// flight.
pub const MAX_THREADS: usize = 256;

/// The most calls in flight an [`Engine`] takes as [`BatchOptions::concurrency`] or
/// [`BatchOptions::tool_concurrency`]; it refuses more. Far more than a model API or a
/// machine serves at once, and far less than the runtime's semaphores can count.
pub const MAX_CONCURRENCY: usize = 100_000;

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            concurrency: 64,
            rows_in_flight: 0,
            tool_concurrency: 16,
            rpm: None,
            tpm: None,
            max_failures: None,
            max_failures_in_a_row: None,
            threads: 0,
            run: RunOptions::default(),
            input_schema: None,
        }
    }
}

/// A row's state saved between two answers: what a restart resumes it from.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    /// The run's snapshot ([`Run::snapshot`]), taken while it waits for calls.
    pub snapshot: Vec<u8>,
    /// Calls answered so far.
    pub calls: u64,
    /// Tokens so far.
    pub tokens: u64,
    /// Wall time so far, in milliseconds.
    pub wall_ms: u64,
    /// What the answered calls were, in the order they were answered: the prompt key of
    /// a model call, the tool key of a tool call, `guard:<type>` or `extension:<kind>`.
    pub answered: Vec<String>,
}

/// What an earlier, interrupted batch left of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Resume {
    /// Nothing: run it.
    Fresh,
    /// Finished already (its line is written, or the sink holds it): skip it.
    Skip,
    /// Interrupted mid-run: continue from its saved state.
    Restore(Saved),
}

/// Where results go. The engine calls it from one thread, in the order things happen.
pub trait Sink {
    /// What an earlier batch left of row `index`; asked once per row before it starts.
    fn resume(&mut self, _index: u64) -> Resume {
        Resume::Fresh
    }
    /// Row `index` reached a new state (after an answer).
    fn saved(&mut self, _index: u64, _saved: Saved) -> Result<(), BatchError> {
        Ok(())
    }
    /// A row is done, in the order rows finish.
    fn done(&mut self, result: RowResult) -> Result<(), BatchError>;
    /// Called every few milliseconds: a chance to write what was batched.
    fn flush(&mut self) -> Result<(), BatchError> {
        Ok(())
    }
    /// Called once at the end, however the batch ended: write everything.
    fn finish(&mut self) -> Result<(), BatchError> {
        self.flush()
    }
}

/// A sink that keeps the results in memory.
#[derive(Debug, Default)]
pub struct Collect(pub Vec<RowResult>);

impl Sink for Collect {
    fn done(&mut self, result: RowResult) -> Result<(), BatchError> {
        self.0.push(result);
        Ok(())
    }
}

/// Counters of a batch, readable from any thread while it runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Rows finished, failed ones included (skipped ones of an earlier batch too).
    pub done: AtomicU64,
    /// Rows failed.
    pub failed: AtomicU64,
    /// Rows in flight.
    pub in_flight: AtomicU64,
    /// Rows skipped because an earlier batch finished them.
    pub skipped: AtomicU64,
    /// Host calls answered.
    pub calls: AtomicU64,
    /// Tokens reported.
    pub tokens: AtomicU64,
}

/// How a batch ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Rows read.
    pub rows: u64,
    /// Rows finished by this batch, failed ones included.
    pub ran: u64,
    /// Rows finished by an earlier batch and skipped.
    pub skipped: u64,
    /// Rows of this batch that failed, by error kind (sorted).
    pub failures: std::collections::BTreeMap<String, u64>,
    /// Host calls and tokens of this batch's rows.
    pub calls: u64,
    /// Tokens.
    pub tokens: u64,
    /// The rows' wall times in milliseconds, sorted (for percentiles).
    pub latencies_ms: Vec<u64>,
    /// Why the batch stopped before the end, if it did.
    pub stopped: Option<Stop>,
    /// 429 answers this batch's model requests took (each paused every request).
    pub rate_limited: u64,
    /// Model requests this batch sent again after a 5xx, a timeout or a failed
    /// connection.
    pub retried: u64,
    /// The batch's own wall time.
    pub elapsed: Duration,
}

impl Summary {
    /// The `p`-th percentile (0..=100) of the row latencies, in milliseconds.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let n = self.latencies_ms.len();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        Some(self.latencies_ms[rank.clamp(1, n) - 1])
    }

    /// Failed rows of this batch.
    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }

    /// Whether some row failed for a reason a rerun may not have (a kind other than
    /// [`RowError::is_own_kind`]): what `--retry-failed` is for.
    pub fn has_retryable_failures(&self) -> bool {
        self.failures
            .keys()
            .any(|kind| !RowError::is_own_kind(kind))
    }
}

/// Why a batch stopped before its last row.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// [`BatchOptions::max_failures`] rows failed.
    MaxFailures(u64),
    /// [`BatchOptions::max_failures_in_a_row`] rows in a row failed with a host error.
    FailedInARow {
        /// How many.
        rows: u64,
        /// The last one's error message.
        last: String,
    },
    /// [`Engine::cancel`] was called.
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::MaxFailures(n) => write!(f, "stopped after {n} failed row(s) (--max-failures)"),
            Stop::FailedInARow { rows, last } => write!(
                f,
                "stopped after {rows} rows in a row failed with {} \
                 (--max-failures-in-a-row), the last with: {last}",
                RowError::HOST_ERROR
            ),
            Stop::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// The batch engine: a program, a target, an async live host and its limits.
/// Cheap to share across threads; [`Engine::run`] may be called many times.
pub struct Engine {
    shared: Arc<Shared>,
    runtime: tokio::runtime::Runtime,
}

struct Shared {
    program: Arc<Program>,
    target: Target,
    host: Arc<AsyncHost>,
    options: BatchOptions,
    schema: Option<jsonschema::Validator>,
    progress: Progress,
    cancel: AtomicBool,
}

enum Event {
    Saved(u64, Saved),
    Done(RowResult),
}

impl Engine {
    /// An engine running `target` of `program` with the live host of `live` (its model
    /// endpoints, tool bindings, timeouts and retries; its `concurrency` is not used:
    /// `options.concurrency` is). Refused when the pack needs a host validator or an
    /// extension kind `live` does not serve, or when `options.input_schema` is not a
    /// usable schema.
    pub fn new(
        program: Arc<Program>,
        target: Target,
        live: LiveConfig,
        options: BatchOptions,
    ) -> Result<Engine, BatchError> {
        let module = program.module();
        let guards = live.unbound_guards(module);
        if !guards.is_empty() {
            return Err(BatchError::Refused(
                packc_host::live::unbound_guards_message(&guards),
            ));
        }
        let extensions = live.unbound_extensions(module);
        if !extensions.is_empty() {
            return Err(BatchError::Refused(
                packc_host::live::unbound_extensions_message(&extensions),
            ));
        }
        let schema = match &options.input_schema {
            Some(s) => Some(jsonschema::validator_for(s).map_err(|e| {
                BatchError::Refused(format!("the input_schema cannot be used: {e}"))
            })?),
            None => None,
        };
        for (name, value) in [("rpm", options.rpm.map(u64::from)), ("tpm", options.tpm)] {
            if value == Some(0) {
                return Err(BatchError::Refused(format!(
                    "{name} must be at least 1; leave it out for no limit"
                )));
            }
        }
        for (name, value) in [
            ("concurrency", options.concurrency),
            ("tool_concurrency", options.tool_concurrency),
        ] {
            if value > MAX_CONCURRENCY {
                return Err(BatchError::Refused(format!(
                    "{name} is {value}, above the most calls in flight the engine takes \
                     ({MAX_CONCURRENCY})"
                )));
            }
        }
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get().min(4)),
            n if n > MAX_THREADS => {
                return Err(BatchError::Refused(format!(
                    "threads is {n}, above the most the engine starts ({MAX_THREADS}); the \
                     calls in flight are set by concurrency, not by threads"
                )))
            }
            n => n,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("packc-batch")
            .enable_all()
            .build()
            .map_err(|e| BatchError::Refused(format!("cannot start the runtime: {e}")))?;
        let limits = Limits {
            concurrency: options.concurrency.max(1),
            rpm: options.rpm,
            tpm: options.tpm,
        };
        let host = {
            let _guard = runtime.enter();
            AsyncHost::new(live, limits, options.tool_concurrency).map_err(BatchError::Refused)?
        };
        Ok(Engine {
            shared: Arc::new(Shared {
                program,
                target,
                host: Arc::new(host),
                options,
                schema,
                progress: Progress::default(),
                cancel: AtomicBool::new(false),
            }),
            runtime,
        })
    }

    /// [`Engine::new`] from the bytes of a `.ppk` artifact and a target text
    /// (`workflow`, `agent:<member>`, `composition:<name>`).
    pub fn from_artifact(
        artifact: &[u8],
        target: &str,
        live: LiveConfig,
        options: BatchOptions,
    ) -> Result<Engine, BatchError> {
        let max = ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
        let module = ir_spec::Artifact::decode(artifact, max)
            .map_err(|e| BatchError::Refused(format!("not a usable artifact: {e}")))?
            .module;
        let program = Program::new(module)
            .map_err(|e| BatchError::Refused(format!("not a usable artifact: {e}")))?;
        let target =
            Target::parse(program.module(), target).map_err(|e| BatchError::Refused(e.message))?;
        Engine::new(Arc::new(program), target, live, options)
    }

    /// The program the rows run.
    pub fn program(&self) -> &Arc<Program> {
        &self.shared.program
    }

    /// The counters of the batch running now (or of the last one).
    pub fn progress(&self) -> &Progress {
        &self.shared.progress
    }

    /// The gate every model request passes: its 429s, retries and pause, over the
    /// engine's life.
    pub fn gate(&self) -> &crate::http::Gate {
        &self.shared.host.client().gate
    }

    /// Stops the batch running now: no row starts, the rows in flight stop where they
    /// are (a journal keeps their last saved state), and [`Engine::run`] returns.
    pub fn cancel(&self) {
        self.shared.cancel.store(true, Ordering::SeqCst);
    }

    /// Runs a block of rows (each the input of one run; its id is its `id` member, else
    /// its position from 1) and returns their results in the order given. No journal:
    /// what Python and Ray call per block.
    pub fn run_values(&self, rows: Vec<Value>) -> Result<Vec<RowResult>, BatchError> {
        self.run_rows(
            rows.into_iter()
                .enumerate()
                .map(|(i, v)| Row::new(i as u64, i as u64 + 1, v))
                .collect(),
        )
    }

    /// [`Engine::run_values`] of rows already made, some of which may be malformed
    /// (`input` an error, given back as the row's result): a host that converts its rows
    /// itself fails a row it cannot convert, not the block. Always one result per row, in
    /// the order given: after [`Engine::cancel`], a row that did not finish is a result
    /// with [`RowError::CANCELLED`].
    pub fn run_rows(&self, rows: Vec<Row>) -> Result<Vec<RowResult>, BatchError> {
        let ids: Vec<(u64, Value)> = rows.iter().map(|r| (r.index, r.id.clone())).collect();
        let mut sink = Collect::default();
        self.run(rows.into_iter(), &mut sink)?;
        let mut done: HashMap<u64, RowResult> = sink.0.into_iter().map(|r| (r.index, r)).collect();
        Ok(ids
            .into_iter()
            .map(|(index, id)| {
                done.remove(&index).unwrap_or_else(|| RowResult {
                    index,
                    id,
                    outcome: Err(RowError::new(
                        RowError::CANCELLED,
                        "the batch was cancelled before this row finished",
                        None,
                    )),
                    calls: 0,
                    tokens: 0,
                    wall_ms: 0,
                })
            })
            .collect())
    }

    /// Runs every row of `rows`, at most `rows_in_flight` at once, and tells `sink` what
    /// happens (results in the order rows finish). Blocks until the rows are done, the
    /// batch is cancelled, `max_failures` is reached or the sink fails.
    pub fn run(
        &self,
        rows: impl Iterator<Item = Row> + Send + 'static,
        sink: &mut dyn Sink,
    ) -> Result<Summary, BatchError> {
        self.shared.cancel.store(false, Ordering::SeqCst);
        let p = &self.shared.progress;
        for c in [
            &p.done,
            &p.failed,
            &p.in_flight,
            &p.skipped,
            &p.calls,
            &p.tokens,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        let options = &self.shared.options;
        let max_rows = match options.rows_in_flight {
            0 => options.concurrency.max(1).saturating_mul(4),
            n => n,
        };
        // Rows are read on a thread of their own, a little ahead of the runs.
        let (row_tx, mut row_rx) = mpsc::channel::<Row>(max_rows.clamp(16, 1024));
        let reader = std::thread::spawn(move || {
            for row in rows {
                if row_tx.blocking_send(row).is_err() {
                    break;
                }
            }
        });
        let shared = self.shared.clone();
        let gate = self.gate();
        let before = (gate.rate_limited(), gate.retried());
        let result = self
            .runtime
            .block_on(async move { drive(shared, &mut row_rx, max_rows, sink).await });
        let _ = reader.join();
        result.map(|mut summary| {
            summary.rate_limited = gate.rate_limited() - before.0;
            summary.retried = gate.retried() - before.1;
            summary
        })
    }
}

async fn drive(
    shared: Arc<Shared>,
    rows: &mut mpsc::Receiver<Row>,
    max_rows: usize,
    sink: &mut dyn Sink,
) -> Result<Summary, BatchError> {
    let started = Instant::now();
    let (tx, mut events) = mpsc::unbounded_channel::<Event>();
    let mut tasks = JoinSet::new();
    let mut summary = Summary::default();
    let mut in_flight = 0usize;
    // Rows in a row that failed with a host error (`max_failures_in_a_row`).
    let mut streak = 0u64;
    let mut more = true;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let progress = &shared.progress;
    loop {
        let stopping = summary.stopped.is_some();
        if (!more || stopping) && in_flight == 0 {
            break;
        }
        tokio::select! {
            row = rows.recv(), if more && !stopping && in_flight < max_rows => {
                let Some(row) = row else {
                    more = false;
                    continue;
                };
                summary.rows += 1;
                let saved = match sink.resume(row.index) {
                    Resume::Skip => {
                        summary.skipped += 1;
                        progress.skipped.fetch_add(1, Ordering::Relaxed);
                        progress.done.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Resume::Fresh => None,
                    Resume::Restore(s) => Some(s),
                };
                in_flight += 1;
                progress.in_flight.fetch_add(1, Ordering::Relaxed);
                tasks.spawn(run_row(shared.clone(), row, saved, tx.clone()));
            }
            Some(event) = events.recv() => match event {
                Event::Saved(index, saved) => sink.saved(index, saved)?,
                Event::Done(result) => {
                    in_flight -= 1;
                    progress.in_flight.fetch_sub(1, Ordering::Relaxed);
                    progress.done.fetch_add(1, Ordering::Relaxed);
                    summary.ran += 1;
                    summary.calls += result.calls;
                    summary.tokens += result.tokens;
                    summary.latencies_ms.push(result.wall_ms);
                    match &result.outcome {
                        Ok(_) => streak = 0,
                        Err(e) => {
                            progress.failed.fetch_add(1, Ordering::Relaxed);
                            *summary.failures.entry(e.kind.clone()).or_default() += 1;
                            if let Some(max) = shared.options.max_failures {
                                if summary.failed() >= max && summary.stopped.is_none() {
                                    summary.stopped = Some(Stop::MaxFailures(max));
                                }
                            }
                            if e.kind == RowError::HOST_ERROR {
                                streak += 1;
                                if let Some(max) = shared.options.max_failures_in_a_row {
                                    if streak >= max && summary.stopped.is_none() {
                                        summary.stopped = Some(Stop::FailedInARow {
                                            rows: streak,
                                            last: e.message.clone(),
                                        });
                                    }
                                }
                            } else if !e.is_the_rows_own() {
                                streak = 0;
                            }
                        }
                    }
                    sink.done(result)?;
                }
            },
            _ = tick.tick() => {
                // A finished task's memory is held until it is joined: without this, a
                // batch grows by a task's size (a few KB) for every row it ran.
                while tasks.try_join_next().is_some() {}
                sink.flush()?;
                if shared.cancel.load(Ordering::SeqCst) {
                    summary.stopped = Some(Stop::Cancelled);
                    tasks.abort_all();
                    // Whatever the rows saved before they stopped is written.
                    while let Ok(event) = events.try_recv() {
                        match event {
                            Event::Saved(index, saved) => sink.saved(index, saved)?,
                            Event::Done(result) => sink.done(result)?,
                        }
                    }
                    break;
                }
            }
        }
    }
    sink.finish()?;
    summary.latencies_ms.sort_unstable();
    summary.elapsed = started.elapsed();
    progress.in_flight.store(0, Ordering::Relaxed);
    Ok(summary)
}

/// Runs one row to its end, sending its saved states and its result.
async fn run_row(
    shared: Arc<Shared>,
    row: Row,
    saved: Option<Saved>,
    events: mpsc::UnboundedSender<Event>,
) {
    let started = Instant::now();
    let (index, id) = (row.index, row.id.clone());
    let mut state = saved.clone().unwrap_or(Saved {
        snapshot: Vec::new(),
        calls: 0,
        tokens: 0,
        wall_ms: 0,
        answered: Vec::new(),
    });
    let base_ms = state.wall_ms;
    let outcome = match row.input {
        Err(e) => Err(e),
        Ok(input) => match check_input(&shared, &input) {
            Err(e) => Err(e),
            Ok(()) => {
                let restored = saved.is_some();
                execute(
                    &shared, input, restored, &mut state, started, index, &events,
                )
                .await
            }
        },
    };
    let result = RowResult {
        index,
        id,
        outcome,
        calls: state.calls,
        tokens: state.tokens,
        wall_ms: base_ms + started.elapsed().as_millis() as u64,
    };
    let _ = events.send(Event::Done(result));
}

fn check_input(shared: &Shared, input: &Value) -> Result<(), RowError> {
    let Some(schema) = &shared.schema else {
        return Ok(());
    };
    match schema.iter_errors(input).next() {
        None => Ok(()),
        Some(e) => {
            let path = e.instance_path().as_str();
            let path = if path.is_empty() { "/" } else { path };
            Err(RowError::new(
                RowError::INVALID_INPUT,
                format!("the row does not match the input_schema at `{path}`: {e}"),
                Some(path.to_owned()),
            ))
        }
    }
}

fn failed(run: &Run, e: RunError) -> RowError {
    // The step that failed; else where the run was: the last step or state its trace
    // entered (a parallel step's branches all enter before any runs, so the trace alone
    // would name the last branch whichever failed).
    let at = match run.failed_step() {
        Some(step) => Some(format!("step {step}")),
        None => run.trace_lines().iter().rev().find_map(|l| {
            l.strip_prefix("step ")
                .map(|s| format!("step {s}"))
                .or_else(|| l.strip_prefix("enter ").map(|s| format!("state {s}")))
        }),
    };
    RowError::new(e.kind.as_str(), e.message, at)
}

fn call_name(view: &packc_vm::CallView<'_>) -> String {
    if let Some((kind, _)) = view.extension() {
        return format!("extension:{kind}");
    }
    if let Some(g) = view.guard() {
        return format!("guard:{}", g.validator);
    }
    view.prompt_task()
        .or(view.tool())
        .unwrap_or_default()
        .to_owned()
}

/// Drives the row's run; `state` keeps the counts (and the latest snapshot).
async fn execute(
    shared: &Arc<Shared>,
    input: Value,
    restored: bool,
    state: &mut Saved,
    started: Instant,
    index: u64,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<Value, RowError> {
    let program = shared.program.clone();
    let options = &shared.options.run;
    let mut run = if restored {
        Run::restore_with(program, &state.snapshot, options).map_err(|e| {
            RowError::new(
                "journal",
                format!("cannot continue the row from its journal: {e}; start over with --fresh"),
                None,
            )
        })?
    } else {
        Run::new(program, shared.target, options.clone())
            .map_err(|e| RowError::new(e.kind.as_str(), e.message, None))?
    };
    let mut calls: JoinSet<(CallId, Answer, u64)> = JoinSet::new();
    let mut sent: HashSet<CallId> = HashSet::new();
    let mut names: HashMap<CallId, String> = HashMap::new();
    let mut turn = Some(input).filter(|_| !restored);
    // Whether an answer was taken since the start (a restored run is saved already).
    let mut changed = false;
    let base_ms = state.wall_ms;
    let progress = &shared.progress;
    let mut need = if restored {
        Ok(Need::Wait)
    } else {
        run.resume(Input::Start)
    };
    loop {
        let next = match need {
            Err(e) => return Err(failed(&run, e)),
            Ok(Need::Done) => {
                return match run.outcome() {
                    Some(o) => Ok(o.output.clone()),
                    None => Err(RowError::new("protocol", "done without an outcome", None)),
                }
            }
            Ok(Need::Clock) => Input::Clock(base_ms + started.elapsed().as_millis() as u64),
            Ok(Need::Caller) => match turn.take() {
                Some(v) => Input::Turn(v),
                None => Input::Finish,
            },
            Ok(Need::Calls | Need::Wait) => {
                for view in run.pending() {
                    if sent.insert(view.id()) {
                        names.insert(view.id(), call_name(&view));
                        let (id, job) = (view.id(), Job::of(&view));
                        let host = shared.host.clone();
                        calls.spawn(async move {
                            let (answer, tokens) = host.answer(job).await;
                            (id, answer, tokens)
                        });
                    }
                }
                if changed {
                    state.snapshot = run.snapshot();
                    state.wall_ms = base_ms + started.elapsed().as_millis() as u64;
                    let _ = events.send(Event::Saved(index, state.clone()));
                }
                let Some(done) = calls.join_next().await else {
                    return Err(RowError::new(
                        "protocol",
                        "the run waits, but no call is outstanding",
                        None,
                    ));
                };
                // Calls are only aborted with their row, so an error here is a panic.
                let (id, answer, tokens) = done.map_err(|e| {
                    RowError::new(
                        "host_error",
                        format!("the host failed carrying out a call: {e}"),
                        None,
                    )
                })?;
                state.calls += 1;
                state.tokens += tokens;
                progress.calls.fetch_add(1, Ordering::Relaxed);
                progress.tokens.fetch_add(tokens, Ordering::Relaxed);
                state.answered.extend(names.remove(&id));
                changed = true;
                Input::Answer(id, answer)
            }
        };
        need = run.resume(next);
    }
}
