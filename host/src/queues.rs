//! The names a host script's answer queues are keyed by, checked against the pack they
//! answer. A queue under a name the pack never calls (`clasify:` for the prompt
//! `classify`) is never consumed, and the run then fails somewhere else with "no
//! scripted answer for prompt classify": said at the queue itself, with the nearest name.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ir_spec::{Check, Module, StepKind};
use serde_json::Value;

use crate::case::RunSpec;

/// A queue of a host script that no call of the pack can consume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownQueue {
    /// The member of `host` it is under: `prompts`, `tools`, `guards` or `extensions`.
    pub section: &'static str,
    /// Its name.
    pub name: String,
    /// What is wrong, with the nearest name the pack has when one is near.
    pub message: String,
}

/// The queues of `spec` keyed by a name no call of `module` uses: `prompts` by prompt
/// key (or `provider/prompt` for a provider the pack routes to), `tools` by tool key or
/// agent member key, `guards` by the type of a validator the host decides, `extensions`
/// by an extension step's kind.
pub fn unknown_queues(spec: &RunSpec, module: &Module) -> Vec<UnknownQueue> {
    let names = Names::of(module);
    let mut out = Vec::new();
    let mut check = |section: &'static str,
                     queues: &BTreeMap<String, VecDeque<Value>>,
                     what: &str,
                     known: &BTreeSet<&str>,
                     keyed: bool| {
        for name in queues.keys() {
            if known.contains(name.as_str()) {
                continue;
            }
            if let (true, Some((provider, prompt))) = (keyed, name.split_once('/')) {
                if known.contains(prompt) {
                    if names.providers.contains(provider) {
                        continue;
                    }
                    out.push(UnknownQueue {
                        section,
                        name: name.clone(),
                        message: format!(
                            "`{name}` answers prompt `{prompt}` when routed to provider `{provider}`, which the pack does not declare; {}",
                            nearest("providers", provider, &names.providers)
                        ),
                    });
                    continue;
                }
            }
            out.push(UnknownQueue {
                section,
                name: name.clone(),
                message: format!(
                    "`{name}` in `run.host.{section}` is no {what} of the pack, so its answers are never used; {}",
                    nearest(&format!("{what}s"), name, known)
                ),
            });
        }
    };
    check("prompts", &spec.prompts, "prompt", &names.prompts, true);
    check("tools", &spec.tools, "tool", &names.tools, false);
    check(
        "guards",
        &spec.guards,
        "host-decided validator type",
        &names.guards,
        false,
    );
    check(
        "extensions",
        &spec.extensions,
        "extension step kind",
        &names.extensions,
        false,
    );
    out
}

/// The names a scripted host is called by, per queue section.
struct Names<'m> {
    prompts: BTreeSet<&'m str>,
    providers: BTreeSet<&'m str>,
    tools: BTreeSet<&'m str>,
    guards: BTreeSet<&'m str>,
    extensions: BTreeSet<&'m str>,
}

impl<'m> Names<'m> {
    fn of(m: &'m Module) -> Self {
        let mut providers: BTreeSet<&str> =
            m.spec.providers.iter().map(|p| p.key.as_str()).collect();
        providers.insert("default");
        Names {
            prompts: m.prompts.iter().map(|p| m.str(p.key)).collect(),
            providers,
            tools: (m.tools.iter().map(|t| m.str(t.key)))
                .chain(m.agents.iter().map(|a| m.str(a.key)))
                .collect(),
            guards: m
                .prompts
                .iter()
                .flat_map(|p| &p.guards)
                .filter(|g| matches!(g.check, Check::Host { .. }))
                .map(|g| g.name.as_str())
                .collect(),
            extensions: m
                .compositions
                .iter()
                .flat_map(|c| &c.steps)
                .filter_map(|s| match &s.kind {
                    StepKind::Extension { kind, .. } => Some(kind.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// "did you mean `x`?" when a name of `known` is near `name`, else what there is.
fn nearest(what: &str, name: &str, known: &BTreeSet<&str>) -> String {
    if let Some(near) = ir_spec::suggest::suggest(name, known.iter().copied()) {
        return format!("did you mean `{near}`?");
    }
    match known.len() {
        0 => format!("the pack has no {what}"),
        1..=8 => format!(
            "the pack's {what} are: {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        n => format!("the pack has {n} {what}, none of them near"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(pack: &str) -> Module {
        let checked = packc_compiler::check_bytes(pack.as_bytes(), &Default::default());
        packc_compiler::lower(&checked, &Default::default())
            .unwrap_or_else(|e| panic!("{e:?}: {:?}", checked.diagnostics))
    }

    const PACK: &str = r#"{
        "$schema": "https://promptpack.org/schema/v1.9.0/promptpack.schema.json",
        "id": "d", "name": "D", "version": "1.0.0",
        "template_engine": {"version": "v1", "syntax": "{{variable}}"},
        "prompts": {
            "classify": {"id": "classify", "name": "C", "version": "1.0.0",
                         "system_template": "Classify", "validators": [{"type": "toxicity"}]}
        },
        "tools": {"lookup": {"name": "lookup", "description": "L", "parameters": {"type": "object", "properties": {}}}}
    }"#;

    fn spec(host: &str) -> RunSpec {
        RunSpec::parse(host).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn a_queue_the_pack_never_calls_names_the_nearest_name() {
        let m = module(PACK);
        let found = unknown_queues(
            &spec(
                "host:\n  prompts:\n    clasify: [{output: 1}]\n    classify: [{output: 1}]\n    default/classify: [{output: 1}]\n    drafter/classify: [{output: 1}]\n  tools:\n    lookpu: [{output: 1}]\n    lookup: [{output: 1}]\n  guards:\n    toxicity: [{output: {pass: true}}]\n    toxcity: [{output: {pass: true}}]\n  extensions:\n    acme.x: [{output: 1}]\n",
            ),
            &m,
        );
        let got: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|q| (q.section, q.name.as_str(), q.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("prompts", "clasify", "`clasify` in `run.host.prompts` is no prompt of the pack, so its answers are never used; did you mean `classify`?"),
                ("prompts", "drafter/classify", "`drafter/classify` answers prompt `classify` when routed to provider `drafter`, which the pack does not declare; the pack's providers are: `default`"),
                ("tools", "lookpu", "`lookpu` in `run.host.tools` is no tool of the pack, so its answers are never used; did you mean `lookup`?"),
                ("guards", "toxcity", "`toxcity` in `run.host.guards` is no host-decided validator type of the pack, so its answers are never used; did you mean `toxicity`?"),
                ("extensions", "acme.x", "`acme.x` in `run.host.extensions` is no extension step kind of the pack, so its answers are never used; the pack has no extension step kinds"),
            ]
        );
    }
}
