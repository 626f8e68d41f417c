//! `packc bench`: run a pack's scripted run many times in process and measure it, so a
//! user can compare runtimes on their own packs without writing Rust.
//!
//! Each run is a fresh `Run` of one shared, precomputed `Program` with a fresh scripted
//! host, driven to the end exactly as `packc run --host` drives it. Compiling the pack
//! (or decoding the `.ppk`) happens once, before, and is not measured. Allocations are
//! counted by the binary's global allocator ([`CountingAlloc`]) while a run executes:
//! every allocation of the VM, the scripted host (its answer queues are cloned per run)
//! and the driver.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use packc_host::ScriptedHost;
use packc_vm::driver::{Host, ScriptItem};
use packc_vm::{Answer, CallView, Input, Program, Run, RunOptions, Target};
use serde_json::Value;

/// The global allocator: the system's, counting allocations while [`COUNTING`] is set.
/// When no benchmark runs the cost is one relaxed load per allocation.
pub struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are this allocator's; the counter is a side effect only.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation of this
        // allocator is), and the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Run a pack's scripted run many times in process and measure the VM.
///
/// The pack is compiled once; each run is a fresh run of the same program answered
/// by the host script. Prints runs per second, the time of one run (min, median,
/// p99), host calls per run and allocations per run (counted by the binary's
/// allocator during each run: the VM, the scripted host and the driver). Use a
/// release build (`cargo install --path cli`) for figures worth comparing.
///
/// Examples:
///   packc bench examples/rfc0010-ex2.pack.yaml --host examples/rfc0010-ex2.host.yaml
///   packc bench pack.ppk --host h.yaml --target composition:analyze --runs 10000
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct BenchArgs {
    /// The pack file, or an artifact built by `packc build`.
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// Let the pack read files (schema files) from this folder too (as `packc run
    /// --allow-path`).
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// Read the pack at this spec level instead of the one its `$schema` claims (as
    /// `packc run --spec-level`).
    #[arg(long, value_name = "LEVEL", value_parser = crate::check::parse_spec_level)]
    pub spec_level: Option<ir_spec::SpecLevel>,
    /// The host script each run is answered from (as `packc run --host`).
    #[arg(long, value_name = "FILE")]
    pub host: PathBuf,
    /// What to run: `workflow`, `agent:<member>` or `composition:<name>`.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// The input of the one turn (replaces the script's turns), as JSON or `@file`.
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// How many measured runs.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub runs: usize,
    /// Runs before measuring (not counted).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub warmup: usize,
}

/// Counts the calls it answers.
struct Counted<'h> {
    inner: &'h mut ScriptedHost,
    calls: u64,
}

impl Host for Counted<'_> {
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        self.calls += 1;
        self.inner.call(call)
    }

    fn clock(&mut self) -> u64 {
        self.inner.clock()
    }
}

/// One run: its time, host calls, allocations, and whether it ended without error.
fn one(
    program: &Arc<Program>,
    target: Target,
    spec: &packc_host::RunSpec,
) -> Result<(Duration, u64, u64, bool)> {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let mut scripted = ScriptedHost::new(spec);
    let mut host = Counted {
        inner: &mut scripted,
        calls: 0,
    };
    let run = Run::new(
        program.clone(),
        target,
        RunOptions {
            host_variables: spec.variables.clone(),
            max_host_calls: None,
            ..RunOptions::default()
        },
    );
    let ended = run.map(|mut run| {
        crate::hitl::drive(&mut run, &mut host, Input::Start, &spec.script, false).is_ok()
    });
    let elapsed = started.elapsed();
    COUNTING.store(false, Ordering::Relaxed);
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    Ok((elapsed, host.calls, allocations, ended?))
}

/// Runs the benchmark and prints its figures.
pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let module = match crate::inputs::load_module(
        &args.pack,
        &args.allow_paths,
        args.spec_level,
        crate::inputs::Shown::All,
    )? {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let mut spec = crate::inputs::host_spec(&args.host, Some(&module))?;
    if let Some(input) = &args.input {
        spec.script = vec![ScriptItem::Turn(crate::inputs::parse_input(
            "--input", input,
        )?)];
    }
    if spec.script.is_empty() {
        spec.script = vec![ScriptItem::Turn(Value::Null)];
    }
    let target_text = args.target.clone().unwrap_or_else(|| spec.target.clone());
    let program = Arc::new(Program::new(module)?);
    let target = Target::parse(program.module(), &target_text)?;
    for _ in 0..args.warmup {
        one(&program, target, &spec)?;
    }
    let mut times = Vec::with_capacity(args.runs);
    let (mut calls, mut allocations, mut failed) = (0u64, 0u64, 0usize);
    let started = Instant::now();
    for _ in 0..args.runs {
        let (t, c, a, ok) = one(&program, target, &spec)?;
        times.push(t);
        calls += c;
        allocations += a;
        failed += usize::from(!ok);
    }
    let total = started.elapsed();
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let n = args.runs as f64;
    outln!(
        "bench {} (target {target_text}, {} runs after {} warm-up)",
        args.pack.display(),
        args.runs,
        args.warmup
    );
    outln!("  runs/s       {:.1}", n / total.as_secs_f64());
    outln!(
        "  per run      min {}   median {}   p99 {}",
        micros(times[0]),
        micros(at(0.5)),
        micros(at(0.99))
    );
    outln!("  host calls   {:.1} per run", calls as f64 / n);
    outln!("  allocations  {:.1} per run", allocations as f64 / n);
    if failed > 0 {
        outln!("  failed runs  {failed} (the run ended with an error; see `packc run`)");
    }
    // Times of runs that fail measure the failure, not the pack: exit 1, as `check` does
    // for a pack with errors.
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}
