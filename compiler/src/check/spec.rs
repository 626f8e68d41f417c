//! The rules of later spec levels (`shared/semantics/later-versions.md` §1–§3, §6):
//! the note `no_spec_version`, `control` (`inert_control`, the `unbounded_loop` of a
//! `control: agent` cycle), providers (`duplicate_provider_key`, `unresolved_provider`,
//! `provider_role`) and governance controls (`unresolved_control`).

use std::collections::HashMap;

use crate::doc::Node;
use indexmap::IndexMap;
use ir_spec::SpecLevel;

use crate::members::entries;

use super::{did_you_mean, Cx};
use crate::diag::{join, At, DiagKind, Diagnostic, Token};

pub(super) fn check(cx: &mut Cx<'_, '_>) {
    let root = cx.root;
    let workflow = root.get("workflow").filter(|w| w.is_object());
    if let Some(wf) = workflow {
        let graph = Graph::of(cx, wf);
        if !cx.claim.declared && cx.options.spec_level.is_none() {
            no_spec_version(cx, &graph);
        }
        if cx.level >= SpecLevel::V1_8 {
            control(cx, &graph);
        }
    }
    providers(cx);
    governance(cx);
    validator_ids(cx);
}

/// The states of a workflow in source order, with what the rules read.
struct Graph<'a> {
    names: Vec<&'a str>,
    states: Vec<&'a Node<'a>>,
    terminal: Vec<bool>,
    external: Vec<bool>,
    /// The state's own answer can name an event (internal, hybrid, composition modes).
    model_driven: Vec<bool>,
    agent: Vec<bool>,
    edges: Vec<Vec<usize>>,
    redirect: Vec<Option<usize>>,
    reached: Vec<bool>,
}

impl<'a> Graph<'a> {
    fn of(cx: &Cx<'a, '_>, wf: &'a Node<'a>) -> Graph<'a> {
        let states = wf.get("states").and_then(Node::as_object);
        let entries: Vec<(&str, &Node)> = states
            .into_iter()
            .flat_map(|m| m.iter())
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let index: rustc_hash::FxHashMap<&str, usize> = entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i))
            .collect();
        let on_event = |v: &'a Node<'a>| v.get("on_event").and_then(Node::as_object);
        let terminal: Vec<bool> = entries
            .iter()
            .map(|(_, v)| {
                v.get("terminal").and_then(Node::as_bool) == Some(true)
                    || on_event(v).is_none_or(|m| m.is_empty())
            })
            .collect();
        let external = |v: &Node| v.get("orchestration").and_then(Node::as_str) == Some("external");
        let edges: Vec<Vec<usize>> = entries
            .iter()
            .map(|(_, v)| {
                on_event(v)
                    .into_iter()
                    .flat_map(|m| m.values())
                    .filter_map(|t| index.get(t.as_str()?).copied())
                    .collect()
            })
            .collect();
        let redirect = entries
            .iter()
            .map(|(_, v)| {
                v.get("on_max_visits")
                    .and_then(Node::as_str)
                    .and_then(|t| index.get(t).copied())
            })
            .collect();
        let mut roots: Vec<usize> = wf
            .get("entry")
            .and_then(Node::as_str)
            .and_then(|e| index.get(e).copied())
            .into_iter()
            .collect();
        roots.extend(super::workflow::agent_states(cx.root).filter_map(|s| index.get(s).copied()));
        let mut reached = vec![false; entries.len()];
        while let Some(s) = roots.pop() {
            if !std::mem::replace(&mut reached[s], true) {
                roots.extend(edges[s].iter().copied());
            }
        }
        Graph {
            names: entries.iter().map(|(k, _)| *k).collect(),
            states: entries.iter().map(|(_, v)| *v).collect(),
            external: entries.iter().map(|(_, v)| external(v)).collect(),
            model_driven: entries.iter().map(|(_, v)| !external(v)).collect(),
            agent: entries
                .iter()
                .map(|(_, v)| v.get("control").and_then(Node::as_str) == Some("agent"))
                .collect(),
            terminal,
            edges,
            redirect,
            reached,
        }
    }

    fn ptr(&self, s: usize) -> String {
        join("/workflow/states", &[self.names[s]])
    }
}

/// `no_spec_version` (§1): a pack with no claim whose turns would stop after a
/// model-driven transition if it declared v1.7 or later.
fn no_spec_version(cx: &mut Cx<'_, '_>, g: &Graph<'_>) {
    let runs_on = |t: usize| !g.terminal[t] && !g.external[t];
    let hit = (0..g.names.len()).find_map(|s| {
        if !g.reached[s] || g.terminal[s] || !g.model_driven[s] {
            return None;
        }
        g.edges[s]
            .iter()
            .find(|&&t| runs_on(t) || g.redirect[t].is_some_and(runs_on))
            .map(|&t| (s, t))
    });
    if let Some((s, t)) = hit {
        cx.push(
            Diagnostic::new(
                DiagKind::NoSpecVersion,
                format!(
                    "this pack declares no spec version: it runs as v1.5, where a transition from `{}` into `{}` continues the turn; from v1.7 on the turn would stop there unless `{}` has `control: agent`",
                    g.names[s], g.names[t], g.names[t]
                ),
            )
            .at(join(&g.ptr(s), &["on_event"]))
            .help("declare the version the pack is written for, e.g. `$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json`"),
        );
    }
}

/// `inert_control` and the `unbounded_loop` of a `control: agent` cycle (§2).
fn control(cx: &mut Cx<'_, '_>, g: &Graph<'_>) {
    for s in 0..g.names.len() {
        if g.agent[s] && g.terminal[s] {
            cx.push(
                Diagnostic::new(
                    DiagKind::InertControl,
                    format!(
                        "`control: agent` has no effect on terminal state `{}`",
                        g.names[s]
                    ),
                )
                .at(join(&g.ptr(s), &["control"]))
                .help("a terminal state always runs in the turn that enters it: remove `control`"),
            );
        }
    }
    let stops: Vec<bool> = (0..g.names.len())
        .map(|v| g.terminal[v] || !g.agent[v] || g.states[v].get("max_visits").is_some())
        .collect();
    let never_yields = never_yields(&g.edges, &g.agent, &stops);
    // A state the workflow rules already reported as an unbounded loop is not reported again.
    let mut reported: rustc_hash::FxHashSet<String> = cx
        .out
        .iter()
        .filter(|d| d.kind == DiagKind::UnboundedLoop)
        .filter_map(|d| d.pointer().map(str::to_owned))
        .collect();
    for (s, &never) in never_yields.iter().enumerate() {
        if !never {
            continue;
        }
        let ptr = g.ptr(s);
        if reported.insert(ptr.clone()) {
            cx.push(
                Diagnostic::new(
                    DiagKind::UnboundedLoop,
                    format!(
                        "state `{}` lies on a loop of `control: agent` states that never yields to the user",
                        g.names[s]
                    ),
                )
                .at(ptr)
                .help("declare `max_visits` on a state of the loop, or let the loop reach a `control: user` or terminal state"),
            );
        }
    }
}

/// The states on a loop of `control: agent` states that never yields to the user: a
/// cycle among agent states (`edges` between two `agent` states) from which no state in
/// `stops` (`control: user`, terminal or `max_visits`) is reachable, through any
/// transition, by a walk that ends at the first such state. A state in `stops` yields
/// itself.
///
/// Linear in the size of the graph: one pass of Tarjan's algorithm finds the cycles, and
/// one walk back from every stop finds the states that can reach one, instead of a walk
/// forward from each state of each loop.
fn never_yields(edges: &[Vec<usize>], agent: &[bool], stops: &[bool]) -> Vec<bool> {
    let n = edges.len();
    let agent_edges: Vec<Vec<usize>> = (0..n)
        .map(|s| {
            if agent[s] {
                edges[s].iter().copied().filter(|&t| agent[t]).collect()
            } else {
                Vec::new()
            }
        })
        .collect();
    let cyclic = super::workflow::on_cycle(&agent_edges);
    let mut into: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (v, targets) in edges.iter().enumerate() {
        for &t in targets {
            into[t].push(v);
        }
    }
    // A state yields if it stops, or if a transition leads to a state that yields.
    let mut yields = stops.to_vec();
    let mut stack: Vec<usize> = (0..n).filter(|&v| yields[v]).collect();
    while let Some(t) = stack.pop() {
        for &v in &into[t] {
            if !std::mem::replace(&mut yields[v], true) {
                stack.push(v);
            }
        }
    }
    (0..n).map(|s| cyclic[s] && !yields[s]).collect()
}

/// `requires.providers` and every `provider` reference (§3).
fn providers(cx: &mut Cx<'_, '_>) {
    let root = cx.root;
    let declared = crate::lower::spec::declared_providers(root);
    // duplicate_provider_key, at the second occurrence.
    let items = crate::lower::spec::provider_items(root);
    let mut first: IndexMap<&str, usize> = IndexMap::new();
    for (i, item) in items.iter().enumerate() {
        let key = match item {
            Node::String(k) => Some(k.as_str()),
            Node::Object(o) => o.get("key").and_then(Node::as_str),
            _ => None,
        };
        let Some(key) = key else { continue };
        let ptr = join("/requires/providers", &[&i.to_string()]);
        match first.get(key) {
            Some(&j) => cx.push(
                Diagnostic::new(
                    DiagKind::DuplicateProviderKey,
                    format!("provider key `{key}` is declared twice"),
                )
                .at(ptr)
                .also(
                    join("/requires/providers", &[&j.to_string()]),
                    "first declared here",
                )
                .help("each key of `requires.providers` is declared once"),
            ),
            None => {
                first.insert(key, i);
            }
        }
    }
    let role_of = |key: &str| -> Option<String> {
        declared
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.role.clone())
    };
    // Each declared key once, in declaration order (a key declared twice is
    // `duplicate_provider_key`).
    let keys: Vec<&str> = first.keys().copied().collect();
    let resolve = |cx: &mut Cx<'_, '_>, key: &str, ptr: &At<'_>| -> bool {
        if key == "default" || keys.contains(&key) {
            return true;
        }
        cx.push(
            Diagnostic::new(
                DiagKind::UnresolvedProvider,
                format!("provider `{key}` is not declared in `requires.providers`"),
            )
            .at(ptr)
            .help(format!(
                "declare it under `requires: {{providers: [{key}]}}`; {}",
                did_you_mean("providers", key, keys.iter().copied())
            )),
        );
        false
    };
    if cx.level < SpecLevel::V1_9 {
        return; // `provider` below 1.9 is a schema_violation
    }
    let mut prompt_role: IndexMap<&str, String> = IndexMap::new();
    for (name, prompt) in entries(root.get("prompts")) {
        if let Some(key) = prompt.get("provider").and_then(Node::as_str) {
            if resolve(cx, key, &At::Text("/prompts").key(name).key("provider")) {
                if let Some(role) = role_of(key) {
                    prompt_role.insert(name, role);
                }
            }
        }
    }
    // provider_role: a conversational state on a non-llm provider.
    if let Some(states) = root
        .get("workflow")
        .and_then(|w| w.get("states"))
        .and_then(Node::as_object)
    {
        for (name, state) in states {
            let Some(p) = state.get("prompt_task").and_then(Node::as_str) else {
                continue;
            };
            if state.get("orchestration").and_then(Node::as_str) == Some("composition") {
                continue;
            }
            if let Some(role) = prompt_role.get(p).filter(|r| *r != "llm") {
                cx.push(
                    Diagnostic::new(
                        DiagKind::ProviderRole,
                        format!("state `{name}` converses through prompt `{p}`, whose provider has role `{role}`"),
                    )
                    .at(join("/workflow/states", &[name, "prompt_task"]))
                    .help("a conversational state needs an `llm` provider: give the prompt one"),
                );
            }
        }
    }
    let compositions = At::Text("/compositions");
    for (name, comp) in entries(root.get("compositions")) {
        let cptr = compositions.key(name);
        let steps = comp.get("steps").and_then(Node::as_array);
        for (i, step) in steps.into_iter().flatten().enumerate() {
            let branches = crate::vocab::parallel_branches(step);
            let nested = branches.into_iter().flatten().enumerate();
            let nested = nested.map(|(j, b)| (b, Some(j)));
            for (s, branch) in std::iter::once((step, None)).chain(nested) {
                let (tokens, n) = Token::step(i, branch);
                let ptr = At::Path(&cptr, &tokens[..n]);
                let kind = s.get("kind").and_then(Node::as_str);
                if !matches!(kind, Some("prompt" | "agent")) {
                    continue;
                }
                let own = s.get("provider").and_then(Node::as_str);
                let mut role = None;
                if let Some(key) = own {
                    if resolve(cx, key, &ptr.key("provider")) {
                        role = role_of(key);
                    }
                } else if let Some(p) = s.get("prompt_task").and_then(Node::as_str) {
                    role = prompt_role.get(p).cloned();
                }
                let role = role.filter(|r| r != "llm");
                if let (Some(role), Some("prompt"), None) = (role, kind, s.get("output_schema")) {
                    cx.push(
                        Diagnostic::new(
                            DiagKind::ProviderRole,
                            format!("a prompt step without `output_schema` runs on a provider with role `{role}`"),
                        )
                        .at(match own {
                            None => ptr.pointer(),
                            Some(_) => ptr.key("provider").pointer(),
                        })
                        .help("declare the `output_schema` the provider answers with, or use an `llm` provider"),
                    );
                }
            }
        }
    }
}

/// `invalid_validator` at the second of two validators with one `id`: the v1.8.1 schema
/// makes a validator's `id` unique across the pack, and an obligation's control names it.
fn validator_ids(cx: &mut Cx<'_, '_>) {
    if cx.level < SpecLevel::V1_8 {
        return;
    }
    // Where each id was first seen; pointers are built only for a duplicate.
    let ptr = |key: &str, i: usize| join("/prompts", &[key, "validators", &i.to_string(), "id"]);
    let mut first: HashMap<&str, (&str, usize)> = HashMap::new();
    for (key, prompt) in entries(cx.root.get("prompts")) {
        let list = prompt.get("validators").and_then(Node::as_array);
        for (i, v) in list.into_iter().flatten().enumerate() {
            let Some(id) = v.get("id").and_then(Node::as_str) else {
                continue;
            };
            let Some(&(before, j)) = first.get(id) else {
                first.insert(id, (key, i));
                continue;
            };
            let d = Diagnostic::new(
                DiagKind::InvalidValidator,
                format!("validator id `{id}` is used twice"),
            )
            .at(ptr(key, i))
            .also(ptr(before, j), "first used here")
            .help("a validator's `id` is unique across the pack (an obligation's control names it): rename one");
            cx.push(d);
        }
    }
}

/// `ignored_governance`: `metadata.governance` in a pack read at level 1.5, where it is
/// plain metadata (§1, §6): not checked, not carried into the artifact, and no
/// `--environment` admission. (A member's `governance` is a `schema_violation` there.)
fn ignored_governance(cx: &mut Cx<'_, '_>) {
    if cx
        .root
        .get("metadata")
        .and_then(|m| m.get("governance"))
        .is_none()
    {
        return;
    }
    let claimed = if cx.options.spec_level.is_some() {
        "`--spec-level` (`spec_level`) reads the pack at level 1.5"
    } else if cx.claim.declared {
        "the pack's `$schema` is read as level 1.5"
    } else {
        "the pack has no `$schema`, so it is read at level 1.5"
    };
    let d = Diagnostic::new(
        DiagKind::IgnoredGovernance,
        format!("governance is read from spec level 1.5.1, and {claimed}: here it is plain metadata, not checked or carried into the artifact, and `packc run --environment` does not gate the pack"),
    )
    .at("/metadata/governance")
    .help("declare the version the pack is written for, e.g. `$schema: https://promptpack.org/schema/v1.8.1/promptpack.schema.json`");
    cx.push(d);
}

/// `unresolved_control` (§6): an obligation's control names a validator or eval id that
/// the pack does not declare.
fn governance(cx: &mut Cx<'_, '_>) {
    if cx.level < SpecLevel::V1_5_1 {
        ignored_governance(cx);
        return;
    }
    let root = cx.root;
    let prompts = root.get("prompts").and_then(Node::as_object);
    let ids_in = |list: Option<&Node>| -> Vec<String> {
        list.and_then(Node::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("id").and_then(Node::as_str).map(str::to_owned))
            .collect()
    };
    let validators: Vec<String> = prompts
        .into_iter()
        .flat_map(|m| m.values())
        .flat_map(|p| ids_in(p.get("validators")))
        .collect();
    let mut evals = ids_in(root.get("evals"));
    evals.extend(
        prompts
            .into_iter()
            .flat_map(|m| m.values())
            .flat_map(|p| ids_in(p.get("evals"))),
    );
    let mut places: Vec<(String, &Node)> = Vec::new();
    if let Some(g) = root.get("metadata").and_then(|m| m.get("governance")) {
        places.push(("/metadata/governance".into(), g));
    }
    for (name, member) in entries(root.get("agents").and_then(|a| a.get("members"))) {
        if let Some(g) = member.get("governance") {
            places.push((join("/agents/members", &[name, "governance"]), g));
        }
    }
    for (base, g) in places {
        let obligations = g.get("obligations").and_then(Node::as_array);
        for (i, o) in obligations.into_iter().flatten().enumerate() {
            let controls = o.get("controls").and_then(Node::as_array);
            for (j, c) in controls.into_iter().flatten().enumerate() {
                let ptr = |k: &str| {
                    join(
                        &base,
                        &["obligations", &i.to_string(), "controls", &j.to_string(), k],
                    )
                };
                for (what, known) in [("validator", &validators), ("eval", &evals)] {
                    let Some(id) = c.get(what).and_then(Node::as_str) else {
                        continue;
                    };
                    if !known.iter().any(|k| k == id) {
                        cx.push(
                            Diagnostic::new(
                                DiagKind::UnresolvedControl,
                                format!("control {what} `{id}` names no {what} of the pack"),
                            )
                            .at(ptr(what))
                            .help(did_you_mean(
                                &format!("{what} ids"),
                                id,
                                known.iter().map(|k| k.as_str()),
                            )),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::DiagKind;

    fn kinds(yaml: &str) -> Vec<(DiagKind, String)> {
        let checked = crate::check_bytes(yaml.as_bytes(), &crate::Options::default());
        checked
            .diagnostics
            .iter()
            .map(|d| (d.kind, d.pointer().unwrap_or("").to_owned()))
            .collect()
    }

    const HEAD: &str = r#"$schema: "https://promptpack.org/schema/v1.9.0/promptpack.schema.json"
id: d
name: D
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "Hi."}
"#;

    #[test]
    fn an_agent_loop_is_reported_once_per_state() {
        let pack = format!(
            "{HEAD}workflow:\n  version: 1\n  entry: a\n  states:\n    a: {{prompt_task: p, control: agent, on_event: {{N: b}}}}\n    b: {{prompt_task: p, control: agent, on_event: {{B: a}}}}\n"
        );
        let loops: Vec<_> = kinds(&pack)
            .into_iter()
            .filter(|(k, _)| *k == DiagKind::UnboundedLoop)
            .collect();
        assert_eq!(
            loops,
            vec![
                (DiagKind::UnboundedLoop, "/workflow/states/a".to_owned()),
                (DiagKind::UnboundedLoop, "/workflow/states/b".to_owned())
            ]
        );
    }

    /// Two loops of `control: agent` states, each state with many events: one loop never
    /// yields, the other reaches a terminal state from one of its states. Each state of
    /// the first is reported once, in source order.
    #[test]
    fn only_the_loop_that_never_yields_is_reported() {
        let (n, events) = (50, 10);
        let mut pack = format!(
            "{HEAD}workflow:\n  version: 1\n  entry: a0\n  engine: {{budget: {{max_total_visits: 9}}}}\n  states:\n    done: {{prompt_task: p, terminal: true}}\n"
        );
        for ring in ["a", "b"] {
            for i in 0..n {
                let mut on_event: Vec<String> = (1..=events)
                    .map(|e| format!("E{e}: {ring}{}", (i * e + 1) % n))
                    .collect();
                if ring == "b" && i == 0 {
                    on_event.push("Done: done".to_owned());
                }
                pack.push_str(&format!(
                    "    {ring}{i}: {{prompt_task: p, control: agent, on_event: {{{}}}}}\n",
                    on_event.join(", ")
                ));
            }
        }
        let loops: Vec<String> = kinds(&pack)
            .into_iter()
            .filter(|(k, _)| *k == DiagKind::UnboundedLoop)
            .map(|(_, p)| p)
            .collect();
        let want: Vec<String> = (0..n).map(|i| format!("/workflow/states/a{i}")).collect();
        assert_eq!(loops, want);
    }

    /// A graph far too big to walk from each of its states: 100,000 agent states in two
    /// rings of 20 transitions each, one ring with a way out.
    #[test]
    fn never_yields_is_linear() {
        let n = 50_000;
        let mut edges: Vec<Vec<usize>> = Vec::with_capacity(2 * n + 1);
        for ring in 0..2 {
            for i in 0..n {
                edges.push((1..=20).map(|e| ring * n + (i * e + 1) % n).collect());
            }
        }
        let exit = 2 * n;
        edges[n].push(exit);
        edges.push(Vec::new());
        let mut agent = vec![true; 2 * n + 1];
        agent[exit] = false;
        let stops: Vec<bool> = agent.iter().map(|a| !a).collect();
        let never = super::never_yields(&edges, &agent, &stops);
        assert_eq!(never.iter().filter(|&&b| b).count(), n);
        assert!(never[..n].iter().all(|&b| b));
    }

    #[test]
    fn max_visits_on_a_member_bounds_an_agent_loop() {
        let pack = format!(
            "{HEAD}workflow:\n  version: 1\n  entry: a\n  engine: {{budget: {{max_total_visits: 9}}}}\n  states:\n    a: {{prompt_task: p, control: agent, max_visits: 3, on_event: {{N: b}}}}\n    b: {{prompt_task: p, control: agent, on_event: {{B: a}}}}\n"
        );
        assert!(!kinds(&pack)
            .iter()
            .any(|(k, _)| *k == DiagKind::UnboundedLoop));
    }
}
