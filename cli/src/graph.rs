//! `packc graph`: draw a pack's workflow and compositions as one Graphviz or Mermaid graph.
//!
//! The module is first turned into a small format-neutral [`Graph`] (groups of nodes, and
//! edges), then printed by [`to_dot`] or [`to_mermaid`]; both printers walk the same
//! graph, so the two formats always show the same nodes and edges. Node ids are derived
//! from table indices (`s0` for state 0, `c1_2` for step 2 of composition 1), never from
//! names, so any key is safe and the output is the same for the same module.
//!
//! What is drawn:
//!
//! - the workflow: one node per state, terminal states double-bordered; an `entry` node
//!   into `workflow.entry` and an `agent <m>` node into each state-backed agent's state;
//!   an edge per `on_event` entry of a non-terminal state, labeled with the event; a
//!   dashed edge labeled `max_visits N` from a state to its `on_max_visits` target;
//! - each composition: its top-level steps in walk order joined by unlabeled sequential
//!   edges, a branch step's edges labeled `then` / `else`, a parallel step boxed with its
//!   branches and joined to each, and a dashed edge from each `depends_on` step to its
//!   dependent (the sequential edge labeled `depends_on` when the dependent comes right
//!   after it). A step some branch selects is entered only by that branch's edge: the
//!   step before it is joined to the first step after it that no branch selects (where
//!   the walk goes on when it is skipped), and a branch without `else` gets a dashed
//!   `false: skip` edge there.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use ir_spec::{Composition, Module, Orchestration, StateBody, StepKind, ToolRef};

mod print;

pub use print::{to_dot, to_mermaid};

/// Draw a pack's workflow and compositions as a Graphviz or Mermaid graph.
///
/// Compiles the pack (or loads a built `.ppk`) and prints one graph. The workflow:
/// states as nodes (terminal states double-bordered), an edge per `on_event`
/// transition labeled with its event, and a dashed `max_visits N` edge to each
/// `on_max_visits` target. Each composition: its steps in walk order joined by
/// plain edges, a branch's `then` / `else` edges labeled (a branch without `else`
/// also gets a dashed `false: skip` edge; a step only a branch selects has no plain
/// edge into it), a parallel step boxed with its branches, and a dashed edge from
/// each `depends_on` step to its dependent (a label on the plain edge when the dependent
/// comes right after it).
///
/// Examples:
///   packc graph examples/rfc0010-ex2.pack.yaml | dot -Tsvg > ex2.svg
///   packc graph examples/guide-add-workflow.pack.yaml --format mermaid
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct GraphArgs {
    /// The pack file, or an artifact built by `packc build`.
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// The graph language to print.
    #[arg(long, value_enum, default_value_t)]
    pub format: GraphFormat,
    /// Let the pack read files (schema files) from this folder too (repeatable).
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
}

/// The graph language `packc graph` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// A Graphviz `digraph` (render with `dot -Tsvg`).
    #[default]
    Dot,
    /// A Mermaid `flowchart` (renders in GitHub and GitLab Markdown).
    Mermaid,
}

/// Compile (or load) the pack and print its graph. Exit 1 when the pack has errors.
pub fn run(args: &GraphArgs) -> Result<ExitCode> {
    let module = match crate::inputs::load_module(
        &args.pack,
        &args.allow_paths,
        None,
        crate::inputs::Shown::All,
    )? {
        Ok(module) => module,
        Err(code) => return Ok(code),
    };
    out!("{}", render(&module, args.format));
    Ok(ExitCode::SUCCESS)
}

/// The module's graph in `format`.
pub fn render(module: &Module, format: GraphFormat) -> String {
    let g = graph(module);
    match format {
        GraphFormat::Dot => to_dot(&g),
        GraphFormat::Mermaid => to_mermaid(&g),
    }
}

/// A format-neutral drawing: nested groups of nodes, then every edge.
#[derive(Debug, Default)]
pub struct Graph {
    /// The pack's `id`.
    pub name: String,
    /// The top-level groups: the workflow, then each composition.
    pub groups: Vec<Group>,
    /// Every edge, in the order they were found.
    pub edges: Vec<Edge>,
}

/// A boxed set of nodes (a Graphviz cluster, a Mermaid subgraph).
#[derive(Debug)]
pub struct Group {
    /// Unique among nodes and groups.
    pub id: String,
    /// Shown on the box.
    pub title: String,
    /// Nodes and nested groups, in drawing order.
    pub items: Vec<Item>,
}

/// A member of a [`Group`].
#[derive(Debug)]
pub enum Item {
    /// A node.
    Node(Node),
    /// A nested group.
    Group(Group),
}

/// A node.
#[derive(Debug)]
pub struct Node {
    /// Unique among nodes and groups; `[A-Za-z0-9_]` only.
    pub id: String,
    /// Label lines; the first is the name.
    pub lines: Vec<String>,
    /// How it is drawn.
    pub shape: Shape,
}

/// What a node stands for, which decides its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Where a run starts: `entry`, `agent <m>`.
    Start,
    /// A non-terminal workflow state.
    State,
    /// A terminal workflow state (double border).
    Terminal,
    /// A prompt, agent or tool step.
    Step,
    /// A branch step.
    Branch,
    /// A parallel step.
    Parallel,
}

/// An edge.
#[derive(Debug)]
pub struct Edge {
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// Edge label, if any.
    pub label: Option<String>,
    /// Dashed: a `max_visits` redirect or a `depends_on`.
    pub dashed: bool,
    /// The group the edge leaves from instead of `from` itself: a parallel step's box,
    /// for the edge to the step after it, which runs once every branch is done.
    pub from_group: Option<String>,
}

fn edge(from: String, to: String, label: Option<String>, dashed: bool) -> Edge {
    Edge {
        from,
        to,
        label,
        dashed,
        from_group: None,
    }
}

/// Builds the drawing of a valid module.
pub fn graph(m: &Module) -> Graph {
    let mut g = Graph {
        name: m.id.clone(),
        ..Graph::default()
    };
    if let Some(wf) = &m.workflow {
        let mut items = vec![Item::Node(Node {
            id: "wf_entry".into(),
            lines: vec!["entry".into()],
            shape: Shape::Start,
        })];
        g.edges.push(edge(
            "wf_entry".into(),
            state_id(wf.entry.index()),
            None,
            false,
        ));
        for (i, a) in m.agents.iter().enumerate() {
            if let ir_spec::AgentStart::State(s) = a.start {
                let id = format!("agent{i}");
                items.push(Item::Node(Node {
                    id: id.clone(),
                    lines: vec![format!("agent {}", m.str(a.key))],
                    shape: Shape::Start,
                }));
                g.edges.push(edge(id, state_id(s.index()), None, false));
            }
        }
        for (i, s) in wf.states.iter().enumerate() {
            let mut lines = vec![m.str(s.key).to_owned()];
            lines.push(match s.body {
                StateBody::Prompt(p) => format!("prompt {}", m.str(m.prompts[p.index()].key)),
                StateBody::Composition(c) => {
                    format!("composition {}", m.str(m.compositions[c.index()].key))
                }
            });
            match s.mode {
                Orchestration::External => lines.push("external".into()),
                Orchestration::Hybrid => lines.push("hybrid".into()),
                Orchestration::Internal | Orchestration::Composition => {}
            }
            if let Some(n) = s.max_visits {
                lines.push(format!("max_visits {n}"));
            }
            items.push(Item::Node(Node {
                id: state_id(i),
                lines,
                shape: if s.terminal {
                    Shape::Terminal
                } else {
                    Shape::State
                },
            }));
            if !s.terminal {
                for &(e, t) in &s.on_event {
                    let label = Some(m.event(e).to_owned());
                    g.edges
                        .push(edge(state_id(i), state_id(t.index()), label, false));
                }
            }
            if let (Some(n), Some(r)) = (s.max_visits, s.on_max_visits) {
                let label = Some(format!("max_visits {n}"));
                g.edges
                    .push(edge(state_id(i), state_id(r.index()), label, true));
            }
        }
        let mut title = "workflow".to_owned();
        let b = wf.budget;
        let limits: Vec<String> = [
            ("max_total_visits", b.max_total_visits),
            ("max_tool_calls", b.max_tool_calls),
            ("max_wall_time_sec", b.max_wall_time_sec),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
        .collect();
        if !limits.is_empty() {
            title = format!("{title} (budget: {})", limits.join(", "));
        }
        g.groups.push(Group {
            id: "wf".into(),
            title,
            items,
        });
    }
    for (ci, c) in m.compositions.iter().enumerate() {
        let group = composition(m, ci, c, &mut g.edges);
        g.groups.push(group);
    }
    g
}

fn state_id(i: usize) -> String {
    format!("s{i}")
}

fn step_id(ci: usize, si: usize) -> String {
    format!("c{ci}_{si}")
}

fn composition(m: &Module, ci: usize, c: &Composition, edges: &mut Vec<Edge>) -> Group {
    let id = |s: ir_spec::StepId| step_id(ci, s.index());
    // Steps some branch selects: the walk runs them only when a branch took them
    // (`compositions.md` §4.2), so no sequential edge leads into them.
    let mut selected = vec![false; c.steps.len()];
    for &s in &c.walk {
        if let StepKind::Branch {
            then, otherwise, ..
        } = &c.steps[s.index()].kind
        {
            for t in std::iter::once(*then).chain(*otherwise) {
                selected[t.index()] = true;
            }
        }
    }
    let is_selected = |s: ir_spec::StepId| selected[s.index()];
    // `next_plain[k]`: the first step after walk position `k` that no branch selects,
    // where the walk goes on when the selected steps in between are skipped. Filled from
    // the end, so drawing stays linear in the number of steps.
    let mut next_plain = vec![None; c.walk.len()];
    let mut after = None;
    for (k, &s) in c.walk.iter().enumerate().rev() {
        next_plain[k] = after;
        if !is_selected(s) {
            after = Some(s);
        }
    }
    let mut items = Vec::new();
    for (k, &s) in c.walk.iter().enumerate() {
        let step = &c.steps[s.index()];
        let node = step_node(m, c, ci, s);
        let mut targets = Vec::new();
        let mut from_group = None;
        match &step.kind {
            StepKind::Parallel { branches, .. } => {
                let mut inner = vec![Item::Node(node)];
                for &b in branches {
                    inner.push(Item::Node(step_node(m, c, ci, b)));
                    edges.push(edge(id(s), id(b), None, false));
                }
                let group = format!("{}_par", id(s));
                from_group = Some(group.clone());
                items.push(Item::Group(Group {
                    id: group,
                    title: format!("parallel {}", m.str(step.id)),
                    items: inner,
                }));
            }
            StepKind::Branch {
                then, otherwise, ..
            } => {
                items.push(Item::Node(node));
                match otherwise {
                    Some(e) if e == then => {
                        edges.push(edge(id(s), id(*then), Some("then, else".into()), false));
                    }
                    Some(e) => {
                        edges.push(edge(id(s), id(*then), Some("then".into()), false));
                        edges.push(edge(id(s), id(*e), Some("else".into()), false));
                    }
                    None => edges.push(edge(id(s), id(*then), Some("then".into()), false)),
                }
                targets.push(*then);
                targets.extend(*otherwise);
            }
            _ => items.push(Item::Node(node)),
        }
        let is_branch = !targets.is_empty();
        let has_else = targets.len() > 1;
        match c.walk.get(k + 1) {
            Some(&next) if !is_selected(next) => {
                let mut e = edge(id(s), id(next), None, false);
                e.from_group = from_group;
                edges.push(e);
            }
            Some(_) => match next_plain[k] {
                // A branch without `else` whose predicate is false skips `then`.
                Some(after) if is_branch && !has_else => {
                    edges.push(edge(id(s), id(after), Some("false: skip".into()), true));
                }
                Some(after) if !is_branch => {
                    let mut e = edge(id(s), id(after), None, false);
                    e.from_group = from_group;
                    edges.push(e);
                }
                _ => {}
            },
            None => {}
        }
    }
    // `depends_on` edges last, so each step's sequential and branch edges stay together.
    // A step that follows the one it depends on has its sequential edge labelled
    // instead: one arrow between the two.
    for &s in &c.walk {
        for &d in &c.steps[s.index()].depends_on {
            let (from, to) = (id(d), id(s));
            let along = edges
                .iter_mut()
                .find(|e| !e.dashed && e.label.is_none() && e.from == from && e.to == to);
            match along {
                Some(e) => e.label = Some("depends_on".into()),
                None => edges.push(edge(from, to, None, true)),
            }
        }
    }
    Group {
        id: format!("c{ci}"),
        title: format!("composition {}", m.str(c.key)),
        items,
    }
}

fn step_node(m: &Module, c: &Composition, ci: usize, s: ir_spec::StepId) -> Node {
    let step = &c.steps[s.index()];
    let prompt = |p: ir_spec::PromptId| m.str(m.prompts[p.index()].key);
    let tool = |t: ir_spec::ToolId| m.str(m.tools[t.index()].key);
    let mut lines = vec![m.str(step.id).to_owned()];
    let shape = match &step.kind {
        StepKind::Prompt { prompt: p, .. } => {
            lines.push(format!("prompt {}", prompt(*p)));
            Shape::Step
        }
        StepKind::Tool { tool: t, .. } => {
            lines.push(format!("tool {}", tool(*t)));
            Shape::Step
        }
        StepKind::Extension { kind, .. } => {
            lines.push(format!("extension {kind}"));
            Shape::Step
        }
        StepKind::Agent {
            prompt: p,
            tools,
            max_steps,
            tool_called,
            ..
        } => {
            lines.push(format!("agent {}", prompt(*p)));
            if !tools.is_empty() {
                let names: Vec<&str> = tools
                    .iter()
                    .map(|t| match t {
                        ToolRef::Tool(t) => tool(*t),
                        ToolRef::Member(k) => m.str(*k),
                    })
                    .collect();
                lines.push(format!("tools {}", names.join(", ")));
            }
            if let Some(n) = max_steps {
                lines.push(format!("max_steps {n}"));
            }
            if let Some(t) = tool_called {
                lines.push(format!("until {}", tool(*t)));
            }
            Shape::Step
        }
        StepKind::Branch { .. } => {
            lines.push("branch".into());
            Shape::Branch
        }
        StepKind::Parallel { strategy, into, .. } => {
            let strategy = match strategy {
                ir_spec::Reduce::Append => "append",
                ir_spec::Reduce::Replace => "replace",
                ir_spec::Reduce::Barrier => "barrier",
            };
            lines.push(format!("parallel, {strategy} into {into}"));
            Shape::Parallel
        }
    };
    let leaf = matches!(
        step.kind,
        StepKind::Prompt { .. } | StepKind::Agent { .. } | StepKind::Tool { .. }
    );
    if leaf && step.max_attempts > 1 {
        lines.push(format!("max_attempts {}", step.max_attempts));
    }
    Node {
        id: step_id(ci, s.index()),
        lines,
        shape,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(yaml: &str) -> Module {
        let options = packc_compiler::Options::default();
        let checked = packc_compiler::check_bytes(yaml.as_bytes(), &options);
        assert!(!checked.has_errors(), "{:#?}", checked.diagnostics);
        packc_compiler::lower(&checked, &options).unwrap()
    }

    const HEADER: &str = "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: \"{{variable}}\"}\n";

    const LOOP: &str = r#"
prompts:
  coder: {id: coder, name: C, version: 1.0.0, system_template: "c"}
  tester: {id: tester, name: T, version: 1.0.0, system_template: "t"}
workflow:
  version: 1
  entry: implement
  engine: {budget: {max_total_visits: 9}}
  states:
    implement:
      prompt_task: coder
      max_visits: 3
      on_max_visits: review
      on_event: {CodeReady: test}
    test:
      prompt_task: tester
      orchestration: hybrid
      on_event: {TestsFailed: implement, TestsPassed: review}
    review: {prompt_task: tester, terminal: true}
agents:
  entry: tester
  members:
    tester: {state: test}
"#;

    #[test]
    fn workflow_in_dot() {
        let dot = render(&module(&format!("{HEADER}{LOOP}")), GraphFormat::Dot);
        let expected = [
            "digraph \"t\" {",
            "  subgraph cluster_wf {",
            "    label=\"workflow (budget: max_total_visits 9)\";",
            "    wf_entry [label=\"entry\", shape=plaintext];",
            "    agent0 [label=\"agent tester\", shape=plaintext];",
            "    s0 [label=\"implement\\nprompt coder\\nmax_visits 3\"];",
            "    s1 [label=\"test\\nprompt tester\\nhybrid\"];",
            "    s2 [label=\"review\\nprompt tester\", peripheries=2];",
            "  wf_entry -> s0;",
            "  agent0 -> s1;",
            "  s0 -> s1 [label=\"CodeReady\"];",
            "  s0 -> s2 [label=\"max_visits 3\", style=dashed];",
            "  s1 -> s0 [label=\"TestsFailed\"];",
            "  s1 -> s2 [label=\"TestsPassed\"];",
        ];
        let lines: Vec<&str> = dot.lines().collect();
        for line in expected {
            assert!(lines.contains(&line), "missing {line:?} in\n{dot}");
        }
    }

    const COMP: &str = r#"
tools:
  kb: {name: kb, description: Search., parameters: {type: object, properties: {}}}
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "p"}
compositions:
  "odd \"key\" <#1>":
    version: 1
    steps:
      - id: fan
        kind: parallel
        branches:
          - {id: a, kind: prompt, prompt_task: p, modifiers: {retry: {max_attempts: 2}}}
          - {id: b, kind: tool, tool: kb}
        reduce: {strategy: append, into: xs}
      - id: gate
        kind: branch
        predicate: {path: "${fan.output.xs}", exists: true}
        then: x
      - {id: x, kind: agent, prompt_task: p, tools: [kb], termination: {max_steps: 2, tool_called: kb}}
      - {id: y, kind: prompt, prompt_task: p, depends_on: [x]}
"#;

    #[test]
    fn composition_in_mermaid() {
        let text = render(&module(&format!("{HEADER}{COMP}")), GraphFormat::Mermaid);
        let expected = [
            "flowchart TD",
            "  subgraph c0[\"composition odd #quot;key#quot; #lt;#35;1#gt;\"]",
            "    subgraph c0_0_par[\"parallel fan\"]",
            "      c0_0{{\"fan<br/>parallel, append into xs\"}}",
            "      c0_1[\"a<br/>prompt p<br/>max_attempts 2\"]",
            "      c0_2[\"b<br/>tool kb\"]",
            "    end",
            "    c0_3{\"gate<br/>branch\"}",
            "    c0_4[\"x<br/>agent p<br/>tools kb<br/>max_steps 2<br/>until kb\"]",
            "  c0_0 --> c0_1",
            "  c0_0 --> c0_2",
            "  c0_0_par --> c0_3",
            "  c0_3 -->|\"then\"| c0_4",
            "  c0_4 -->|\"depends_on\"| c0_5",
        ];
        let lines: Vec<&str> = text.lines().collect();
        for line in expected {
            assert!(lines.contains(&line), "missing {line:?} in\n{text}");
        }
        // The branch's `then` edge replaces the sequential edge to the same step, and
        // the `depends_on` of a step that follows its dependency labels the edge
        // between them rather than drawing a second one.
        assert!(!lines.contains(&"  c0_3 --> c0_4"));
        assert!(
            !lines.iter().any(|l| l.starts_with("  c0_4 -.->")),
            "{text}"
        );
    }

    /// `classify`, then `route` (then `paper`, else `memo`), then `summary`; and `gate`
    /// (then `extra`, no else) before `done`.
    const BRANCHES: &str = r#"
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "p"}
compositions:
  c:
    version: 1
    steps:
      - {id: classify, kind: prompt, prompt_task: p}
      - {id: route, kind: branch, predicate: {path: "${classify.output.t}", op: equals, value: paper}, then: paper, else: memo}
      - {id: paper, kind: prompt, prompt_task: p}
      - {id: memo, kind: prompt, prompt_task: p}
      - {id: summary, kind: prompt, prompt_task: p}
      - {id: gate, kind: branch, predicate: {path: "${summary.output.long}", op: equals, value: true}, then: extra}
      - {id: extra, kind: prompt, prompt_task: p}
      - {id: done, kind: prompt, prompt_task: p}
    output: done
"#;

    #[test]
    fn branches_draw_the_walk() {
        let text = render(
            &module(&format!("{HEADER}{BRANCHES}")),
            GraphFormat::Mermaid,
        );
        let edges: Vec<&str> = text.lines().filter(|l| l.contains("->")).collect();
        let expected = [
            "  c0_0 --> c0_1",
            "  c0_1 -->|\"then\"| c0_2",
            "  c0_1 -->|\"else\"| c0_3",
            // Whichever target ran, the walk goes on to `summary`.
            "  c0_2 --> c0_4",
            "  c0_3 --> c0_4",
            "  c0_4 --> c0_5",
            "  c0_5 -->|\"then\"| c0_6",
            "  c0_5 -.->|\"false: skip\"| c0_7",
            "  c0_6 --> c0_7",
        ];
        assert_eq!(edges, expected, "{text}");
    }

    /// A long chain of branches, each selecting the next two steps: every step but the
    /// first and the last is selected, so each one's plain edge looks past all of them.
    #[test]
    fn a_long_chain_of_branches_draws_in_linear_time() {
        let n = 2000;
        let mut pack = format!(
            "{HEADER}prompts:\n  p: {{id: p, name: P, version: 1.0.0, system_template: \"p\"}}\ncompositions:\n  c:\n    version: 1\n    steps:\n"
        );
        for i in 0..n {
            if i % 2 == 0 && i + 2 < n {
                pack.push_str(&format!(
                    "      - {{id: s{i}, kind: branch, predicate: {{path: \"${{input}}\", op: equals, value: x}}, then: s{}, else: s{}}}\n",
                    i + 1,
                    i + 2
                ));
            } else {
                pack.push_str(&format!(
                    "      - {{id: s{i}, kind: prompt, prompt_task: p}}\n"
                ));
            }
        }
        let g = graph(&module(&pack));
        let labeled = |l: &str| {
            g.edges
                .iter()
                .filter(|e| e.label.as_deref() == Some(l))
                .count()
        };
        // Branches at 0, 2, ..., 1996.
        assert_eq!(labeled("then"), 999);
        assert_eq!(labeled("else"), 999);
        // Each prompt step (1, 3, ..., 1997, and 1998) goes on to the last step.
        let last = step_id(0, n - 1);
        let plain: Vec<&Edge> = g.edges.iter().filter(|e| e.label.is_none()).collect();
        assert_eq!(plain.len(), 1000);
        assert!(plain.iter().all(|e| e.to == last));
    }

    #[test]
    fn output_is_deterministic() {
        let pack = format!("{HEADER}{COMP}");
        for format in [GraphFormat::Dot, GraphFormat::Mermaid] {
            assert_eq!(
                render(&module(&pack), format),
                render(&module(&pack), format)
            );
        }
    }
}
