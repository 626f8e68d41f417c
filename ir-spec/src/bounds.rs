//! Static call bounds: the most model calls and host tool calls a piece of a pack can make.
//!
//! Everything here is a pure function of a valid [`Module`] (one that passed
//! [`Module::validate`]): nothing runs, and the same module always gives the same numbers.
//! A bound is *sound*: no run of the VM makes more calls than it says. It is not always
//! *tight*; where a rule below over-approximates, its doc comment says so.
//!
//! What bounds what (`workflow.md` §5, §6, §10; `compositions.md` §6, §8, §9):
//!
//! ```yaml
//! prompts:
//!   coder:
//!     tools: [run_tests]
//!     tool_policy: {max_rounds: 3, max_tool_calls_per_turn: 4}  # a prompt state: ≤ 3 model
//! compositions:                                                  #   calls, ≤ 4 tool calls
//!   c:
//!     steps:
//!       - {id: a, kind: prompt, prompt_task: p, modifiers: {retry: {max_attempts: 3}}}  # 3 × 1
//!       - {id: b, kind: agent, prompt_task: p, tools: [t], termination: {max_steps: 4}} # 4 turns
//!       - {id: p, kind: parallel, branches: [...], reduce: {...}}  # the sum of its branches
//! workflow:
//!   engine: {budget: {max_total_visits: 20, max_tool_calls: 50}}  # caps a whole turn
//!   states:
//!     implement: {prompt_task: coder, max_visits: 3, on_event: {Done: test}}
//! ```
//!
//! A static bound may be [`Bound::Unbounded`]: an agent step whose prompt sets no
//! `max_tool_calls_per_turn` (a model turn may request any number of tool calls), or a
//! workflow whose transition graph has a cycle that neither `max_visits` nor
//! `engine.budget` bounds. Retries multiply a step's bound. Arithmetic saturates at
//! `u64::MAX`.

mod turn;

pub use turn::{workflow_turn, TurnBound};

use crate::{CompId, Composition, Module, Prompt, StateBody, StateId, StepId, StepKind};

/// Turns an agent step may take when it sets no `termination.max_steps`
/// (`compositions.md` 6.3.4 step 6: the hard cap, then `agent_step_limit`).
pub const AGENT_HARD_CAP: u32 = 50;

/// `tool_policy.max_rounds` of a prompt state when unset (`workflow.md` §6 step 5).
pub const DEFAULT_MAX_ROUNDS: u32 = 5;

/// `tool_policy.max_tool_calls_per_turn` of a prompt state when unset (`workflow.md` §6
/// step 5). Agent steps have no default (`compositions.md` 6.3.1).
pub const DEFAULT_MAX_TOOL_CALLS_PER_TURN: u32 = 10;

/// An upper bound on a number of calls.
///
/// Ordered so that every `Finite` is below `Unbounded`; `max` and `min` follow that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bound {
    /// At most this many.
    Finite(u64),
    /// No static bound: the pack lets the model decide, e.g. an agent step whose prompt
    /// sets no `tool_policy.max_tool_calls_per_turn`, or a cycle without `max_visits`.
    Unbounded,
}

impl Bound {
    /// No calls at all.
    pub const ZERO: Bound = Bound::Finite(0);

    /// The bound as a number, `None` when unbounded.
    pub fn finite(self) -> Option<u64> {
        match self {
            Bound::Finite(n) => Some(n),
            Bound::Unbounded => None,
        }
    }

    /// Both counts together (saturating).
    #[must_use]
    pub fn plus(self, other: Bound) -> Bound {
        match (self, other) {
            (Bound::Finite(a), Bound::Finite(b)) => Bound::Finite(a.saturating_add(b)),
            _ => Bound::Unbounded,
        }
    }

    /// `self` calls, `n` times over (saturating). Zero times anything is zero, so a
    /// state that makes no model calls stays at zero however often it runs.
    #[must_use]
    pub fn times(self, n: Bound) -> Bound {
        match (self, n) {
            (Bound::Finite(0), _) | (_, Bound::Finite(0)) => Bound::ZERO,
            (Bound::Finite(a), Bound::Finite(b)) => Bound::Finite(a.saturating_mul(b)),
            _ => Bound::Unbounded,
        }
    }
}

impl From<u64> for Bound {
    fn from(n: u64) -> Bound {
        Bound::Finite(n)
    }
}

impl From<u32> for Bound {
    fn from(n: u32) -> Bound {
        Bound::Finite(u64::from(n))
    }
}

impl std::fmt::Display for Bound {
    /// `12`, or `unbounded`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Finite(n) => write!(f, "{n}"),
            Bound::Unbounded => f.write_str("unbounded"),
        }
    }
}

/// The most model calls and the most host tool calls something can make.
///
/// Tool calls are *host* tool calls, the ones `engine.budget.max_tool_calls` counts
/// (`workflow.md` §10): a request for a tool that is not offered, or past the per-turn
/// cap, gets an error result and makes none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Calls {
    /// Model calls (prompt-state rounds, prompt steps, agent turns).
    pub model: Bound,
    /// Host tool calls (tool rounds, tool steps, agent tool calls).
    pub tool: Bound,
    /// Extension calls (vendor step kinds served by the host, `later-versions.md` §5).
    pub extension: Bound,
}

impl Calls {
    /// No calls.
    pub const ZERO: Calls = Calls {
        model: Bound::ZERO,
        tool: Bound::ZERO,
        extension: Bound::ZERO,
    };

    /// Both together (a sequence, or parallel branches).
    #[must_use]
    pub fn plus(self, other: Calls) -> Calls {
        Calls {
            model: self.model.plus(other.model),
            tool: self.tool.plus(other.tool),
            extension: self.extension.plus(other.extension),
        }
    }

    /// The larger of each count (exclusive alternatives).
    #[must_use]
    pub fn max(self, other: Calls) -> Calls {
        Calls {
            model: self.model.max(other.model),
            tool: self.tool.max(other.tool),
            extension: self.extension.max(other.extension),
        }
    }

    /// `n` times over (retries, repeated executions).
    #[must_use]
    pub fn times(self, n: Bound) -> Calls {
        Calls {
            model: self.model.times(n),
            tool: self.tool.times(n),
            extension: self.extension.times(n),
        }
    }
}

impl std::fmt::Display for Calls {
    /// `2 model, unbounded tool`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} model, {} tool", self.model, self.tool)?;
        if self.extension != Bound::ZERO {
            write!(f, ", {} extension", self.extension)?;
        }
        Ok(())
    }
}

/// One execution of a prompt's model/tool loop as a prompt state (or a plain agent
/// member's turn) runs it (`workflow.md` §6).
///
/// ```yaml
/// tools: [search]
/// tool_policy: {max_rounds: 3, max_tool_calls_per_turn: 4}   # -> 3 model, 4 tool
/// ```
///
/// Model calls: `max_rounds` (5 when unset). Tool calls: `max_tool_calls_per_turn` (10
/// when unset), because the VM counts that cap over the whole execution, not per round
/// (`toolloop.rs`), so it is already tighter than rounds × cap. No offered tools (none
/// listed, all blocklisted, `tool_choice: none`) means no host tool calls.
pub fn prompt_execution(prompt: &Prompt) -> Calls {
    let rounds = prompt.policy.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS);
    let tool = if rounds == 0 || prompt.tools.is_empty() {
        Bound::ZERO
    } else {
        prompt
            .policy
            .max_tool_calls_per_turn
            .unwrap_or(DEFAULT_MAX_TOOL_CALLS_PER_TURN)
            .into()
    };
    Calls {
        model: rounds.into(),
        tool,
        extension: Bound::ZERO,
    }
}

/// One run of step `id` of `comp`, every retry attempt included.
///
/// ```yaml
/// - {id: a, kind: prompt, prompt_task: p}              # 1 model
/// - {id: t, kind: tool, tool: kb}                      # 1 tool
/// - id: s                                              # 10 model; tool: the prompt's
///   kind: agent                                        #   max_tool_calls_per_turn, else
///   termination: {max_steps: 10}                       #   unbounded (0 with no tools)
///   modifiers: {retry: {max_attempts: 2}}              # everything × 2
/// - {id: r, kind: branch, ...}                         # 0: only evaluates a predicate
/// - {id: p, kind: parallel, branches: [a, t]}          # the sum of the branches
/// ```
///
/// An agent step takes at most `max_steps` turns (50 without it). Its host tool calls
/// are capped per attempt by its prompt's `max_tool_calls_per_turn` when set
/// (`compositions.md` 6.3.1); without it one turn may request any number of calls, so
/// the bound is [`Bound::Unbounded`] unless the step offers no tools. A `retry` on a
/// parallel step has no effect (§8.1); each branch's own retry counts.
pub fn step(comp: &Composition, id: StepId) -> Calls {
    let s = &comp.steps[id.index()];
    let attempts = Bound::from(s.max_attempts.max(1));
    match &s.kind {
        StepKind::Prompt { .. } => Calls {
            model: Bound::Finite(1),
            tool: Bound::ZERO,
            extension: Bound::ZERO,
        }
        .times(attempts),
        StepKind::Tool { .. } => Calls {
            model: Bound::ZERO,
            tool: Bound::Finite(1),
            extension: Bound::ZERO,
        }
        .times(attempts),
        StepKind::Extension { .. } => Calls {
            model: Bound::ZERO,
            tool: Bound::ZERO,
            extension: Bound::Finite(1),
        }
        .times(attempts),
        StepKind::Agent {
            tools,
            max_tool_calls_per_turn,
            max_steps,
            ..
        } => {
            let turns = max_steps.unwrap_or(AGENT_HARD_CAP);
            let tool = if turns == 0 || tools.is_empty() {
                Bound::ZERO
            } else {
                max_tool_calls_per_turn.map_or(Bound::Unbounded, Bound::from)
            };
            Calls {
                model: turns.into(),
                tool,
                extension: Bound::ZERO,
            }
            .times(attempts)
        }
        StepKind::Branch { .. } => Calls::ZERO,
        StepKind::Parallel { branches, .. } => branches
            .iter()
            .filter(|b| !matches!(comp.steps[b.index()].kind, StepKind::Parallel { .. }))
            .fold(Calls::ZERO, |acc, b| acc.plus(step(comp, *b))),
    }
}

/// One run of composition `id` (a `composition:<name>` run, or one execution of a
/// composition state).
///
/// ```yaml
/// steps:
///   - {id: classify, kind: prompt, prompt_task: c}                       # 1
///   - {id: route, kind: branch, predicate: {...}, then: paper, else: memo}
///   - {id: paper, kind: prompt, prompt_task: p}                          # max(1, 1):
///   - {id: memo, kind: prompt, prompt_task: m}                           #   one arm runs
/// ```                                                                    # -> 2 model
///
/// The sum over the top-level steps, every step assumed to run, except for the two arms
/// of a branch: when a branch's `then` and `else` are different steps that no other
/// branch names, at most one of them runs (`compositions.md` 4.2a), so the pair counts
/// as the larger of the two. Skips through `depends_on` are not modelled (a step that
/// might be skipped counts as running), which only over-approximates.
pub fn composition(module: &Module, id: CompId) -> Calls {
    let comp = &module.compositions[id.index()];
    let mut arms: Vec<(StepId, StepId)> = Vec::new();
    for &b in &comp.walk {
        if let StepKind::Branch {
            then,
            otherwise: Some(otherwise),
            ..
        } = comp.steps[b.index()].kind
        {
            let only_b = |t: StepId| comp.steps[t.index()].guarded_by == [b];
            if then != otherwise && only_b(then) && only_b(otherwise) {
                arms.push((then, otherwise));
            }
        }
    }
    let in_arm = |s: StepId| arms.iter().any(|&(t, e)| s == t || s == e);
    let steps = comp
        .walk
        .iter()
        .filter(|s| !in_arm(**s))
        .fold(Calls::ZERO, |acc, s| acc.plus(step(comp, *s)));
    arms.iter().fold(steps, |acc, &(t, e)| {
        acc.plus(step(comp, t).max(step(comp, e)))
    })
}

/// One execution of workflow state `id` (one visit, or one more turn in a terminal
/// state).
///
/// ```yaml
/// triage: {prompt_task: triage}                                   # prompt_execution(triage)
/// main: {orchestration: composition, composition: analyze}        # composition(analyze)
/// ```
///
/// `engine.budget` is not applied here (it caps a run, not one execution): see
/// [`workflow_turn`]. A module without a workflow has no states; `id` must be one of its
/// states.
pub fn state(module: &Module, id: StateId) -> Calls {
    let wf = module
        .workflow
        .as_ref()
        .expect("state bounds need a workflow");
    match wf.states[id.index()].body {
        StateBody::Prompt(p) => prompt_execution(&module.prompts[p.index()]),
        StateBody::Composition(c) => composition(module, c),
    }
}

/// Every bound of a module at once, for tools that print them (`packc inspect`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleBounds {
    /// One run of each composition, indexed by [`CompId`].
    pub compositions: Vec<Calls>,
    /// One execution of each workflow state, indexed by [`StateId`] (empty without a
    /// workflow).
    pub states: Vec<Calls>,
    /// One turn of a workflow run ([`workflow_turn`]); `None` without a workflow.
    pub workflow_turn: Option<TurnBound>,
}

/// [`composition`] for every composition, [`state`] for every state, and
/// [`workflow_turn`].
pub fn module(module: &Module) -> ModuleBounds {
    let compositions = (0..module.compositions.len())
        .map(|i| composition(module, CompId(i as u32)))
        .collect();
    let states = module.workflow.as_ref().map_or_else(Vec::new, |wf| {
        (0..wf.states.len())
            .map(|i| state(module, StateId(i as u32)))
            .collect()
    });
    ModuleBounds {
        compositions,
        states,
        workflow_turn: workflow_turn(module),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Budget, EventId, Orchestration, PromptId, State, StrId, ToolId, ToolPolicy, ToolRef,
        Workflow,
    };

    fn prompt(tools: usize, policy: ToolPolicy) -> Prompt {
        Prompt {
            key: StrId(0),
            system: Vec::new(),
            variables: Vec::new(),
            tools: (0..tools)
                .map(|i| ToolRef::Tool(ToolId(i as u32)))
                .collect(),
            policy,
            parameters: crate::JsonText::from_value(&serde_json::Value::Null),
            guards: Vec::new(),
        }
    }

    fn st(on_event: &[u32]) -> State {
        State {
            key: StrId(0),
            body: StateBody::Prompt(PromptId(0)),
            mode: Orchestration::Internal,
            terminal: on_event.is_empty(),
            on_event: on_event.iter().map(|t| (EventId(0), StateId(*t))).collect(),
            max_visits: None,
            on_max_visits: None,
            persistent: false,
            artifacts: Vec::new(),
        }
    }

    /// One prompt with `max_rounds: 2`, one tool and `max_tool_calls_per_turn: 3`.
    fn module(states: Vec<State>, budget: Budget) -> Module {
        let policy = ToolPolicy {
            max_rounds: Some(2),
            max_tool_calls_per_turn: Some(3),
            ..ToolPolicy::default()
        };
        Module {
            strings: vec!["p".into()],
            prompts: vec![prompt(1, policy)],
            workflow: Some(Workflow {
                entry: StateId(0),
                states,
                budget,
                artifacts: Vec::new(),
            }),
            ..Module::default()
        }
    }

    fn turn(m: &Module) -> (Bound, Bound, Bound) {
        let b = workflow_turn(m).unwrap();
        (b.executions, b.calls.model, b.calls.tool)
    }

    const U: Bound = Bound::Unbounded;
    fn f(n: u64) -> Bound {
        Bound::Finite(n)
    }

    #[test]
    fn arithmetic_saturates_and_zero_absorbs() {
        assert_eq!(f(u64::MAX).plus(f(1)), f(u64::MAX));
        assert_eq!(f(u64::MAX).times(f(2)), f(u64::MAX));
        assert_eq!(f(0).times(U), f(0));
        assert_eq!(U.times(f(0)), f(0));
        assert_eq!(f(3).times(U), U);
        assert_eq!(f(3).plus(U), U);
        assert!(f(u64::MAX) < U);
        assert_eq!(U.to_string(), "unbounded");
    }

    #[test]
    fn prompt_defaults_and_no_tools() {
        let p = prompt(2, ToolPolicy::default());
        assert_eq!(
            prompt_execution(&p),
            Calls {
                model: f(5),
                tool: f(10),
                extension: Bound::ZERO,
            }
        );
        let p = prompt(0, ToolPolicy::default());
        assert_eq!(
            prompt_execution(&p),
            Calls {
                model: f(5),
                tool: f(0),
                extension: Bound::ZERO,
            }
        );
    }

    #[test]
    fn chain_without_cycle_is_the_longest_path() {
        // 0 -> 1 -> 2, 0 -> 2: three executions of (2 model, 3 tool).
        let m = module(vec![st(&[1, 2]), st(&[2]), st(&[])], Budget::default());
        assert_eq!(turn(&m), (f(3), f(6), f(9)));
    }

    #[test]
    fn unbounded_cycle_and_what_bounds_it() {
        let cycle = || vec![st(&[1]), st(&[0, 2]), st(&[])];
        let m = module(cycle(), Budget::default());
        assert_eq!(turn(&m), (U, U, U));

        let budget = Budget {
            max_total_visits: Some(4),
            max_tool_calls: Some(5),
            max_wall_time_sec: None,
        };
        assert_eq!(turn(&module(cycle(), budget)), (f(4), f(8), f(5)));

        // max_visits: 2 on state 1: the edge 0 -> 1 is capped (K = 2). Free paths: 1 -> 0
        // (ends in 0, which takes the capped edge) and 1 -> 2: 2 × 2 + 2 states.
        let mut states = cycle();
        states[1].max_visits = Some(2);
        assert_eq!(
            turn(&module(states, Budget::default())),
            (f(6), f(12), f(18))
        );
    }

    #[test]
    fn redirects_are_not_capped() {
        // 0 -> 1 (max_visits 1, on_max_visits 2), 2 -> 0: once 1 is spent, 0 -> 2 -> 0
        // loops freely.
        let mut states = vec![st(&[1]), st(&[]), st(&[0])];
        states[1].max_visits = Some(1);
        states[1].on_max_visits = Some(StateId(2));
        assert_eq!(turn(&module(states, Budget::default())).0, U);
    }

    #[test]
    fn external_states_stop_a_turn_and_unreachable_states_do_not_count() {
        // 0 -> 1 (external) -> 0: the turn stops before 1 runs, and 1's own event is
        // ignored within a turn. State 2 loops on itself but no root reaches it.
        let mut states = vec![st(&[1]), st(&[0]), st(&[2])];
        states[1].mode = Orchestration::External;
        assert_eq!(turn(&module(states, Budget::default())), (f(1), f(2), f(3)));
    }
}
