//! Composition checks, `shared/semantics/compositions.md` §2 (rules 2.1–2.25).
//!
//! The schema stage leaves the inside of `/compositions/<c>` to this module, because most
//! composition rules have a kind more specific than `schema_violation` (2.23).

use rustc_hash::FxHashMap;

use serde_json::{Map, Value};

use super::{did_you_mean, is_ident, members, type_of, Cx};
use crate::diag::{join, DiagKind, Diagnostic};
use crate::paths::OpenError;
use crate::syntax::{
    parse_binding, parse_whole_reference, Binding, BindingPart, RefRoot, Reference,
};

const COMPOSITION_MEMBERS: &[&str] = &[
    "version",
    "description",
    "input_schema",
    "output_schema",
    "output",
    "steps",
    "engine",
];
const SHARED_STEP_MEMBERS: &[&str] = &["id", "kind", "description", "depends_on", "modifiers"];
/// Every member some v1 step kind owns; a step carrying another kind's member is an error.
const KIND_MEMBERS: &[&str] = &[
    "prompt_task",
    "input",
    "output_schema",
    "tools",
    "termination",
    "tool",
    "args",
    "predicate",
    "then",
    "else",
    "branches",
    "reduce",
];
const RESERVED_NAMES: &[&str] = &["workflow__transition", "workflow__set_artifact"];
const COMPARE_OPS: &[&str] = &[
    "equals",
    "not_equals",
    "in",
    "not_in",
    "less_than",
    "less_than_or_equals",
    "greater_than",
    "greater_than_or_equals",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Prompt,
    Agent,
    Tool,
    Branch,
    Parallel,
    /// A vendor kind `vendor.name` (level 1.8+), served by the host.
    Extension,
}

/// Whether `kind` is a vendor step kind (the v1.8.1 / v1.9.0 schemas' `ExtensionStep`):
/// `^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_.-]*$`.
pub(crate) fn is_extension_kind(kind: &str) -> bool {
    let Some((vendor, name)) = kind.split_once('.') else {
        return false;
    };
    let head = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    let tail = |s: &str, extra: &[char]| {
        s.chars().skip(1).all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c) || extra.contains(&c)
        })
    };
    head(vendor) && tail(vendor, &[]) && head(name) && tail(name, &['.'])
}

impl Kind {
    /// The kind `s` names in a pack read at level 1.8+ (`level_1_8`) or below.
    fn parse_at(s: &str, level_1_8: bool) -> Option<Kind> {
        Kind::parse(s).or_else(|| (level_1_8 && is_extension_kind(s)).then_some(Kind::Extension))
    }

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "prompt" => Kind::Prompt,
            "agent" => Kind::Agent,
            "tool" => Kind::Tool,
            "branch" => Kind::Branch,
            "parallel" => Kind::Parallel,
            _ => return None,
        })
    }

    fn members(self) -> &'static [&'static str] {
        match self {
            Kind::Prompt => &["prompt_task", "input", "output_schema"],
            Kind::Agent => &[
                "prompt_task",
                "input",
                "output_schema",
                "tools",
                "termination",
            ],
            Kind::Tool => &["tool", "args"],
            Kind::Branch => &["predicate", "then", "else"],
            Kind::Parallel => &["branches", "reduce"],
            // Every other member is a param the host reads.
            Kind::Extension => KIND_MEMBERS,
        }
    }
}

/// What the rules need to know about a top-level step, by id.
#[derive(Clone, Copy)]
struct TopStep {
    index: usize,
    /// `None` when the kind is missing or unknown (already diagnosed; treated as having
    /// an output so that one mistake does not cascade).
    kind: Option<Kind>,
}

struct Comp<'p> {
    top: FxHashMap<&'p str, TopStep>,
    nested: FxHashMap<&'p str, usize>,
    /// Whether this composition's `cyclic_composition` has been reported (2.11 blames
    /// the first offending reference in document order).
    cycle_reported: bool,
}

pub(super) fn check(cx: &mut Cx<'_, '_>) {
    let root = cx.root;
    for (name, comp, ptr) in members("/compositions", root.get("compositions")) {
        check_composition(cx, name, comp, &ptr);
    }
}

fn check_composition(cx: &mut Cx<'_, '_>, name: &str, comp: &Value, ptr: &str) {
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
    let Some(obj) = comp.as_object() else {
        cx.push(schema(
            ptr,
            format!("a composition must be an object, found {}", type_of(comp)),
        ));
        return;
    };
    let newer = cx.newer_spec;
    for (key, _) in obj {
        let later = key == "extensions" && cx.level >= ir_spec::SpecLevel::V1_8;
        if !COMPOSITION_MEMBERS.contains(&key.as_str()) && !newer && !later {
            cx.push(
                schema(
                    &join(ptr, &[key]),
                    format!("unknown member `{key}` of a composition"),
                )
                .help(format!(
                    "a composition has only: {}",
                    COMPOSITION_MEMBERS.join(", ")
                )),
            );
        }
    }
    match obj.get("version") {
        None => cx.push(schema(ptr, "missing required member `version`").help("add `version: 1`")),
        Some(v) if v.as_u64() != Some(1) => cx.push(
            schema(
                &join(ptr, &["version"]),
                format!("composition version must be the integer 1, found {v}"),
            )
            .help("write `version: 1`"),
        ),
        Some(_) => {}
    }
    for key in ["description", "input_schema", "output_schema", "output"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_string()) {
            cx.push(schema(
                &join(ptr, &[key]),
                format!("`{key}` must be a string, found {}", type_of(v)),
            ));
        }
    }
    if let Some(v) = obj.get("engine").filter(|v| !v.is_object()) {
        cx.push(schema(
            &join(ptr, &["engine"]),
            format!("`engine` must be an object, found {}", type_of(v)),
        ));
    }
    let steps_ptr = join(ptr, &["steps"]);
    let steps: &[Value] = match obj.get("steps") {
        None => {
            cx.push(
                schema(ptr, "missing required member `steps`").help("add a non-empty `steps` list"),
            );
            &[]
        }
        Some(Value::Array(a)) if a.is_empty() => {
            cx.push(schema(&steps_ptr, "`steps` must not be empty"));
            &[]
        }
        Some(Value::Array(a)) => a,
        Some(v) => {
            cx.push(schema(
                &steps_ptr,
                format!("`steps` must be an array, found {}", type_of(v)),
            ));
            &[]
        }
    };

    let mut c = Comp {
        top: FxHashMap::default(),
        nested: FxHashMap::default(),
        cycle_reported: false,
    };
    collect_ids(cx, &mut c, steps, &steps_ptr);
    for (i, step) in steps.iter().enumerate() {
        let sptr = join(&steps_ptr, &[&i.to_string()]);
        check_step(cx, &mut c, step, &sptr, i, false);
    }
    if let Some(output) = obj.get("output").and_then(Value::as_str) {
        let optr = join(ptr, &["output"]);
        match c.top.get(output) {
            Some(TopStep {
                kind: Some(Kind::Branch),
                ..
            }) => cx.push(
                Diagnostic::new(
                    DiagKind::UnresolvedStep,
                    format!("output `{output}` is a branch step, which has no output"),
                )
                .at(optr)
                .help("name a prompt, agent, tool or parallel step"),
            ),
            Some(_) => {}
            None => {
                let d = unresolved_step(&c, output, optr, "output");
                cx.push(d);
            }
        }
    }
}

fn schema(ptr: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::SchemaViolation, message).at(ptr)
}

/// Pre-order walk collecting ids: top-level steps by index, nested ones apart, and
/// `duplicate_step_id` at every second occurrence (2.3).
fn collect_ids<'p>(cx: &mut Cx<'_, '_>, c: &mut Comp<'p>, steps: &'p [Value], steps_ptr: &str) {
    // Where each id was first seen: (top-level index, branch index). Pointers are built
    // only for a duplicate, so a clean composition allocates none here.
    let id_ptr = |(i, j): (usize, Option<usize>)| match j {
        None => join(steps_ptr, &[&i.to_string(), "id"]),
        Some(j) => join(
            steps_ptr,
            &[&i.to_string(), "branches", &j.to_string(), "id"],
        ),
    };
    let mut first: FxHashMap<&'p str, (usize, Option<usize>)> = FxHashMap::default();
    let mut seen = |cx: &mut Cx<'_, '_>, id: &'p str, at: (usize, Option<usize>)| {
        if let Some(prev) = first.get(id) {
            cx.push(
                Diagnostic::new(
                    DiagKind::DuplicateStepId,
                    format!("step id `{id}` is used twice"),
                )
                .at(id_ptr(at))
                .also(id_ptr(*prev), "first used here")
                .help(
                    "step ids are unique across the whole composition, parallel branches included",
                ),
            );
            false
        } else {
            first.insert(id, at);
            true
        }
    };
    for (i, step) in steps.iter().enumerate() {
        let kind = step
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| Kind::parse_at(k, cx.level >= ir_spec::SpecLevel::V1_8));
        if let Some(id) = step.get("id").and_then(Value::as_str) {
            if seen(cx, id, (i, None)) {
                c.top.insert(id, TopStep { index: i, kind });
            }
        }
        if let Some(branches) = step.get("branches").and_then(Value::as_array) {
            for (j, b) in branches.iter().enumerate() {
                if let Some(id) = b.get("id").and_then(Value::as_str) {
                    if seen(cx, id, (i, Some(j))) {
                        c.nested.insert(id, i);
                    }
                }
            }
        }
    }
}

fn unresolved_step(c: &Comp<'_>, name: &str, ptr: String, what: &str) -> Diagnostic {
    let message = if c.nested.contains_key(name) {
        format!("{what} `{name}` is a step nested in a parallel; only top-level steps can be named here")
    } else {
        format!("{what} `{name}` names no step of the composition")
    };
    Diagnostic::new(DiagKind::UnresolvedStep, message)
        .at(ptr)
        .help(did_you_mean("steps", name, c.top.keys().copied()))
}

/// Check one step. `index` is the top-level index (for a nested step, its parallel's).
/// Members no v1 step kind defines (`later-versions.md` §1 "Steps"): `provider` below
/// level 1.9 is a `schema_violation` naming v1.9; `provider` on a step that makes no
/// model call, and any other unknown member, is the warning `ignored_member`.
fn step_members(cx: &mut Cx<'_, '_>, kind: Kind, obj: &serde_json::Map<String, Value>, ptr: &str) {
    for key in obj.keys() {
        let key = key.as_str();
        if KIND_MEMBERS.contains(&key) || SHARED_STEP_MEMBERS.contains(&key) {
            continue;
        }
        let model = matches!(kind, Kind::Prompt | Kind::Agent);
        let mptr = join(ptr, &[key]);
        if key == "provider" && cx.level < ir_spec::SpecLevel::V1_9 && !cx.newer_spec {
            cx.push(
                schema(
                    &mptr,
                    format!(
                        "`provider` on a step is defined by PromptPack v1.9; this pack is read at level {}",
                        cx.level
                    ),
                )
                .help("declare `$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json` (or `--spec-level 1.9`) and the key under `requires.providers`, or remove `provider`"),
            );
        } else if key == "provider" && model {
            // resolved by the provider checks
        } else {
            let why = if key == "provider" {
                format!(
                    "`provider` has no effect on a {} step, which makes no model call",
                    kind_name(kind)
                )
            } else {
                format!(
                    "unknown member `{key}` of a {} step is ignored",
                    kind_name(kind)
                )
            };
            cx.push(
                Diagnostic::new(DiagKind::IgnoredMember, why)
                    .at(mptr)
                    .help(format!(
                        "remove `{key}`; a {} step takes: {}",
                        kind_name(kind),
                        SHARED_STEP_MEMBERS
                            .iter()
                            .chain(kind.members())
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
            );
        }
    }
}

fn check_step(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    step: &Value,
    ptr: &str,
    index: usize,
    nested: bool,
) {
    let Some(obj) = step.as_object() else {
        cx.push(schema(
            ptr,
            format!("a step must be an object, found {}", type_of(step)),
        ));
        return;
    };
    match obj.get("id") {
        None => cx.push(
            schema(ptr, "step without `id`")
                .help("give the step an `id` matching ^[a-zA-Z_][a-zA-Z0-9_]*$"),
        ),
        Some(Value::String(id)) if !is_ident(id) || id == "input" => {
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
                .at(join(ptr, &["id"]))
                .help(format!("rename it, e.g. `{}`", sanitize(id))),
            );
        }
        Some(Value::String(_)) => {}
        Some(v) => cx.push(schema(
            &join(ptr, &["id"]),
            format!("`id` must be a string, found {}", type_of(v)),
        )),
    }
    let kind = match obj.get("kind") {
        None => {
            cx.push(
                schema(ptr, "step without `kind`")
                    .help("add `kind`: prompt, agent, tool, branch or parallel"),
            );
            None
        }
        Some(Value::String(k)) => match Kind::parse_at(k, cx.level >= ir_spec::SpecLevel::V1_8) {
            Some(kind @ (Kind::Branch | Kind::Parallel)) if nested => {
                cx.push(
                    Diagnostic::new(
                        DiagKind::UnsupportedStepKind,
                        format!("a `{k}` step cannot be a branch of a parallel step"),
                    )
                    .at(join(ptr, &["kind"]))
                    .help("branches of a parallel step are prompt, agent or tool steps"),
                );
                let _ = kind; // diagnosed; checked no further
                None
            }
            Some(kind) => Some(kind),
            None => {
                cx.push(
                    Diagnostic::new(
                        DiagKind::UnsupportedStepKind,
                        format!("unknown step kind `{k}`"),
                    )
                    .at(join(ptr, &["kind"]))
                    .help(if is_extension_kind(k) {
                        "vendor step kinds (`vendor.name`) need spec level 1.8: declare `$schema` v1.8 or later"
                    } else {
                        "v1 step kinds are prompt, agent, tool, branch and parallel"
                    }),
                );
                None
            }
        },
        Some(v) => {
            cx.push(schema(
                &join(ptr, &["kind"]),
                format!("`kind` must be a string, found {}", type_of(v)),
            ));
            None
        }
    };
    if let Some(kind) = kind {
        step_members(cx, kind, obj, ptr);
    }
    if let Some(kind) = kind {
        for key in obj.keys() {
            let key = key.as_str();
            if KIND_MEMBERS.contains(&key)
                && !kind.members().contains(&key)
                && !SHARED_STEP_MEMBERS.contains(&key)
            {
                cx.push(
                    schema(
                        &join(ptr, &[key]),
                        format!("`{key}` does not belong on a {} step", kind_name(kind)),
                    )
                    .help(format!(
                        "a {} step takes: {}",
                        kind_name(kind),
                        kind.members().join(", ")
                    )),
                );
            }
        }
    }
    if let Some(v) = obj.get("description").filter(|v| !v.is_string()) {
        cx.push(schema(
            &join(ptr, &["description"]),
            format!("`description` must be a string, found {}", type_of(v)),
        ));
    }
    check_depends_on(cx, c, obj, ptr, index, nested);
    check_modifiers(cx, obj, ptr);
    let Some(kind) = kind else { return };
    match kind {
        Kind::Prompt | Kind::Agent => {
            check_prompt_task(cx, obj, ptr);
            check_bindings(cx, c, obj.get("input"), &join(ptr, &["input"]), index);
            check_output_schema(cx, obj, ptr);
            if kind == Kind::Agent {
                check_agent(cx, obj, ptr);
            }
        }
        Kind::Tool => {
            match obj.get("tool") {
                None => cx.push(
                    schema(ptr, "tool step without `tool`")
                        .help("name the tool to call: `tool: <key of tools>`"),
                ),
                Some(Value::String(t)) => {
                    if !cx.names.tools.contains(t.as_str()) {
                        let d = unresolved_tool(cx, t, join(ptr, &["tool"]));
                        cx.push(d);
                    }
                }
                Some(v) => cx.push(schema(
                    &join(ptr, &["tool"]),
                    format!("`tool` must be a string, found {}", type_of(v)),
                )),
            }
            check_bindings(cx, c, obj.get("args"), &join(ptr, &["args"]), index);
        }
        Kind::Branch => check_branch(cx, c, obj, ptr, index),
        Kind::Parallel => check_parallel(cx, c, obj, ptr, index),
        Kind::Extension => {
            check_bindings(cx, c, obj.get("input"), &join(ptr, &["input"]), index);
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Prompt => "prompt",
        Kind::Agent => "agent",
        Kind::Tool => "tool",
        Kind::Branch => "branch",
        Kind::Parallel => "parallel",
        Kind::Extension => "extension",
    }
}

fn sanitize(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || s == "input" {
        s.insert(0, '_');
    }
    s
}

fn unresolved_tool(cx: &Cx<'_, '_>, name: &str, ptr: String) -> Diagnostic {
    Diagnostic::new(
        DiagKind::UnresolvedTool,
        format!("tool `{name}` is not a key of `tools`"),
    )
    .at(ptr)
    .help(did_you_mean("tools", name, cx.names.tools.iter().copied()))
}

fn check_prompt_task(cx: &mut Cx<'_, '_>, obj: &Map<String, Value>, ptr: &str) {
    match obj.get("prompt_task") {
        None => cx.push(
            schema(ptr, "step without `prompt_task`")
                .help("name the prompt to call: `prompt_task: <key of prompts>`"),
        ),
        Some(Value::String(p)) => {
            if !cx.names.prompts.contains(p.as_str()) {
                let d = Diagnostic::new(
                    DiagKind::UnresolvedPrompt,
                    format!("prompt_task `{p}` names no prompt"),
                )
                .at(join(ptr, &["prompt_task"]))
                .help(did_you_mean("prompts", p, cx.names.prompts.iter().copied()));
                cx.push(d);
            }
        }
        Some(v) => cx.push(schema(
            &join(ptr, &["prompt_task"]),
            format!("`prompt_task` must be a string, found {}", type_of(v)),
        )),
    }
}

fn check_output_schema(cx: &mut Cx<'_, '_>, obj: &Map<String, Value>, ptr: &str) {
    let optr = join(ptr, &["output_schema"]);
    match obj.get("output_schema") {
        None => {}
        Some(Value::String(name)) => {
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
        Some(v) => cx.push(schema(
            &optr,
            format!("`output_schema` must be a string, found {}", type_of(v)),
        )),
    }
}

fn check_agent(cx: &mut Cx<'_, '_>, obj: &Map<String, Value>, ptr: &str) {
    let tools_ptr = join(ptr, &["tools"]);
    let mut step_tools: Option<Vec<&str>> = None;
    match obj.get("tools") {
        None => {}
        Some(Value::Array(tools)) => {
            let mut names = Vec::new();
            for (k, t) in tools.iter().enumerate() {
                let tptr = join(&tools_ptr, &[&k.to_string()]);
                match t {
                    Value::String(t) => {
                        names.push(t.as_str());
                        if !cx.names.tools.contains(t.as_str()) {
                            let d = unresolved_tool(cx, t, tptr);
                            cx.push(d);
                        }
                    }
                    v => cx.push(schema(
                        &tptr,
                        format!("a tool name must be a string, found {}", type_of(v)),
                    )),
                }
            }
            step_tools = Some(names);
        }
        Some(v) => cx.push(schema(
            &tools_ptr,
            format!("`tools` must be an array, found {}", type_of(v)),
        )),
    }
    let tptr = join(ptr, &["termination"]);
    let Some(term) = obj.get("termination") else {
        cx.push(
            Diagnostic::new(
                DiagKind::AgentMissingTermination,
                "agent step without `termination`",
            )
            .at(ptr)
            .help("add `termination: {max_steps: N}` and/or `termination: {tool_called: <tool>}`"),
        );
        return;
    };
    let Some(term) = term.as_object() else {
        cx.push(
            Diagnostic::new(
                DiagKind::AgentMissingTermination,
                format!("`termination` must be an object, found {}", type_of(term)),
            )
            .at(tptr)
            .help(
                "write `termination: {max_steps: N}` and/or `termination: {tool_called: <tool>}`",
            ),
        );
        return;
    };
    if !term.contains_key("max_steps") && !term.contains_key("tool_called") {
        cx.push(
            Diagnostic::new(
                DiagKind::AgentMissingTermination,
                "`termination` has neither `max_steps` nor `tool_called`",
            )
            .at(tptr.clone())
            .help("add `max_steps: N` and/or `tool_called: <tool>`"),
        );
    }
    if let Some(v) = term.get("max_steps") {
        if v.as_u64().is_none_or(|n| n < 1) {
            cx.push(schema(
                &join(&tptr, &["max_steps"]),
                format!("`max_steps` must be an integer ≥ 1, found {v}"),
            ));
        }
    }
    for key in term
        .keys()
        .filter(|k| !matches!(k.as_str(), "max_steps" | "tool_called"))
    {
        cx.push(
            schema(
                &join(&tptr, &[key]),
                format!("unknown termination condition `{key}`"),
            )
            .help("termination takes `max_steps` and `tool_called`"),
        );
    }
    match term.get("tool_called") {
        None => {}
        Some(Value::String(t)) => {
            let at = join(&tptr, &["tool_called"]);
            if !cx.names.tools.contains(t.as_str()) {
                let d = unresolved_tool(cx, t, at);
                cx.push(d);
            } else {
                // 6.3.1: the step's tools, else its prompt's.
                let listed: Vec<&str> = step_tools.clone().unwrap_or_else(|| {
                    obj.get("prompt_task")
                        .and_then(Value::as_str)
                        .and_then(|p| cx.root.get("prompts")?.get(p)?.get("tools")?.as_array())
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default()
                });
                if !listed.contains(&t.as_str()) {
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
        }
        Some(v) => cx.push(schema(
            &join(&tptr, &["tool_called"]),
            format!("`tool_called` must be a string, found {}", type_of(v)),
        )),
    }
}

fn check_depends_on(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    obj: &Map<String, Value>,
    ptr: &str,
    index: usize,
    nested: bool,
) {
    let Some(deps) = obj.get("depends_on") else {
        return;
    };
    let dptr = join(ptr, &["depends_on"]);
    if nested {
        cx.push(
            schema(&dptr, "a parallel branch cannot have `depends_on`")
                .help("branches of one parallel step all start together; put `depends_on` on the parallel step"),
        );
        return;
    }
    let Some(deps) = deps.as_array() else {
        cx.push(schema(
            &dptr,
            format!(
                "`depends_on` must be an array of step ids, found {}",
                type_of(deps)
            ),
        ));
        return;
    };
    for (k, dep) in deps.iter().enumerate() {
        let kptr = join(&dptr, &[&k.to_string()]);
        let Some(name) = dep.as_str() else {
            cx.push(schema(
                &kptr,
                format!("a step id must be a string, found {}", type_of(dep)),
            ));
            continue;
        };
        match c.top.get(name) {
            None => {
                let d = unresolved_step(c, name, kptr, "depends_on");
                cx.push(d);
            }
            Some(t) if t.index >= index => {
                report_cycle(cx, c, kptr, format!(
                    "`depends_on: {name}` names a step that is not earlier in `steps`; the walk runs steps in array order, so this is a cycle"
                ));
            }
            Some(_) => {}
        }
    }
}

fn report_cycle(cx: &mut Cx<'_, '_>, c: &mut Comp<'_>, ptr: String, message: String) {
    if std::mem::replace(&mut c.cycle_reported, true) {
        return;
    }
    cx.push(
        Diagnostic::new(DiagKind::CyclicComposition, message)
            .at(ptr)
            .help("order `steps` so that every step comes after what it depends on and every branch comes before its targets"),
    );
}

fn check_modifiers(cx: &mut Cx<'_, '_>, obj: &Map<String, Value>, ptr: &str) {
    let Some(mods) = obj.get("modifiers") else {
        return;
    };
    let mptr = join(ptr, &["modifiers"]);
    let Some(mods) = mods.as_object() else {
        cx.push(schema(
            &mptr,
            format!("`modifiers` must be an object, found {}", type_of(mods)),
        ));
        return;
    };
    if let Some(retry) = mods.get("retry") {
        let rptr = join(&mptr, &["retry"]);
        match retry.as_object() {
            None => cx.push(schema(
                &rptr,
                format!("`retry` must be an object, found {}", type_of(retry)),
            )),
            Some(r) => {
                if let Some(n) = r.get("max_attempts") {
                    if n.as_u64().is_none_or(|n| n < 1) {
                        cx.push(
                            schema(
                                &join(&rptr, &["max_attempts"]),
                                format!("`max_attempts` must be an integer ≥ 1, found {n}"),
                            )
                            .help("`max_attempts` counts every attempt, the first included"),
                        );
                    }
                }
            }
        }
    }
    if let Some(eval) = mods.get("eval") {
        let eptr = join(&mptr, &["eval"]);
        let Some(evals) = eval.as_array() else {
            cx.push(schema(
                &eptr,
                format!(
                    "`eval` must be an array of eval ids, found {}",
                    type_of(eval)
                ),
            ));
            return;
        };
        for (k, e) in evals.iter().enumerate() {
            let kptr = join(&eptr, &[&k.to_string()]);
            match e.as_str() {
                None => cx.push(schema(
                    &kptr,
                    format!("an eval id must be a string, found {}", type_of(e)),
                )),
                Some(id) if !cx.names.evals.contains(id) => {
                    let d = Diagnostic::new(
                        DiagKind::UnresolvedEval,
                        format!("eval `{id}` is not the id of an entry of `evals`"),
                    )
                    .at(kptr)
                    .help(did_you_mean(
                        "evals",
                        id,
                        cx.names.evals.iter().copied(),
                    ));
                    cx.push(d);
                }
                Some(_) => {}
            }
        }
    }
}

fn check_branch(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    obj: &Map<String, Value>,
    ptr: &str,
    index: usize,
) {
    match obj.get("predicate") {
        None => cx.push(
            schema(ptr, "branch step without `predicate`")
                .help("add a predicate, e.g. `{path: \"${input.x}\", op: equals, value: 1}`"),
        ),
        Some(p) => check_predicate(cx, c, p, &join(ptr, &["predicate"]), index),
    }
    if !obj.contains_key("then") {
        cx.push(
            schema(ptr, "branch step without `then`")
                .help("name the step to run when the predicate is true"),
        );
    }
    for key in ["then", "else"] {
        let Some(target) = obj.get(key) else { continue };
        let tptr = join(ptr, &[key]);
        let Some(name) = target.as_str() else {
            cx.push(schema(
                &tptr,
                format!("`{key}` must be a step id, found {}", type_of(target)),
            ));
            continue;
        };
        match c.top.get(name) {
            None => {
                let d = unresolved_step(c, name, tptr, key);
                cx.push(d);
            }
            Some(t) if t.index <= index => {
                report_cycle(cx, c, tptr, format!(
                    "`{key}: {name}` names a step that is not later in `steps` than its branch; the walk only moves forward, so this is a cycle"
                ));
            }
            Some(_) => {}
        }
    }
}

fn invalid_predicate(ptr: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::InvalidPredicate, message)
        .at(ptr)
        .help("a predicate is exactly one of {path, op, value} | {path, exists} | {all_of: [...]} | {any_of: [...]} | {not: ...}")
}

/// 7.1: exactly one variant with exactly its members. Recursion is bounded by the
/// loader's depth limit.
fn check_predicate(cx: &mut Cx<'_, '_>, c: &mut Comp<'_>, p: &Value, ptr: &str, index: usize) {
    let Some(obj) = p.as_object() else {
        let found = match p {
            Value::String(s) => format!("the expression {s:?}"),
            v => type_of(v).to_string(),
        };
        cx.push(invalid_predicate(ptr, format!("a predicate must be an object, found {found}; free-form expressions are not predicates")));
        return;
    };
    let has = |k: &str| obj.contains_key(k);
    let variant: &[&str] = if has("op") || has("value") {
        &["path", "op", "value"]
    } else if has("exists") {
        &["path", "exists"]
    } else if has("all_of") {
        &["all_of"]
    } else if has("any_of") {
        &["any_of"]
    } else if has("not") {
        &["not"]
    } else if has("path") {
        cx.push(invalid_predicate(
            ptr,
            "a predicate with `path` needs `op` and `value`, or `exists`",
        ));
        return;
    } else {
        cx.push(invalid_predicate(
            ptr,
            "not a predicate: expected compare, exists, all_of, any_of or not",
        ));
        return;
    };
    let extra: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !variant.contains(k))
        .collect();
    if !extra.is_empty() {
        cx.push(invalid_predicate(
            ptr,
            format!(
                "unexpected member(s) {} in a predicate of shape {{{}}}",
                quote_list(&extra),
                variant.join(", ")
            ),
        ));
        return;
    }
    if let Some(missing) = variant.iter().find(|k| !obj.contains_key(**k)) {
        cx.push(invalid_predicate(
            ptr,
            format!("predicate is missing `{missing}`"),
        ));
        return;
    }
    match variant[0] {
        "path" => {
            if let Some(op) = obj.get("op") {
                match op.as_str() {
                    Some(o) if COMPARE_OPS.contains(&o) => {}
                    _ => {
                        cx.push(invalid_predicate(
                            ptr,
                            format!("unknown op {op}; ops are {}", COMPARE_OPS.join(", ")),
                        ));
                        return;
                    }
                }
                if let Some(v) = obj.get("value") {
                    if contains_reference_text(v) {
                        cx.push(invalid_predicate(ptr, "a predicate `value` is a literal and may not contain `${`; comparing two paths is not supported in v1"));
                        return;
                    }
                }
            }
            if let Some(e) = obj.get("exists") {
                if !e.is_boolean() {
                    cx.push(invalid_predicate(
                        ptr,
                        format!("`exists` must be true or false, found {e}"),
                    ));
                    return;
                }
            }
            let path = &obj["path"];
            let pptr = join(ptr, &["path"]);
            let Some(text) = path.as_str() else {
                cx.push(invalid_predicate(
                    ptr,
                    format!("`path` must be a reference string, found {}", type_of(path)),
                ));
                return;
            };
            match parse_whole_reference(text) {
                Err(e) => cx.push(invalid_predicate(
                    ptr,
                    format!("`path` is not one reference: {e}"),
                )),
                Ok(r) => check_visible(cx, c, &r, &pptr, index),
            }
        }
        key @ ("all_of" | "any_of") => {
            let lptr = join(ptr, &[key]);
            match obj[key].as_array() {
                Some(list) if !list.is_empty() => {
                    for (k, sub) in list.iter().enumerate() {
                        check_predicate(cx, c, sub, &join(&lptr, &[&k.to_string()]), index);
                    }
                }
                Some(_) => cx.push(invalid_predicate(ptr, format!("`{key}` must not be empty"))),
                None => cx.push(invalid_predicate(
                    ptr,
                    format!("`{key}` must be an array of predicates"),
                )),
            }
        }
        _ => check_predicate(cx, c, &obj["not"], &join(ptr, &["not"]), index),
    }
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn contains_reference_text(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("${"),
        Value::Array(a) => a.iter().any(contains_reference_text),
        Value::Object(o) => o.values().any(contains_reference_text),
        _ => false,
    }
}

fn check_parallel(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    obj: &Map<String, Value>,
    ptr: &str,
    index: usize,
) {
    let bptr = join(ptr, &["branches"]);
    match obj.get("branches") {
        None => cx.push(
            Diagnostic::new(
                DiagKind::ParallelTooFewBranches,
                "parallel step without `branches`",
            )
            .at(ptr)
            .help("a parallel step runs two or more branches"),
        ),
        Some(Value::Array(branches)) => {
            if branches.len() < 2 {
                cx.push(
                    Diagnostic::new(
                        DiagKind::ParallelTooFewBranches,
                        format!(
                            "a parallel step needs at least two branches, found {}",
                            branches.len()
                        ),
                    )
                    .at(bptr.clone())
                    .help("add a branch, or replace the parallel step by its one branch"),
                );
            }
            for (j, b) in branches.iter().enumerate() {
                check_step(cx, c, b, &join(&bptr, &[&j.to_string()]), index, true);
            }
        }
        Some(v) => cx.push(schema(
            &bptr,
            format!("`branches` must be an array of steps, found {}", type_of(v)),
        )),
    }
    let rptr = join(ptr, &["reduce"]);
    let Some(reduce) = obj.get("reduce") else {
        cx.push(
            Diagnostic::new(
                DiagKind::ParallelMissingReduce,
                "parallel step without `reduce`",
            )
            .at(ptr)
            .help("add `reduce: {strategy: barrier|append|replace, into: <name>}`"),
        );
        return;
    };
    let Some(r) = reduce.as_object() else {
        cx.push(schema(
            &rptr,
            format!("`reduce` must be an object, found {}", type_of(reduce)),
        ));
        return;
    };
    for key in ["strategy", "into"] {
        if !r.contains_key(key) {
            cx.push(
                schema(&rptr, format!("`reduce` without `{key}`"))
                    .help("write `reduce: {strategy: barrier|append|replace, into: <name>}`"),
            );
        }
    }
    if let Some(s) = r.get("strategy") {
        if !matches!(s.as_str(), Some("append" | "replace" | "barrier")) {
            cx.push(
                schema(
                    &join(&rptr, &["strategy"]),
                    format!("unknown reduce strategy {s}"),
                )
                .help("strategies are append, replace and barrier"),
            );
        }
    }
    if let Some(into) = r.get("into") {
        if !into.as_str().is_some_and(is_ident) {
            cx.push(schema(
                &join(&rptr, &["into"]),
                format!("`into` must be a name matching ^[a-zA-Z_][a-zA-Z0-9_]*$, found {into}"),
            ));
        }
    }
    for key in r
        .keys()
        .filter(|k| !matches!(k.as_str(), "strategy" | "into"))
    {
        cx.push(schema(
            &join(&rptr, &[key]),
            format!("unknown member `{key}` of `reduce`"),
        ));
    }
}

/// 3.2/3.3: every string inside `input`/`args`, at any depth (never object keys).
fn check_bindings(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    v: Option<&Value>,
    ptr: &str,
    index: usize,
) {
    let Some(v) = v else { return };
    let mut stack: Vec<(&Value, String)> = vec![(v, ptr.to_string())];
    while let Some((v, p)) = stack.pop() {
        match v {
            Value::String(s) => match parse_binding(s) {
                Err(e) => cx.push(
                    Diagnostic::new(DiagKind::UnresolvedBinding, format!("malformed reference: {e}"))
                        .at(p)
                        .help("a reference is `${input.a.b}` or `${step_id.output.a.b}`; there is no way to write a literal `${` in a binding"),
                ),
                Ok(Binding::Literal(_)) => {}
                Ok(Binding::Whole(r)) => check_visible(cx, c, &r, &p, index),
                Ok(Binding::Template(parts)) => {
                    for part in &parts {
                        if let BindingPart::Ref(r) = part {
                            check_visible(cx, c, r, &p, index);
                        }
                    }
                }
            },
            Value::Array(items) => {
                for (k, item) in items.iter().enumerate().rev() {
                    stack.push((item, join(&p, &[&k.to_string()])));
                }
            }
            Value::Object(m) => {
                for (k, item) in m.iter().rev() {
                    stack.push((item, join(&p, &[k])));
                }
            }
            _ => {}
        }
    }
}

/// 3.3: `input` is always visible; `<s>.output` when `s` is an earlier top-level step
/// with an output.
fn check_visible(cx: &mut Cx<'_, '_>, c: &Comp<'_>, r: &Reference, ptr: &str, index: usize) {
    let RefRoot::Step(name) = &r.root else { return };
    let problem = match c.top.get(name.as_str()) {
        Some(TopStep {
            kind: Some(Kind::Branch),
            ..
        }) => format!("`{name}` is a branch step, which has no output"),
        Some(t) if t.index >= index => format!("step `{name}` does not run before this one"),
        Some(_) => return,
        None if c.nested.contains_key(name.as_str()) => {
            format!("`{name}` is nested in a parallel step; read the parallel step's merged output instead")
        }
        None => format!("no step `{name}` in this composition"),
    };
    let visible: Vec<&str> = c
        .top
        .iter()
        .filter(|(_, t)| t.index < index && t.kind != Some(Kind::Branch))
        .map(|(k, _)| *k)
        .collect();
    cx.push(
        Diagnostic::new(
            DiagKind::UnresolvedBinding,
            format!("`${{{name}.output…}}` cannot be resolved: {problem}"),
        )
        .at(ptr)
        .help(format!(
            "references read `input` or an earlier step's output; {}",
            did_you_mean("earlier steps", name, visible.iter().copied())
        )),
    );
}
