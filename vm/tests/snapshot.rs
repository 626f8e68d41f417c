//! Snapshots: a run saved after every resume and restored from the bytes (against a copy
//! of the module decoded elsewhere) behaves exactly like the run that was never
//! interrupted; damaged, foreign or mismatched bytes are errors, never panics.
//!
//! The runs are the example packs with the answers of their cases
//! (`examples/cases/*.case.yaml`), and small packs built here with random answers,
//! parallel calls answered in a random order, the wall clock and embedder limits.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir_spec::Module;
use packc_host::{Case, PackSource, RunSpec, ScriptedHost};
use packc_vm::driver::{Host, ScriptItem};
use packc_vm::snapshot::{FORMAT_VERSION, MAGIC};
use packc_vm::{
    Answer, Call, CallId, CallRecord, EvalRequest, HostCall, Input, Need, Outcome, Run, RunError,
    RunOptions, SnapshotError, Target, ToolRequest,
};
use proptest::prelude::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// Building runs

fn compile(yaml: &str, base_dir: Option<PathBuf>) -> Module {
    let options = packc_compiler::Options {
        base_dir,
        ..packc_compiler::Options::default()
    };
    let checked = packc_compiler::check_bytes(yaml.as_bytes(), &options);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    packc_compiler::lower(&checked, &options).expect("lowers")
}

/// The same module as another machine would have it: encoded, shipped, decoded.
fn elsewhere(m: &Module) -> Arc<Module> {
    let bytes = postcard::to_allocvec(m).expect("encodes");
    Arc::new(postcard::from_bytes(&bytes).expect("decodes"))
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
        let module = compile(&yaml, pack.parent().map(Path::to_path_buf));
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

/// Everything a run showed the host and left behind.
#[derive(Debug, PartialEq)]
struct Record {
    needs: Vec<Result<Need, RunError>>,
    result: Result<Outcome, RunError>,
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
    outstanding: BTreeMap<CallId, HostCall>,
    script: VecDeque<ScriptItem>,
}

impl<H: Host> Driver<'_, H> {
    fn answer_one(&mut self) -> Input {
        let list: Vec<HostCall> = self.outstanding.values().cloned().collect();
        assert!(!list.is_empty(), "the run waits with no outstanding call");
        let i = if self.order.is_empty() {
            self.host.pick(&list)
        } else {
            self.order[self.picks % self.order.len()] % list.len()
        };
        self.picks += 1;
        let call = &list[i];
        self.outstanding.remove(&call.id);
        Input::Answer(call.id, self.host.call(call))
    }

    fn next(&mut self, need: &Need) -> Input {
        match need {
            Need::Clock => Input::Clock(self.host.clock()),
            Need::Caller => match self.script.pop_front() {
                Some(ScriptItem::Turn(v)) => Input::Turn(v),
                Some(ScriptItem::Event(e)) => Input::Event(e),
                None => Input::Finish,
            },
            Need::Calls(calls) => {
                self.outstanding
                    .extend(calls.iter().map(|c| (c.id, c.clone())));
                self.answer_one()
            }
            Need::Wait => self.answer_one(),
            Need::Done(_) => unreachable!("a finished run is not resumed"),
        }
    }
}

/// Restores `run` from its snapshot against `module` and checks that the restored run
/// is indistinguishable from it.
/// `outstanding`: the calls the host knows to be outstanding; `None` while the run
/// wants the clock (calls issued before the clock request are announced after it).
fn round_trip(
    run: &Run,
    module: &Arc<Module>,
    outstanding: Option<&BTreeMap<CallId, HostCall>>,
) -> Run {
    let bytes = run.snapshot();
    let restored = Run::restore(module.clone(), &bytes).expect("restores");
    assert_eq!(restored.trace(), run.trace());
    assert_eq!(restored.calls(), run.calls());
    assert_eq!(restored.evals(), run.evals());
    assert_eq!(restored.is_finished(), run.is_finished());
    assert_eq!(restored.pending(), run.pending());
    // A host that lost its own state learns the very same calls, under the same ids.
    assert_eq!(restored.outstanding(), run.outstanding());
    if let Some(known) = outstanding {
        let known: Vec<HostCall> = known.values().cloned().collect();
        assert_eq!(restored.outstanding(), known);
    }
    // The snapshot of a restored run is the snapshot it came from.
    assert_eq!(restored.snapshot(), bytes);
    restored
}

/// Runs `module` to the end; with `snapshots`, every resume is followed by a snapshot
/// and the run continues as the run restored from it.
#[allow(clippy::too_many_arguments)]
fn record<H: Host>(
    module: &Module,
    target: &str,
    options: &RunOptions,
    host: H,
    script: &[ScriptItem],
    order: &[usize],
    snapshots: bool,
) -> Record {
    let original = Arc::new(module.clone());
    let restore_into = elsewhere(module);
    let target = Target::parse(&original, target).expect("target");
    let mut run = Run::new(original, target, options.clone()).expect("run");
    let mut driver = Driver {
        host,
        order,
        picks: 0,
        outstanding: BTreeMap::new(),
        script: script.iter().cloned().collect(),
    };
    if snapshots {
        run = round_trip(&run, &restore_into, Some(&driver.outstanding));
    }
    let mut needs = Vec::new();
    let mut input = Input::Start;
    let result = loop {
        let res = run.resume(input);
        needs.push(res.clone());
        let need = match res {
            Ok(Need::Done(o)) => break Ok(o),
            Err(e) => break Err(e),
            Ok(need) => need,
        };
        if let Need::Calls(calls) = &need {
            // Issued calls are outstanding before the host answers any of them.
            let mut all = driver.outstanding.clone();
            all.extend(calls.iter().map(|c| (c.id, c.clone())));
            if snapshots {
                run = round_trip(&run, &restore_into, Some(&all));
            }
        } else if snapshots {
            let known = (need != Need::Clock).then_some(&driver.outstanding);
            run = round_trip(&run, &restore_into, known);
        }
        input = driver.next(&need);
    };
    if snapshots {
        run = round_trip(&run, &restore_into, Some(&BTreeMap::new()));
    }
    Record {
        needs,
        result,
        trace: run.trace(),
        calls: run.calls(),
        evals: run.evals(),
    }
}

fn spec_options(spec: &RunSpec) -> RunOptions {
    RunOptions {
        host_variables: spec.variables.clone(),
        max_host_calls: None,
    }
}

// ---------------------------------------------------------------------------------------
// The example packs

#[test]
fn example_cases_restore_at_every_yield() {
    for (name, module, spec) in example_cases() {
        let opts = spec_options(&spec);
        let run = |snap| {
            let host = ScriptedHost::new(&spec);
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
                let host = ScriptedHost::new(&spec);
                record(&module, &spec.target, &opts, host, &spec.script, &order, snap)
            };
            let plain = run(false);
            let snapped = run(true);
            prop_assert_eq!(&plain, &snapped, "{}", name);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Packs built here, with random answers

/// Answers from per-key queues (an empty queue answers with an error).
#[derive(Default, Clone)]
struct Queues {
    answers: BTreeMap<String, VecDeque<Answer>>,
    clock: Vec<u64>,
    reads: usize,
}

impl Queues {
    fn with(mut self, key: &str, answers: Vec<Answer>) -> Self {
        self.answers.insert(key.to_owned(), answers.into());
        self
    }
}

impl Host for Queues {
    fn call(&mut self, call: &HostCall) -> Answer {
        let key = match &call.call {
            Call::Model(m) => &m.prompt,
            Call::Tool(t) => &t.tool,
        };
        self.answers
            .get_mut(key)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| Answer::Error(format!("no scripted answer for {key}")))
    }
    fn clock(&mut self) -> u64 {
        let i = self.reads.min(self.clock.len().saturating_sub(1));
        self.reads += 1;
        self.clock.get(i).copied().unwrap_or(0)
    }
}

const HEAD: &str =
    "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: '{{variable}}'}\n";

/// Prompts whose templates say `Do <key>.` and then `extra`.
fn prompts(keys: &[&str], extra: &str) -> String {
    let mut s = String::from("prompts:\n");
    for k in keys {
        s.push_str(&format!(
            "  {k}: {{id: {k}, name: {k}, version: 1.0.0, system_template: 'Do {k}.{extra}'}}\n"
        ));
    }
    s
}

fn tool_defs(keys: &[&str]) -> String {
    let mut s = String::from("tools:\n");
    for k in keys {
        s.push_str(&format!("  {k}: {{name: {k}, description: {k}, parameters: {{type: object, properties: {{}}}}}}\n"));
    }
    s
}

/// A three-branch parallel (an agent with a tool loop, a retried tool, a prompt), then
/// a tool reading the merged outputs. The templates read the host variable `who`.
fn parallel_pack() -> Module {
    compile(
        &format!(
            "{HEAD}{}{}compositions:
  c:
    version: 1
    steps:
      - id: p
        kind: parallel
        reduce: {{strategy: append, into: all}}
        branches:
          - {{id: b1, kind: agent, prompt_task: a, input: '${{input}}', tools: [t], termination: {{max_steps: 3}}}}
          - {{id: b2, kind: tool, tool: u, args: {{q: '${{input}}'}}, modifiers: {{retry: {{max_attempts: 2}}}}}}
          - {{id: b3, kind: prompt, prompt_task: w, input: 'n=${{input}}'}}
      - {{id: after, kind: tool, tool: v, args: {{all: '${{p.output.all}}'}}}}
",
            prompts(&["a", "w"], " For {{who}}."),
            tool_defs(&["t", "u", "v"])
        ),
        None,
    )
}

/// A workflow with events, a wall-clock budget, a tool loop and a parallel state.
fn workflow_pack() -> Module {
    compile(
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

fn out(v: Value) -> Answer {
    Answer::Output {
        output: v,
        event: None,
    }
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
    assert!(plain
        .needs
        .iter()
        .any(|n| matches!(n, Ok(Need::Calls(c)) if c.len() == 2)));
    let outcome = plain.result.expect("done");
    assert_eq!(outcome.output, json!({"got": {"x": {"t": 1}, "y": 2.5}}));
    assert_eq!(outcome.state.as_deref(), Some("two"));
}

/// A snapshot taken while three parallel calls are outstanding, restored on "another
/// machine" that answers them in the reverse order.
#[test]
fn restored_run_answers_outstanding_parallel_calls() {
    let m = parallel_pack();
    let module = Arc::new(m.clone());
    let target = Target::parse(&module, "composition:c").expect("target");
    let mut run = Run::new(module, target, who()).expect("run");
    assert_eq!(run.resume(Input::Start), Ok(Need::Caller));
    let Ok(Need::Calls(issued)) = run.resume(Input::Turn(json!(7))) else {
        panic!("the parallel issues its calls")
    };
    assert_eq!(issued.len(), 3);
    let bytes = run.snapshot();
    drop(run);

    let mut run = Run::restore(elsewhere(&m), &bytes).expect("restores");
    assert_eq!(run.pending(), Some(Need::Calls(issued.clone())));
    let mut answers = vec![
        out(json!(["from a"])),
        out(json!("from u")),
        out(json!("from w")),
    ];
    for call in issued.iter().rev() {
        let answer = answers.pop().expect("three answers");
        let need = run
            .resume(Input::Answer(call.id, answer))
            .expect("accepted");
        assert!(matches!(need, Need::Wait | Need::Calls(_)), "{need:?}");
    }
    assert_eq!(
        run.trace(),
        ["step p", "step b1", "step b2", "step b3", "step after"]
    );
    let Some(Need::Calls(after)) = run.pending() else {
        panic!("`after` is outstanding")
    };
    assert_eq!(
        after[0].call,
        Call::Tool(packc_vm::ToolCall {
            tool: "v".into(),
            args: json!({"all": ["from a", "from u", "from w"]}),
        })
    );
}

// ---------------------------------------------------------------------------------------
// Bad bytes

/// A snapshot of the parallel pack with three calls outstanding.
fn mid_run_snapshot() -> (Module, Vec<u8>) {
    let m = parallel_pack();
    let module = Arc::new(m.clone());
    let target = Target::parse(&module, "composition:c").expect("target");
    let mut run = Run::new(module, target, who()).expect("run");
    run.resume(Input::Start).expect("starts");
    let Ok(Need::Calls(calls)) = run.resume(Input::Turn(json!({"x": [1.5, "y"]}))) else {
        panic!("calls")
    };
    run.resume(Input::Answer(calls[1].id, Answer::Error("flaky".into())))
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
fn every_flipped_bit_and_every_cut_is_an_error() {
    let (m, bytes) = mid_run_snapshot();
    let module = Arc::new(m);
    assert!(Run::restore(module.clone(), &bytes).is_ok());
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[i] ^= 1 << bit;
            let err = Run::restore(module.clone(), &bad).expect_err("damaged");
            let expected = match i {
                0..8 => matches!(err, SnapshotError::BadMagic),
                8..10 => matches!(err, SnapshotError::Version { .. }),
                _ => matches!(err, SnapshotError::Checksum),
            };
            assert!(expected, "byte {i} bit {bit}: {err}");
        }
    }
    for len in 0..bytes.len() {
        let err = Run::restore(module.clone(), &bytes[..len]).expect_err("cut");
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
    assert!(Run::restore(module.clone(), &longer).is_err());
}

#[test]
fn header_errors_are_named() {
    let (m, bytes) = mid_run_snapshot();
    let module = Arc::new(m);
    let restore = |b: &[u8]| Run::restore(module.clone(), b).expect_err("refused");
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
    let other = Arc::new(workflow_pack());
    assert!(matches!(
        Run::restore(other, &bytes),
        Err(SnapshotError::OtherModule { .. })
    ));
    // A one-character change of the pack is another module too.
    let mut tweaked = parallel_pack();
    tweaked.id.push('!');
    assert!(matches!(
        Run::restore(Arc::new(tweaked), &bytes),
        Err(SnapshotError::OtherModule { .. })
    ));
}

#[test]
fn a_log_that_does_not_replay_is_refused() {
    let (m, bytes) = mid_run_snapshot();
    // The last logged input answers call 1 (postcard: Answer = variant 4, then id 1).
    // Pointing it at call 2 gives a valid body whose replay issues something else.
    let body = &bytes[18..bytes.len() - 8];
    let at = body
        .windows(2)
        .rposition(|w| w == [4, 1])
        .expect("the logged answer");
    let mut bad = bytes.clone();
    bad[18 + at + 1] = 2;
    let err = Run::restore(Arc::new(m), &reseal(bad)).expect_err("diverges");
    assert!(
        matches!(err, SnapshotError::Diverged { index: 2, .. }),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Arbitrary damage behind a valid checksum (so the decoder and the replay see it):
    /// restore returns, it never panics.
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
        let _ = Run::restore(Arc::new(m), &reseal(bad));
    }

    /// Random bytes, with or without the magic in front, are refused.
    #[test]
    fn random_bytes_are_refused(
        tail in proptest::collection::vec(any::<u8>(), 0..200),
        magic in any::<bool>(),
    ) {
        let mut bytes = if magic { MAGIC.to_vec() } else { Vec::new() };
        bytes.extend_from_slice(&tail);
        prop_assert!(Run::restore(Arc::new(parallel_pack()), &bytes).is_err());
    }
}
