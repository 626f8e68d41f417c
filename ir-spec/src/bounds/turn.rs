//! The bound of one workflow turn: which states a turn can execute, and how often.
//!
//! A turn follows `on_event` edges (and `max_visits` redirects) between the states a run
//! can be in; [`workflow_turn`] bounds it by the graph of those edges, by `max_visits` and
//! by `engine.budget`, whichever is smallest.

use super::{state, Bound, Calls};
use crate::{AgentStart, Module, Orchestration, StateId, Workflow};

/// The bound of one turn of a workflow run: everything the states executed in one turn
/// may call (`workflow.md` §5), whichever state the turn starts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TurnBound {
    /// State executions in the turn: the state the turn starts in, then one per
    /// transition its answers trigger.
    pub executions: Bound,
    /// Model and host tool calls in the turn.
    pub calls: Calls,
}

/// The most a single turn of a workflow run can do, from any state a run can be in.
///
/// ```yaml
/// workflow:
///   entry: implement
///   engine: {budget: {max_total_visits: 6, max_tool_calls: 20}}
///   states:
///     implement: {prompt_task: coder, on_event: {Done: test}}
///     test: {prompt_task: tester, on_event: {Fail: implement, Pass: done}}
///     done: {prompt_task: closer}
/// ```
///
/// Here the cycle implement → test → implement is bounded by the budget only: at most 6
/// executions, so model calls ≤ 6 × the largest per-state model bound and tool calls ≤
/// min(20, 6 × the largest per-state tool bound).
///
/// How it is computed. States a run can be in are those reachable from `entry` and from
/// every state-backed agent's `state`. Inside one turn the run moves along `on_event`
/// edges of non-terminal, non-external states into non-external states (a turn stops
/// when it reaches an external state, before executing it); a transition to a state
/// `T` that declares `max_visits` may also land on `T.on_max_visits` (a redirect, which
/// never checks the redirect target's own limit).
///
/// - An edge into a state with `max_visits: m` is *capped*: the run can take such edges
///   at most `K` = Σ m times (over reachable targets). Every other edge, redirects
///   included, is *free*. When the free edges form a cycle, the turn has no graph bound.
///   Otherwise the turn is at most `K + 1` stretches of free edges, each a path of the
///   free graph. Every stretch but the last ends in a state that takes a capped edge, so
///   calls ≤ K × (heaviest free path ending in such a state) + (heaviest free path). A
///   terminal state thus counts once, however often a loop before it runs.
/// - `engine.budget.max_total_visits: V`: a run enters states at most V times, the start
///   state included, so a turn executes at most V states; calls ≤ V × the largest
///   per-state bound.
/// - `engine.budget.max_tool_calls: N` caps host tool calls at N.
///
/// The smallest of these applies. `max_wall_time_sec` bounds no count (the clock is the
/// host's) and is ignored. `None` when the module has no workflow.
pub fn workflow_turn(module: &Module) -> Option<TurnBound> {
    let wf = module.workflow.as_ref()?;
    let per_state: Vec<Calls> = (0..wf.states.len())
        .map(|i| state(module, StateId(i as u32)))
        .collect();
    let reachable = reachable(module, wf);
    let live = |s: StateId| reachable[s.index()];
    let heaviest = live_states(wf, &reachable)
        .map(|s| per_state[s.index()])
        .fold(Calls::ZERO, Calls::max);

    // The graph bound: K + 1 stretches of free edges.
    let edges = turn_edges(wf, &reachable);
    let capped_visits: u64 = live_states(wf, &reachable)
        .filter(|t| edges.iter().any(|e| e.capped && e.to == *t))
        .map(|t| wf.states[t.index()].max_visits.unwrap_or(0))
        .fold(0, u64::saturating_add);
    let free: Vec<(StateId, StateId)> = edges
        .iter()
        .filter(|e| !e.capped)
        .map(|e| (e.from, e.to))
        .collect();
    let graph = match heaviest_paths(wf.states.len(), &free, live, &per_state) {
        Some(best) => {
            let (mut last, mut before_capped) =
                ((Bound::ZERO, Calls::ZERO), (Bound::ZERO, Calls::ZERO));
            for s in live_states(wf, &reachable) {
                let (n, calls) = best[s.index()];
                last = (last.0.max(n), last.1.max(calls));
                if edges.iter().any(|e| e.capped && e.from == s) {
                    before_capped = (before_capped.0.max(n), before_capped.1.max(calls));
                }
            }
            let k = Bound::Finite(capped_visits);
            TurnBound {
                executions: before_capped.0.times(k).plus(last.0),
                calls: before_capped.1.times(k).plus(last.1),
            }
        }
        None => TurnBound {
            executions: Bound::Unbounded,
            calls: heaviest.times(Bound::Unbounded),
        },
    };

    // The budget bound.
    let mut bound = graph;
    if let Some(v) = wf.budget.max_total_visits {
        let v = Bound::Finite(v);
        bound.executions = bound.executions.min(v);
        bound.calls.model = bound.calls.model.min(heaviest.model.times(v));
        bound.calls.tool = bound.calls.tool.min(heaviest.tool.times(v));
    }
    if let Some(n) = wf.budget.max_tool_calls {
        bound.calls.tool = bound.calls.tool.min(Bound::Finite(n));
    }
    Some(bound)
}

/// An edge a turn can follow.
struct Edge {
    from: StateId,
    to: StateId,
    /// Into a state that declares `max_visits` (and not a redirect).
    capped: bool,
}

fn live_states<'a>(wf: &'a Workflow, reachable: &'a [bool]) -> impl Iterator<Item = StateId> + 'a {
    (0..wf.states.len())
        .filter(|i| reachable[*i])
        .map(|i| StateId(i as u32))
}

/// Where transition(S, E) can land: the target, and its redirect when it has one.
fn targets(wf: &Workflow, s: StateId) -> Vec<(StateId, bool)> {
    let state = &wf.states[s.index()];
    if state.terminal {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &(_, t) in &state.on_event {
        let target = &wf.states[t.index()];
        out.push((t, target.max_visits.is_some()));
        if let (Some(_), Some(r)) = (target.max_visits, target.on_max_visits) {
            out.push((r, false));
        }
    }
    out
}

/// States a run can be in: reachable from `entry` and every state-backed agent's start,
/// by transitions from the model or the caller.
fn reachable(module: &Module, wf: &Workflow) -> Vec<bool> {
    let mut seen = vec![false; wf.states.len()];
    let mut stack = vec![wf.entry];
    stack.extend(module.agents.iter().filter_map(|a| match a.start {
        AgentStart::State(s) => Some(s),
        AgentStart::Plain(_) => None,
    }));
    while let Some(s) = stack.pop() {
        if std::mem::replace(&mut seen[s.index()], true) {
            continue;
        }
        stack.extend(targets(wf, s).into_iter().map(|(t, _)| t));
    }
    seen
}

/// The edges one turn can follow between reachable states: none out of an external state
/// (its event is ignored) and none into one (the turn stops there unexecuted).
fn turn_edges(wf: &Workflow, reachable: &[bool]) -> Vec<Edge> {
    let external = |s: StateId| wf.states[s.index()].mode == Orchestration::External;
    let mut out = Vec::new();
    for from in live_states(wf, reachable) {
        if external(from) {
            continue;
        }
        for (to, capped) in targets(wf, from) {
            if !external(to) {
                out.push(Edge { from, to, capped });
            }
        }
    }
    out
}

/// For each state, the longest path (in states) and the heaviest path (per count) that
/// ends there, over the graph of `live` states and `edges`; `None` when the graph has a
/// cycle. Kahn's algorithm, relaxing each state's out-edges once it is ready.
fn heaviest_paths(
    n: usize,
    edges: &[(StateId, StateId)],
    live: impl Fn(StateId) -> bool,
    weight: &[Calls],
) -> Option<Vec<(Bound, Calls)>> {
    let mut indegree = vec![0usize; n];
    for &(_, to) in edges {
        indegree[to.index()] += 1;
    }
    let mut ready: Vec<StateId> = (0..n)
        .map(|i| StateId(i as u32))
        .filter(|s| live(*s) && indegree[s.index()] == 0)
        .collect();
    let mut best: Vec<(Bound, Calls)> = (0..n).map(|i| (Bound::Finite(1), weight[i])).collect();
    let mut done = 0;
    while let Some(s) = ready.pop() {
        done += 1;
        let (len, calls) = best[s.index()];
        for &(_, to) in edges.iter().filter(|e| e.0 == s) {
            let (tlen, tcalls) = &mut best[to.index()];
            *tlen = (*tlen).max(len.plus(Bound::Finite(1)));
            *tcalls = tcalls.max(calls.plus(weight[to.index()]));
            indegree[to.index()] -= 1;
            if indegree[to.index()] == 0 {
                ready.push(to);
            }
        }
    }
    let live_count = (0..n).filter(|i| live(StateId(*i as u32))).count();
    (done == live_count).then_some(best)
}
