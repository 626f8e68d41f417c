//! Snapshots. First, suspended runs of `examples/rfc0010-ex1..ex4`: at every point where the
//! run waits for answers, the snapshot is at most 512 bytes plus the JSON text of the
//! values it holds (the turn input and the outputs stored so far), and a run restored
//! from it ends exactly as the original.

mod common;

use std::path::PathBuf;

use common::{out, prompts, tool_defs, Queues, HEAD};
use packc_vm::{Answer, Input, Need, Run, RunOptions, Target};
use serde_json::{json, Value};

/// `Run::waiting_for` reads from the run what its last resume returned (outstanding
/// calls as `Calls`), on the run and on a run restored from a snapshot taken at that
/// stop: `None` before the start and after a failure, `Done` at the end.
#[test]
fn waiting_for_is_what_the_last_resume_returned() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
                       "flagged_terms": [], "risk": 0.2});
    for name in ["rfc0010-ex2", "rfc0010-ex3"] {
        let program = common::program(&root.join(format!("examples/{name}.pack.yaml")));
        let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
        assert_eq!(run.waiting_for(), None, "{name}: before the start");
        let mut next = Input::Start;
        let mut turn = Some(json!({"text": "A paper.", "x": 0}));
        let mut seen = Vec::new();
        loop {
            let need = run.resume(next).unwrap();
            let want = if need == Need::Wait {
                Need::Calls
            } else {
                need
            };
            assert_eq!(run.waiting_for(), Some(want), "{name}: after {need:?}");
            let restored = Run::restore(program.clone(), &run.snapshot()).unwrap();
            assert_eq!(
                restored.waiting_for(),
                Some(want),
                "{name}: restored at {need:?}"
            );
            seen.push(need);
            let Some(input) = common::next_input(&run, need, &mut turn, |_| model.clone()) else {
                break;
            };
            next = input;
        }
        assert!(
            seen.contains(&Need::Caller) && seen.contains(&Need::Calls),
            "{seen:?}"
        );
        assert_eq!(seen.last(), Some(&Need::Done));
    }
    // A failed run waits for nothing.
    let program = common::program(&root.join("examples/rfc0010-ex1.pack.yaml"));
    let mut run = Run::new(program, Target::Workflow, RunOptions::default()).unwrap();
    assert_eq!(run.resume(Input::Start).unwrap(), Need::Caller);
    assert_eq!(
        run.resume(Input::Turn(json!({"text": "t"}))).unwrap(),
        Need::Calls
    );
    let id = run.pending().next().unwrap().id();
    assert!(run
        .resume(Input::Answer(id, Answer::Error("down".into())))
        .is_err());
    assert_eq!(run.waiting_for(), None);
}

#[test]
fn suspended_runs_are_small_and_resume_identically() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let input = json!({"text": "A paper about residual networks.", "x": 0});
    let model = json!({"type": "research_paper", "x": 1, "confidence": 0.9, "complexity": 3,
                       "flagged_terms": [], "risk": 0.2});
    let tool = json!({"ok": true});
    for name in ["rfc0010-ex1", "rfc0010-ex2", "rfc0010-ex3", "rfc0010-ex4"] {
        let program = common::program(&root.join(format!("examples/{name}.pack.yaml")));
        let mut run = Run::new(program.clone(), Target::Workflow, RunOptions::default()).unwrap();
        let mut next = Input::Start;
        let mut turn = Some(input.clone());
        // The JSON text of the values the run holds: the input, then each answer.
        let mut values = input.to_string().len();
        let mut largest = 0;
        loop {
            let need = run.resume(next).unwrap();
            if need == Need::Calls || need == Need::Wait {
                let bytes = run.snapshot();
                let overhead = bytes.len().saturating_sub(values);
                largest = largest.max(overhead);
                assert!(
                    overhead <= 512,
                    "{name}: a snapshot of {} bytes holds {values} bytes of values",
                    bytes.len()
                );
                // Continue on the restored run: it must behave as the original.
                run = Run::restore(program.clone(), &bytes).unwrap();
            }
            let answer = |call: &packc_vm::CallView<'_>| {
                let output = if call.is_model() {
                    model.clone()
                } else {
                    tool.clone()
                };
                values += output.to_string().len();
                output
            };
            let Some(input) = common::next_input(&run, need, &mut turn, answer) else {
                break;
            };
            next = input;
        }
        let out = run.outcome().unwrap();
        assert_eq!(out.state, Some("main"), "{name}");
        println!("{name}: snapshots at most {largest} bytes beyond their values");
    }
}

#[test]
fn damaged_or_foreign_snapshots_are_refused_never_a_panic() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ex3 = common::program(&root.join("examples/rfc0010-ex3.pack.yaml"));
    let ex2 = common::program(&root.join("examples/rfc0010-ex2.pack.yaml"));
    let mut run = Run::new(ex3.clone(), Target::Workflow, RunOptions::default()).unwrap();
    run.resume(Input::Start).unwrap();
    run.resume(Input::Turn(json!({"text": "doc"}))).unwrap();
    let bytes = run.snapshot();
    assert!(Run::restore(ex3.clone(), &bytes).is_ok());
    assert!(matches!(
        Run::restore(ex2, &bytes),
        Err(packc_vm::SnapshotError::OtherModule { .. })
    ));
    for len in 0..bytes.len() {
        assert!(
            Run::restore(ex3.clone(), &bytes[..len]).is_err(),
            "cut {len}"
        );
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            assert!(Run::restore(ex3.clone(), &b).is_err(), "flip {i}:{bit}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Restoring at every yield: a run saved after every resume and restored from the bytes
// (against a program built from a copy of the module decoded elsewhere) behaves exactly
// like the run that was never interrupted. The runs are the example packs with the
// answers of their cases (`examples/cases/*.case.yaml`), and small packs built here with
// random answers, parallel calls answered in a random order, the wall clock and embedder
// limits.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use ir_spec::Module;
use packc_host::{Case, PackSource, RunSpec};
use packc_vm::driver::{Host, ScriptItem};
use packc_vm::snapshot::{FORMAT_VERSION, MAGIC};
use packc_vm::{
    CallId, CallRecord, CallView, EvalRequest, OwnedOutcome, Program, RunError, SnapshotError,
    ToolRequest,
};
use proptest::prelude::*;

fn compile_in(yaml: &str, base_dir: Option<PathBuf>) -> Module {
    let options = packc_compiler::Options {
        base_dir,
        ..packc_compiler::Options::default()
    };
    let checked = packc_compiler::check_bytes(yaml.as_bytes(), &options);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    packc_compiler::lower(&checked, &options).expect("lowers")
}

fn program_of(m: &Module) -> Arc<Program> {
    Arc::new(Program::new(m.clone()).expect("program"))
}

/// The same program as another machine would have it: the module encoded, shipped,
/// decoded.
fn elsewhere(m: &Module) -> Arc<Program> {
    let bytes = postcard::to_allocvec(m).expect("encodes");
    Arc::new(Program::new(postcard::from_bytes(&bytes).expect("decodes")).expect("program"))
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Every example case with a run: its name, its module and its run spec.
fn example_cases() -> Vec<(String, Module, RunSpec)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(examples_dir().join("cases"))
        .expect("examples/cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".case.yaml"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let case = Case::read(&path).expect("reads");
        let (PackSource::File(pack), Some(spec)) = (&case.pack, case.run) else {
            continue;
        };
        let yaml = std::fs::read_to_string(pack).expect("pack file");
        let module = compile_in(&yaml, pack.parent().map(Path::to_path_buf));
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        out.push((name, module, spec));
    }
    assert!(out.len() >= 5, "found only {} example cases", out.len());
    out
}

/// An outstanding call as a host sees it: id, branch and what is called.
type Shown = (CallId, Option<u32>, CallRecord);

fn shown(c: &CallView<'_>) -> Shown {
    (c.id(), c.branch(), c.record())
}

/// Everything a run showed the host and left behind: every resume's result with the
/// calls it issued, the outcome, the logs.
#[derive(Debug, PartialEq)]
struct Record {
    needs: Vec<(Result<Need, RunError>, Vec<Shown>)>,
    result: Result<OwnedOutcome, RunError>,
    trace: Vec<String>,
    calls: Vec<CallRecord>,
    evals: Vec<EvalRequest>,
}

/// A host that answers from a [`Host`] and picks outstanding calls in a given order.
struct Driver<'a, H: Host> {
    host: H,
    /// Which outstanding call to answer next: `order[k] % outstanding`, cycling; empty:
    /// the lowest branch first ([`Host::pick`]).
    order: &'a [usize],
    picks: usize,
    /// The calls the host was told of ([`Run::issued`]) and has not answered.
    outstanding: BTreeMap<CallId, Shown>,
    script: VecDeque<ScriptItem>,
}

impl<H: Host> Driver<'_, H> {
    fn next(&mut self, run: &Run, need: Need) -> Input {
        match need {
            Need::Clock => Input::Clock(self.host.clock()),
            Need::Caller => match self.script.pop_front() {
                Some(ScriptItem::Turn(v)) => Input::Turn(v),
                Some(ScriptItem::Event(e)) => Input::Event(e),
                None => Input::Finish,
            },
            Need::Calls | Need::Wait => {
                let list: Vec<CallView<'_>> = run.pending().collect();
                assert!(!list.is_empty(), "the run waits with no outstanding call");
                let i = if self.order.is_empty() {
                    self.host.pick(&list)
                } else {
                    self.order[self.picks % self.order.len()] % list.len()
                };
                self.picks += 1;
                let call = &list[i];
                assert!(
                    self.outstanding.remove(&call.id()).is_some(),
                    "an outstanding call the host was never told of: {call:?}"
                );
                Input::Answer(call.id(), self.host.call(call))
            }
            Need::Done => unreachable!("a finished run is not resumed"),
        }
    }
}

/// Restores `run` from its snapshot against `program` and checks that the restored run
/// is indistinguishable from it. `known`: the calls the host knows to be outstanding;
/// `None` while the run wants the clock (calls issued before the clock request are
/// announced after it).
fn round_trip(
    run: &Run,
    program: &Arc<Program>,
    options: &RunOptions,
    known: Option<&BTreeMap<CallId, Shown>>,
) -> Run {
    let bytes = run.snapshot();
    let restored = Run::restore_with(program.clone(), &bytes, options).expect("restores");
    assert_eq!(restored.trace_lines(), run.trace_lines());
    assert_eq!(restored.calls(), run.calls());
    assert_eq!(restored.evals(), run.evals());
    assert_eq!(restored.is_finished(), run.is_finished());
    assert_eq!(
        restored.outcome().map(|o| o.into_owned()),
        run.outcome().map(|o| o.into_owned())
    );
    let pending = |r: &Run| r.pending().map(|c| shown(&c)).collect::<Vec<_>>();
    let issued = |r: &Run| r.issued().map(|c| shown(&c)).collect::<Vec<_>>();
    // A host that lost its own state learns the very same calls, under the same ids.
    assert_eq!(pending(&restored), pending(run));
    assert_eq!(issued(&restored), issued(run));
    if let Some(known) = known {
        assert_eq!(
            pending(&restored),
            known.values().cloned().collect::<Vec<_>>()
        );
    }
    // The snapshot of a restored run is the snapshot it came from.
    assert_eq!(restored.snapshot(), bytes);
    restored
}

/// Runs `module` to the end; with `snapshots`, every resume is followed by a snapshot
/// and the run continues as the run restored from it.
fn record<H: Host>(
    module: &Module,
    target: &str,
    options: &RunOptions,
    host: H,
    script: &[ScriptItem],
    order: &[usize],
    snapshots: bool,
) -> Record {
    let original = program_of(module);
    let restore_into = elsewhere(module);
    let target = Target::parse(original.module(), target).expect("target");
    let options = RunOptions {
        record_calls: true,
        ..options.clone()
    };
    let mut run = Run::new(original, target, options.clone()).expect("run");
    let mut driver = Driver {
        host,
        order,
        picks: 0,
        outstanding: BTreeMap::new(),
        script: script.iter().cloned().collect(),
    };
    if snapshots {
        run = round_trip(&run, &restore_into, &options, Some(&driver.outstanding));
    }
    let mut needs = Vec::new();
    let mut input = Input::Start;
    let result = loop {
        let res = run.resume(input);
        let issued: Vec<Shown> = match res {
            Ok(Need::Calls) => run.issued().map(|c| shown(&c)).collect(),
            _ => Vec::new(),
        };
        needs.push((res.clone(), issued.clone()));
        let need = match res {
            Ok(Need::Done) => break Ok(run.outcome().expect("an outcome").into_owned()),
            Err(e) => break Err(e),
            Ok(need) => need,
        };
        // Issued calls are outstanding before the host answers any of them.
        driver
            .outstanding
            .extend(issued.into_iter().map(|c| (c.0, c)));
        if snapshots {
            let known = (need != Need::Clock).then_some(&driver.outstanding);
            run = round_trip(&run, &restore_into, &options, known);
        }
        input = driver.next(&run, need);
    };
    if snapshots {
        run = round_trip(&run, &restore_into, &options, Some(&BTreeMap::new()));
    }
    Record {
        needs,
        result,
        trace: run.trace_lines(),
        calls: run.calls(),
        evals: run.evals(),
    }
}

fn spec_options(spec: &RunSpec) -> RunOptions {
    RunOptions {
        host_variables: spec.variables.clone(),
        ..RunOptions::default()
    }
}

#[test]
fn example_cases_restore_at_every_yield() {
    for (name, module, spec) in example_cases() {
        let opts = spec_options(&spec);
        let run = |snap| {
            let host = packc_host::ScriptedHost::new(&spec);
            record(&module, &spec.target, &opts, host, &spec.script, &[], snap)
        };
        let plain = run(false);
        let snapped = run(true);
        assert!(plain.result.is_ok(), "{name}: {:?}", plain.result);
        assert_eq!(plain, snapped, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any answer order of parallel calls: the snapshotted run matches the plain one.
    #[test]
    fn example_cases_restore_in_any_answer_order(
        order in proptest::collection::vec(0..8usize, 1..12),
    ) {
        for (name, module, spec) in example_cases() {
            let opts = spec_options(&spec);
            let run = |snap| {
                let host = packc_host::ScriptedHost::new(&spec);
                record(&module, &spec.target, &opts, host, &spec.script, &order, snap)
            };
            let plain = run(false);
            let snapped = run(true);
            prop_assert_eq!(&plain, &snapped, "{}", name);
        }
    }
}

fn parallel_pack() -> Module {
    compile_in(&common::parallel_pack(" For {{who}}."), None)
}

/// A workflow with events, a wall-clock budget, a tool loop and a parallel state.
fn workflow_pack() -> Module {
    compile_in(
        &format!(
            "{HEAD}{}{}workflow:
  version: 1
  entry: one
  engine: {{budget: {{max_wall_time_sec: 5, max_tool_calls: 4}}}}
  states:
    one: {{prompt_task: p, on_event: {{Next: two, Stay: one}}}}
    two: {{orchestration: composition, composition: c, on_event: {{Back: one}}}}
compositions:
  c:
    version: 1
    steps:
      - id: par
        kind: parallel
        reduce: {{strategy: barrier, into: got}}
        branches:
          - {{id: x, kind: tool, tool: t, args: {{n: 1}}}}
          - {{id: y, kind: prompt, prompt_task: q, input: '${{input}}'}}
",
            prompts(&["p", "q"], "").replace("  p: {id: p,", "  p: {tools: [t], id: p,"),
            tool_defs(&["t"])
        ),
        None,
    )
}

/// Options with the host variable `who` the parallel pack's templates read.
fn who() -> RunOptions {
    let mut options = RunOptions::default();
    options
        .host_variables
        .insert("who".into(), json!({"name": "the \"host\"", "n": 0.1}));
    options
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0..5i64).prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| json!(x)),
        "[a-z\u{e9}\u{1F600}]{0,6}".prop_map(Value::String),
        Just(json!({"z": [1, null, true], "a": {"b": "c"}})),
    ]
}

fn any_answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        any_value().prop_map(out),
        any_value().prop_map(|v| Answer::Output {
            output: v,
            event: Some("Next".into()),
        }),
        Just(Answer::Output {
            output: json!(1),
            event: Some("Back".into()),
        }),
        Just(Answer::Error("boom".into())),
        any_value().prop_map(|args| Answer::ToolCalls(vec![ToolRequest {
            name: "t".into(),
            args,
        }])),
        Just(Answer::ToolCalls(Vec::new())),
    ]
}

fn answers(n: usize) -> impl Strategy<Value = Vec<Answer>> {
    proptest::collection::vec(any_answer(), 0..n)
}

fn any_script() -> impl Strategy<Value = Vec<ScriptItem>> {
    proptest::collection::vec(
        prop_oneof![
            any_value().prop_map(ScriptItem::Turn),
            Just(ScriptItem::Event("Next".into())),
            Just(ScriptItem::Event("Back".into())),
        ],
        0..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The parallel pack, random answers, random answer order, random embedder limit and
    /// several turns: snapshotting after every resume changes nothing.
    #[test]
    fn parallel_runs_restore_at_every_yield(
        a in answers(6), t in answers(4), u in answers(3), w in answers(3), v in answers(3),
        order in proptest::collection::vec(0..8usize, 0..12),
        script in any_script(),
        limit in proptest::option::of(0..8u64),
    ) {
        let m = parallel_pack();
        let host = Queues::default().with("a", a).with("t", t).with("u", u).with("w", w).with("v", v);
        let options = RunOptions { max_host_calls: limit, ..who() };
        let run = |snap| record(&m, "composition:c", &options, host.clone(), &script, &order, snap);
        let plain = run(false);
        let snapped = run(true);
        prop_assert_eq!(plain, snapped);
    }

    /// The workflow pack: caller turns and events, clock readings, budgets, transitions.
    #[test]
    fn workflow_runs_restore_at_every_yield(
        p in answers(6), q in answers(4), t in answers(4),
        clock in proptest::collection::vec(0..7000u64, 0..6),
        order in proptest::collection::vec(0..4usize, 0..6),
        script in any_script(),
    ) {
        let m = workflow_pack();
        let host = Queues { clock, ..Queues::default() }.with("p", p).with("q", q).with("t", t);
        let options = RunOptions::default();
        let run = |snap| record(&m, "workflow", &options, host.clone(), &script, &order, snap);
        let plain = run(false);
        let snapped = run(true);
        prop_assert_eq!(plain, snapped);
    }
}

/// The paths the random workflow runs may miss, pinned: a transition into the parallel
/// state, whose first branch issues its call before the second asks for the clock (so a
/// snapshot is taken while an issued call is not yet announced), answered last first.
#[test]
fn workflow_run_through_clock_and_parallel_restores() {
    let m = workflow_pack();
    let host = Queues {
        clock: vec![0, 10, 20, 30, 40],
        ..Queues::default()
    }
    .with(
        "p",
        vec![Answer::Output {
            output: json!("go"),
            event: Some("Next".into()),
        }],
    )
    .with("t", vec![out(json!({"t": 1}))])
    .with("q", vec![out(json!(2.5))]);
    let script = [ScriptItem::Turn(json!({"doc": "d"}))];
    let options = RunOptions::default();
    let run = |snap| record(&m, "workflow", &options, host.clone(), &script, &[1], snap);
    let plain = run(false);
    assert_eq!(plain, run(true));
    assert_eq!(
        plain.trace,
        [
            "enter one",
            "transition one -> two on Next",
            "enter two",
            "step par",
            "step x",
            "step y"
        ]
    );
    // Both branches' calls are announced together, after the clock reading.
    assert!(plain
        .needs
        .iter()
        .any(|(n, issued)| *n == Ok(Need::Calls) && issued.len() == 2));
    let outcome = plain.result.expect("done");
    assert_eq!(outcome.output, json!({"got": {"x": {"t": 1}, "y": 2.5}}));
    assert_eq!(outcome.state.as_deref(), Some("two"));
}

/// A snapshot taken while three parallel calls are outstanding, restored on "another
/// machine" that answers them in the reverse order.
#[test]
fn restored_run_answers_outstanding_parallel_calls() {
    let m = parallel_pack();
    let target = Target::parse(&m, "composition:c").expect("target");
    let options = RunOptions {
        record_calls: true,
        ..who()
    };
    let mut run = Run::new(program_of(&m), target, options.clone()).expect("run");
    assert_eq!(run.resume(Input::Start), Ok(Need::Caller));
    assert_eq!(run.resume(Input::Turn(json!(7))), Ok(Need::Calls));
    let issued: Vec<Shown> = run.issued().map(|c| shown(&c)).collect();
    assert_eq!(issued.len(), 3);
    let bytes = run.snapshot();
    drop(run);

    let mut run = Run::restore_with(elsewhere(&m), &bytes, &options).expect("restores");
    let pending: Vec<Shown> = run.pending().map(|c| shown(&c)).collect();
    assert_eq!(pending, issued);
    let mut answers = vec![
        out(json!(["from a"])),
        out(json!("from u")),
        out(json!("from w")),
    ];
    for call in issued.iter().rev() {
        let answer = answers.pop().expect("three answers");
        let need = run.resume(Input::Answer(call.0, answer)).expect("accepted");
        assert!(matches!(need, Need::Wait | Need::Calls), "{need:?}");
    }
    assert_eq!(
        run.trace_lines(),
        ["step p", "step b1", "step b2", "step b3", "step after"]
    );
    let after: Vec<CallRecord> = run.pending().map(|c| c.record()).collect();
    assert_eq!(
        after,
        [CallRecord::Tool {
            tool: "v".into(),
            args: json!({"all": ["from a", "from u", "from w"]}),
        }]
    );
}

/// A snapshot of the parallel pack with three calls outstanding, one of them retried.
fn mid_run_snapshot() -> (Module, Vec<u8>) {
    let m = parallel_pack();
    let target = Target::parse(&m, "composition:c").expect("target");
    let mut run = Run::new(program_of(&m), target, who()).expect("run");
    run.resume(Input::Start).expect("starts");
    assert_eq!(
        run.resume(Input::Turn(json!({"x": [1.5, "y"]}))),
        Ok(Need::Calls)
    );
    let second = run.pending().nth(1).expect("three calls").id();
    run.resume(Input::Answer(second, Answer::Error("flaky".into())))
        .expect("retried");
    (m, run.snapshot())
}

/// FNV-1a 64, to write a valid checksum over deliberately damaged bodies.
fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len() - 8;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &bytes[..n] {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    bytes[n..].copy_from_slice(&h.to_le_bytes());
    bytes
}

#[test]
fn every_flipped_bit_and_every_cut_is_a_named_error() {
    let (m, bytes) = mid_run_snapshot();
    let program = program_of(&m);
    assert!(Run::restore(program.clone(), &bytes).is_ok());
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[i] ^= 1 << bit;
            let err = Run::restore(program.clone(), &bad).expect_err("damaged");
            let expected = match i {
                0..8 => matches!(err, SnapshotError::BadMagic),
                8..10 => matches!(err, SnapshotError::Version { .. }),
                _ => matches!(err, SnapshotError::Checksum),
            };
            assert!(expected, "byte {i} bit {bit}: {err}");
        }
    }
    for len in 0..bytes.len() {
        let err = Run::restore(program.clone(), &bytes[..len]).expect_err("cut");
        assert!(
            matches!(
                err,
                SnapshotError::Truncated { .. } | SnapshotError::Checksum
            ),
            "cut at {len}: {err}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Run::restore(program, &longer).is_err());
}

#[test]
fn header_errors_are_named() {
    let (m, bytes) = mid_run_snapshot();
    let program = program_of(&m);
    let restore = |b: &[u8]| Run::restore(program.clone(), b).expect_err("refused");
    assert_eq!(restore(b""), SnapshotError::Truncated { len: 0 });
    assert_eq!(restore(&MAGIC[..5]), SnapshotError::Truncated { len: 5 });
    assert_eq!(restore(b"PK\x03\x04 a zip file"), SnapshotError::BadMagic);
    let mut newer = bytes.clone();
    newer[8..10].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    assert_eq!(
        restore(&newer),
        SnapshotError::Version {
            found: FORMAT_VERSION + 1,
            supported: FORMAT_VERSION
        }
    );
    let mut garbage = bytes[..18].to_vec();
    garbage.extend_from_slice(&[0xff; 9]);
    garbage.extend_from_slice(&[0; 8]);
    assert!(matches!(
        restore(&reseal(garbage)),
        SnapshotError::Decode(_)
    ));
}

#[test]
fn a_snapshot_is_refused_for_another_module() {
    let (_, bytes) = mid_run_snapshot();
    assert!(matches!(
        Run::restore(program_of(&workflow_pack()), &bytes),
        Err(SnapshotError::OtherModule { .. })
    ));
    // A one-character change of the pack is another module too.
    let mut tweaked = parallel_pack();
    tweaked.id.push('!');
    assert!(matches!(
        Run::restore(program_of(&tweaked), &bytes),
        Err(SnapshotError::OtherModule { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary damage behind a valid checksum (so the decoder and the fit checks see
    /// it): restore returns, it never panics; a restored damaged run, driven on, does
    /// not panic either.
    #[test]
    fn damaged_bodies_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let (m, bytes) = mid_run_snapshot();
        let mut body = bytes[18..bytes.len() - 8].to_vec();
        for (i, b) in edits {
            let i = i.index(body.len());
            body[i] = b;
        }
        if do_cut {
            body.truncate(cut.index(body.len() + 1));
        }
        let mut bad = bytes[..18].to_vec();
        bad.extend_from_slice(&body);
        bad.extend_from_slice(&[0; 8]);
        if let Ok(mut run) = Run::restore(program_of(&m), &reseal(bad)) {
            let mut host = Queues::default();
            for _ in 0..16 {
                let Some(call) = run.pending().next() else { break };
                let _ = call.input().to_value();
                let _ = call.system();
                let _ = call.history();
                let input = Input::Answer(call.id(), host.call(&call));
                if run.resume(input).is_err() {
                    break;
                }
            }
            let _ = run.trace_lines();
            let _ = run.evals();
        }
    }

    /// Random bytes, with or without the magic in front, are refused.
    #[test]
    fn random_bytes_are_refused(
        tail in proptest::collection::vec(any::<u8>(), 0..200),
        magic in any::<bool>(),
    ) {
        let mut bytes = if magic { MAGIC.to_vec() } else { Vec::new() };
        bytes.extend_from_slice(&tail);
        prop_assert!(Run::restore(program_of(&parallel_pack()), &bytes).is_err());
    }
}
