//! Record and replay: a live run written as a conformance-format case, so that it
//! becomes an offline regression test `packc test` replays.
//!
//! A live host answers the calls of a parallel step in whatever order they finish; the
//! scripted host of a case answers the lowest-numbered branch first, taking each answer
//! from the front of its prompt's (or tool's) queue. So the queues cannot be written in
//! the order the live answers came. Instead each live answer is kept under the call it
//! answered (its call-log record and its history, [`record_key`]); the run is then
//! replayed with a host that answers each call with the answer recorded for it, in the
//! scripted host's order, and the queues are written in the order the replay consumed
//! them. The expectations (output or error, state, trace, calls) come from running the
//! finished case with the scripted host itself, and [`to_case`] says whether they agree
//! with the live run.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use packc_vm::driver::{drive, Host, ScriptItem};
use packc_vm::{Answer, CallView, Program, Run, RunOptions, Target};
use serde_json::{json, Map, Value};

use crate::case::RunSpec;
use crate::runner::execute;
use crate::scripted::{parse_answer, ScriptedHost};

/// What a live run answered: each answer under the key of the call it answered, in
/// the order they arrived, and the clock readings in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recording {
    /// `(record_key(call), answer in the case format)`.
    pub answers: Vec<(String, Value)>,
    /// The clock readings, in milliseconds.
    pub clock: Vec<u64>,
}

/// A call's identity across runs: its call-log record (prompt, input, system / tool,
/// args) and its history. Call ids are not stable across runs (a parallel step issues
/// a branch's next call when its answer arrives); this is.
pub fn record_key(view: &CallView<'_>) -> String {
    json!({"call": view.record().to_json(), "history": view.history()}).to_string()
}

pub use crate::calls::answer_json;

/// What a case needs besides the recording.
#[derive(Clone, Debug)]
pub struct CaseSpec<'a> {
    /// `about`.
    pub about: String,
    /// `pack_file`, relative to the case file's folder.
    pub pack_file: String,
    /// The target text (`workflow`, `agent:<m>`, `composition:<c>`).
    pub target: &'a str,
    /// The caller's script.
    pub script: &'a [ScriptItem],
    /// Host variables.
    pub variables: &'a Map<String, Value>,
}

/// Why [`to_case`] could not write a case.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The target or the run cannot be set up for the program.
    #[error("{0}")]
    Run(#[from] packc_vm::RunError),
    /// Replaying the recording with the scripted host failed.
    #[error("{0}")]
    Replay(String),
}

/// The case, and whether its expectations (computed by replaying it with the scripted
/// host) agree with the live run's `live` result (output or error kind).
pub fn to_case(
    program: &Arc<Program>,
    recording: &Recording,
    spec: &CaseSpec<'_>,
    live: Result<&Value, &str>,
) -> Result<(Value, bool), RecordError> {
    let target = Target::parse(program.module(), spec.target)?;
    let mut replay = Replay {
        answers: HashMap::new(),
        prompts: BTreeMap::new(),
        tools: BTreeMap::new(),
        guards: BTreeMap::new(),
        extensions: BTreeMap::new(),
        clock: ScriptedHost::new(&RunSpec {
            clock: recording.clock.clone(),
            ..RunSpec::default()
        }),
        missing: 0,
    };
    for (key, answer) in &recording.answers {
        replay
            .answers
            .entry(key.clone())
            .or_default()
            .push_back(answer.clone());
    }
    let options = RunOptions {
        host_variables: spec.variables.clone(),
        ..RunOptions::default()
    };
    let mut run = Run::new(program.clone(), target, options)?;
    let _ = drive(&mut run, &mut replay, spec.script);

    let run_spec = RunSpec {
        target: spec.target.to_owned(),
        script: spec.script.to_vec(),
        prompts: queues(&replay.prompts),
        tools: queues(&replay.tools),
        guards: queues(&replay.guards),
        extensions: queues(&replay.extensions),
        clock: recording.clock.clone(),
        variables: spec.variables.clone(),
    };
    let actual = execute(program.module().clone(), &run_spec).map_err(RecordError::Replay)?;

    let mut host = Map::new();
    let to_map = |q: &BTreeMap<String, Vec<Value>>| {
        Value::Object(
            q.iter()
                .map(|(k, v)| (k.clone(), Value::Array(v.clone())))
                .collect(),
        )
    };
    if !replay.prompts.is_empty() {
        host.insert("prompts".into(), to_map(&replay.prompts));
    }
    if !replay.tools.is_empty() {
        host.insert("tools".into(), to_map(&replay.tools));
    }
    if !replay.guards.is_empty() {
        host.insert("guards".into(), to_map(&replay.guards));
    }
    if !replay.extensions.is_empty() {
        host.insert("extensions".into(), to_map(&replay.extensions));
    }
    if !recording.clock.is_empty() {
        host.insert("clock".into(), json!(recording.clock));
    }
    if !spec.variables.is_empty() {
        host.insert("variables".into(), Value::Object(spec.variables.clone()));
    }
    let mut run_m = Map::new();
    if spec.target != "workflow" {
        run_m.insert("target".into(), json!(spec.target));
    }
    match spec.script {
        [ScriptItem::Turn(input)] => {
            run_m.insert("input".into(), input.clone());
        }
        items => {
            run_m.insert(
                "script".into(),
                items
                    .iter()
                    .map(|i| match i {
                        ScriptItem::Turn(v) => json!({"turn": v}),
                        ScriptItem::Event(e) => json!({"event": e}),
                    })
                    .collect(),
            );
        }
    }
    run_m.insert("host".into(), Value::Object(host));

    let mut expect = Map::new();
    let agrees = match (&actual.result, live) {
        (Ok(o), Ok(out)) => o.output == *out,
        (Err(e), Err(kind)) => e.kind.as_str() == kind,
        _ => false,
    };
    match &actual.result {
        Ok(o) => {
            expect.insert("output".into(), o.output.clone());
            if let Some(s) = &o.state {
                expect.insert("state".into(), json!(s));
            }
            if !o.reply.is_empty() {
                expect.insert("reply".into(), json!(o.reply));
            }
        }
        Err(e) => {
            expect.insert("error".into(), json!(e.kind.as_str()));
        }
    }
    expect.insert("trace".into(), json!(actual.trace));
    expect.insert("calls".into(), Value::Array(actual.calls));
    let case = json!({
        "about": spec.about,
        "pack_file": spec.pack_file,
        "run": run_m,
        "expect": expect,
    });
    Ok((case, agrees && replay.missing == 0))
}

fn queues(q: &BTreeMap<String, Vec<Value>>) -> BTreeMap<String, VecDeque<Value>> {
    q.iter()
        .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
        .collect()
}

/// Answers each call with the answer recorded for it; notes the order answers are
/// consumed in, per prompt and tool.
struct Replay {
    answers: HashMap<String, VecDeque<Value>>,
    prompts: BTreeMap<String, Vec<Value>>,
    tools: BTreeMap<String, Vec<Value>>,
    /// Host validators' answers, by validator type.
    guards: BTreeMap<String, Vec<Value>>,
    /// Extension steps' answers, by step kind.
    extensions: BTreeMap<String, Vec<Value>>,
    /// Reads the recorded clock as the scripted host does.
    clock: ScriptedHost,
    missing: usize,
}

impl Host for Replay {
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        let key = record_key(call);
        let Some(answer) = self.answers.get_mut(&key).and_then(VecDeque::pop_front) else {
            self.missing += 1;
            return Answer::Error("no recorded answer for this call".into());
        };
        // A call routed to a provider other than `default` is recorded under
        // `provider/prompt_task`, so the case says which provider answered it.
        let guard = call.guard();
        let queue = match call.prompt_task() {
            None if guard.is_some() => self
                .guards
                .entry(guard.map(|g| g.validator).unwrap_or_default().to_owned())
                .or_default(),
            None if call.extension().is_some() => self
                .extensions
                .entry(call.extension().map(|e| e.0).unwrap_or_default().to_owned())
                .or_default(),
            Some(p) => {
                let key = match call.provider() {
                    Some(provider) if provider != "default" => format!("{provider}/{p}"),
                    _ => p.to_owned(),
                };
                self.prompts.entry(key).or_default()
            }
            None => self
                .tools
                .entry(call.tool().unwrap_or_default().to_owned())
                .or_default(),
        };
        queue.push(answer.clone());
        parse_answer(&answer)
    }

    fn clock(&mut self) -> u64 {
        self.clock.clock()
    }
}
