//! `packc batch`: one live run per row of a dataset, restartable from a journal beside
//! the output (the engine is `packc_batch`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use packc_batch::{BatchOptions, Engine, Identity, Input, InputFormat, Journal, Stop, Summary};
use packc_compiler::render::escape_control;
use packc_vm::{Program, RunOptions, Target};
use serde_json::{json, Value};

use crate::inputs::{load_module, LiveArgs};

/// Run a pack live once per row of a dataset, many rows at once, restartably.
///
/// Each row of `--input` (JSON Lines, CSV, or `-` for stdin) is the input of one run
/// against the model of the live flags (as `packc run --provider ...`). Each result
/// is one JSON line of `--output`, in input order (or as rows finish, with
/// `--unordered`): `{"id", "output" | "error": {"kind", "message", "where"},
/// "calls", "tokens", "wall_ms"}`; `id` is the row's `id` member (or CSV column)
/// when that is a string or a number, else its line number (JSON Lines) or record
/// number (CSV, 1 for the first record after the header). A row that is not JSON, is a bad CSV record or does not
/// match the target's input_schema fails alone; the batch goes on.
///
/// A journal beside the output (`<output>.journal.sqlite`) keeps every finished row
/// and the last state of every row in flight: after a crash, a kill, Ctrl-C or SIGTERM,
/// the same command goes on where the batch was, without running a finished row again or
/// asking an answered call again. One batch at a time writes an output (a second one is
/// refused), and an output cut or deleted by hand is rewritten from the journal. `--fresh` starts over; `--retry-failed` runs the
/// rows that failed again (a model that was down, a rate limit past the retries) and
/// rewrites the output with their new lines. Limits shared by all rows:
/// `--concurrency` model calls in flight (default 64), `--rpm`, `--tpm`; a 429 holds
/// every row's requests for its Retry-After.
///
/// Exit codes: 0 every row ran (failed rows included, as long as one did not fail), 1
/// every row failed, or stopped by `--max-failures` or `--max-failures-in-a-row`, 2 refused before any call (unreadable input, unwritable output,
/// a journal of another pack, input or model, or in use by another batch), 130 interrupted.
///
/// Examples:
///   packc batch pack.yaml --input rows.jsonl --output results.jsonl \
///       --provider openai --model gpt-4o-mini --rpm 500
///   packc batch pack.ppk --input tickets.csv --output out.jsonl --provider openai \
///       --model local --base-url http://127.0.0.1:8080/v1 --concurrency 256
///   cat rows.jsonl | packc batch pack.yaml --input - --output out.jsonl --unordered ...
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct BatchArgs {
    /// The pack file, or an artifact built by `packc build`.
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// The rows: a JSON Lines file (one JSON value a line, each the input of one run), a
    /// CSV file (`*.csv`: a header line, then one record a line, each an object of
    /// strings), or `-` for standard input (read to its end before the first row runs).
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// How the input is written; by default `csv` for a `*.csv` file, else `jsonl`.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<RowFormat>,
    /// The results, one JSON line a row; the journal is written beside it
    /// (`<FILE>.journal.sqlite`).
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// What to run: `workflow`, `agent:<member>` or `composition:<name>`.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub live: LiveArgs,
    /// The most model calls in flight at once, over all rows.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = crate::inputs::at_least_one)]
    pub concurrency: usize,
    /// The most rows in flight at once [default: 4 × --concurrency].
    #[arg(long, value_name = "N", value_parser = crate::inputs::at_least_one)]
    pub rows_in_flight: Option<usize>,
    /// The most tool calls (commands, HTTP bindings) in flight at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = crate::inputs::at_least_one)]
    pub tool_concurrency: usize,
    /// The most model requests a minute, over all rows (retries included).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// Tokens a minute, over all rows, as the API reports them: a bucket of N tokens
    /// refilled at N a minute, which a request waits on while it is empty (a full bucket
    /// lets N go at once, so a minute can see up to about 2N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tpm: Option<u64>,
    /// Stop once N rows have failed: no row starts after that, the rows in flight finish,
    /// and the exit code is 1. Run the same command again to go on.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_failures: Option<u64>,
    /// Stop once N rows in a row have failed with host_error (the model server down, the
    /// key refused, a tool binding broken): no row starts after that, the rows in flight
    /// finish, and the exit code is 1. A row that finishes, or fails for another reason,
    /// starts the count again; invalid_row and invalid_input rows leave it as it is; 0:
    /// never stop for this.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_failures_in_a_row: u64,
    /// Write each row's line as soon as it is done, not in input order.
    #[arg(long)]
    pub unordered: bool,
    /// Start over: delete the journal and empty the output.
    #[arg(long)]
    pub fresh: bool,
    /// Run the rows that failed in earlier batches again (every line with an `error`):
    /// the output is rewritten from the journal, the other rows' lines as they were.
    #[arg(long, conflicts_with = "fresh")]
    pub retry_failed: bool,
    /// A host variable for `{{name}}` placeholders the pack does not declare
    /// (repeatable): `--var NAME=VALUE`.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Let the pack read files (schema files) from this folder too (repeatable).
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// Worker threads of the runtime, 1 to 256 [default: one per core, at most 4].
    #[arg(long, value_name = "N", value_parser = threads)]
    pub threads: Option<usize>,
    /// No progress and no summary: only warnings and errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// How `--input` is written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFormat {
    /// JSON Lines.
    Jsonl,
    /// CSV with a header line.
    Csv,
}

/// `--threads`: 1 to the most the engine starts.
fn threads(text: &str) -> Result<usize, String> {
    let n = crate::inputs::at_least_one(text)?;
    if n > packc_batch::MAX_THREADS {
        return Err(format!("must be at most {}", packc_batch::MAX_THREADS));
    }
    Ok(n)
}

/// Runs the batch. Exit codes: 0 every row ran (failed rows are lines of the output
/// too), 1 every row that ran failed, or stopped by `--max-failures` or
/// `--max-failures-in-a-row`, 2 refused before any call, 130 interrupted.
pub fn run(args: &BatchArgs) -> Result<ExitCode> {
    // What can be checked without the model is checked before the first call: the
    // input can be read, the output and its journal written.
    let stdin = args.input.as_os_str() == "-";
    let format = match args.input_format {
        Some(RowFormat::Csv) => InputFormat::Csv,
        Some(RowFormat::Jsonl) => InputFormat::Jsonl,
        None if stdin => InputFormat::Jsonl,
        None => InputFormat::of(&args.input),
    };
    let input = Input::open((!stdin).then_some(args.input.as_path()), format)
        .with_context(|| format!("--input {}: cannot read it", args.input.display()))?;
    crate::files::make_folder(&args.output, "--output")?;
    crate::files::check_target(&args.output, &[&args.pack], "--output")?;
    if !stdin && crate::files::same_file(&args.output, &args.input) {
        bail!(
            "--output {} is the input itself; give another file",
            args.output.display()
        );
    }
    let module = match load_module(
        &args.pack,
        &args.allow_paths,
        None,
        crate::inputs::Shown::quiet(args.quiet),
    )? {
        Ok(module) => module,
        Err(code) => return Ok(code),
    };
    let target_text = args.target.clone().unwrap_or_else(|| "workflow".into());
    // A target the pack lacks is the first thing to say, before what binding it lacks.
    Target::parse(&module, &target_text)?;
    let input_schema = crate::inputs::target_input_schema(
        &args.pack,
        &args.allow_paths,
        &target_text,
        args.quiet,
        "the rows are",
    )?
    .map(|(_, schema)| schema);
    let config = match crate::live::config(&args.live, &module, args.quiet)? {
        Ok(config) => config,
        Err(code) => return Ok(code),
    };
    let program = Arc::new(Program::new(module)?);
    let target = Target::parse(program.module(), &target_text)?;
    let mut variables = serde_json::Map::new();
    for v in &args.vars {
        match v.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                variables.insert(k.to_owned(), Value::String(v.to_owned()));
            }
            _ => bail!("--var {v}: expected NAME=VALUE"),
        }
    }
    let identity = Identity {
        module: program.fingerprint(),
        target: target_text.clone(),
        input_sha256: input.sha256.clone(),
        ordered: !args.unordered,
        model: args.live.model.clone().unwrap_or_default(),
    };
    let options = BatchOptions {
        concurrency: args.concurrency.max(1),
        rows_in_flight: args.rows_in_flight.unwrap_or(0),
        tool_concurrency: args.tool_concurrency.max(1),
        rpm: args.rpm,
        tpm: args.tpm,
        max_failures: args.max_failures,
        max_failures_in_a_row: Some(args.max_failures_in_a_row).filter(|&n| n > 0),
        threads: args.threads.unwrap_or(0),
        run: RunOptions {
            host_variables: variables,
            max_host_calls: Some(args.live.max_host_calls),
            ..RunOptions::default()
        },
        input_schema,
    };
    let engine = Arc::new(Engine::new(program, target, config, options)?);
    // Opened once everything else has been accepted: a refused command leaves no output
    // and no journal behind to block the next one.
    let mut journal = Journal::open(&args.output, &identity, args.fresh)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let (engine, interrupted) = (engine.clone(), interrupted.clone());
        // The first Ctrl-C stops the batch where it is (the journal keeps it); a second
        // one exits at once.
        let _ = ctrlc::set_handler(move || {
            if interrupted.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
            engine.cancel();
        });
    }
    if journal.cut() > 0 && !args.quiet {
        eprintln!(
            "note: {} held {} byte(s) past what {} records (lines not committed before a stop, or added by hand); cut back to the journal",
            args.output.display(),
            journal.cut(),
            journal.path().display()
        );
    }
    if journal.rebuilt() && !args.quiet {
        eprintln!(
            "note: {} was shorter than {} records; rewritten from it",
            args.output.display(),
            journal.path().display()
        );
    }
    if args.retry_failed {
        let retried = journal.retry_failed()?;
        if !args.quiet {
            eprintln!("retrying {retried} row(s) that failed earlier");
        }
    }
    let failed_earlier = journal.failed_earlier()?;
    if !args.quiet && (journal.finished_earlier() > 0 || journal.in_flight_earlier() > 0) {
        let failed = match failed_earlier {
            0 => String::new(),
            n => format!(" ({n} of them failed: --retry-failed runs them again)"),
        };
        eprintln!(
            "resuming {}: {} row(s) done earlier{failed}, {} to continue from their last answer",
            journal.path().display(),
            journal.finished_earlier(),
            journal.in_flight_earlier()
        );
    }
    let total = input.approx_rows;
    let done = Arc::new(AtomicBool::new(false));
    let reporter = (!args.quiet).then(|| {
        let (engine, done) = (engine.clone(), done.clone());
        std::thread::spawn(move || report(&engine, total, &done))
    });
    let ids = Arc::new(std::sync::Mutex::new(Ids::default()));
    let rows = {
        let ids = ids.clone();
        input
            .rows
            .inspect(move |row| ids.lock().unwrap_or_else(|e| e.into_inner()).note(row))
    };
    let summary = engine.run(rows, &mut journal);
    done.store(true, Ordering::SeqCst);
    if let Some(r) = reporter {
        let _ = r.join();
    }
    let summary = summary?;
    if summary.rows == 0 && summary.skipped == 0 {
        let name = if stdin {
            "the standard input".to_owned()
        } else {
            args.input.display().to_string()
        };
        eprintln!(
            "warning: {name} holds no rows (it is empty, or only blank lines{})",
            if format == InputFormat::Csv {
                " after the header"
            } else {
                ""
            }
        );
    }
    if let Some(warning) = ids.lock().unwrap_or_else(|e| e.into_inner()).warning() {
        eprintln!("{warning}");
    }
    // Rows of the input no run started (a stop): the count of lines, less the rows read.
    let not_started = match summary.stopped {
        Some(_) => total.saturating_sub(summary.rows),
        None => 0,
    };
    if !args.quiet {
        eprintln!(
            "{}",
            summary_text(&summary, &args.output, failed_earlier, not_started)
        );
    }
    let go_on = match not_started {
        0 => String::new(),
        n => format!(" and go on with the rows not started (about {n})"),
    };
    // Every row this batch ran failed, for a reason a rerun may not have: no result at
    // all is no success.
    let all_failed =
        summary.ran > 0 && summary.failed() == summary.ran && summary.has_retryable_failures();
    Ok(match &summary.stopped {
        None if all_failed && !interrupted.load(Ordering::SeqCst) => {
            eprintln!(
                "error: every row failed ({}); nothing is lost: fix the cause, then run the \
                 same command with --retry-failed",
                failure_kinds(&summary)
            );
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
        Some(_) if interrupted.load(Ordering::SeqCst) => {
            eprintln!(
                "interrupted: run the same command again to go on ({} keeps where the batch was)",
                journal.path().display()
            );
            ExitCode::from(130)
        }
        Some(why @ Stop::FailedInARow { .. }) => {
            // The last error is the server's text: escaped, as every message is.
            eprintln!(
                "{}\nnothing is lost: fix that, then run the same command with \
                 --retry-failed to run the failed rows again{go_on}",
                escape_control(&why.to_string())
            );
            ExitCode::from(1)
        }
        Some(why) => {
            eprintln!(
                "{}: run the same command again to go on",
                escape_control(&why.to_string())
            );
            ExitCode::from(1)
        }
    })
}

/// The ids of the rows read, to warn when two rows share one: their lines in the output
/// cannot be told apart. Kept as hashes (8 bytes a row).
#[derive(Default)]
struct Ids {
    seen: std::collections::HashSet<u64>,
    repeated: u64,
    /// The first id a row shared with an earlier one, and that row's position (from 1).
    first: Option<(serde_json::Value, u64)>,
}

impl Ids {
    fn note(&mut self, row: &packc_batch::Row) {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        match &row.id {
            serde_json::Value::String(s) => (0u8, s.as_str()).hash(&mut h),
            other => (1u8, other.to_string()).hash(&mut h),
        }
        if !self.seen.insert(h.finish()) {
            self.repeated += 1;
            self.first
                .get_or_insert_with(|| (row.id.clone(), row.index + 1));
        }
    }

    fn warning(&self) -> Option<String> {
        let (id, row) = self.first.as_ref()?;
        Some(format!(
            "warning: {} row(s) have the id of an earlier row (the first: row {row}, id {}): \
             their lines in the output cannot be told apart by id; give each row an `id` of \
             its own, or leave `id` out to number the rows by line",
            self.repeated,
            escape_control(&id.to_string())
        ))
    }
}

/// Shows progress until `done`: a bar on a terminal, else a JSON line on stderr every 5
/// seconds.
fn report(engine: &Engine, total: u64, done: &AtomicBool) {
    let started = Instant::now();
    let p = engine.progress();
    let read = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        let style = |template: &str| {
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        };
        // No ETA until a row of this batch is done: before that it would read 0s.
        bar.set_style(style("{bar:30} {pos}/{len} rows {msg} [{elapsed_precise}]"));
        let mut timed = false;
        while !done.load(Ordering::SeqCst) {
            let rows = read(&p.done);
            bar.set_length(total.max(rows));
            // `skipped` is counted before `done`: read apart, it can be ahead.
            let ran = rows.saturating_sub(read(&p.skipped));
            if ran > 0 && !timed {
                timed = true;
                bar.set_style(style(
                    "{bar:30} {pos}/{len} rows {msg} [{elapsed_precise}, ETA {eta}]",
                ));
                // The rate so far starts with this batch's rows, not the skipped ones.
                bar.reset_eta();
            }
            bar.set_position(rows);
            bar.set_message(format!(
                "({} failed, {} in flight, {:.0} rows/s, {} tokens{})",
                read(&p.failed),
                read(&p.in_flight),
                ran as f64 / started.elapsed().as_secs_f64().max(1e-3),
                read(&p.tokens),
                limited_text(engine.gate())
            ));
            std::thread::sleep(Duration::from_millis(100));
        }
        bar.finish_and_clear();
    } else {
        let mut last = Instant::now();
        while !done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
            if last.elapsed() < Duration::from_secs(5) {
                continue;
            }
            last = Instant::now();
            let rows = read(&p.done);
            let secs = started.elapsed().as_secs_f64();
            let line = json!({
                "progress": {
                    "rows_done": rows,
                    "rows_total": total.max(rows),
                    "failed": read(&p.failed),
                    "in_flight": read(&p.in_flight),
                    "rows_per_sec": (rows.saturating_sub(read(&p.skipped)) as f64 / secs * 10.0).round() / 10.0,
                    "tokens": read(&p.tokens),
                    "elapsed_sec": secs.round(),
                    "rate_limited": engine.gate().rate_limited(),
                    "retried": engine.gate().retried(),
                    "paused_sec": engine.gate().paused_for().map_or(0.0, |d| (d.as_secs_f64() * 10.0).ceil() / 10.0),
                }
            });
            eprintln!("{}", packc_compiler::render::json_line(&line));
        }
    }
}

/// What the progress bar adds about the gate: the 429s and retries so far, and the
/// pause a 429 holds every request in (empty when there is none of these).
fn limited_text(gate: &packc_batch::http::Gate) -> String {
    let mut text = String::new();
    let (limited, retried) = (gate.rate_limited(), gate.retried());
    if limited > 0 {
        text.push_str(&format!(", {limited} × 429"));
    }
    if retried > 0 {
        text.push_str(&format!(", {retried} retried"));
    }
    if let Some(wait) = gate.paused_for() {
        text.push_str(&format!(
            ", paused {:.0} s by a 429",
            wait.as_secs_f64().ceil()
        ));
    }
    text
}

/// The failures of a batch by kind: `host_error 3, invalid_row 1`.
fn failure_kinds(s: &Summary) -> String {
    let kinds: Vec<String> = s.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
    kinds.join(", ")
}

/// The closing summary: rows, failures by kind, tokens, p50/p99 row latency, and the
/// rows `failed_earlier` among those done by an earlier batch, and `not_started` after a
/// stop.
fn summary_text(s: &Summary, output: &Path, failed_earlier: u64, not_started: u64) -> String {
    let mut text = format!(
        "{} row(s) in {:.1} s: {} ran, {} failed",
        s.rows,
        s.elapsed.as_secs_f64(),
        s.ran,
        s.failed()
    );
    if !s.failures.is_empty() {
        text.push_str(&format!(" ({})", failure_kinds(s)));
    }
    if s.skipped > 0 {
        text.push_str(&format!(", {} done earlier", s.skipped));
        if failed_earlier > 0 {
            text.push_str(&format!(" ({failed_earlier} of them failed)"));
        }
    }
    // Rows started and stopped before they finished (Ctrl-C, --max-failures): the
    // journal keeps their last state.
    let unfinished = s.rows.saturating_sub(s.ran.saturating_add(s.skipped));
    if unfinished > 0 {
        text.push_str(&format!(
            ", {unfinished} stopped in flight (the next run goes on from their last answer)"
        ));
    }
    if not_started > 0 {
        text.push_str(&format!(", about {not_started} not started"));
    }
    text.push_str(&format!("; {} calls, {} tokens", s.calls, s.tokens));
    if s.rate_limited > 0 || s.retried > 0 {
        text.push_str(&format!(
            " ({} × 429, {} request(s) retried)",
            s.rate_limited, s.retried
        ));
    }
    if let (Some(p50), Some(p99)) = (s.percentile(50.0), s.percentile(99.0)) {
        text.push_str(&format!("; row latency p50 {p50} ms, p99 {p99} ms"));
    }
    text.push_str(&format!("; results in {}", output.display()));
    // Rows that failed for their own sake (not JSON, not the input schema's) fail again.
    if s.has_retryable_failures() || failed_earlier > 0 {
        text.push_str("; --retry-failed runs the failed rows again");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_rows_stopped_in_flight_apart() {
        let mut s = Summary {
            rows: 7679,
            ran: 7423,
            ..Summary::default()
        };
        let text = summary_text(&s, Path::new("o.jsonl"), 0, 0);
        assert!(
            text.starts_with("7679 row(s) in 0.0 s: 7423 ran, 0 failed, 256 stopped in flight (the next run goes on from their last answer);"),
            "{text}"
        );
        s.ran = 7679;
        assert!(!summary_text(&s, Path::new("o.jsonl"), 0, 0).contains("in flight"));
    }
}
