//! A multi-threaded host: every outstanding call runs on its own worker thread, and the
//! answers are fed back to the run one at a time, in whatever order they finish.
//!
//! The run itself stays on the main thread and needs no lock: the calls are
//! [`CallView`](packc_vm::CallView)s borrowed from the run, so the host copies out what a
//! worker needs (the prompt or tool key, the input, the rendered system prompt) as plain
//! data, which travels to the workers; the answers come back over a channel. The
//! pack is the bundled RFC 0010 Example 3: a four-branch parallel step, then an agent
//! step with a tool loop. The canned calls sleep for different times, so the branches
//! finish out of declaration order; the trace still reads branch by branch.
//!
//! ```text
//! cargo run -p packc-vm --example threaded_host
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use packc_vm::{
    Answer, CallId, CallView, Input, Need, Program, Run, RunOptions, Target, ToolRequest,
};
use serde_json::{json, Value};

/// A call as a worker gets it: owned, `Send` data copied out of the run's view.
#[derive(Debug)]
struct Request {
    id: CallId,
    /// The prompt key of a model call, the tool key of a tool call.
    name: String,
    /// The model input or the tool arguments.
    input: Value,
    /// A model call's rendered system prompt (empty for a tool call).
    system: String,
}

impl Request {
    fn of(call: &CallView<'_>) -> Request {
        Request {
            id: call.id(),
            name: name(call).to_owned(),
            input: call.input().to_value(),
            system: call.system(),
        }
    }
}

/// What a worker hands back: the call it ran and the answer.
type Done = (Request, Answer);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let program = Arc::new(Program::new(compile_example()?)?);
    let target = Target::parse(program.module(), "workflow")?;
    let options = RunOptions {
        // Keep the call log, printed at the end.
        record_calls: true,
        ..RunOptions::default()
    };
    let mut run = Run::new(program, target, options)?;
    let mut canned = canned_answers();
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let mut workers = Vec::new();
    let mut in_flight: BTreeMap<CallId, String> = BTreeMap::new();
    let mut finish_order = Vec::new();
    let mut turns = VecDeque::from([json!({
        "text": "Sparse Attention for Long Documents. We propose a block-sparse attention \
                 pattern. Sections: Introduction, Method, Experiments, Conclusion."
    })]);
    let started = Instant::now();

    let mut input = Input::Start;
    loop {
        let need = run.resume(input)?;
        input = match need {
            Need::Done => break,
            Need::Caller => match turns.pop_front() {
                Some(turn) => Input::Turn(turn),
                None => Input::Finish,
            },
            Need::Clock => Input::Clock(started.elapsed().as_millis() as u64),
            Need::Calls => {
                // The calls this resume issued; earlier ones are already in flight.
                for call in run.issued() {
                    let (answer, delay) = canned.answer(&call);
                    println!(
                        "issued   #{} {:<24} branch {:?}, takes {delay:?}",
                        call.id().0,
                        name(&call),
                        call.branch()
                    );
                    let request = Request::of(&call);
                    in_flight.insert(request.id, request.name.clone());
                    let tx = done_tx.clone();
                    workers.push(thread::spawn(move || {
                        // The "call": a real host would send `request.system` and
                        // `request.input` to a model, or the arguments to a tool, here.
                        thread::sleep(delay);
                        // The receiver outlives every worker: main joins them first.
                        let _ = tx.send((request, answer));
                    }));
                }
                next_answer(&done_rx, &mut in_flight, &mut finish_order)?
            }
            Need::Wait => next_answer(&done_rx, &mut in_flight, &mut finish_order)?,
        };
    }
    let outcome = run.outcome().ok_or("the run is done without an outcome")?;
    for w in workers {
        w.join().map_err(|_| "a worker panicked")?;
    }

    println!("\nfinished in this order: {}", finish_order.join(", "));
    println!("(the parallel branches are declared title, keywords, structure, citations)");
    println!("\ntrace (branch by branch, whatever the finish order):");
    for line in run.trace_lines() {
        println!("  {line}");
    }
    println!("\ncalls, in walk order:");
    for c in run.calls() {
        let shown = c.to_json();
        let label = shown
            .get("prompt")
            .or_else(|| shown.get("tool"))
            .cloned()
            .unwrap_or(Value::Null);
        println!("  {label}");
    }
    println!(
        "\noutput (state {:?}):\n{}",
        outcome.state,
        serde_json::to_string_pretty(&outcome.output)?
    );

    // The finish order is up to the threads; the trace is not.
    let branches = ["title", "keywords", "structure", "citations"];
    let trace = run.trace_lines();
    let steps: Vec<&str> = trace
        .iter()
        .filter_map(|l| l.strip_prefix("step "))
        .collect();
    assert_eq!(steps[1..5], branches, "the trace is in declaration order");
    Ok(())
}

/// Waits for the next worker to finish and turns its result into the next input.
fn next_answer(
    done: &mpsc::Receiver<Done>,
    in_flight: &mut BTreeMap<CallId, String>,
    finish_order: &mut Vec<String>,
) -> Result<Input, Box<dyn std::error::Error>> {
    if in_flight.is_empty() {
        return Err("the run waits, but no call is in flight".into());
    }
    let (request, answer) = done.recv()?;
    let label = in_flight.remove(&request.id).unwrap_or_default();
    println!(
        "answered #{} {label} (input of {} bytes, system prompt of {} bytes)",
        request.id.0,
        request.input.to_string().len(),
        request.system.len()
    );
    finish_order.push(label);
    Ok(Input::Answer(request.id, answer))
}

/// Compiles `examples/rfc0010-ex3.pack.yaml` (its schemas are read beside it).
fn compile_example() -> Result<ir_spec::Module, Box<dyn std::error::Error>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rfc0010-ex3.pack.yaml");
    let bytes = std::fs::read(&path)?;
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..packc_compiler::Options::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    if checked.has_errors() {
        return Err(format!("the pack does not check: {:?}", checked.diagnostics).into());
    }
    Ok(packc_compiler::lower(&checked, &options)?)
}

fn name<'r>(call: &CallView<'r>) -> &'r str {
    call.prompt_task()
        .or_else(|| call.tool())
        .unwrap_or_default()
}

/// Answers by prompt or tool key, each with how long the call takes.
struct Canned(BTreeMap<String, VecDeque<(Answer, Duration)>>);

impl Canned {
    fn answer(&mut self, call: &CallView<'_>) -> (Answer, Duration) {
        let key = name(call);
        self.0
            .get_mut(key)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| (Answer::Error(format!("no canned answer for {key}")), ms(0)))
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn out(v: Value) -> Answer {
    Answer::Output {
        output: v,
        event: None,
    }
}

fn tools(calls: &[(&str, Value)]) -> Answer {
    Answer::ToolCalls(
        calls
            .iter()
            .map(|(name, args)| ToolRequest {
                name: (*name).to_owned(),
                args: args.clone(),
            })
            .collect(),
    )
}

/// The answers of `examples/cases/rfc0010-ex3.case.yaml`, with latencies: the parallel
/// branches finish citations, keywords, structure, title, the reverse of their order.
fn canned_answers() -> Canned {
    let q = |items: Vec<(Answer, Duration)>| VecDeque::from(items);
    Canned(BTreeMap::from([
        (
            "title_extractor".to_owned(),
            q(vec![(
                out(json!("Sparse Attention for Long Documents")),
                ms(240),
            )]),
        ),
        (
            "keyword_extractor".to_owned(),
            q(vec![(
                out(json!(["sparse attention", "long documents"])),
                ms(80),
            )]),
        ),
        (
            "doc.parse_structure".to_owned(),
            q(vec![(
                out(json!({"sections": ["Introduction", "Method", "Experiments", "Conclusion"]})),
                ms(160),
            )]),
        ),
        (
            "doc.extract_citations".to_owned(),
            q(vec![(out(json!(["Vaswani et al. (2017)."])), ms(10))]),
        ),
        (
            "doc_analyzer".to_owned(),
            q(vec![
                (
                    tools(&[("doc.section_lookup", json!({"section": "Experiments"}))]),
                    ms(30),
                ),
                (
                    tools(&[
                        ("ref.search", json!({"query": "Attention Is All You Need"})),
                        ("kb.lookup", json!({"topic": "block-sparse attention"})),
                    ]),
                    ms(30),
                ),
                (
                    out(json!({
                        "summary": "Block-sparse attention at linear cost.",
                        "findings": ["matches dense perplexity on 16k-token inputs"],
                        "references": ["Vaswani et al. 2017"]
                    })),
                    ms(30),
                ),
            ]),
        ),
        (
            "doc.section_lookup".to_owned(),
            q(vec![(
                out(json!({"text": "3.1x faster than dense."})),
                ms(20),
            )]),
        ),
        (
            "ref.search".to_owned(),
            q(vec![(out(json!({"hits": [{"year": 2017}]})), ms(50))]),
        ),
        (
            "kb.lookup".to_owned(),
            q(vec![(
                out(json!({"entry": "Fixed key blocks per query."})),
                ms(5),
            )]),
        ),
    ]))
}
