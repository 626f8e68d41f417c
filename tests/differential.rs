//! Determinism suite: for generated packs (compositions with prompt, tool, agent, branch
//! and parallel steps, bindings, predicates, modifiers; workflows with prompt and
//! composition states, events, loops, `max_visits`, artifacts and budgets; plain and
//! state-backed agents; spec levels 1.5, 1.8 and 1.9 with `control` and providers;
//! prompts with `banned_words` and `max_length` validators; extension steps from level
//! 1.8) and
//! generated scripts and host answers (some keyed `provider/prompt_task`), the compiler +
//! VM give the same output (or error kind), end state, reply, trace, calls and eval
//! requests as a small
//! reference interpreter that walks the pack's JSON directly (`differential/reference.rs`).
//! A fifth of the VM runs go through a snapshot and restore at every `resume`.
//!
//! - `differential/tape.rs`: the choice tapes every generator draws from (what proptest
//!   generates and shrinks);
//! - `differential/gen.rs`: the pack, script and host-answer generators;
//! - `differential/reference.rs`, `render.rs`, `values.rs`: the reference interpreter;
//! - `differential/vm_side.rs`: the compiler and the VM, driven with `packc_host`'s
//!   scripted host.
//!
//! Cases: 256 in a debug build, 10,000 in a release build (`cargo test --release --test
//! differential`); `PROPTEST_CASES` overrides both. A difference prints the whole run as
//! a case file (JSON is YAML), with the reference's result as `expect`, so it can be
//! checked with `packc test` and kept in `tests/cases/` once the wrong side is fixed.

#[path = "differential/gen.rs"]
mod gen;
#[path = "differential/reference.rs"]
mod reference;
#[path = "differential/render.rs"]
mod render;
#[path = "differential/tape.rs"]
mod tape;
#[path = "differential/values.rs"]
mod values;
#[path = "differential/vm_side.rs"]
mod vm_side;

use std::cell::RefCell;
use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{json, Value};

use gen::{Generated, Item};
use reference::Outcome;
use values::json_eq;

fn cases() -> u32 {
    let default = if cfg!(debug_assertions) { 256 } else { 10_000 };
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Calls and eval requests compare member by member, numbers as numbers (conformance
/// README).
fn values_eq(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_eq(x, y))
}

/// Every difference between the reference's outcome and the VM's.
fn differences(reference: &Outcome, vm: &vm_side::Actual) -> Vec<String> {
    let mut diffs = Vec::new();
    match (&reference.result, &vm.result) {
        (Ok((out, state)), Ok(o)) => {
            if !json_eq(out, &o.output) {
                diffs.push(format!("output: reference {out}, vm {}", o.output));
            }
            if *state != o.state {
                diffs.push(format!("state: reference {state:?}, vm {:?}", o.state));
            }
            if reference.reply != o.reply {
                diffs.push(format!(
                    "reply: reference {:?}, vm {:?}",
                    reference.reply, o.reply
                ));
            }
        }
        (Err(kind), Err(e)) if kind == e.kind.as_str() => {}
        (r, v) => diffs.push(format!(
            "result: reference {r:?}, vm {:?}",
            v.as_ref().map(|o| (&o.output, &o.state))
        )),
    }
    if reference.trace != vm.trace {
        diffs.push(format!(
            "trace:\n  reference {:?}\n  vm        {:?}",
            reference.trace, vm.trace
        ));
    }
    if !values_eq(&reference.calls, &vm.calls) {
        diffs.push(format!(
            "calls:\n  reference {}\n  vm        {}",
            Value::from(reference.calls.clone()),
            Value::from(vm.calls.clone())
        ));
    }
    if !values_eq(&reference.evals, &vm.evals) {
        diffs.push(format!(
            "eval requests:\n  reference {}\n  vm        {}",
            Value::from(reference.evals.clone()),
            Value::from(vm.evals.clone())
        ));
    }
    diffs
}

/// The run as a conformance case, `expect` being the reference's result.
fn as_case(g: &Generated, reference: &Outcome) -> Value {
    let script: Vec<Value> = g
        .script
        .iter()
        .map(|i| match i {
            Item::Turn(v) => json!({ "turn": v }),
            Item::Event(e) => json!({ "event": e }),
        })
        .collect();
    let mut host = json!({"prompts": g.prompts, "tools": g.tools});
    if !g.extensions.is_empty() {
        host["extensions"] = json!(g.extensions);
    }
    if !g.clock.is_empty() {
        host["clock"] = json!(g.clock);
    }
    if !g.variables.is_empty() {
        host["variables"] = json!(g.variables);
    }
    let mut expect = match &reference.result {
        Ok((output, state)) => {
            let mut e = json!({ "output": output });
            if let Some(s) = state {
                e["state"] = json!(s);
            }
            e["reply"] = json!(reference.reply);
            e
        }
        Err(kind) => json!({ "error": kind }),
    };
    expect["trace"] = json!(reference.trace);
    expect["calls"] = json!(reference.calls);
    // Not a member of the case format: what the reference says the eval requests are.
    expect["evals"] = json!(reference.evals);
    json!({
        "about": "differential test: the reference interpreter's result",
        "pack": g.pack,
        "run": {"target": g.target, "script": script, "host": host},
        "expect": expect,
    })
}

/// Runs one generated case on both sides: the reference's outcome when they agree,
/// else a description of the difference.
fn check(g: &Generated) -> Result<Outcome, String> {
    let module = vm_side::compile(g).map_err(|e| {
        format!(
            "{e}\npack:\n{}",
            serde_json::to_string_pretty(&g.pack).unwrap()
        )
    })?;
    let vm = vm_side::run(module, g)?;
    let reference = reference::run(g);
    let diffs = differences(&reference, &vm);
    if diffs.is_empty() {
        return Ok(reference);
    }
    Err(format!(
        "the VM and the reference interpreter differ:\n{}\n\nthe case (expect = reference):\n{}\n",
        diffs.join("\n"),
        serde_json::to_string_pretty(&as_case(g, &reference)).unwrap()
    ))
}

/// What the generated runs exercised, printed after the run (`--nocapture` shows it):
/// how runs ended, and how many runs wrote each kind of trace line.
#[derive(Default)]
struct Stats {
    runs: u64,
    calls: u64,
    evals: u64,
    ended: BTreeMap<String, u64>,
    targets: BTreeMap<String, u64>,
    lines: BTreeMap<&'static str, u64>,
}

impl Stats {
    fn add(&mut self, g: &Generated, o: &Outcome) {
        self.runs += 1;
        self.calls += o.calls.len() as u64;
        self.evals += o.evals.len() as u64;
        let ended = match &o.result {
            Ok(_) => "ok",
            Err(kind) => kind.as_str(),
        };
        let target = g.target.split(':').next().unwrap().to_owned();
        *self.ended.entry(format!("{target}/{ended}")).or_default() += 1;
        *self.targets.entry(target).or_default() += 1;
        let kinds = [
            "enter",
            "transition",
            "redirected",
            "step",
            "branch",
            "skip",
            "retry",
        ];
        for kind in kinds {
            if o.trace.iter().any(|l| l.contains(kind)) {
                *self.lines.entry(kind).or_default() += 1;
            }
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} runs, {} host calls, {} eval requests",
            self.runs, self.calls, self.evals
        )?;
        writeln!(f, "  targets: {:?}", self.targets)?;
        writeln!(f, "  ended: {:?}", self.ended)?;
        write!(f, "  runs with trace lines of kind: {:?}", self.lines)
    }
}

/// The choice tapes of one case (`differential/tape.rs`). Its `Debug` is short: a
/// failure prints the generated case itself, and the seed is in the regressions file.
#[derive(Clone)]
struct Tapes {
    pack: Vec<u32>,
    run: Vec<u32>,
}

impl std::fmt::Debug for Tapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tapes {{ pack: {} choices, run: {} choices }}",
            self.pack.len(),
            self.run.len()
        )
    }
}

/// Tapes long enough for a full pack most of the time; a shorter one ends in zeros,
/// the simplest choices, which is also what shrinking moves toward.
fn tapes() -> impl Strategy<Value = Tapes> {
    (
        proptest::collection::vec(any::<u32>(), 50..500),
        proptest::collection::vec(any::<u32>(), 3000..8000),
    )
        .prop_map(|(pack, run)| Tapes { pack, run })
}

/// The VM agrees with the reference interpreter on generated packs and runs.
#[test]
fn vm_matches_reference() {
    let config = ProptestConfig {
        cases: cases(),
        max_shrink_iters: 20_000,
        max_shrink_time: 120_000,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let stats = RefCell::new(Stats::default());
    let result = runner.run(&tapes(), |tapes| {
        let g = gen::generate(&tapes.pack, &tapes.run);
        match check(&g) {
            Ok(outcome) => {
                stats.borrow_mut().add(&g, &outcome);
                Ok(())
            }
            Err(report) => Err(TestCaseError::fail(report)),
        }
    });
    println!("{}", stats.borrow());
    if let Err(e) = result {
        panic!("{e}");
    }
}
