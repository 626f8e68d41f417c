//! Workflow and agent checks, `shared/semantics/workflow.md` §16: references between
//! states, prompts and compositions, orchestration modes, and the warnings over the
//! transition graph (`unreachable_state`, `no_terminal_state`, `unbounded_loop`).

use crate::doc::{Node, Obj};
use indexmap::IndexMap;

use crate::members::entries;

use super::{did_you_mean, Cx};
use crate::diag::{join, At, DiagKind, Diagnostic};

pub(super) fn check(cx: &mut Cx<'_, '_>) {
    let root = cx.root;
    if let Some(workflow) = root.get("workflow").filter(|w| w.is_object()) {
        check_workflow(cx, workflow);
    }
    if let Some(agents) = root.get("agents").filter(|a| a.is_object()) {
        check_agents(cx, agents);
    }
}

fn unresolved_state(cx: &Cx<'_, '_>, name: &str, ptr: &At<'_>, what: &str) -> Diagnostic {
    Diagnostic::new(
        DiagKind::UnresolvedState,
        format!("{what} `{name}` names no state of the workflow"),
    )
    .at(ptr)
    .help(did_you_mean("states", name, cx.names.states.iter()))
}

fn check_workflow(cx: &mut Cx<'_, '_>, workflow: &Node) {
    enums(cx, workflow);
    if let Some(entry) = workflow.get("entry").and_then(Node::as_str) {
        if !cx.names.states.contains(entry) {
            let d = unresolved_state(cx, entry, &At::Text("/workflow/entry"), "entry state");
            cx.push(d);
        }
    }
    let base = At::Text("/workflow/states");
    for (name, state) in entries(workflow.get("states")) {
        if state.is_object() {
            check_state(cx, name, state, &base.key(name));
        }
    }
    graph_warnings(cx, workflow);
}

/// The values `workflow.md` §16 holds to an enum, `workflow.version` ∈ {1, 2} and a
/// state's `persistence` ∈ {transient, persistent}, at the levels whose official schema
/// leaves them open (1.5.1 and above; the v1.5 schema lists them itself).
fn enums(cx: &mut Cx<'_, '_>, workflow: &Node) {
    if cx.level < ir_spec::SpecLevel::V1_5_1 {
        return;
    }
    let outside = |value: &Node, options: &str| {
        Diagnostic::new(
            DiagKind::SchemaViolation,
            format!("{} is not one of {options}", value.to_value()),
        )
        .help(format!("use one of {options}"))
    };
    // Below 1 the schema's `minimum` reports it.
    if let Some(v) = workflow.get("version") {
        if v.as_u64().is_some_and(|n| n > 2) {
            let d = outside(v, "[1,2]").at(At::Text("/workflow/version"));
            cx.push(d);
        }
    }
    let base = At::Text("/workflow/states");
    for (name, state) in entries(workflow.get("states")) {
        if let Some(p @ Node::String(text)) = state.get("persistence") {
            if !matches!(text.as_str(), "transient" | "persistent") {
                let d = outside(p, r#"["transient","persistent"]"#)
                    .at(base.key(name).key("persistence"));
                cx.push(d);
            }
        }
    }
}

fn check_state(cx: &mut Cx<'_, '_>, name: &str, state: &Node, ptr: &At<'_>) {
    let mode = state.get("orchestration").and_then(Node::as_str);
    let composition = state.get("composition");
    let prompt_task = state.get("prompt_task");
    if mode == Some("composition") {
        if composition.is_none() {
            cx.push(
                Diagnostic::new(
                    DiagKind::OrchestrationConflict,
                    format!("state `{name}` has `orchestration: composition` but no `composition`"),
                )
                .at(ptr)
                .help("name the composition that runs this state: `composition: <key of compositions>`"),
            );
        }
    } else {
        let mode = mode.unwrap_or("internal");
        if composition.is_some() {
            cx.push(
                Diagnostic::new(
                    DiagKind::OrchestrationConflict,
                    format!("state `{name}` names a composition but its orchestration is `{mode}`"),
                )
                .at(ptr.key("composition"))
                .help("set `orchestration: composition`, or remove `composition`"),
            );
        }
        match prompt_task {
            None => cx.push(
                Diagnostic::new(
                    DiagKind::OrchestrationConflict,
                    format!("state `{name}` has no `prompt_task` (its orchestration is `{mode}`)"),
                )
                .at(ptr)
                .help("add `prompt_task: <key of prompts>`, or run a composition with `orchestration: composition`"),
            ),
            Some(Node::String(task)) if !cx.names.prompts.contains(task.as_str()) => {
                let d = Diagnostic::new(
                    DiagKind::UnresolvedPrompt,
                    format!("prompt_task `{task}` names no prompt"),
                )
                .at(ptr.key("prompt_task"))
                .help(did_you_mean("prompts", task, cx.names.prompts.iter()));
                cx.push(d);
            }
            Some(_) => {}
        }
    }
    if let Some(Node::String(c)) = composition {
        if !cx.names.compositions.contains(c.as_str()) {
            let d = Diagnostic::new(
                DiagKind::UnresolvedComposition,
                format!("composition `{c}` is not defined under `compositions`"),
            )
            .at(ptr.key("composition"))
            .help(did_you_mean(
                "compositions",
                c,
                cx.names.compositions.iter(),
            ));
            cx.push(d);
        }
    }
    let on_event = ptr.key("on_event");
    for (event, target) in entries(state.get("on_event")) {
        if let Some(target) = target.as_str() {
            if !cx.names.states.contains(target) {
                let what = format!("the target of event `{event}`,");
                let d = unresolved_state(cx, target, &on_event.key(event), &what);
                cx.push(d);
            }
        }
    }
    if let (Some(Node::String(c)), Some(Node::Object(events))) =
        (composition, state.get("on_event"))
    {
        if !events.is_empty() {
            event_output(cx, name, c, events, ptr);
        }
    }
    if let Some(target) = state.get("on_max_visits").and_then(Node::as_str) {
        if !cx.names.states.contains(target) {
            let d = unresolved_state(cx, target, &ptr.key("on_max_visits"), "on_max_visits");
            cx.push(d);
        }
    }
}

fn check_agents(cx: &mut Cx<'_, '_>, agents: &Node) {
    if let Some(entry) = agents.get("entry").and_then(Node::as_str) {
        if !cx.names.prompts.contains(entry) {
            let d = Diagnostic::new(
                DiagKind::UnresolvedPrompt,
                format!("agents.entry `{entry}` names no prompt"),
            )
            .at("/agents/entry")
            .help(did_you_mean("prompts", entry, cx.names.prompts.iter()));
            cx.push(d);
        }
    }
    let members = At::Text("/agents/members");
    for (member, def) in entries(agents.get("members")) {
        let ptr = members.key(member);
        if !cx.names.prompts.contains(member) {
            let d = Diagnostic::new(
                DiagKind::UnresolvedPrompt,
                format!("agent member `{member}` names no prompt (a member key is a prompt key)"),
            )
            .at(ptr)
            .help(did_you_mean("prompts", member, cx.names.prompts.iter()));
            cx.push(d);
        }
        let Some(state) = def.get("state").and_then(Node::as_str) else {
            continue;
        };
        let sptr = ptr.key("state");
        if !cx.names.has_workflow {
            cx.push(
                Diagnostic::new(
                    DiagKind::StateAgentWithoutWorkflow,
                    format!(
                        "agent `{member}` starts at state `{state}`, but the pack has no workflow"
                    ),
                )
                .at(sptr)
                .help("add a `workflow`, or remove `state` to make a plain (single-prompt) agent"),
            );
        } else if !cx.names.states.contains(state) {
            let d = unresolved_state(cx, state, &sptr, &format!("agent `{member}`'s state"));
            cx.push(d);
        }
    }
}

/// Warnings over the transition graph (`workflow.md` §16). Nodes are states; edges go from
/// each non-terminal state to its `on_event` targets and from each state with
/// `on_max_visits` to that target. Roots: `entry` and every `AgentDef.state`.
fn graph_warnings(cx: &mut Cx<'_, '_>, workflow: &Node) {
    let Some(states) = workflow.get("states").and_then(Node::as_object) else {
        return;
    };
    let index: IndexMap<&str, usize> = states
        .keys()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let n = index.len();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut terminal = vec![false; n];
    let mut bounded = vec![false; n];
    for (i, state) in states.values().enumerate() {
        let on_event = state.get("on_event").and_then(Node::as_object);
        terminal[i] = state.get("terminal").and_then(Node::as_bool) == Some(true)
            || on_event.is_none_or(|m| m.is_empty());
        bounded[i] = state.get("max_visits").is_some();
        if !terminal[i] {
            for target in on_event.into_iter().flat_map(|m| m.values()) {
                if let Some(&t) = target.as_str().and_then(|t| index.get(t)) {
                    edges[i].push(t);
                }
            }
        }
        if let Some(&t) = state
            .get("on_max_visits")
            .and_then(Node::as_str)
            .and_then(|t| index.get(t))
        {
            edges[i].push(t);
        }
    }

    // Reachability from the roots.
    let mut roots: Vec<usize> = Vec::new();
    if let Some(&e) = workflow
        .get("entry")
        .and_then(Node::as_str)
        .and_then(|e| index.get(e))
    {
        roots.push(e);
    }
    roots.extend(agent_states(cx.root).filter_map(|s| index.get(s).copied()));
    let mut reached = vec![false; n];
    let mut stack = roots;
    while let Some(s) = stack.pop() {
        if !std::mem::replace(&mut reached[s], true) {
            stack.extend(edges[s].iter().copied());
        }
    }
    let has_entry = workflow
        .get("entry")
        .and_then(Node::as_str)
        .is_some_and(|e| index.contains_key(e));
    for (name, &i) in &index {
        if has_entry && !reached[i] {
            cx.push(
                Diagnostic::new(
                    DiagKind::UnreachableState,
                    format!("state `{name}` cannot be reached from the entry state or any agent's state"),
                )
                .at(join("/workflow/states", &[name]))
                .help("add an `on_event` transition into it, or remove it"),
            );
        }
    }

    if n > 0 && !terminal.iter().any(|&t| t) {
        cx.push(
            Diagnostic::new(
                DiagKind::NoTerminalState,
                "no state of the workflow is terminal",
            )
            .at("/workflow")
            .help("mark the final state `terminal: true` so runs can finish"),
        );
    }

    let has_budget = workflow
        .get("engine")
        .and_then(|e| e.get("budget"))
        .and_then(Node::as_object)
        .is_some_and(|b| {
            ["max_total_visits", "max_tool_calls", "max_wall_time_sec"]
                .iter()
                .any(|k| b.contains_key(k))
        });
    if has_budget {
        return;
    }
    let on_cycle = on_cycle(&edges);
    for (name, &i) in &index {
        if on_cycle[i] && !bounded[i] {
            cx.push(
                Diagnostic::new(
                    DiagKind::UnboundedLoop,
                    format!("state `{name}` lies on a loop with no `max_visits` and no workflow budget"),
                )
                .at(join("/workflow/states", &[name]))
                .help("declare `max_visits` on the state, or set `workflow.engine.budget` (e.g. `max_total_visits`)"),
            );
        }
    }
}

/// Which nodes lie on a cycle (a self-edge counts): Tarjan's strongly connected
/// components, iteratively so that a long chain of states cannot overflow the stack.
/// The states agent members start in (`agents.members.*.state`): roots of the workflow
/// graph besides its entry.
pub(super) fn agent_states<'a>(root: &'a Obj<'_>) -> impl Iterator<Item = &'a str> {
    root.get("agents")
        .and_then(|a| a.get("members"))
        .and_then(Node::as_object)
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|d| d.get("state").and_then(Node::as_str))
}

pub(super) fn on_cycle(edges: &[Vec<usize>]) -> Vec<bool> {
    let n = edges.len();
    const UNSEEN: usize = usize::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut result = vec![false; n];
    let mut next = 0;
    let mut work: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        work.push((start, 0));
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && index[v] == UNSEEN {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(*child) {
                *child += 1;
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                // The component is the stack from `v` up.
                let from = stack.iter().rposition(|&w| w == v).unwrap_or(0);
                let cyclic = stack.len() - from > 1 || edges[v].contains(&v);
                for w in stack.drain(from..) {
                    on_stack[w] = false;
                    result[w] = cyclic;
                }
            }
        }
    }
    result
}

/// A composition state moves on only when its composition's output has an `event`
/// member (`workflow.md`): warn when the output step's schema rules that out.
fn event_output(cx: &mut Cx<'_, '_>, state: &str, comp: &str, events: &Obj, ptr: &At<'_>) {
    let Some(c) = cx
        .root
        .get("compositions")
        .and_then(|cs| cs.get(comp))
        .and_then(Node::as_object)
    else {
        return;
    };
    let Some(steps) = c.get("steps").and_then(Node::as_array) else {
        return;
    };
    let output = match c.get("output").and_then(Node::as_str) {
        Some(id) => steps
            .iter()
            .find(|s| s.get("id").and_then(Node::as_str) == Some(id)),
        None => steps.last(),
    };
    let Some(step) = output else { return };
    let (Some(Node::String(file)), Some(folders)) =
        (step.get("output_schema"), cx.options.folders())
    else {
        return;
    };
    let Ok(schema) = crate::schema_files::read(&folders, file) else {
        return; // `unresolved_schema` says why
    };
    let ty = schema.get("type").and_then(serde_json::Value::as_str);
    let properties = schema
        .get("properties")
        .and_then(serde_json::Value::as_object);
    let why = match (ty, properties) {
        (Some(t), _) if t != "object" => format!("its output is {} (schema `{file}`)", article(t)),
        (_, Some(p)) if !p.contains_key("event") => {
            format!("the schema `{file}` of its output has no `event` property")
        }
        _ => return,
    };
    let step_id = step.get("id").and_then(Node::as_str).unwrap_or("?");
    let names: Vec<&str> = events.keys().map(|k| k.as_str()).collect();
    cx.push(
        Diagnostic::new(
            DiagKind::EventNeverOutput,
            format!(
                "state `{state}` waits for an event ({}) from composition `{comp}`, but {why}: the state can never move on",
                names.join(", ")
            ),
        )
        .at(ptr.key("on_event"))
        .help(format!(
            "a composition state moves on when the composition's output has an `event` member; add to the properties of `{file}` (output of step `{step_id}`): `\"event\": {{\"type\": \"string\", \"enum\": [{}]}}`",
            names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
        )),
    );
}

fn article(t: &str) -> String {
    match t.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

#[cfg(test)]
mod tests {
    use super::on_cycle;

    #[test]
    fn cycles() {
        // 0 -> 1 -> 2 -> 1, 3 -> 3, 4 alone
        let edges = vec![vec![1], vec![2], vec![1], vec![3], vec![]];
        assert_eq!(on_cycle(&edges), vec![false, true, true, true, false]);
    }

    /// Against the definition on many small graphs: a state is on a cycle when it can
    /// reach itself by one edge or more.
    #[test]
    fn cycles_are_those_of_the_definition() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..2000 {
            let n = 1 + next(7);
            let edges: Vec<Vec<usize>> = (0..n)
                .map(|_| (0..next(3)).map(|_| next(n)).collect())
                .collect();
            let reaches_itself = |v: usize| {
                let mut seen = vec![false; n];
                let mut stack = edges[v].clone();
                while let Some(w) = stack.pop() {
                    if w == v {
                        return true;
                    }
                    if !std::mem::replace(&mut seen[w], true) {
                        stack.extend(&edges[w]);
                    }
                }
                false
            };
            let want: Vec<bool> = (0..n).map(reaches_itself).collect();
            assert_eq!(on_cycle(&edges), want, "{edges:?}");
        }
    }

    #[test]
    fn long_chain_does_not_overflow() {
        let n = 200_000;
        let mut edges: Vec<Vec<usize>> = (0..n).map(|i| vec![i + 1]).collect();
        edges[n - 1] = vec![0];
        assert!(on_cycle(&edges).iter().all(|&c| c));
    }
}
