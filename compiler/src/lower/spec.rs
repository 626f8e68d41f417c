//! The spec level and what it settles ([`ir_spec::SpecInfo`]): who holds the turn after a
//! model-driven transition (RFC 0014), the provider of every model call (RFC 0012, RFC
//! 0017) and the governance facts (RFC 0013, RFC 0016). Runs after the other lowering
//! passes, over the tables they built.

use crate::doc::{Node, Obj};
use ir_spec::{Provider, SpecInfo, SpecLevel};

use super::Cx;

/// The items of a pack's `requires.providers` list, as written (none when it is absent or
/// not a list).
pub(crate) fn provider_items<'a, 's>(root: &'a Obj<'s>) -> &'a [Node<'s>] {
    root.get("requires")
        .and_then(|r| r.get("providers"))
        .and_then(Node::as_array)
        .unwrap_or_default()
}

/// The `requires.providers` entries of a pack, as written: the string shorthand is
/// `{key, role: llm, required: true}`.
pub(crate) fn declared_providers(root: &Obj) -> Vec<Provider> {
    provider_items(root)
        .iter()
        .filter_map(|item| match item {
            Node::String(key) => Some(Provider {
                key: key.as_str().to_owned(),
                role: "llm".into(),
                required: true,
            }),
            Node::Object(o) => Some(Provider {
                key: o.get("key")?.as_str()?.to_owned(),
                role: o
                    .get("role")
                    .and_then(Node::as_str)
                    .unwrap_or("llm")
                    .to_owned(),
                required: o.get("required").and_then(Node::as_bool).unwrap_or(true),
            }),
            _ => None,
        })
        .collect()
}

/// Fills `cx.module.spec` for a pack read at `level`.
pub(super) fn lower_spec(cx: &mut Cx<'_>, level: SpecLevel) {
    let root = cx.root;
    let mut spec = SpecInfo {
        level,
        ..SpecInfo::default()
    };
    if level >= SpecLevel::V1_8 {
        if let (Some(wf), Some(states)) = (
            cx.module.workflow.as_ref(),
            root.get("workflow")
                .and_then(|w| w.get("states"))
                .and_then(Node::as_object),
        ) {
            spec.holds_turn = wf
                .states
                .iter()
                .zip(states.values())
                .map(|(s, v)| {
                    !s.terminal && v.get("control").and_then(Node::as_str) != Some("agent")
                })
                .collect();
        }
    }
    // Providers: `default` first, then every other declared key once.
    let declared = declared_providers(root);
    let default = declared
        .iter()
        .find(|p| p.key == "default")
        .cloned()
        .unwrap_or(Provider {
            key: "default".into(),
            role: "llm".into(),
            required: true,
        });
    spec.providers.push(default);
    for p in declared {
        if !spec.providers.iter().any(|q| q.key == p.key) {
            spec.providers.push(p);
        }
    }
    let index = |providers: &[Provider], v: Option<&Node>| -> Option<u32> {
        let key = v?.as_str()?;
        let i = providers.iter().position(|p| p.key == key)?;
        u32::try_from(i).ok()
    };
    if level >= SpecLevel::V1_9 {
        let prompts = root.get("prompts").and_then(Node::as_object);
        spec.prompt_providers = prompts
            .into_iter()
            .flat_map(|m| m.values())
            .map(|p| index(&spec.providers, p.get("provider")).unwrap_or(0))
            .collect();
        let named_any = spec.prompt_providers.iter().any(|p| *p != 0);
        let comps = root.get("compositions").and_then(Node::as_object);
        let mut any_step = false;
        for (comp, c) in comps
            .into_iter()
            .flat_map(|m| m.values())
            .zip(&cx.module.compositions)
        {
            let mut flat = Vec::with_capacity(c.steps.len());
            for step in comp
                .get("steps")
                .and_then(Node::as_array)
                .into_iter()
                .flatten()
            {
                flat.push(step);
                flat.extend(crate::vocab::parallel_branches(step).into_iter().flatten());
            }
            let per_step: Vec<u32> = c
                .steps
                .iter()
                .zip(flat)
                .map(|(s, v)| {
                    let prompt = match &s.kind {
                        ir_spec::StepKind::Prompt { prompt, .. }
                        | ir_spec::StepKind::Agent { prompt, .. } => *prompt,
                        _ => return 0,
                    };
                    let own = index(&spec.providers, v.get("provider"));
                    // A step naming a provider other than its prompt's (`default`
                    // included) keeps the table.
                    any_step |= own.is_some_and(|p| p != spec.prompt_provider(prompt));
                    own.unwrap_or_else(|| spec.prompt_provider(prompt))
                })
                .collect();
            spec.step_providers.push(per_step);
        }
        if !any_step {
            spec.step_providers.clear();
        }
        if !named_any {
            spec.prompt_providers.clear();
        }
    }
    if spec.providers.len() == 1 && spec.providers[0].role == "llm" && spec.providers[0].required {
        spec.providers.clear();
    }
    if level >= SpecLevel::V1_5_1 {
        spec.governance = root
            .get("metadata")
            .and_then(|m| m.get("governance"))
            .map(Node::to_value);
        // Each member's own, in the table's order (that of `agents.members`).
        let members = root
            .get("agents")
            .and_then(|a| a.get("members"))
            .and_then(Node::as_object);
        spec.agent_governance = cx
            .module
            .agents
            .iter()
            .map(|a| {
                let key = cx.module.str(a.key);
                members?.get(key)?.get("governance").map(Node::to_value)
            })
            .collect();
        if spec.agent_governance.iter().all(Option::is_none) {
            spec.agent_governance.clear();
        }
    }
    cx.module.spec = spec;
}
