//! The whole benchmark: the mock's ceiling alone, then `packc batch` (and optionally
//! LangGraph) over the same rows at each number of rows in flight, printed as one table.
//!
//! The bound of a run is the lower of two rates: the latency bound (each row makes two
//! calls of `latency` each, one after the other, so `k` rows in flight finish at most
//! `k / (2 × latency)` rows a second) and the mock's own ceiling (its requests a second
//! alone, halved). Memory per in-flight row is the growth of peak RSS from the runner's
//! smallest number of rows in flight to this one, divided by the rows added: what each
//! further row in flight costs, without the fixed cost of the process and of the rows
//! it holds whether they are in flight or not.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use nix::sys::resource::{getrusage, UsageWho};

use crate::load::{self, LoadReport};
use crate::measure::{self, Usage};
use crate::mock::{self, Counters};

/// Model calls per row of RFC 0010 example 2: classify, then one extractor.
const CALLS_PER_ROW: f64 = 2.0;

/// What to run: the arguments of `batch-bench sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct Sweep {
    /// Rows in the input.
    #[arg(long, default_value_t = 20_000)]
    pub rows: usize,
    /// Rows in flight for `packc batch`, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,5000")]
    pub in_flight: Vec<usize>,
    /// Latency of each mock call, in milliseconds.
    #[arg(long = "latency-ms", value_name = "LATENCY_MS", default_value = "50", value_parser = millis)]
    pub latency: Duration,
    /// The pack (or `.ppk`) to run.
    #[arg(long)]
    pub pack: PathBuf,
    /// One `packc batch` run; `{pack}`, `{input}`, `{output}`, `{base_url}` and
    /// `{in_flight}` are filled in.
    #[arg(long)]
    pub packc: String,
    /// One LangGraph run, same placeholders (none: no LangGraph row).
    #[arg(long)]
    pub langgraph: Option<String>,
    /// Rows in flight for LangGraph, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    pub langgraph_in_flight: Vec<usize>,
    /// How many of the rows (the first ones) LangGraph runs.
    #[arg(long, default_value_t = 20_000)]
    pub langgraph_rows: usize,
    /// Connections of the load generator for the mock's ceiling.
    #[arg(long, default_value_t = 5000)]
    pub ceiling_connections: usize,
    /// Seconds the mock is measured alone for (after a one-second warm-up).
    #[arg(long, default_value_t = 10)]
    pub ceiling_secs: u64,
    /// Folder for rows, results and logs.
    #[arg(long, default_value = "target/batch-bench")]
    pub work: PathBuf,
    /// Kill a run after this many seconds.
    #[arg(long = "limit-secs", value_name = "LIMIT_SECS", default_value = "900", value_parser = seconds)]
    pub limit: Duration,
}

/// `--latency-ms`: whole milliseconds.
fn millis(s: &str) -> Result<Duration, std::num::ParseIntError> {
    s.parse().map(Duration::from_millis)
}

/// `--limit-secs`: whole seconds.
fn seconds(s: &str) -> Result<Duration, std::num::ParseIntError> {
    s.parse().map(Duration::from_secs)
}

/// One measured run.
struct Run {
    runner: &'static str,
    in_flight: usize,
    ok: usize,
    failed: usize,
    /// Result lines beyond one per distinct row id.
    duplicates: usize,
    calls: u64,
    usage: Usage,
    mock_cpu: Duration,
}

/// Runs the sweep and returns the table (markdown) with the lines that explain it.
pub fn run(sweep: &Sweep) -> anyhow::Result<String> {
    std::fs::create_dir_all(&sweep.work)
        .with_context(|| format!("cannot create {}", sweep.work.display()))?;
    let rows = write_rows(&sweep.work.join("rows.jsonl"), sweep.rows)?;

    let ceiling = ceiling(sweep)?;
    eprintln!(
        "mock alone: {:.0} requests/s ({} failed)",
        ceiling.rate(),
        ceiling.failed
    );

    let runtime = mock_runtime()?;
    let server = runtime.block_on(mock::start(0, sweep.latency))?;
    let base_url = server.base_url();
    let mut runs = Vec::new();
    for &k in &sweep.in_flight {
        runs.push(one(
            sweep,
            "packc batch",
            &sweep.packc,
            k,
            &rows,
            &base_url,
            &server.counters,
        )?);
    }
    if let Some(langgraph) = &sweep.langgraph {
        let rows = match sweep.langgraph_rows.min(sweep.rows) {
            n if n == sweep.rows => rows.clone(),
            n => write_rows(&sweep.work.join(format!("rows-{n}.jsonl")), n)?,
        };
        for &k in &sweep.langgraph_in_flight {
            runs.push(one(
                sweep,
                "LangGraph abatch",
                langgraph,
                k,
                &rows,
                &base_url,
                &server.counters,
            )?);
        }
    }
    drop(runtime);
    Ok(table(sweep, &ceiling, &runs))
}

/// Writes the first `count` rows to `path`.
fn write_rows(path: &Path, count: usize) -> anyhow::Result<PathBuf> {
    let mut out = BufWriter::new(
        File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    crate::rows::write(count, &mut out)?;
    out.flush()?;
    Ok(path.to_owned())
}

/// The mock alone under the load generator, each on its own two-thread runtime.
fn ceiling(sweep: &Sweep) -> anyhow::Result<LoadReport> {
    let runtime = mock_runtime()?;
    let server = runtime.block_on(mock::start(0, sweep.latency))?;
    let load = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    eprintln!(
        "measuring the mock alone: {} connections, {} s",
        sweep.ceiling_connections, sweep.ceiling_secs
    );
    let report = load.block_on(load::run(
        server.addr,
        sweep.ceiling_connections,
        Duration::from_secs(1),
        Duration::from_secs(sweep.ceiling_secs),
    ))?;
    Ok(report)
}

fn mock_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mock")
        .enable_all()
        .build()?)
}

fn one(
    sweep: &Sweep,
    runner: &'static str,
    template: &str,
    in_flight: usize,
    rows: &Path,
    base_url: &str,
    counters: &Arc<Counters>,
) -> anyhow::Result<Run> {
    let dir = sweep
        .work
        .join(format!("{}-{in_flight}", runner.replace(' ', "-")));
    // A fresh folder: no output or journal of an earlier run is resumed.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let output = dir.join("results.jsonl");
    let command = expand(
        template,
        &[
            ("{pack}", &sweep.pack.display().to_string()),
            ("{input}", &rows.display().to_string()),
            ("{output}", &output.display().to_string()),
            ("{base_url}", base_url),
            ("{in_flight}", &in_flight.to_string()),
        ],
    );
    eprintln!(
        "{runner}, {in_flight} rows in flight: {}",
        command.join(" ")
    );
    let calls_before = counters.answered();
    let mock_before = own_cpu()?;
    let usage = measure::measured(&command, &dir.join("log.txt"), sweep.limit)?;
    let mock_cpu = own_cpu()?.saturating_sub(mock_before);
    let calls = counters.answered() - calls_before;
    if usage.code != Some(0) {
        eprintln!(
            "  exit {:?}; see {}",
            usage.code,
            dir.join("log.txt").display()
        );
    }
    let (ok, failed, duplicates) = results(&output)?;
    Ok(Run {
        runner,
        in_flight,
        ok,
        failed,
        duplicates,
        calls,
        usage,
        mock_cpu,
    })
}

/// Replaces the placeholders in each whitespace-separated word of `template`.
fn expand(template: &str, values: &[(&str, &str)]) -> Vec<String> {
    template
        .split_whitespace()
        .map(|word| {
            values
                .iter()
                .fold(word.to_owned(), |w, (from, to)| w.replace(from, to))
        })
        .collect()
}

/// Rows with an `output`, rows with an `error`, and result lines repeating a row id.
fn results(path: &Path) -> anyhow::Result<(usize, usize, usize)> {
    let Ok(file) = File::open(path) else {
        return Ok((0, 0, 0));
    };
    let (mut ok, mut failed) = (0, 0);
    let mut ids = std::collections::HashSet::new();
    let mut duplicates = 0;
    for line in BufReader::new(file).lines() {
        let line = line?;
        let Ok(result) = serde_json::from_str::<serde_json::Value>(&line) else {
            failed += 1;
            continue;
        };
        if !ids.insert(result["id"].to_string()) {
            duplicates += 1;
        }
        if result.get("error").is_some_and(|e| !e.is_null()) || result.get("output").is_none() {
            failed += 1;
        } else {
            ok += 1;
        }
    }
    Ok((ok, failed, duplicates))
}

/// This process's CPU time so far: the mock's, while a measured command runs.
fn own_cpu() -> anyhow::Result<Duration> {
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let d = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    Ok(d(usage.user_time()) + d(usage.system_time()))
}

fn table(sweep: &Sweep, ceiling: &LoadReport, runs: &[Run]) -> String {
    let ms = sweep.latency.as_secs_f64() * 1e3;
    let ceiling_rows = ceiling.rate() / CALLS_PER_ROW;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Mock alone ({} connections, {} s after a 1 s warm-up, load generator in the same process): \
         {} requests/s at {ms:.0} ms (p50 {:.1} ms, p99 {:.1} ms, {} failed), so at most {} rows/s.",
        group(ceiling.connections as f64),
        ceiling.counted.as_secs(),
        group(ceiling.rate()),
        ceiling.p50_us as f64 / 1e3,
        ceiling.p99_us as f64 / 1e3,
        ceiling.failed,
        group(ceiling_rows),
    );
    let _ = writeln!(
        s,
        "{} rows of RFC 0010 example 2 ({}), two calls each; bound = min(rows in flight / (2 × {ms:.0} ms), {}).",
        group(sweep.rows as f64),
        sweep.pack.display(),
        group(ceiling_rows),
    );
    if sweep.langgraph.is_some() && sweep.langgraph_rows < sweep.rows {
        let _ = writeln!(
            s,
            "LangGraph runs the first {} of those rows.",
            group(sweep.langgraph_rows as f64)
        );
    }
    s.push('\n');
    s.push_str("| runner | rows in flight | rows ok / failed | wall | rows/s | bound | of bound | model calls | CPU s per 1,000 calls | mock CPU s | peak RSS | RSS per further row in flight |\n");
    s.push_str(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for run in runs {
        let bound = (run.in_flight as f64 / (CALLS_PER_ROW * sweep.latency.as_secs_f64()))
            .min(ceiling_rows);
        let rate = run.ok as f64 / run.usage.wall.as_secs_f64();
        let base = runs
            .iter()
            .filter(|r| r.runner == run.runner)
            .min_by_key(|r| r.in_flight)
            .expect("the run itself");
        let per_row = if base.in_flight < run.in_flight {
            let grown = run.usage.max_rss_kib as f64 - base.usage.max_rss_kib as f64;
            format!(
                "{:.1} KiB (vs {})",
                grown / (run.in_flight - base.in_flight) as f64,
                group(base.in_flight as f64)
            )
        } else {
            "—".to_owned()
        };
        let mut status = String::new();
        if run.usage.code != Some(0) {
            let _ = write!(status, " (exit {:?})", run.usage.code);
        }
        if run.duplicates > 0 {
            let _ = write!(status, " ({} duplicates)", run.duplicates);
        }
        let _ = writeln!(
            s,
            "| {}{status} | {} | {} / {} | {:.1} s | {} | {} | {:.0}% | {} | {:.3} | {:.1} | {:.1} MiB | {per_row} |",
            run.runner,
            group(run.in_flight as f64),
            group(run.ok as f64),
            group(run.failed as f64),
            run.usage.wall.as_secs_f64(),
            group(rate),
            group(bound),
            100.0 * rate / bound,
            group(run.calls as f64),
            run.usage.cpu.as_secs_f64() * 1000.0 / (run.calls.max(1) as f64),
            run.mock_cpu.as_secs_f64(),
            run.usage.max_rss_kib as f64 / 1024.0,
        );
    }
    s
}

/// `12345.6` as `12,346`.
fn group(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Checks a sweep's parameters before anything runs.
pub fn validate(sweep: &Sweep) -> anyhow::Result<()> {
    if sweep.rows == 0 || sweep.in_flight.is_empty() || sweep.in_flight.contains(&0) {
        bail!("--rows and every --in-flight must be at least 1");
    }
    if !sweep.pack.exists() {
        bail!("no pack at {}", sweep.pack.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0.4), "0");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1234567.8), "1,234,568");
    }

    #[test]
    fn expands_placeholders_in_each_word() {
        let words = expand(
            "packc batch {pack} --output={output} --concurrency {in_flight}",
            &[
                ("{pack}", "ex2.pack.yaml"),
                ("{output}", "/w/out.jsonl"),
                ("{in_flight}", "100"),
            ],
        );
        assert_eq!(
            words,
            [
                "packc",
                "batch",
                "ex2.pack.yaml",
                "--output=/w/out.jsonl",
                "--concurrency",
                "100"
            ]
        );
    }

    #[test]
    fn counts_results_failures_and_duplicates() {
        let dir = std::env::temp_dir().join(format!("batch-bench-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.jsonl");
        std::fs::write(
            &path,
            concat!(
                "{\"id\": \"a\", \"output\": {\"summary\": \"s\"}}\n",
                "{\"id\": \"b\", \"error\": {\"kind\": \"host_error\"}}\n",
                "{\"id\": \"a\", \"output\": {\"summary\": \"s\"}}\n",
                "not json\n",
            ),
        )
        .unwrap();
        assert_eq!(results(&path).unwrap(), (2, 2, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
