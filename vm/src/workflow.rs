//! Workflow runs, plain agents and composition targets (`workflow.md` §2–§13, §15).

use ir_spec::{AgentStart, ArtifactMode, Orchestration, PromptId, StateBody, StateId, Workflow};
use serde_json::{json, Value};

use crate::api::{ErrorKind, Input, Outcome, RunError, Target};
use crate::compose;
use crate::exec::{Artifact, Core, Lane};
use crate::render::render;
use crate::toolloop::{self, End, Loop};

fn err(kind: ErrorKind, m: String) -> RunError {
    RunError::new(kind, m)
}

/// The whole run: waits for the caller's turns and events until it finishes.
pub(crate) async fn main(core: &Core, lane: &Lane, target: Target) -> Result<Outcome, RunError> {
    let m = core.m.clone();
    match target {
        Target::Workflow | Target::Agent(_) => {
            let start = match target {
                Target::Agent(a) => match m.agents[a.index()].start {
                    AgentStart::State(s) => Some(s),
                    AgentStart::Plain(p) => {
                        return plain_agent(core, lane, p, m.str(m.agents[a.index()].key)).await
                    }
                },
                _ => None,
            };
            let wf = m
                .workflow
                .as_ref()
                .ok_or_else(|| err(ErrorKind::Protocol, "the pack has no workflow".into()))?;
            workflow(core, lane, wf, start.unwrap_or(wf.entry)).await
        }
        Target::Composition(c) => loop {
            match core.next_caller_input().await {
                Input::Turn(input) => {
                    let out = compose::run(core, lane, c, &input).await?;
                    core.wf.borrow_mut().last_output = out;
                }
                Input::Event(e) => {
                    return Err(err(
                        ErrorKind::InvalidEvent,
                        format!("event `{e}` sent to a composition target"),
                    ))
                }
                _ => {
                    return Ok(Outcome {
                        output: core.wf.borrow().last_output.clone(),
                        state: None,
                    })
                }
            }
        },
    }
}

/// A plain agent member: each turn runs its prompt once, tool rounds allowed (§15).
async fn plain_agent(
    core: &Core,
    lane: &Lane,
    prompt: Option<PromptId>,
    member: &str,
) -> Result<Outcome, RunError> {
    let prompt = prompt.ok_or_else(|| {
        err(
            ErrorKind::Protocol,
            format!("agent member `{member}` has no prompt"),
        )
    })?;
    loop {
        match core.next_caller_input().await {
            Input::Turn(input) => {
                let (output, _event) =
                    prompt_exec(core, lane, prompt, input.clone(), Vec::new()).await?;
                let mut wf = core.wf.borrow_mut();
                wf.history.push(json!({"input": input, "output": output}));
                wf.last_output = output;
            }
            Input::Event(e) => {
                return Err(err(
                    ErrorKind::InvalidEvent,
                    format!("event `{e}` sent to plain agent `{member}`"),
                ))
            }
            _ => {
                return Ok(Outcome {
                    output: core.wf.borrow().last_output.clone(),
                    state: None,
                })
            }
        }
    }
}

/// Executes a prompt: render, then the tool loop with the prompt's policy (§6).
async fn prompt_exec(
    core: &Core,
    lane: &Lane,
    prompt: PromptId,
    input: Value,
    events: Vec<String>,
) -> Result<(Value, Option<String>), RunError> {
    let p = &core.m.prompts[prompt.index()];
    let system = render(core, p, &input)?;
    let history = core.wf.borrow().history.clone();
    let spec = Loop {
        prompt,
        system,
        input,
        history,
        tools: &p.tools,
        events,
        output_schema: None,
        max_turns: p.policy.max_rounds.unwrap_or(5),
        cap_is_error: true,
        max_tool_calls: Some(p.policy.max_tool_calls_per_turn.unwrap_or(10)),
        tool_called: None,
    };
    Ok(match toolloop::run(core, lane, spec).await? {
        End::Answer(v, e) => (v, e),
        End::ToolCalled(v) => (v, None),
        End::Exhausted => (Value::Null, None),
    })
}

/// A workflow run from `start` (§3): enter, then serve the caller.
async fn workflow(
    core: &Core,
    lane: &Lane,
    wf: &Workflow,
    start: StateId,
) -> Result<Outcome, RunError> {
    {
        let mut st = core.wf.borrow_mut();
        st.current = Some(start);
        st.visits[start.index()] = 1;
        st.total_visits = 1;
    }
    lane.sink.trace(format!(
        "enter {}",
        core.m.str(wf.states[start.index()].key)
    ));
    if core.budget.and_then(|b| b.max_wall_time_sec).is_some() {
        let now = core.read_clock().await;
        core.wf.borrow_mut().start_ms = now;
    }
    loop {
        match core.next_caller_input().await {
            Input::Turn(input) => turn(core, lane, wf, input).await?,
            Input::Event(e) => caller_event(core, lane, wf, &e).await?,
            _ => {
                let st = core.wf.borrow();
                let state = st
                    .current
                    .map(|s| core.m.str(wf.states[s.index()].key).to_owned());
                return Ok(Outcome {
                    output: st.last_output.clone(),
                    state,
                });
            }
        }
    }
}

fn current(core: &Core) -> StateId {
    core.wf.borrow().current.unwrap_or(StateId(0))
}

/// One turn (§5).
async fn turn(core: &Core, lane: &Lane, wf: &Workflow, input: Value) -> Result<(), RunError> {
    loop {
        let sid = current(core);
        let s = &wf.states[sid.index()];
        let (output, event) = match s.body {
            StateBody::Prompt(p) => {
                let may_name = !s.terminal && s.mode != Orchestration::External;
                let events = if may_name {
                    s.on_event
                        .iter()
                        .map(|(e, _)| core.m.event(*e).to_owned())
                        .collect()
                } else {
                    Vec::new()
                };
                prompt_exec(core, lane, p, input.clone(), events).await?
            }
            StateBody::Composition(c) => {
                let out = compose::run(core, lane, c, &input).await?;
                let event = out.get("event").and_then(Value::as_str).map(str::to_owned);
                (out, event)
            }
        };
        write_artifacts(core, wf, sid, &output);
        core.wf.borrow_mut().last_output = output;
        if s.terminal || s.mode == Orchestration::External {
            break;
        }
        let Some(event) = event else { break };
        transition(core, lane, wf, sid, &event).await?;
        if wf.states[current(core).index()].mode == Orchestration::External {
            break;
        }
    }
    let mut st = core.wf.borrow_mut();
    let output = st.last_output.clone();
    st.history.push(json!({"input": input, "output": output}));
    Ok(())
}

/// Writes the artifacts the state declares from its output's `artifacts` member (§11).
fn write_artifacts(core: &Core, wf: &Workflow, sid: StateId, output: &Value) {
    let Some(written) = output.get("artifacts").and_then(Value::as_object) else {
        return;
    };
    let mut st = core.wf.borrow_mut();
    for (aid, mode) in &wf.states[sid.index()].artifacts {
        let name = core.m.str(wf.artifacts[aid.index()]);
        let Some(v) = written.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        let slot = &mut st.artifacts[aid.index()];
        *slot = Some(match (mode, slot.take()) {
            (ArtifactMode::Replace, _) => Artifact::Value(v.clone()),
            (ArtifactMode::Append, None) => Artifact::List(vec![v.clone()]),
            (ArtifactMode::Append, Some(Artifact::Value(old))) => {
                Artifact::List(vec![old, v.clone()])
            }
            (ArtifactMode::Append, Some(Artifact::List(mut l))) => {
                l.push(v.clone());
                Artifact::List(l)
            }
        });
    }
}

/// A caller event (§9).
async fn caller_event(
    core: &Core,
    lane: &Lane,
    wf: &Workflow,
    event: &str,
) -> Result<(), RunError> {
    let sid = current(core);
    let s = &wf.states[sid.index()];
    let name = core.m.str(s.key);
    if s.terminal {
        return Err(err(
            ErrorKind::TerminalState,
            format!("event `{event}` sent to terminal state `{name}`"),
        ));
    }
    if matches!(s.mode, Orchestration::Internal | Orchestration::Composition) {
        return Err(err(
            ErrorKind::InvalidEvent,
            format!("caller event `{event}` sent to state `{name}`, which the model drives"),
        ));
    }
    transition(core, lane, wf, sid, event).await
}

/// `transition(S, E)` (§7).
async fn transition(
    core: &Core,
    lane: &Lane,
    wf: &Workflow,
    from: StateId,
    event: &str,
) -> Result<(), RunError> {
    let s = &wf.states[from.index()];
    let from_name = core.m.str(s.key);
    let target = s
        .on_event
        .iter()
        .find(|(e, _)| core.m.event(*e) == event)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            err(
                ErrorKind::InvalidEvent,
                format!("state `{from_name}` has no event `{event}`"),
            )
        })?;
    let t = &wf.states[target.index()];
    let mut dest = target;
    let mut redirected = None;
    if let Some(max) = t.max_visits {
        if core.wf.borrow().visits[target.index()] >= max {
            match t.on_max_visits {
                Some(alt) => {
                    dest = alt;
                    redirected = Some(target);
                }
                None => {
                    return Err(err(
                        ErrorKind::MaxVisitsExceeded,
                        format!("state `{}` reached max_visits {max}", core.m.str(t.key)),
                    ))
                }
            }
        }
    }
    if let Some(limit) = core.budget.and_then(|b| b.max_total_visits) {
        if core.wf.borrow().total_visits >= limit {
            return Err(core.fatal(err(
                ErrorKind::BudgetExhausted,
                format!("max_total_visits {limit} reached"),
            )));
        }
    }
    core.check_wall_clock().await?;
    let dest_name = core.m.str(wf.states[dest.index()].key);
    let mut line = format!("transition {from_name} -> {dest_name} on {event}");
    if let Some(orig) = redirected {
        line.push_str(&format!(
            " (redirected from {})",
            core.m.str(wf.states[orig.index()].key)
        ));
    }
    lane.sink.trace(line);
    lane.sink.trace(format!("enter {dest_name}"));
    let mut st = core.wf.borrow_mut();
    st.current = Some(dest);
    st.visits[dest.index()] += 1;
    st.total_visits += 1;
    if !wf.states[dest.index()].persistent {
        st.history.clear();
    }
    Ok(())
}
