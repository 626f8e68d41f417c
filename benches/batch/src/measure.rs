//! Timing a whole process: wall time, CPU time and peak RSS of one command.
//!
//! `getrusage(RUSAGE_CHILDREN)` sums over every child a process has waited for and keeps
//! the largest peak RSS among them, so the sweep does not ask it about its own children:
//! it runs `batch-bench child -- CMD...`, a fresh process whose only child is `CMD`, and
//! reads the figures that wrapper prints as one JSON line.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::resource::{getrusage, UsageWho};
use serde_json::json;

/// What one command cost.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// User plus system CPU time.
    pub cpu: Duration,
    /// Peak resident set size, in KiB.
    pub max_rss_kib: u64,
    /// The exit code (`None`: killed by a signal, or by the time limit).
    pub code: Option<i32>,
}

/// The `child` subcommand: runs `command` with its stdout and stderr appended to `log`,
/// kills it after `limit`, and prints its [`Usage`] as one JSON line on stdout.
pub fn child(command: &[String], log: &Path, limit: Duration) -> anyhow::Result<()> {
    let (program, args) = command.split_first().context("no command to run")?;
    let out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open the log {}", log.display()))?;
    let start = Instant::now();
    let mut process = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let status = loop {
        if let Some(status) = process.try_wait()? {
            break status;
        }
        if start.elapsed() > limit {
            process.kill()?;
            break process.wait()?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = start.elapsed();
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    let micros = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
    let line = json!({
        "wall_us": wall.as_micros() as u64,
        "cpu_us": micros(usage.user_time()) + micros(usage.system_time()),
        // Linux reports ru_maxrss in KiB.
        "max_rss_kib": usage.max_rss(),
        "code": status.code(),
    });
    println!("{line}");
    Ok(())
}

/// Runs `command` through `batch-bench child` and returns what it cost.
pub fn measured(command: &[String], log: &Path, limit: Duration) -> anyhow::Result<Usage> {
    let me = std::env::current_exe().context("cannot find the batch-bench binary")?;
    let output = Command::new(me)
        .arg("child")
        .arg("--log")
        .arg(log)
        .arg("--limit-secs")
        .arg(limit.as_secs().to_string())
        .arg("--")
        .args(command)
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run batch-bench child")?;
    if !output.status.success() {
        bail!("batch-bench child failed for {command:?}");
    }
    let line: serde_json::Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("batch-bench child printed no figures for {command:?}"))?;
    let number = |key: &str| line[key].as_u64().unwrap_or(0);
    Ok(Usage {
        wall: Duration::from_micros(number("wall_us")),
        cpu: Duration::from_micros(number("cpu_us")),
        max_rss_kib: number("max_rss_kib"),
        code: line["code"].as_i64().map(|c| c as i32),
    })
}
