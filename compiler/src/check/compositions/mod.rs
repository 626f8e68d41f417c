//! Composition checks, `shared/semantics/compositions.md` §2 (rules 2.1–2.25).
//!
//! The schema stage leaves the inside of `/compositions/<c>` to this module, because most
//! composition rules have a kind more specific than `schema_violation` (2.23).
//!
//! - [`shape`]: members present, of the right type, none unknown (`schema_violation`);
//! - [`order`]: step ids, what names resolve to, run order and visibility;
//! - [`predicate`]: the predicate grammar of branch steps.
//!
//! This module walks a composition and its steps and checks what each step kind names
//! (prompts, tools, schema files, agent termination).

mod order;
mod predicate;
mod shape;

use crate::doc::{Node, Obj};

use crate::members::entries;

use super::{did_you_mean, is_ident, Cx};
use crate::diag::{At, DiagKind, Diagnostic};
use crate::paths::OpenError;
use crate::syntax::reference::{lex_binding, Lexing};
use crate::vocab::{is_extension_kind, Kind, STEP_MEMBERS};
use order::{check_bindings, check_depends_on, Comp, Step};
use shape::{expect_array, expect_object, expect_str, optional_str, schema, What};

const RESERVED_NAMES: &[&str] = &["workflow__transition", "workflow__set_artifact"];

/// The conditions of an agent step's `termination`.
const TERMINATION_MEMBERS: &[&str] = &["max_steps", "tool_called"];

pub(super) fn check(cx: &mut Cx<'_, '_>) {
    let base = At::Text("/compositions");
    for (name, comp) in entries(cx.root.get("compositions")) {
        check_composition(cx, name, comp, &base.key(name));
    }
}

fn check_composition(cx: &mut Cx<'_, '_>, name: &str, comp: &Node, ptr: &At<'_>) {
    if RESERVED_NAMES.contains(&name) {
        cx.push(
            Diagnostic::new(
                DiagKind::SchemaViolation,
                format!("`{name}` is a reserved composition name"),
            )
            .at(ptr)
            .help("rename the composition; `workflow__transition` and `workflow__set_artifact` are reserved"),
        );
    }
    let Some(obj) = expect_object(cx, comp, ptr, What::Phrase("a composition")) else {
        return;
    };
    shape::composition_members(cx, obj, ptr);
    let steps_ptr = ptr.key("steps");
    let steps: &[Node] = match obj.get("steps") {
        None => {
            let d =
                schema(ptr, "missing required member `steps`").help("add a non-empty `steps` list");
            cx.push(shape::missing_member(
                d,
                obj,
                ptr,
                "steps",
                shape::COMPOSITION_MEMBERS,
            ));
            &[]
        }
        Some(Node::Array([])) => {
            cx.push(schema(&steps_ptr, "`steps` must not be empty"));
            &[]
        }
        Some(v) => {
            expect_array(cx, v, &steps_ptr, What::Member("steps"), "an array").unwrap_or(&[])
        }
    };

    let mut c = Comp::collect(cx, steps, &steps_ptr);
    for (i, step) in steps.iter().enumerate() {
        let sptr = steps_ptr.index(i);
        check_step(cx, &mut c, step, &sptr, i, false);
    }
    if let Some(output) = obj.get("output").and_then(Node::as_str) {
        order::check_output(cx, &c, output, &ptr.key("output"));
    }
}

/// Check one step. `index` is the top-level index (for a nested step, its parallel's).
fn check_step(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    step: &Node,
    ptr: &At<'_>,
    index: usize,
    nested: bool,
) {
    let Some(obj) = expect_object(cx, step, ptr, What::Phrase("a step")) else {
        return;
    };
    match obj.get("id") {
        None => {
            let d = schema(ptr, "step without `id`")
                .help("give the step an `id` matching ^[a-zA-Z_][a-zA-Z0-9_]*$");
            cx.push(shape::missing_member(d, obj, ptr, "id", STEP_MEMBERS));
        }
        Some(v) => match expect_str(cx, v, &ptr.key("id"), What::Member("id")) {
            Some(id) if !is_ident(id) || id == "input" => {
                let why = if id == "input" {
                    "`input` is reserved for the composition input in references"
                } else {
                    "a step id must match ^[a-zA-Z_][a-zA-Z0-9_]*$"
                };
                cx.push(
                    Diagnostic::new(
                        DiagKind::InvalidStepId,
                        format!("invalid step id `{id}`: {why}"),
                    )
                    .at(ptr.key("id"))
                    .help(format!("rename it, e.g. `{}`", shape::sanitize(id))),
                );
            }
            _ => {}
        },
    }
    let kind = match obj.get("kind") {
        None => {
            let d = schema(ptr, "step without `kind`")
                .help("add `kind`: prompt, agent, tool, branch or parallel");
            cx.push(shape::missing_member(d, obj, ptr, "kind", STEP_MEMBERS));
            None
        }
        Some(v) => expect_str(cx, v, &ptr.key("kind"), What::Member("kind"))
            .and_then(|k| step_kind(cx, k, ptr, nested)),
    };
    if let Some(kind) = kind {
        shape::step_members(cx, kind, obj, ptr);
    }
    optional_str(cx, obj, ptr, "description");
    let step = Step { obj, ptr, index };
    check_depends_on(cx, c, step, nested);
    shape::modifiers(cx, obj, ptr);
    let Some(kind) = kind else { return };
    match kind {
        Kind::Prompt | Kind::Agent => {
            check_prompt_task(cx, obj, ptr);
            check_bindings(cx, c, obj.get("input"), &ptr.key("input"), index);
            check_input_holds_variables(cx, obj, ptr);
            check_output_schema(cx, obj, ptr);
            if kind == Kind::Agent {
                check_agent(cx, obj, ptr);
            }
        }
        Kind::Tool => {
            match obj.get("tool") {
                None => {
                    let d = schema(ptr, "tool step without `tool`")
                        .help("name the tool to call: `tool: <key of tools>`");
                    cx.push(shape::missing_member(d, obj, ptr, "tool", STEP_MEMBERS));
                }
                Some(v) => {
                    let tptr = ptr.key("tool");
                    match expect_str(cx, v, &tptr, What::Member("tool")) {
                        Some(t) if !cx.names.tools.contains(t) => {
                            let d = unresolved_tool(cx, t, &tptr);
                            cx.push(d);
                        }
                        _ => {}
                    }
                }
            }
            check_bindings(cx, c, obj.get("args"), &ptr.key("args"), index);
        }
        Kind::Branch => check_branch(cx, c, step),
        Kind::Parallel => check_parallel(cx, c, step),
        Kind::Extension => {
            check_bindings(cx, c, obj.get("input"), &ptr.key("input"), index);
        }
    }
}

/// The kind a step's `kind` string `k` names, or `unsupported_step_kind` and `None` (an
/// unknown kind, or a branch or parallel step as the branch of a parallel step).
fn step_kind(cx: &mut Cx<'_, '_>, k: &str, ptr: &At<'_>, nested: bool) -> Option<Kind> {
    // From level 1.8 on, extension steps (`vendor.name`) stand beside the v1 kinds.
    let extensions = cx.level >= ir_spec::SpecLevel::V1_8;
    match Kind::parse_at(k, extensions) {
        Some(Kind::Branch | Kind::Parallel) if nested => {
            let kinds = if extensions {
                "prompt, agent, tool or extension (`vendor.name`)"
            } else {
                "prompt, agent or tool"
            };
            cx.push(
                Diagnostic::new(
                    DiagKind::UnsupportedStepKind,
                    format!("a `{k}` step cannot be a branch of a parallel step"),
                )
                .at(ptr.key("kind"))
                .help(format!("branches of a parallel step are {kinds} steps")),
            );
            None
        }
        Some(kind) => Some(kind),
        None => {
            let help = if is_extension_kind(k) {
                "vendor step kinds (`vendor.name`) need spec level 1.8: declare `$schema` v1.8 or later".to_owned()
            } else if let Some(near) = super::suggest(k, Kind::V1.map(Kind::as_str)) {
                format!("did you mean `{near}`?")
            } else if extensions {
                "step kinds are prompt, agent, tool, branch and parallel, and extension kinds named `vendor.name`".to_owned()
            } else {
                "v1 step kinds are prompt, agent, tool, branch and parallel".to_owned()
            };
            cx.push(
                Diagnostic::new(
                    DiagKind::UnsupportedStepKind,
                    format!("unknown step kind `{k}`"),
                )
                .at(ptr.key("kind"))
                .help(help),
            );
            None
        }
    }
}

fn unresolved_tool(cx: &Cx<'_, '_>, name: &str, ptr: &At<'_>) -> Diagnostic {
    Diagnostic::new(
        DiagKind::UnresolvedTool,
        format!("tool `{name}` is not a key of `tools`"),
    )
    .at(ptr)
    .help(did_you_mean("tools", name, cx.names.tools.iter()))
}

/// `unbound_variable`: the step's prompt declares a required variable that the step's
/// `input` can never hold. A declared variable is read from the call's input object
/// (`workflow.md` §14), so an input that is always a string (text around a reference, a
/// literal), a literal number, list or boolean, or an object without that member makes
/// every run of the step fail with `invalid_variable`. An input that is one reference
/// alone (`${input}`) may be an object, and is left to the run.
fn check_input_holds_variables(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>) {
    let Some(prompt) = obj.get("prompt_task").and_then(Node::as_str) else {
        return;
    };
    let Some(declared) = cx
        .root
        .get("prompts")
        .and_then(|ps| ps.get(prompt))
        .and_then(|p| p.get("variables"))
        .and_then(Node::as_array)
    else {
        return;
    };
    let required: Vec<&str> = declared
        .iter()
        .filter(|v| v.get("required").and_then(Node::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Node::as_str))
        .filter(|n| !matches!(*n, "input" | "artifacts"))
        .collect();
    let Some(&first) = required.first() else {
        return;
    };
    let input = obj.get("input");
    let missing: Vec<&str> = match input {
        // The composition's input, or one reference: its shape is known only at run time.
        None => return,
        // One reference alone may be an object; a malformed binding is reported as such.
        Some(Node::String(s)) => match lex_binding(s.as_str()) {
            Ok(Lexing::Whole(_)) | Err(_) => return,
            Ok(_) => required.clone(),
        },
        Some(Node::Object(o)) => required
            .iter()
            .copied()
            .filter(|n| o.get(n).is_none())
            .collect(),
        Some(_) => required.clone(),
    };
    let Some(&name) = missing.first() else {
        return;
    };
    let names = missing
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let (message, help) = match input {
        Some(Node::Object(_)) => (
            format!(
                "prompt `{prompt}` requires the variable(s) {names}, and this step's input object has no such member: every run of the step fails with `invalid_variable`"
            ),
            format!("add `{name}: \"${{input.{name}}}\"` (or the value it should have) to the step's `input`"),
        ),
        _ => (
            format!(
                "prompt `{prompt}` requires the variable(s) {names}, read from the members of the call's input, and this step's input is never an object: every run of the step fails with `invalid_variable`"
            ),
            format!(
                "bind an object that holds them, e.g. `input: {{text: \"...\", {first}: \"${{input.{first}}}\"}}`"
            ),
        ),
    };
    cx.push(
        Diagnostic::new(DiagKind::UnboundVariable, message)
            .at(ptr.key("input"))
            .help(help),
    );
}

fn check_prompt_task(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>) {
    let Some(v) = obj.get("prompt_task") else {
        let d = schema(ptr, "step without `prompt_task`")
            .help("name the prompt to call: `prompt_task: <key of prompts>`");
        cx.push(shape::missing_member(
            d,
            obj,
            ptr,
            "prompt_task",
            STEP_MEMBERS,
        ));
        return;
    };
    let pptr = ptr.key("prompt_task");
    match expect_str(cx, v, &pptr, What::Member("prompt_task")) {
        Some(p) if !cx.names.prompts.contains(p) => {
            let d = Diagnostic::new(
                DiagKind::UnresolvedPrompt,
                format!("prompt_task `{p}` names no prompt"),
            )
            .at(pptr)
            .help(did_you_mean("prompts", p, cx.names.prompts.iter()));
            cx.push(d);
        }
        _ => {}
    }
}

fn check_output_schema(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>) {
    let optr = ptr.key("output_schema");
    let Some(name) = optional_str(cx, obj, ptr, "output_schema") else {
        return;
    };
    let Some(folders) = cx.options.folders() else {
        return;
    };
    match crate::schema_files::read(&folders, name) {
        Ok(_) => {}
        Err(OpenError::Outside(how)) => cx.push(
            Diagnostic::new(
                DiagKind::UnsafePath,
                format!("schema file `{name}` is outside the pack's folder ({how}); it was not read"),
            )
            .at(optr)
            .help("a pack reads files from its own folder and below: move the file there and name it relative to the pack file, or allow its folder with `--allow-path DIR`"),
        ),
        Err(OpenError::Unusable(why)) => cx.push(
            Diagnostic::new(
                DiagKind::UnresolvedSchema,
                format!("schema file `{name}` cannot be used ({why}); the step will have no output schema"),
            )
            .at(optr)
            .help(format!(
                "create or fix `{}` (the path is relative to the pack file)",
                folders.base.join(name).display()
            )),
        ),
    }
}

fn check_agent(cx: &mut Cx<'_, '_>, obj: &Obj, ptr: &At<'_>) {
    let tools_ptr = ptr.key("tools");
    let mut step_tools: Option<Vec<&str>> = None;
    if let Some(v) = obj.get("tools") {
        if let Some(tools) = expect_array(cx, v, &tools_ptr, What::Member("tools"), "an array") {
            let mut names = Vec::new();
            for (k, t) in tools.iter().enumerate() {
                let tptr = tools_ptr.index(k);
                let Some(t) = expect_str(cx, t, &tptr, What::Phrase("a tool name")) else {
                    continue;
                };
                names.push(t);
                if !cx.names.tools.contains(t) {
                    let d = unresolved_tool(cx, t, &tptr);
                    cx.push(d);
                }
            }
            step_tools = Some(names);
        }
    }
    let tptr = ptr.key("termination");
    let Some(term) = obj.get("termination") else {
        let d = Diagnostic::new(
            DiagKind::AgentMissingTermination,
            "agent step without `termination`",
        )
        .at(ptr)
        .help("add `termination: {max_steps: N}` and/or `termination: {tool_called: <tool>}`");
        cx.push(shape::missing_member(
            d,
            obj,
            ptr,
            "termination",
            STEP_MEMBERS,
        ));
        return;
    };
    let Some(term) = term.as_object() else {
        cx.push(
            Diagnostic::new(
                DiagKind::AgentMissingTermination,
                format!(
                    "`termination` must be an object, found {}",
                    super::type_of(term)
                ),
            )
            .at(tptr)
            .help(
                "write `termination: {max_steps: N}` and/or `termination: {tool_called: <tool>}`",
            ),
        );
        return;
    };
    if term.get("max_steps").is_none() && term.get("tool_called").is_none() {
        let mut d = Diagnostic::new(
            DiagKind::AgentMissingTermination,
            "`termination` has neither `max_steps` nor `tool_called`",
        )
        .at(tptr)
        .help("add `max_steps: N` and/or `tool_called: <tool>`");
        for member in TERMINATION_MEMBERS {
            d = shape::missing_member(d, term, &tptr, member, TERMINATION_MEMBERS);
        }
        cx.push(d);
    }
    if let Some(v) = term.get("max_steps") {
        if v.as_u64().is_none_or(|n| n < 1) {
            cx.push(schema(
                &tptr.key("max_steps"),
                format!("`max_steps` must be an integer ≥ 1, found {v}"),
            ));
        }
    }
    for key in term
        .keys()
        .filter(|k| !TERMINATION_MEMBERS.contains(&k.as_str()))
    {
        cx.push(
            schema(
                &tptr.key(key),
                format!("unknown termination condition `{key}`"),
            )
            .help(
                shape::did_you_mean_member(term, key, TERMINATION_MEMBERS)
                    .unwrap_or_else(|| "termination takes `max_steps` and `tool_called`".into()),
            ),
        );
    }
    let at = tptr.key("tool_called");
    let Some(t) = optional_str(cx, term, &tptr, "tool_called") else {
        return;
    };
    if !cx.names.tools.contains(t) {
        let d = unresolved_tool(cx, t, &at);
        cx.push(d);
        return;
    }
    // 6.3.1: the step's tools, else its prompt's.
    let listed: Vec<&str> = step_tools.unwrap_or_else(|| {
        obj.get("prompt_task")
            .and_then(Node::as_str)
            .and_then(|p| cx.root.get("prompts")?.get(p)?.get("tools")?.as_array())
            .map(|a| a.iter().filter_map(Node::as_str).collect())
            .unwrap_or_default()
    });
    if !listed.contains(&t) {
        cx.push(
            Diagnostic::new(
                DiagKind::UnresolvedTool,
                format!("`tool_called: {t}` is not among the tools this agent step offers, so the loop could never end that way"),
            )
            .at(at)
            .help(format!("add `{t}` to the step's `tools`")),
        );
    }
}

fn check_branch(cx: &mut Cx<'_, '_>, c: &mut Comp<'_>, step: Step<'_>) {
    let Step { obj, ptr, index } = step;
    match obj.get("predicate") {
        None => {
            let d = schema(ptr, "branch step without `predicate`")
                .help("add a predicate, e.g. `{path: \"${input.x}\", op: equals, value: 1}`");
            cx.push(shape::missing_member(
                d,
                obj,
                ptr,
                "predicate",
                STEP_MEMBERS,
            ));
        }
        Some(p) => predicate::check_predicate(cx, c, p, &ptr.key("predicate"), index),
    }
    if obj.get("then").is_none() {
        let d = schema(ptr, "branch step without `then`")
            .help("name the step to run when the predicate is true");
        cx.push(shape::missing_member(d, obj, ptr, "then", STEP_MEMBERS));
    }
    order::check_targets(cx, c, step);
}

fn check_parallel(cx: &mut Cx<'_, '_>, c: &mut Comp<'_>, step: Step<'_>) {
    let Step { obj, ptr, index } = step;
    let bptr = ptr.key("branches");
    match obj.get("branches") {
        None => {
            let d = Diagnostic::new(
                DiagKind::ParallelTooFewBranches,
                "parallel step without `branches`",
            )
            .at(ptr)
            .help("a parallel step runs two or more branches");
            cx.push(shape::missing_member(d, obj, ptr, "branches", STEP_MEMBERS));
        }
        Some(v) => {
            let what = What::Member("branches");
            if let Some(branches) = expect_array(cx, v, &bptr, what, "an array of steps") {
                if branches.len() < 2 {
                    cx.push(
                        Diagnostic::new(
                            DiagKind::ParallelTooFewBranches,
                            format!(
                                "a parallel step needs at least two branches, found {}",
                                branches.len()
                            ),
                        )
                        .at(bptr)
                        .help("add a branch, or replace the parallel step by its one branch"),
                    );
                }
                for (j, b) in branches.iter().enumerate() {
                    check_step(cx, c, b, &bptr.index(j), index, true);
                }
            }
        }
    }
    let Some(reduce) = obj.get("reduce") else {
        let d = Diagnostic::new(
            DiagKind::ParallelMissingReduce,
            "parallel step without `reduce`",
        )
        .at(ptr)
        .help("add `reduce: {strategy: barrier|append|replace, into: <name>}`");
        cx.push(shape::missing_member(d, obj, ptr, "reduce", STEP_MEMBERS));
        return;
    };
    shape::reduce(cx, reduce, &ptr.key("reduce"));
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    /// Each diagnostic of a pack whose composition `c` has `steps`: its pointer, its help
    /// and the pointers of its other labels.
    fn diagnostics(steps: Value) -> Vec<(String, String, Vec<String>)> {
        diagnostics_at(None, steps)
    }

    /// [`diagnostics`] of the pack claiming `$schema` `claim`.
    fn diagnostics_at(claim: Option<&str>, steps: Value) -> Vec<(String, String, Vec<String>)> {
        let mut pack = json!({
            "id": "d", "name": "D", "version": "1.0.0",
            "template_engine": {"version": "v1", "syntax": "{{variable}}"},
            "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "Hi"}},
            "tools": {"t": {"name": "t", "description": "T", "parameters": {"type": "object"}}},
            "compositions": {"c": {"version": 1, "steps": steps}},
        });
        if let Some(claim) = claim {
            pack["$schema"] = json!(claim);
        }
        crate::check_bytes(
            &serde_json::to_vec(&pack).unwrap(),
            &crate::Options::default(),
        )
        .diagnostics
        .into_iter()
        .map(crate::diag::summary)
        .collect()
    }

    fn help_at(all: &[(String, String, Vec<String>)], ptr: &str) -> String {
        let found: Vec<_> = all.iter().filter(|(p, _, _)| p == ptr).collect();
        assert_eq!(found.len(), 1, "{ptr}: {all:?}");
        found[0].1.clone()
    }

    #[test]
    fn a_misspelt_word_of_a_fixed_vocabulary_names_the_nearest_one() {
        let all = diagnostics(json!([
            {"id": "a", "kind": "tol", "tool": "t"},
            {"id": "b", "kind": "parallel",
             "branches": [{"id": "x", "kind": "prompt", "prompt_task": "p"},
                          {"id": "y", "kind": "prompt", "prompt_task": "p"}],
             "reduce": {"strategy": "barier", "into": "both", "intoo": 1}},
            {"id": "c", "kind": "branch",
             "predicate": {"path": "${input.k}", "op": "equal", "value": 1}, "then": "d"},
            {"id": "d", "kind": "branch",
             "predicate": {"path": "${input.k}", "op": "equals", "vaule": 1}, "then": "e"},
            {"id": "e", "kind": "agent", "prompt_task": "p", "tools": ["t"],
             "termination": {"tool_called": "t", "max_step": 3}},
            {"id": "f", "kind": "prompt", "prompt_task": "p", "inptu": "x"},
        ]));
        let at = |p: &str| help_at(&all, &format!("/compositions/c/steps/{p}"));
        assert_eq!(at("0/kind"), "did you mean `tool`?");
        assert_eq!(at("1/reduce/strategy"), "did you mean `barrier`?");
        assert_eq!(
            at("1/reduce/intoo"),
            "remove `intoo`; `reduce` has only `strategy` and `into`"
        );
        assert_eq!(at("2/predicate"), "did you mean `equals`?");
        assert_eq!(at("3/predicate"), "did you mean `value`?");
        assert_eq!(at("4/termination/max_step"), "did you mean `max_steps`?");
        assert_eq!(at("5/inptu"), "did you mean `input`?");
    }

    /// From level 1.8 on, the help on a step kind names the extension kinds too.
    #[test]
    fn the_kinds_named_follow_the_level() {
        let steps = json!([
            {"id": "a", "kind": "rerank"},
            {"id": "b", "kind": "parallel",
             "branches": [{"id": "x", "kind": "prompt", "prompt_task": "p"},
                          {"id": "y", "kind": "branch",
                           "predicate": {"path": "${input.k}", "op": "exists"}, "then": "a"}],
             "reduce": {"strategy": "barrier", "into": "both"}},
        ]);
        let v19 = "https://promptpack.org/schema/v1.9.0/promptpack.schema.json";
        for (claim, kinds, branches) in [
            (None, "v1 step kinds are prompt, agent, tool, branch and parallel", "prompt, agent or tool"),
            (Some(v19), "step kinds are prompt, agent, tool, branch and parallel, and extension kinds named `vendor.name`", "prompt, agent, tool or extension (`vendor.name`)"),
        ] {
            let all = diagnostics_at(claim, steps.clone());
            let at = |p: &str| help_at(&all, &format!("/compositions/c/steps/{p}"));
            assert_eq!(at("0/kind"), kinds);
            assert_eq!(at("1/branches/1/kind"), format!("branches of a parallel step are {branches} steps"));
        }
    }

    /// A mapping where a list belongs (`steps:` written as `key: value` lines) is told
    /// how a list is written.
    #[test]
    fn a_mapping_for_a_list_says_how_a_list_is_written() {
        let got = diagnostics(json!({"a": {"id": "a", "kind": "prompt", "prompt_task": "p"}}));
        let help = help_at(&got, "/compositions/c/steps");
        assert_eq!(
            help,
            "write a list: each item on a line of its own starting with `- `, not `key: value` lines"
        );
    }

    /// A branch target is suggested among the later steps only, a `depends_on` among the
    /// earlier ones: the nearest name elsewhere would be a cycle.
    #[test]
    fn step_names_are_suggested_where_they_may_stand() {
        let all = diagnostics(json!([
            {"id": "classify", "kind": "prompt", "prompt_task": "p"},
            {"id": "route", "kind": "branch",
             "predicate": {"path": "${input.k}", "op": "equals", "value": 1},
             "then": "answer", "else": "clasify"},
            {"id": "answer", "kind": "prompt", "prompt_task": "p", "depends_on": ["answr"]},
        ]));
        let at = |p: &str| help_at(&all, &format!("/compositions/c/steps/{p}"));
        assert_eq!(at("1/else"), "the later steps defined are: `answer`");
        assert_eq!(
            at("2/depends_on/0"),
            "the earlier steps defined are: `classify`, `route`"
        );
    }

    #[test]
    fn a_misspelt_required_member_is_linked_to_the_missing_one() {
        let all = diagnostics(json!([
            {"id": "a", "kind": "prompt", "promt_task": "p"},
            {"id": "b", "kind": "parallel",
             "branches": [{"id": "x", "kind": "prompt", "prompt_task": "p"},
                          {"id": "y", "kind": "tool", "tool": "t"}],
             "reduce": {"stratgy": "barrier", "into": "both"}},
            {"id": "c", "knd": "tool", "tool": "t"},
            {"id": "d", "kind": "agent", "prompt_task": "p", "termination": {"max_stpes": 2}},
        ]));
        let step = |p: &str| format!("/compositions/c/steps/{p}");
        let linked = |at: &str, misspelt: &str, meant: &str| {
            let also = vec![step(&format!("{at}/{misspelt}"))];
            let rename = format!("rename `{misspelt}` to `{meant}`");
            assert!(
                all.contains(&(step(at), rename, also)),
                "{at} {misspelt}: {all:?}"
            );
            let own = help_at(&all, &step(&format!("{at}/{misspelt}")));
            assert_eq!(own, format!("did you mean `{meant}`?"));
        };
        linked("0", "promt_task", "prompt_task");
        linked("1/reduce", "stratgy", "strategy");
        linked("3/termination", "max_stpes", "max_steps");
        // `knd` leaves the step without a kind, so its members are not checked: only
        // the missing `kind` names it.
        assert!(all.contains(&(
            step("2"),
            "rename `knd` to `kind`".into(),
            vec![step("2/knd")]
        )));
    }
}
