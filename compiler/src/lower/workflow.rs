//! The workflow, its budget and artifacts, and agent members (`workflow.md`).

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap as HashMap;

use crate::doc::{Node, Obj};
use ir_spec::{
    Agent, AgentStart, ArtifactId, ArtifactMode, Budget, CompId, EventId, Orchestration, State,
    StateBody, StateId, StrId, Workflow,
};

use crate::diag::At;
use crate::members::{entries, Name};

use super::{uint, Cx, LowerError};

fn states<'a>(cx: &Cx<'a>) -> Option<&'a Obj<'a>> {
    cx.root
        .get("workflow")
        .and_then(|w| w.get("states"))
        .and_then(Node::as_object)
}

/// The workflow's states, by their names in the document.
pub(super) fn state_ids<'a>(cx: &Cx<'a>) -> HashMap<Name<'a>, StateId> {
    states(cx)
        .map(|s| {
            s.keys()
                .enumerate()
                .filter_map(|(i, k)| Some((Name(k.as_str()), StateId::from_index(i)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Every artifact name any state declares, workflow-wide, in first-declared order.
pub(super) fn collect_artifacts(cx: &mut Cx<'_>) -> Vec<StrId> {
    let mut names = Vec::new();
    for state in states(cx).into_iter().flat_map(|s| s.values()) {
        for name in state
            .get("artifacts")
            .and_then(Node::as_object)
            .into_iter()
            .flat_map(|a| a.keys())
        {
            if let Entry::Vacant(slot) = cx.artifacts.entry(Name(name.as_str())) {
                if let Some(id) = ArtifactId::from_index(names.len()) {
                    slot.insert(id);
                    names.push(name.as_str());
                }
            }
        }
    }
    names.iter().map(|n| cx.intern(n)).collect()
}

/// `workflow` → [`Module::workflow`](ir_spec::Module::workflow).
pub(super) fn lower_workflow<'a>(
    cx: &mut Cx<'a>,
    artifacts: Vec<StrId>,
    ids: &HashMap<Name<'a>, StateId>,
) -> Result<(), LowerError> {
    let Some(wf) = cx.root.get("workflow") else {
        return Ok(());
    };
    let state_id = |name: Option<&Node>, ptr: &At<'_>| -> Result<StateId, LowerError> {
        let name = name.and_then(Node::as_str).unwrap_or_default();
        ids.get(&Name(name))
            .copied()
            .ok_or_else(|| LowerError::new(ptr, format!("no state `{name}`")))
    };
    let entry = state_id(wf.get("entry"), &At::Text("/workflow/entry"))?;
    let comps: HashMap<&str, CompId> = cx
        .root
        .get("compositions")
        .and_then(Node::as_object)
        .map(|c| {
            c.keys()
                .enumerate()
                .filter_map(|(i, k)| Some((k.as_str(), CompId::from_index(i)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let base = At::Text("/workflow/states");
    for (key, s) in entries(wf.get("states")) {
        let ptr = base.key(key);
        let mode = match s.get("orchestration").and_then(Node::as_str) {
            Some("external") => Orchestration::External,
            Some("hybrid") => Orchestration::Hybrid,
            Some("composition") => Orchestration::Composition,
            _ => Orchestration::Internal,
        };
        let body = if mode == Orchestration::Composition {
            let name = s.get("composition").and_then(Node::as_str).unwrap_or("");
            StateBody::Composition(comps.get(name).copied().ok_or_else(|| {
                LowerError::new(ptr.key("composition"), format!("no composition `{name}`"))
            })?)
        } else {
            let name = s.get("prompt_task").and_then(Node::as_str).unwrap_or("");
            StateBody::Prompt(cx.prompt(name, &ptr.key("prompt_task"))?)
        };
        let mut on_event = Vec::new();
        let events = ptr.key("on_event");
        for (event, target) in entries(s.get("on_event")) {
            let target = state_id(Some(target), &events.key(event))?;
            on_event.push((event_id(cx, event), target));
        }
        let terminal =
            s.get("terminal").and_then(Node::as_bool) == Some(true) || on_event.is_empty();
        let on_max_visits = match s.get("on_max_visits") {
            Some(v) => Some(state_id(Some(v), &ptr.key("on_max_visits"))?),
            None => None,
        };
        let mut arts = Vec::new();
        for (name, def) in entries(s.get("artifacts")) {
            let mode = match def.get("mode").and_then(Node::as_str) {
                Some("append") => ArtifactMode::Append,
                _ => ArtifactMode::Replace,
            };
            if let Some(id) = cx.artifacts.get(&Name(name)) {
                arts.push((*id, mode));
            }
        }
        out.push(State {
            key: cx.intern(key),
            body,
            mode,
            terminal,
            on_event,
            max_visits: uint(s.get("max_visits")),
            on_max_visits,
            persistent: s.get("persistence").and_then(Node::as_str) == Some("persistent"),
            artifacts: arts,
        });
    }
    let budget = wf.get("engine").and_then(|e| e.get("budget"));
    let limit = |k: &str| uint(budget.and_then(|b| b.get(k)));
    cx.module.workflow = Some(Workflow {
        entry,
        states: out,
        budget: Budget {
            max_total_visits: limit("max_total_visits"),
            max_tool_calls: limit("max_tool_calls"),
            max_wall_time_sec: limit("max_wall_time_sec"),
        },
        artifacts,
    });
    Ok(())
}

fn event_id<'a>(cx: &mut Cx<'a>, name: &'a str) -> EventId {
    let s = cx.intern(name);
    if let Some(i) = cx.module.events.iter().position(|e| *e == s) {
        return EventId::from_index(i).unwrap_or(EventId(u32::MAX));
    }
    cx.module.events.push(s);
    EventId::from_index(cx.module.events.len() - 1).unwrap_or(EventId(u32::MAX))
}

/// `agents.members` → [`Module::agents`](ir_spec::Module::agents).
pub(super) fn lower_agents<'a>(
    cx: &mut Cx<'a>,
    ids: &HashMap<Name<'a>, StateId>,
) -> Result<(), LowerError> {
    let root = cx.root;
    let agents = root.get("agents").and_then(|a| a.get("members"));
    let members = At::Text("/agents/members");
    for (key, member) in entries(agents) {
        let start = match member.get("state").and_then(Node::as_str) {
            Some(state) => AgentStart::State(ids.get(&Name(state)).copied().ok_or_else(|| {
                LowerError::new(members.key(key).key("state"), format!("no state `{state}`"))
            })?),
            None => AgentStart::Plain(cx.prompts.get(&Name(key)).copied()),
        };
        let key = cx.intern(key);
        cx.module.agents.push(Agent { key, start });
    }
    Ok(())
}
