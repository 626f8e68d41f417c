//! Static call bounds (`ir_spec::bounds`) of the example packs and of a few packs written
//! here, against numbers computed by hand from `workflow.md` §5–§10 and
//! `compositions.md` §6–§9.

use std::path::{Path, PathBuf};

use ir_spec::bounds::{self, Bound, Calls, ModuleBounds, TurnBound};
use ir_spec::Module;
use packc_compiler::{check_bytes, Options};

const U: Bound = Bound::Unbounded;

fn f(n: u64) -> Bound {
    Bound::Finite(n)
}

fn calls(model: Bound, tool: Bound) -> Calls {
    Calls {
        model,
        tool,
        extension: Bound::ZERO,
    }
}

fn compile(bytes: &[u8], base_dir: Option<PathBuf>) -> Module {
    let options = Options {
        base_dir,
        ..Options::default()
    };
    let checked = check_bytes(bytes, &options);
    assert!(!checked.has_errors(), "{:#?}", checked.diagnostics);
    let module = packc_compiler::lower(&checked, &options).expect("lowers");
    module.validate().expect("valid module");
    module
}

fn example(name: &str) -> ModuleBounds {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let bytes = std::fs::read(dir.join(name)).expect("example is readable");
    bounds::module(&compile(&bytes, Some(dir)))
}

fn inline(yaml: &str) -> (Module, ModuleBounds) {
    let module = compile(yaml.as_bytes(), None);
    let b = bounds::module(&module);
    (module, b)
}

fn turn(executions: Bound, model: Bound, tool: Bound) -> Option<TurnBound> {
    Some(TurnBound {
        executions,
        calls: calls(model, tool),
    })
}

#[test]
fn rfc0010_ex1_one_prompt_step() {
    let b = example("rfc0010-ex1.pack.yaml");
    assert_eq!(b.compositions, [calls(f(1), f(0))]);
    assert_eq!(b.states, [calls(f(1), f(0))]);
    assert_eq!(b.workflow_turn, turn(f(1), f(1), f(0)));
}

#[test]
fn rfc0010_ex2_branch_arms_are_exclusive() {
    // classify (1) + max(extract_paper, extract_general) (1).
    let b = example("rfc0010-ex2.pack.yaml");
    assert_eq!(b.compositions, [calls(f(2), f(0))]);
    assert_eq!(b.states, [calls(f(2), f(0))]);
    assert_eq!(b.workflow_turn, turn(f(1), f(2), f(0)));
}

#[test]
fn rfc0010_ex3_agent_without_a_per_turn_cap_has_unbounded_tool_calls() {
    // Parallel: title, keywords (1 model each), structure, citations (1 tool each).
    // synthesize: max_steps 10 -> 10 turns; doc_analyzer sets no max_tool_calls_per_turn
    // and the step offers three tools, so one turn may call any number of them.
    let b = example("rfc0010-ex3.pack.yaml");
    assert_eq!(b.compositions, [calls(f(12), U)]);
    assert_eq!(b.states, [calls(f(12), U)]);
    assert_eq!(b.workflow_turn, turn(f(1), f(12), U));
}

#[test]
fn rfc0010_ex4_composite_predicate() {
    // assess (1) + max(deep_review, quick_summary) (1).
    let b = example("rfc0010-ex4.pack.yaml");
    assert_eq!(b.compositions, [calls(f(2), f(0))]);
    assert_eq!(b.workflow_turn, turn(f(1), f(2), f(0)));
}

#[test]
fn guide_add_composition() {
    let b = example("guide-add-composition.pack.yaml");
    assert_eq!(b.compositions, [calls(f(2), f(0))]);
    assert_eq!(b.states, [calls(f(2), f(0))]);
    assert_eq!(b.workflow_turn, turn(f(1), f(2), f(0)));
}

#[test]
fn guide_add_workflow_longest_path_stops_before_the_external_state() {
    // Every prompt: max_rounds 5 (default), no tools offered -> 5 model, 0 tool.
    // Longest turn: triage -> billing_state -> closing_state; escalation is external, so
    // a turn that reaches it stops without executing it.
    let b = example("guide-add-workflow.pack.yaml");
    assert!(b.compositions.is_empty());
    assert_eq!(b.states, [calls(f(5), f(0)); 5]);
    assert_eq!(b.workflow_turn, turn(f(3), f(15), f(0)));
}

const HEADER: &str =
    "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: \"{{variable}}\"}\n";

const STEPS_PACK: &str = include_str!("packs/steps_pack.yaml");

#[test]
fn composition_steps_retries_parallel_and_agents() {
    let (module, b) = inline(&format!("{HEADER}{STEPS_PACK}"));
    let pipeline = &module.compositions[0];
    let step = |name: &str| {
        let i = pipeline
            .steps
            .iter()
            .position(|s| module.str(s.id) == name)
            .unwrap();
        bounds::step(pipeline, ir_spec::StepId(i as u32))
    };
    // A tool step, 3 attempts.
    assert_eq!(step("fetch"), calls(f(0), f(3)));
    // Branch a: 2 attempts of 1 model call; branch b: 1 tool call. The parallel's own
    // retry has no effect.
    assert_eq!(step("fan"), calls(f(2), f(1)));
    // 6 turns and solver's per-execution cap of 4 tool calls, 2 attempts.
    assert_eq!(step("solve"), calls(f(12), f(8)));
    // No tools offered (none on the step, none on p): 3 turns, no tool calls.
    assert_eq!(step("y"), calls(f(3), f(0)));
    assert_eq!(step("gate"), calls(f(0), f(0)));
    // fetch + fan + solve + max(x, y) + z (a then without else may run).
    assert_eq!(b.compositions[0], calls(f(18), f(12)));
    // tool_called only: the hard cap of 50 turns; no per-turn cap on p.
    assert_eq!(b.compositions[1], calls(f(50), U));
    assert_eq!(b.workflow_turn, None);
}

const LOOP_PACK: &str = include_str!("packs/loop_pack.yaml");

#[test]
fn workflow_loop_bounded_by_max_visits() {
    // implement: 3 model, 4 tool; test: 5 model (default rounds), 0 tool (no tools);
    // review: 1 model. Capped edges: implement -> test, test -> implement (K = 3 + 3).
    // Free edges: the redirects and TestsPassed, all into review. A stretch that goes
    // on to a capped edge is a single state (≤ 1 execution, 5 model, 4 tool); the last
    // stretch is at most test -> review (6 model) or implement -> review (4 tool).
    let (_, b) = inline(&format!("{HEADER}{}", LOOP_PACK.replace("BUDGET\n", "")));
    assert_eq!(
        b.states,
        [calls(f(3), f(4)), calls(f(5), f(0)), calls(f(1), f(0))]
    );
    assert_eq!(b.workflow_turn, turn(f(6 + 2), f(6 * 5 + 6), f(6 * 4 + 4)));
}

#[test]
fn workflow_budget_tightens_the_graph_bound() {
    // max_total_visits 6: ≤ 6 executions, 6 × 5 model, 6 × 4 tool; max_tool_calls: 10.
    let budget = "  engine: {budget: {max_total_visits: 6, max_tool_calls: 10}}\n";
    let (_, b) = inline(&format!(
        "{HEADER}{}",
        LOOP_PACK.replace("BUDGET\n", budget)
    ));
    assert_eq!(b.workflow_turn, turn(f(6), f(30), f(10)));
}

#[test]
fn workflow_cycle_without_max_visits_is_unbounded_unless_a_budget_caps_it() {
    let pack = |budget: &str| {
        format!(
            "{HEADER}{}",
            LOOP_PACK
                .replace("BUDGET\n", budget)
                .replace("      max_visits: 3\n", "")
        )
    };
    let (_, b) = inline(&pack(""));
    assert_eq!(b.workflow_turn, turn(U, U, U));
    // Only the tool budget: model calls stay unbounded.
    let (_, b) = inline(&pack("  engine: {budget: {max_tool_calls: 7}}\n"));
    assert_eq!(b.workflow_turn, turn(U, U, f(7)));
    // The wall clock bounds no count.
    let (_, b) = inline(&pack("  engine: {budget: {max_wall_time_sec: 60}}\n"));
    assert_eq!(b.workflow_turn, turn(U, U, U));
}

#[test]
fn extension_steps_are_counted_as_extension_calls() {
    let (_, b) = inline(include_str!(
        "packs/extension_steps_are_counted_as_extension_calls.yaml"
    ));
    assert_eq!(
        b.compositions,
        [Calls {
            model: f(1),
            tool: f(0),
            extension: f(4),
        }]
    );
    assert_eq!(
        b.compositions[0].to_string(),
        "1 model, 0 tool, 4 extension"
    );
}
