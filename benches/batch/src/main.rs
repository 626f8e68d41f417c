//! `batch-bench`: the benchmark of `packc batch` against a loopback model.
//!
//! - `mock`: an OpenAI-compatible Chat Completions server on 127.0.0.1 with a fixed
//!   latency per call, answering RFC 0010 example 2's two prompts ([`mock`]).
//! - `ceiling`: that mock alone under a closed-loop load generator ([`load`]): the most
//!   requests a second it serves on this machine.
//! - `rows`: the input rows ([`rows`]).
//! - `sweep`: all of it: the ceiling, then `packc batch` over the rows at each number of
//!   rows in flight, and LangGraph over the same rows, each run timed as a whole process
//!   ([`measure`]: wall, CPU, peak RSS), printed as one markdown table ([`sweep`]).
//!
//! `benches/batch/run.sh` builds what it needs and runs `sweep`; `benches/README.md`
//! ("Batch") explains the table.

mod load;
mod measure;
mod mock;
mod rows;
mod sweep;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "batch-bench",
    about = "The batch benchmark: mock model, load generator, sweep"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the mock on 127.0.0.1 for a bounded time; prints its base URL first.
    Mock {
        /// The port (0: a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Latency of each call, in milliseconds.
        #[arg(long, default_value_t = 50)]
        latency_ms: u64,
        /// Stop after this many seconds.
        #[arg(long, default_value_t = 3600)]
        seconds: u64,
    },
    /// Measure the mock alone under the load generator.
    Ceiling {
        /// Latency of each call, in milliseconds.
        #[arg(long, default_value_t = 50)]
        latency_ms: u64,
        /// Connections kept busy.
        #[arg(long, default_value_t = 5000)]
        connections: usize,
        /// Seconds measured, after a one-second warm-up.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
    },
    /// Write input rows as JSON Lines.
    Rows {
        /// How many.
        #[arg(long, default_value_t = 20_000)]
        count: usize,
        /// The file (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The whole benchmark, printed as one table.
    Sweep(sweep::Sweep),
    /// Run one command and print its wall time, CPU time and peak RSS as JSON (the
    /// sweep's way of timing a process alone).
    #[command(hide = true)]
    Child {
        /// Where the command's stdout and stderr go.
        #[arg(long)]
        log: PathBuf,
        /// Kill it after this many seconds.
        #[arg(long)]
        limit_secs: u64,
        /// The command.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn main() -> anyhow::Result<()> {
    raise_open_files();
    match Cli::parse().command {
        Command::Mock {
            port,
            latency_ms,
            seconds,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let server = mock::start(port, Duration::from_millis(latency_ms)).await?;
                println!("{}", server.base_url());
                std::io::stdout().flush()?;
                tokio::time::sleep(Duration::from_secs(seconds)).await;
                eprintln!("answered {} requests", server.counters.answered());
                anyhow::Ok(())
            })
        }
        Command::Ceiling {
            latency_ms,
            connections,
            seconds,
        } => {
            let mock = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            let server = mock.block_on(mock::start(0, Duration::from_millis(latency_ms)))?;
            let load = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            let report = load.block_on(load::run(
                server.addr,
                connections,
                Duration::from_secs(1),
                Duration::from_secs(seconds),
            ))?;
            println!(
                "{:.0} requests/s with {connections} connections at {latency_ms} ms: p50 {:.1} ms, p99 {:.1} ms, {} failed",
                report.rate(),
                report.p50_us as f64 / 1e3,
                report.p99_us as f64 / 1e3,
                report.failed
            );
            Ok(())
        }
        Command::Rows { count, out } => match out {
            Some(path) => {
                let file = std::fs::File::create(&path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                let mut out = std::io::BufWriter::new(file);
                rows::write(count, &mut out)?;
                Ok(out.flush()?)
            }
            None => Ok(rows::write(count, &mut std::io::stdout().lock())?),
        },
        Command::Sweep(sweep) => {
            sweep::validate(&sweep)?;
            print!("{}", sweep::run(&sweep)?);
            Ok(())
        }
        Command::Child {
            log,
            limit_secs,
            command,
        } => measure::child(&command, &log, Duration::from_secs(limit_secs)),
    }
}

/// Thousands of connections need thousands of descriptors: raise the soft limit to the
/// hard one (the commands the sweep runs inherit it).
fn raise_open_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}
