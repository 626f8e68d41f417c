//! Heap allocations of whole runs, counted by a global allocator: runs of
//! `examples/rfc0010-ex1..ex4` with a host that answers at once with a prebuilt value.
//!
//! - (a) the allocations of each run, from `Run::new` to `Need::Done` (answer values
//!   are built outside the count), equal a pinned number: a change shows up here;
//! - (b) no resume that takes an answer allocates: from `resume(Input::Answer(..))`,
//!   counted after the answer value was built, to the `Need` it returns, the VM makes
//!   zero heap allocations (storing the answer moves it into a slot).
//!
//! Its own test binary (`harness = false`, one thread), so nothing else allocates while
//! it counts.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use packc_vm::{Input, Run, RunOptions, Target};
use serde_json::{json, Value};

struct Counting;

static COUNT: AtomicU64 = AtomicU64::new(0);
static ON: AtomicBool = AtomicBool::new(false);

// SAFETY: every method forwards to `System` unchanged; counting touches only atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            COUNT.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            COUNT.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            COUNT.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded; `ptr` was allocated by `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn counting<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = COUNT.load(Ordering::Relaxed);
    ON.store(true, Ordering::Relaxed);
    let out = f();
    ON.store(false, Ordering::Relaxed);
    (out, COUNT.load(Ordering::Relaxed) - before)
}

/// The no-op host's answers.
fn model_answer() -> Value {
    json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
           "flagged_terms": [], "risk": 0.2})
}

/// One whole run; returns (allocations of the run, the most any answer's resume made,
/// the number of answers).
fn run_once(program: &std::sync::Arc<packc_vm::Program>, input: &Value) -> (u64, u64, usize) {
    let (mut run, total) =
        counting(|| Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap());
    let (n, worst, answers) = drive(&mut run, input);
    (total + n, worst, answers)
}

/// Drives a new or reset run to its end.
fn drive(run: &mut Run, input: &Value) -> (u64, u64, usize) {
    let model = model_answer();
    let tool = json!({"ok": true});
    let mut total = 0;
    let mut next = Input::Start;
    let mut turn = Some(input.clone());
    let mut worst = 0;
    let mut answers = 0;
    loop {
        let is_answer = matches!(next, Input::Answer(..));
        let (need, n) = counting(|| run.resume(next).unwrap());
        total += n;
        if is_answer {
            answers += 1;
            worst = worst.max(n);
        }
        let answer = |call: &packc_vm::CallView<'_>| {
            if call.is_model() {
                model.clone()
            } else {
                tool.clone()
            }
        };
        let Some(input) = common::next_input(run, need, &mut turn, answer) else {
            break;
        };
        next = input;
    }
    (total, worst, answers)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    // (example, pinned allocations per run, answers per run)
    let pinned: &[(&str, u64, usize)] = &[
        ("rfc0010-ex1", PINNED[0], 1),
        ("rfc0010-ex2", PINNED[1], 2),
        ("rfc0010-ex3", PINNED[2], 5),
        ("rfc0010-ex4", PINNED[3], 2),
    ];
    let mut failed = false;
    for (name, expected_total, expected_answers) in pinned {
        let program = common::program(&root.join(format!("examples/{name}.pack.yaml")));
        // A first run warms up lazily initialized statics.
        run_once(&program, &input);
        let (total, worst, answers) = run_once(&program, &input);
        println!("{name}: {total} allocations per run, {answers} answers, at most {worst} allocations taking an answer");
        // (c) A run reset for another run allocates nothing at all.
        let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
        drive(&mut run, &input);
        let ((), reset) = counting(|| run.reset());
        let (again, _, _) = drive(&mut run, &input);
        println!("{name}: {} allocations per reused run", reset + again);
        if reset + again != 0 {
            eprintln!(
                "FAILED {name}: a reused run made {} allocations (expected 0)",
                reset + again
            );
            failed = true;
        }
        if worst != 0 {
            eprintln!(
                "FAILED {name}: a resume taking an answer made {worst} allocations (expected 0)"
            );
            failed = true;
        }
        if total != *expected_total {
            eprintln!("FAILED {name}: {total} allocations per run, pinned {expected_total}");
            failed = true;
        }
        if answers != *expected_answers {
            eprintln!("FAILED {name}: {answers} answers, expected {expected_answers}");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
    println!("alloc: ok");
}

/// Allocations per run of ex1..ex4 (from `Run::new` to `Need::Done`): the run's three
/// heap buffers (lanes, trace, output slots; the visit counts and step flags of packs
/// this small live inside the run), and for ex3 the eval request list.
const PINNED: [u64; 4] = [3, 3, 4, 3];
