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
                matches!(e.kind, ErrorKind::Protocol | ErrorKind::LimitExceeded),
                "Run::new failed: {e}"
            );
            return Ok(());
        }
    };
    let mut clock = 0u64;
    let mut input = Input::Start;
    let mut need: Option<Need> = None;
    for _ in 0..MAX_RESUMES {
        if let Some(need) = need {
            if u.ratio(1u8, 16u8)? {
                misuse(u, &mut run, need, &words)?;
            }
            if u.ratio(1u8, 8u8)? {
                run = round_trip(run, &options);
            }
            if u.ratio(1u8, 32u8)? {
                damaged_restore(u, &run, &options)?;
            }
        }
        let next = match run.resume(input) {
            Ok(next) => next,
            Err(e) => {
                // The input was one the run asked for, so the error ends the run.
                assert!(run.is_finished(), "a run that returned {e} is not finished");
                observe_end(&run);
                break;
            }
        };
        observe_calls(&run, next, options.max_built_bytes);
        need = Some(next);
        input = match next {
            Need::Done => {
                assert!(run.outcome().is_some(), "Need::Done without an outcome");
                observe_end(&run);
                break;
            }
            Need::Clock => {
                clock = match u.choose_index(4)? {
                    0 => u.arbitrary()?,
                    1 => clock.saturating_sub(u.int_in_range(0..=10_000)?),
                    _ => clock.saturating_add(u.int_in_range(0..=100_000)?),
                };
                Input::Clock(clock)
            }
            Need::Caller => match u.choose_index(5)? {
                0 | 1 => Input::Turn(turn(u, pool, &words)?),
                2 => Input::Event(event(u, program, pool, &words)?),
                _ => Input::Finish,
            },
            Need::Calls | Need::Wait => {
                let pending: Vec<CallView<'_>> = run.pending().collect();
                assert!(
                    !pending.is_empty(),
                    "Need::{next:?} with no call outstanding"
                );
                let call = *u.choose(&pending)?;
                Input::Answer(call.id(), answer(u, &call, pool, &words)?)
            }
        };
        if u.is_empty() {
            break;
        }
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
/// The restore takes the run's own options, as its embedder would.
fn round_trip(run: Run, options: &RunOptions) -> Run {
    let limit = options.max_snapshot_bytes;
    let Ok(bytes) = run.try_snapshot() else {
        let len = run.snapshot().len();
        assert!(
            len > limit,
            "a snapshot of {len} bytes refused under a limit of {limit}"
        );
        return run;
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
    restored
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
