//! A host driven by fuzzer bytes: it answers a run with arbitrary answers (outputs with
//! or without events, errors, tool calls naming offered or unknown tools), caller turns,
//! events and `Finish`, clock readings that may jump or go backwards; it snapshots and
//! restores the run at arbitrary points, feeds `restore` damaged snapshots, and breaks
//! the resume protocol on purpose.
//!
//! What it asserts (beyond "no panic"), each a documented promise of `packc_vm`:
//!
//! - `Need::Calls` / `Need::Wait` leave at least one call outstanding;
//! - `Need::Done` comes with an outcome; an error returned for an input the run asked
//!   for ends the run;
//! - an input the run did not ask for is a `protocol` error that leaves the run as it
//!   was (its snapshot is unchanged);
//! - `restore(snapshot())` is the same run (it snapshots to the same bytes);
//! - a `reset` run is a fresh run (nothing outstanding, it starts like a new one).
//!
//! Every run is bounded: at most [`MAX_RESUMES`] resumes, and the embedder's call cap
//! (`RunOptions::max_host_calls`) is usually set.

use std::sync::Arc;

use arbitrary::{Result, Unstructured};
use ir_spec::{AgentId, CompId};
use packc_vm::driver::{drive_with, Host};
use packc_vm::{
    Answer, CallId, CallView, ErrorKind, Input, Need, Program, Run, RunOptions, Target, ToolRequest,
};

use crate::json::{self, MAX_DEPTH};
use crate::packs::Pool;

/// The most resumes of one run.
pub const MAX_RESUMES: usize = 200;

/// The words a module uses (its string table and event names), plus the pool's events.
pub fn words<'a>(program: &'a Program, pool: &'a Pool) -> Vec<&'a str> {
    let m = program.module();
    let mut words: Vec<&str> = m.strings.iter().map(String::as_str).collect();
    words.extend(pool.events.iter().map(String::as_str));
    words
}

/// A target of the module: its workflow, an agent member or a composition; sometimes
/// one parsed from arbitrary text (`None` when the text names nothing).
pub fn target(
    u: &mut Unstructured<'_>,
    program: &Program,
    words: &[&str],
) -> Result<Option<Target>> {
    let m = program.module();
    let mut targets = Vec::new();
    if m.workflow.is_some() {
        targets.push(Target::Workflow);
    }
    targets.extend(
        (0..m.agents.len())
            .filter_map(AgentId::from_index)
            .map(Target::Agent),
    );
    targets.extend(
        (0..m.compositions.len())
            .filter_map(CompId::from_index)
            .map(Target::Composition),
    );
    if targets.is_empty() || u.ratio(1u8, 16u8)? {
        let prefix = *u.choose(&["workflow", "agent:", "composition:", ""])?;
        let text = format!("{prefix}{}", json::word(u, words)?);
        return Ok(Target::parse(m, &text).ok());
    }
    Ok(Some(*u.choose(&targets)?))
}

/// Run options: host variables, the call cap (usually set), the call log, sometimes
/// small value and snapshot limits.
pub fn options(u: &mut Unstructured<'_>, words: &[&str]) -> Result<RunOptions> {
    let host_variables = if u.ratio(1u8, 4u8)? {
        json::object(u, words, 1)?
    } else {
        Default::default()
    };
    let max_host_calls = if u.ratio(1u8, 8u8)? {
        None
    } else {
        Some(u.int_in_range(0..=48u64)?)
    };
    let mut options = RunOptions {
        host_variables,
        max_host_calls,
        record_calls: u.arbitrary()?,
        ..RunOptions::default()
    };
    // Sometimes the embedder's value and snapshot limits are tight enough to be reached.
    if u.ratio(1u8, 4u8)? {
        options.max_value_bytes = u.int_in_range(0..=2048)?;
        options.max_value_depth = u.int_in_range(0..=6)?;
        options.max_snapshot_bytes = u.int_in_range(0..=4096)?;
        options.max_built_bytes = u.int_in_range(0..=4096)?;
    }
    Ok(options)
}

/// Runs `program` against a target, with options and host behaviour taken from `u`.
pub fn drive(u: &mut Unstructured<'_>, program: &Arc<Program>, pool: &Pool) -> Result<()> {
    let words = words(program, pool);
    let Some(target) = target(u, program, &words)? else {
        return Ok(());
    };
    let options = options(u, &words)?;
    let mut run = match Run::new(program.clone(), target, options.clone()) {
        Ok(run) => run,
        Err(e) => {
            // The target does not fit, or the host variables are past the limits.
            assert!(
                matches!(e.kind, ErrorKind::InvalidTarget | ErrorKind::LimitExceeded),
                "Run::new failed: {e}"
            );
            return Ok(());
        }
    };
    let max_built = options.max_built_bytes;
    let mut host = Fuzzed {
        u,
        program,
        pool,
        words: &words,
        clock: 0,
        failed: None,
    };
    let mut resumes = 0;
    let drove = drive_with(
        &mut run,
        &mut host,
        |h| h.caller(),
        |h, run, last, _| {
            if let Some(e) = h.failed.take() {
                return Err(Stop::Data(e));
            }
            resumes += 1;
            let Some(need) = last else {
                return Ok(());
            };
            observe_calls(run, need, max_built);
            if resumes > MAX_RESUMES || h.u.is_empty() {
                return Err(Stop::Bound);
            }
            if h.u.ratio(1u8, 16u8)? {
                misuse(h.u, run, need, h.words)?;
            }
            if h.u.ratio(1u8, 8u8)? {
                if let Some(restored) = round_trip(run, &options) {
                    *run = restored;
                }
            }
            if h.u.ratio(1u8, 32u8)? {
                damaged_restore(h.u, run, &options)?;
            }
            Ok(())
        },
    );
    match drove {
        Ok(result) => {
            // The input was one the run asked for, so an error ends the run, but for a
            // caller's turn or event past the value limits, which is refused with the run
            // still waiting for the caller; the loop itself found no broken promise (a
            // `Need::Done` without an outcome, a wait with no call outstanding).
            if let Err(e) = &result {
                let refused = e.kind == ErrorKind::LimitExceeded
                    && run.waiting_for() == Some(packc_vm::Need::Caller);
                assert!(
                    run.is_finished() || refused,
                    "a run that returned {e} is not finished"
                );
                assert_ne!(e.kind, ErrorKind::Internal, "{e}");
            }
            observe_end(&run);
        }
        Err(Stop::Data(e)) => return Err(e),
        Err(Stop::Bound) => {}
    }
    // The run, reset, is a fresh run of the same program, target and options (its lanes
    // keep their buffers, so its snapshot may differ; what it does may not).
    run.reset();
    let mut fresh = Run::new(program.clone(), target, options).expect("Run::new succeeded before");
    assert_eq!(
        run.pending().count(),
        0,
        "a reset run has calls outstanding"
    );
    assert!(run.outcome().is_none(), "a reset run has an outcome");
    assert!(run.trace().is_empty() && run.calls().is_empty() && run.evals().is_empty());
    let (a, b) = (run.resume(Input::Start), fresh.resume(Input::Start));
    assert_eq!(a, b, "a reset run starts unlike a new one");
    assert_eq!(run.pending().count(), fresh.pending().count());
    assert_eq!(run.trace_lines(), fresh.trace_lines());
    Ok(())
}

/// Why a fuzzed drive stopped before the run ended.
enum Stop {
    /// The fuzzer's bytes ran out or did not fit.
    Data(arbitrary::Error),
    /// [`MAX_RESUMES`] resumes, or no bytes left.
    Bound,
}

impl From<arbitrary::Error> for Stop {
    fn from(e: arbitrary::Error) -> Stop {
        Stop::Data(e)
    }
}

/// The host of one fuzzed drive: answers, clock readings, the pick and the caller's
/// moves all come from the fuzzer's bytes. A failure to read them is kept in `failed`
/// and stops the drive before the next resume.
struct Fuzzed<'u, 'a, 'p> {
    u: &'u mut Unstructured<'a>,
    program: &'p Arc<Program>,
    pool: &'p Pool,
    words: &'p [&'p str],
    clock: u64,
    failed: Option<arbitrary::Error>,
}

impl Fuzzed<'_, '_, '_> {
    /// Keeps the first failure; `fallback` stands in for the value.
    fn keep<T>(&mut self, r: Result<T>, fallback: T) -> T {
        r.unwrap_or_else(|e| {
            self.failed.get_or_insert(e);
            fallback
        })
    }

    /// The caller's move: a turn, an event, or `Finish`.
    fn caller(&mut self) -> std::result::Result<Input, Stop> {
        Ok(match self.u.choose_index(5)? {
            0 | 1 => Input::Turn(turn(self.u, self.pool, self.words)?),
            2 => Input::Event(event(self.u, self.program, self.pool, self.words)?),
            _ => Input::Finish,
        })
    }
}

impl Host for Fuzzed<'_, '_, '_> {
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        let a = answer(self.u, call, self.pool, self.words);
        self.keep(a, Answer::Error("out of fuzzer bytes".into()))
    }

    fn clock(&mut self) -> u64 {
        let clock = self.clock;
        let next = (|| {
            Ok(match self.u.choose_index(4)? {
                0 => self.u.arbitrary()?,
                1 => clock.saturating_sub(self.u.int_in_range(0..=10_000)?),
                _ => clock.saturating_add(self.u.int_in_range(0..=100_000)?),
            })
        })();
        self.clock = self.keep(next, clock);
        self.clock
    }

    fn pick(&mut self, outstanding: &[CallView<'_>]) -> usize {
        let i = self.u.choose_index(outstanding.len());
        self.keep(i, 0)
    }
}

/// A caller turn's input: one of the example inputs, or an arbitrary value.
fn turn(u: &mut Unstructured<'_>, pool: &Pool, words: &[&str]) -> Result<serde_json::Value> {
    if !pool.turns.is_empty() && u.arbitrary()? {
        return Ok(u.choose(&pool.turns)?.clone());
    }
    json::value(u, words, MAX_DEPTH)
}

/// A caller event: one of the module's event names, of the pool's, or any word.
fn event(
    u: &mut Unstructured<'_>,
    program: &Program,
    pool: &Pool,
    words: &[&str],
) -> Result<String> {
    let m = program.module();
    if !m.events.is_empty() && u.arbitrary()? {
        let e = u.choose(&m.events)?;
        return Ok(m.str(*e).to_owned());
    }
    if !pool.events.is_empty() && u.arbitrary()? {
        return Ok(u.choose(&pool.events)?.clone());
    }
    json::word(u, words)
}

/// An answer to `call`: a scripted one of the example cases for its prompt or tool, or
/// an arbitrary output (maybe naming an event), tool calls or an error.
pub fn answer(
    u: &mut Unstructured<'_>,
    call: &CallView<'_>,
    pool: &Pool,
    words: &[&str],
) -> Result<Answer> {
    let key = call.prompt_task().or_else(|| call.tool());
    if let Some(list) = key.and_then(|k| pool.answers.get(k)) {
        if !list.is_empty() && u.arbitrary()? {
            return Ok(u.choose(list)?.clone());
        }
    }
    Ok(match u.choose_index(8)? {
        0..=3 => {
            let output = json::value(u, words, MAX_DEPTH)?;
            let events: Vec<&str> = call.events().collect();
            let event = match u.choose_index(3)? {
                0 => None,
                1 if !events.is_empty() => Some((*u.choose(&events)?).to_owned()),
                _ => Some(json::word(u, words)?),
            };
            Answer::Output { output, event }
        }
        4 | 5 => {
            let offered: Vec<&str> = call.offered_tools().map(|t| t.key).collect();
            let n = u.int_in_range(0..=3usize)?;
            let mut requests = Vec::with_capacity(n);
            for _ in 0..n {
                let name = if !offered.is_empty() && !u.ratio(1u8, 4u8)? {
                    (*u.choose(&offered)?).to_owned()
                } else {
                    json::word(u, words)?
                };
                let args = json::value(u, words, 2)?;
                requests.push(ToolRequest { name, args });
            }
            Answer::ToolCalls(requests)
        }
        6 => Answer::Error(json::word(u, words)?),
        // Echo the call's input, a shape the pack's bindings were written for.
        _ => Answer::Output {
            output: call.input().to_value(),
            event: None,
        },
    })
}

/// Breaks the protocol: an input the run did not ask for. It must be refused as a
/// `protocol` error that leaves the run as it was.
fn misuse(u: &mut Unstructured<'_>, run: &mut Run, need: Need, words: &[&str]) -> Result<()> {
    if need == Need::Done {
        return Ok(());
    }
    let bad = match u.choose_index(5)? {
        0 => Input::Start,
        1 => {
            let id = CallId(u.arbitrary()?);
            if run.call(id).is_some() {
                return Ok(());
            }
            Input::Answer(id, Answer::Error("misuse".into()))
        }
        2 if need != Need::Clock => Input::Clock(u.arbitrary()?),
        3 if need != Need::Caller => Input::Turn(json::value(u, words, 1)?),
        4 if need != Need::Caller => Input::Finish,
        _ => return Ok(()),
    };
    let before = run.snapshot();
    let issued_before: Vec<CallId> = run.issued().map(|c| c.id()).collect();
    let shown = format!("{bad:?}");
    match run.resume(bad) {
        Err(e) if e.kind == ErrorKind::Protocol => {}
        other => panic!("{shown} after Need::{need:?} was not refused: {other:?}"),
    }
    assert!(
        run.snapshot() == before,
        "a refused {shown} changed the run"
    );
    let issued_after: Vec<CallId> = run.issued().map(|c| c.id()).collect();
    assert_eq!(
        issued_before, issued_after,
        "a refused {shown} changed what was issued"
    );
    Ok(())
}

/// Snapshots and restores `run`; the restored run must snapshot to the same bytes. A
/// snapshot past the run's `max_snapshot_bytes` is refused, and the run goes on as it was.
/// The restore takes the run's own options, as its embedder would. `None`: the
/// snapshot was refused.
fn round_trip(run: &Run, options: &RunOptions) -> Option<Run> {
    let limit = options.max_snapshot_bytes;
    let Ok(bytes) = run.try_snapshot() else {
        let len = run.snapshot().len();
        assert!(
            len > limit,
            "a snapshot of {len} bytes refused under a limit of {limit}"
        );
        return None;
    };
    assert!(
        bytes.len() <= limit,
        "a snapshot of {} bytes past a limit of {limit}",
        bytes.len()
    );
    let restored = Run::restore_with(run.program().clone(), &bytes, options)
        .unwrap_or_else(|e| panic!("a fresh snapshot does not restore: {e}"));
    assert!(
        restored.snapshot() == bytes,
        "restore(snapshot()) snapshots differently"
    );
    Some(restored)
}

/// Damages a snapshot of `run` (a flipped byte, a cut, a spliced range), fixes its
/// checksum so that the damage reaches the decoder, and restores it: an error or a run,
/// never a panic. A damaged snapshot that restores is then driven a little.
fn damaged_restore(u: &mut Unstructured<'_>, run: &Run, options: &RunOptions) -> Result<()> {
    let mut bytes = run.snapshot();
    crate::mutate::damage(u, &mut bytes, 18, 8)?;
    crate::mutate::fix_fnv_trailer(&mut bytes);
    if let Ok(mut restored) = Run::restore_with(run.program().clone(), &bytes, options) {
        for _ in 0..8 {
            let pending: Vec<CallId> = restored.pending().map(|c| c.id()).collect();
            let input = match pending.first() {
                Some(id) => Input::Answer(
                    *id,
                    Answer::Output {
                        output: serde_json::Value::Null,
                        event: None,
                    },
                ),
                None => Input::Clock(0),
            };
            if restored.resume(input).is_err() {
                break;
            }
            // A damaged snapshot may hold calls issued before their text was measured.
            observe_calls(&restored, Need::Calls, usize::MAX);
        }
    }
    Ok(())
}

/// Reads what a host reads of the newly issued calls.
fn observe_calls(run: &Run, need: Need, max_built: usize) {
    if need != Need::Calls {
        return;
    }
    for call in run.issued() {
        let _ = (
            call.id(),
            call.branch(),
            call.is_model(),
            call.prompt_task(),
            call.tool(),
        );
        let _ = call.parameters().map(|p| p.parse());
        let _ = call.input().to_value();
        let mut text = String::new();
        call.input().write_text(&mut text);
        let system = call.system();
        assert!(
            system.len() <= max_built,
            "a system prompt of {} bytes",
            system.len()
        );
        let _ = call.offered_tools().count();
        let _ = call.events().count();
        let _ = call.output_schema();
        let _ = call.history();
        let _ = call.record().to_json();
    }
}

/// Reads what a host reads when a run ends.
fn observe_end(run: &Run) {
    let _ = run.outcome().map(|o| o.into_owned());
    let _ = run.trace_lines();
    let _ = run.calls();
    let _ = run.evals();
    assert_eq!(
        run.pending().count(),
        0,
        "a finished run has calls outstanding"
    );
}
