//! Prompts and tools (`workflow.md` §6, §14).

use crate::doc::Node;
use ir_spec::{
    PathSeg, Placeholder, Prompt, Segment, Tool, ToolPolicy, ToolRef, Validation, VarRoot, VarType,
    Variable,
};

use crate::members::{entries, Name};

use super::{strings, uint, uint32, Cx, LowerError};
use crate::syntax::{self, expanded_text, parse_template};

/// `tools` → [`Module::tools`](ir_spec::Module::tools), in source order.
pub(super) fn lower_tools(cx: &mut Cx<'_>) {
    for (key, tool) in entries(cx.root.get("tools")) {
        let key = cx.intern(key);
        let text = |name: &str| {
            tool.get(name)
                .and_then(Node::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        cx.module.tools.push(Tool {
            key,
            name: text("name"),
            description: text("description"),
            parameters: ir_spec::JsonText::from_value(
                &tool
                    .get("parameters")
                    .map_or(serde_json::Value::Null, Node::to_value),
            ),
        });
    }
}

/// `prompts` → [`Module::prompts`](ir_spec::Module::prompts), in source order.
pub(super) fn lower_prompts(cx: &mut Cx<'_>) -> Result<(), LowerError> {
    for (key, prompt) in entries(cx.root.get("prompts")) {
        let key = cx.intern(key);
        let variables: Vec<Variable> = prompt
            .get("variables")
            .and_then(Node::as_array)
            .map(|vars| vars.iter().filter_map(variable).collect())
            .unwrap_or_default();
        let system = template(cx, prompt, &variables);
        let policy = policy(prompt.get("tool_policy"));
        let names: Vec<&str> = strings(prompt.get("tools")).collect();
        let tools = offered(cx, &names, &policy);
        let level_1_8 = cx.level >= ir_spec::SpecLevel::V1_8;
        let guards = prompt
            .get("validators")
            .and_then(Node::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|v| crate::validators::read(v, level_1_8).0)
                    .collect()
            })
            .unwrap_or_default();
        cx.module.prompts.push(Prompt {
            key,
            system,
            variables,
            tools,
            policy,
            parameters: ir_spec::JsonText::from_value(
                &prompt
                    .get("parameters")
                    .map_or(serde_json::Value::Null, Node::to_value),
            ),
            guards,
        });
    }
    Ok(())
}

/// The offered tools for `names` (a prompt's list, or an agent step's): tool keys and
/// member keys, less the blocklist; none under `tool_choice: none`.
pub(super) fn offered<'a>(cx: &mut Cx<'a>, names: &[&'a str], policy: &ToolPolicy) -> Vec<ToolRef> {
    if policy.tool_choice_none {
        return Vec::new();
    }
    let mut out = Vec::new();
    for name in names {
        if policy.blocklist.iter().any(|b| b == name) {
            continue;
        }
        let r = if let Some(id) = cx.tools.get(&Name(name)) {
            ToolRef::Tool(*id)
        } else if cx.members.contains(name) {
            ToolRef::Member(cx.intern(name))
        } else {
            continue;
        };
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// `tool_policy`.
pub(super) fn policy(v: Option<&Node>) -> ToolPolicy {
    let Some(v) = v else {
        return ToolPolicy::default();
    };
    ToolPolicy {
        tool_choice_none: v.get("tool_choice").and_then(Node::as_str) == Some("none"),
        max_rounds: uint32(v.get("max_rounds")),
        max_tool_calls_per_turn: uint32(v.get("max_tool_calls_per_turn")),
        blocklist: strings(v.get("blocklist")).map(str::to_owned).collect(),
    }
}

/// One entry of `variables`; `None` without a string `name`.
fn variable(v: &Node) -> Option<Variable> {
    let name = v.get("name")?.as_str()?.to_owned();
    let required = v.get("required").and_then(Node::as_bool).unwrap_or(false);
    let ty = match v.get("type").and_then(Node::as_str) {
        Some("string") => Some(VarType::String),
        Some("number") => Some(VarType::Number),
        Some("boolean") => Some(VarType::Boolean),
        Some("object") => Some(VarType::Object),
        Some("array") => Some(VarType::Array),
        _ => None,
    };
    // A default on a required variable is ignored (`workflow.md` §14).
    let default = if required {
        None
    } else {
        v.get("default").map(Node::to_value)
    };
    let val = v.get("validation");
    let get = |k: &str| val.and_then(|val| val.get(k));
    let validation = Validation {
        pattern: get("pattern").and_then(Node::as_str).map(str::to_owned),
        min_length: uint(get("min_length")),
        max_length: uint(get("max_length")),
        minimum: get("minimum").and_then(Node::as_f64),
        maximum: get("maximum").and_then(Node::as_f64),
        allowed: get("enum")
            .and_then(Node::as_array)
            .map(|items| items.iter().map(Node::to_value).collect()),
    };
    Some(Variable {
        name,
        ty,
        required,
        default,
        validation,
    })
}

/// The `system_template`, fragments expanded, placeholders classified.
fn template(cx: &mut Cx<'_>, prompt: &Node, variables: &[Variable]) -> Vec<Segment> {
    let text = prompt
        .get("system_template")
        .and_then(Node::as_str)
        .unwrap_or_default();
    let fragments = crate::members::fragments(cx.root.get("fragments"));
    let expanded = expanded_text(text, fragments, |name| {
        variables.iter().any(|v| v.name == name)
    });
    parse_template(&expanded)
        .segments
        .into_iter()
        .map(|seg| match seg {
            syntax::Segment::Text(t) => Segment::Text(t),
            syntax::Segment::Var(p) => Segment::Var(placeholder(cx, p, variables)),
        })
        .collect()
}

fn placeholder(cx: &Cx<'_>, p: syntax::Placeholder, variables: &[Variable]) -> Placeholder {
    let mut path: Vec<PathSeg> = p
        .path
        .into_iter()
        .map(|s| match s {
            syntax::PathSeg::Field(f) => PathSeg::Field(f),
            syntax::PathSeg::Index(i) => PathSeg::Index(i),
        })
        .collect();
    let root = match p.root.as_str() {
        "input" => VarRoot::Input,
        "artifacts" => match path.first() {
            Some(PathSeg::Field(name)) => {
                let id = cx.artifacts.get(&Name(name)).copied();
                path.remove(0);
                VarRoot::Artifact(id)
            }
            _ => VarRoot::Artifacts,
        },
        name => match variables.iter().position(|v| v.name == name) {
            Some(i) => VarRoot::Declared(u32::try_from(i).unwrap_or(u32::MAX)),
            None => VarRoot::Undeclared(name.to_owned()),
        },
    };
    Placeholder { root, path }
}
