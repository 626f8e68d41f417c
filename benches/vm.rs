//! The VM's hot path (`packc_vm`), the rows of benches/README.md: whole runs of the bundled packs
//! with a host that answers every call at once with a fixed value.
//! The packs are YAML files anyone can read: `examples/rfc0010-ex1..4.pack.yaml`,
//! `benches/packs/chain-{100,1000}.pack.yaml`, `examples/guide-add-workflow.pack.yaml`.
//!
//! - `vm/<pack>`: `Run::new`, start, one turn, every call answered, finish. The turn
//!   input and the answers are built in criterion's untimed setup (a host's own cost),
//!   so the figure is the VM's: what the "no-op step executor" rows compare.
//! - `vm_reuse/<pack>`: the same on one `Run` reset between runs (`Run::reset`):
//!   no allocation at all per run; the previous run's values are dropped in the timing.
//! - `vm_host/<pack>`: the same with the answers cloned from one fixed value inside
//!   the timed loop, as a real host that builds its answers would.
//! - `vm_pred/*`: a predicate alone (one compare; a 3-clause `any_of`).
//! - `vm_guard/ex2_text`, `vm_guard/ex2_guarded`: ex2 answered with 200-character text,
//!   without and with three built-in validators on each prompt (`later-versions.md` §4).
//! - `floor/ex2`: no VM at all: example 2's work written by hand in Rust ([`floor_ex2`]),
//!   asking the same host as `vm/ex2` with the same prebuilt answers. `vm/ex2` ÷
//!   `floor/ex2` is what the VM costs over the least a program doing this work can do.

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use packc_vm::internals::{judge_prompt, Compiled};
use packc_vm::{Answer, Program, Run, RunOptions, Target};
use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

use packc_suite::{program, workloads};

/// The no-op host's fixed model answer (every field the example packs read).
fn model_output() -> Value {
    json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
           "flagged_terms": [], "risk": 0.2})
}

/// Prebuilt answers: model answers (each with the event its prompt names, if any) and
/// tool answers, used from the back.
struct Answers {
    model: Vec<Answer>,
    tool: Vec<Answer>,
}

impl Answers {
    /// The host of the `vm/*` and `floor/*` rows: the next prebuilt answer for a model
    /// call (else a tool call).
    fn next(&mut self, model: bool) -> Answer {
        let list = if model {
            &mut self.model
        } else {
            &mut self.tool
        };
        list.pop().expect("one prebuilt answer per call")
    }
}

fn answers(n: usize, events: &[&str]) -> Answers {
    let mut model: Vec<Answer> = (0..n)
        .map(|i| Answer::Output {
            output: model_output(),
            event: events.get(i).map(|e| (*e).to_owned()),
        })
        .collect();
    model.reverse();
    let tool = (0..n)
        .map(|_| Answer::Output {
            output: json!({"ok": true}),
            event: None,
        })
        .collect();
    Answers { model, tool }
}

/// One whole run with prebuilt answers: start, one turn, every call answered (lowest
/// branch first), finish. Returns the run so that dropping it is not timed.
fn run_prebuilt(program: &Arc<Program>, input: Value, answers: Answers) -> Run {
    let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
    drive(&mut run, input, answers);
    run
}

/// Drives a new or reset run to its end with prebuilt answers.
fn drive(run: &mut Run, input: Value, mut answers: Answers) {
    packc_suite::drive_to_end(run, input, |call| answers.next(call.is_model()));
}

/// The same, the host cloning its fixed answer for each call inside the timed loop.
fn run_cloning(program: &Arc<Program>, input: &Value, model: &Value, events: &[&str]) -> Run {
    let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
    let mut turn = 0;
    packc_suite::drive_to_end(&mut run, input.clone(), |call| {
        let output = if call.is_model() {
            model.clone()
        } else {
            json!({"ok": true})
        };
        let event = call
            .is_model()
            .then(|| events.get(turn).map(|e| (*e).to_owned()))
            .flatten();
        turn += usize::from(call.is_model());
        Answer::Output { output, event }
    });
    run
}

fn bench_runs(c: &mut Criterion) {
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    let cases: &[(&str, &str, usize, &[&str])] = &[
        ("ex1", "examples/rfc0010-ex1.pack.yaml", 1, &[]),
        ("ex2", "examples/rfc0010-ex2.pack.yaml", 2, &[]),
        ("ex3", "examples/rfc0010-ex3.pack.yaml", 5, &[]),
        ("ex4", "examples/rfc0010-ex4.pack.yaml", 2, &[]),
        ("chain100", "benches/packs/chain-100.pack.yaml", 100, &[]),
        ("chain1000", "benches/packs/chain-1000.pack.yaml", 1000, &[]),
        (
            "workflow_support",
            "examples/guide-add-workflow.pack.yaml",
            3,
            &["billing", "resolved"],
        ),
    ];
    // Each case's program and input, loaded once for the three groups.
    let loaded: Vec<_> = cases
        .iter()
        .map(|&(name, path, calls, events)| {
            let input = if name == "workflow_support" {
                json!("I was charged twice")
            } else {
                input.clone()
            };
            (name, program(&root().join(path)), input, calls, events)
        })
        .collect();
    let mut group = c.benchmark_group("vm");
    for (name, p, input, calls, events) in &loaded {
        run_prebuilt(p, input.clone(), answers(*calls, events));
        group.bench_with_input(BenchmarkId::from_parameter(name), &p, |b, p| {
            b.iter_batched(
                || (input.clone(), answers(*calls, events)),
                |(input, answers)| run_prebuilt(p, input, answers),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    let mut group = c.benchmark_group("vm_reuse");
    for (name, p, input, calls, events) in &loaded {
        let mut run = Run::new(p.clone(), Target::Workflow, RunOptions::default()).unwrap();
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                || (input.clone(), answers(*calls, events)),
                |(input, answers)| {
                    run.reset();
                    drive(&mut run, input, answers);
                    // The outputs are dropped by the next reset, inside the timing.
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    let mut group = c.benchmark_group("vm_host");
    let model = model_output();
    for (name, p, input, _, events) in &loaded {
        group.bench_with_input(BenchmarkId::from_parameter(name), &p, |b, p| {
            b.iter_batched(
                || (),
                |()| run_cloning(p, input, &model, events),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// `examples/rfc0010-ex2.pack.yaml` with three built-in validators on each prompt, none
/// of which triggers on [`workloads::text_answer`]: a banned-word list, a character limit, a regex.
fn guarded_ex2() -> Arc<Program> {
    let source = std::fs::read_to_string(root().join("examples/rfc0010-ex2.pack.yaml")).unwrap();
    let source = workloads::guarded_ex2(&source);
    let options = packc_compiler::Options {
        base_dir: Some(root().join("examples")),
        ..Default::default()
    };
    let (checked, artifact) = packc_compiler::build_artifact(source.as_bytes(), &options).unwrap();
    let module = artifact
        .unwrap_or_else(|| panic!("{:?}", checked.diagnostics))
        .module;
    assert!(module.prompts.iter().all(|p| p.guards.len() == 3));
    Arc::new(Program::new(module).unwrap())
}

/// `vm_guard/ex2_text` and `vm_guard/ex2_guarded`: ex2 answered with [`workloads::text_answer`]
/// twice, without and with three validators per prompt; the difference over the two
/// answers is the cost of three built-in validators on a 200-character answer.
fn bench_guards(c: &mut Criterion) {
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    let text = workloads::text_answer();
    let text_answers = || Answers {
        model: vec![
            Answer::Output {
                output: text.clone(),
                event: None,
            };
            2
        ],
        tool: Vec::new(),
    };
    let plain = program(&root().join("examples/rfc0010-ex2.pack.yaml"));
    let guarded = guarded_ex2();
    let mut group = c.benchmark_group("vm_guard");
    // The three validators of a prompt on the 200-character answer, alone.
    let answer = text.as_str().unwrap();
    assert_eq!(judge_prompt(&guarded, 0, answer), 0);
    group.bench_function("judge3_200", |b| {
        b.iter(|| judge_prompt(&guarded, 0, std::hint::black_box(answer)))
    });
    for (name, p) in [("ex2_text", &plain), ("ex2_guarded", &guarded)] {
        let run = run_prebuilt(p, input.clone(), text_answers());
        assert!(run.outcome().is_some(), "{name} runs to its end");
        assert!(run
            .trace_lines()
            .iter()
            .all(|l| !l.starts_with("guardrail")));
        group.bench_with_input(BenchmarkId::from_parameter(name), p, |b, p| {
            b.iter_batched(
                || (input.clone(), text_answers()),
                |(input, answers)| run_prebuilt(p, input, answers),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn bench_predicates(c: &mut Criterion) {
    let input = workloads::pred_input();
    let compare = Compiled::new(&workloads::compare_pred());
    // RFC 0010 example 4's predicate; every clause is false, so all three run.
    let any_of = Compiled::new(&workloads::any_of_pred());
    assert_eq!(compare.eval_input(&input), Ok(true));
    assert_eq!(any_of.eval_input(&input), Ok(false));
    let mut group = c.benchmark_group("vm_pred");
    group.bench_function("compare", |b| {
        b.iter(|| compare.eval_input(std::hint::black_box(&input)))
    });
    group.bench_function("any_of_3", |b| {
        b.iter(|| any_of.eval_input(std::hint::black_box(&input)))
    });
    group.finish();
}

/// Example 2 (`examples/rfc0010-ex2.pack.yaml`) written by hand, with no VM: take the
/// input's `text`, ask the host for `doc_classifier`, compare the answer's `type` with
/// `"research_paper"`, ask for the chosen extractor and return its answer, the
/// composition's output. `ask` gets the prompt key and the call's input, as a host
/// gets them from a VM call.
///
/// The classifier's answer is returned beside the output rather than dropped here: the
/// VM keeps it in its run's slots, freed when the run is dropped, which `vm/ex2` does
/// not time. Freeing a six-member answer is most of this function's own instructions.
fn floor_ex2(input: &Value, ask: &mut impl FnMut(&str, &Value) -> Value) -> (Value, Value) {
    let text = &input["text"];
    let class = ask("doc_classifier", text);
    let extractor = if class.get("type").and_then(Value::as_str) == Some("research_paper") {
        "research_paper_extractor"
    } else {
        "general_doc_extractor"
    };
    (ask(extractor, text), class)
}

/// The output of one answer, as [`floor_ex2`]'s host returns it.
fn output_of(answer: Answer) -> Value {
    match answer {
        Answer::Output { output, .. } => output,
        other => panic!("a prebuilt answer is an output: {other:?}"),
    }
}

/// `floor/ex2` beside `vm/ex2`: the same input and prebuilt answers, asked of the same
/// host. Before timing, both branches of the VM's run and of [`floor_ex2`] are compared:
/// the same calls (prompt key, input) in the same order and the same output.
fn bench_floor(c: &mut Criterion) {
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    let p = program(&root().join("examples/rfc0010-ex2.pack.yaml"));
    for kind in ["research_paper", "manual"] {
        let mut classify = model_output();
        classify["type"] = json!(kind);
        let extracted = json!({"summary": format!("a {kind}"), "entities": []});
        let prebuilt = || Answers {
            model: [extracted.clone(), classify.clone()]
                .map(|output| Answer::Output {
                    output,
                    event: None,
                })
                .into(),
            tool: Vec::new(),
        };
        let options = RunOptions {
            record_calls: true,
            ..RunOptions::default()
        };
        let mut run = Run::new(p.clone(), Target::Workflow, options).unwrap();
        drive(&mut run, input.clone(), prebuilt());
        let vm_calls: Vec<(String, Value)> = run
            .calls()
            .into_iter()
            .map(|call| match call {
                packc_vm::CallRecord::Model { prompt, input, .. } => (prompt, input),
                other => panic!("ex2 makes model calls only: {other:?}"),
            })
            .collect();
        let mut answers = prebuilt();
        let mut floor_calls = Vec::new();
        let (output, _) = floor_ex2(&input, &mut |task, input| {
            floor_calls.push((task.to_owned(), input.clone()));
            output_of(answers.next(true))
        });
        assert_eq!(
            floor_calls, vm_calls,
            "{kind}: the floor makes the VM's calls"
        );
        assert_eq!(
            &output,
            run.outcome().unwrap().output,
            "{kind}: same output"
        );
        assert_eq!(output, extracted);
    }
    let mut group = c.benchmark_group("floor");
    group.bench_function("ex2", |b| {
        b.iter_batched(
            || (input.clone(), answers(2, &[])),
            |(input, mut answers)| {
                // The input and both answers are returned, as `vm/ex2` keeps them in the
                // run: neither row times dropping them.
                let kept = floor_ex2(&input, &mut |_, _| output_of(answers.next(true)));
                (kept, input)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_runs,
    bench_floor,
    bench_predicates,
    bench_guards
);
criterion_main!(benches);
