//! What a live host checks before the first call of a run: the host validators,
//! extension step kinds, providers and tools a module needs served.

/// The host validator types a module's prompts use (their guards that the host
/// judges), in module order, without repeats. A live host must serve each one before it
/// starts a run ([`LiveConfig::unbound_guards`](crate::live::LiveConfig::unbound_guards)).
pub fn host_guard_types(module: &ir_spec::Module) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &module.prompts {
        for g in &p.guards {
            if matches!(g.check, ir_spec::Check::Host { .. }) && !out.contains(&g.name) {
                out.push(g.name.clone());
            }
        }
    }
    out
}

/// What a live host says when it refuses a run for host validators it cannot serve.
pub fn unbound_guards_message(types: &[String]) -> String {
    format!(
        "the pack's validators need a host validator this host does not serve: {} (bind each under `guards:` in a --tools file); refusing to run without them",
        types.join(", ")
    )
}

/// The extension step kinds a module's compositions use, in module order, without
/// repeats. A live host must serve each one before it starts a run.
pub fn extension_kinds(module: &ir_spec::Module) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &module.compositions {
        for s in &c.steps {
            if let ir_spec::StepKind::Extension { kind, .. } = &s.kind {
                if !out.contains(kind) {
                    out.push(kind.clone());
                }
            }
        }
    }
    out
}

/// What a live host says when it refuses a run for extension step kinds it cannot serve.
pub fn unbound_extensions_message(kinds: &[String]) -> String {
    format!(
        "the pack's compositions use extension step kinds this host does not serve: {} (bind each under `extensions:` in a --tools file); refusing to run without them",
        kinds.join(", ")
    )
}

/// What a host must refuse (or warn about) before the first call of a run of `module`,
/// given which provider keys it has bound (RFC 0017 rules 3–4, `later-versions.md` §3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderFaults {
    /// Each fault that refuses the run: a referenced key that is unbound, saying which of
    /// RFC 0017's faults it is.
    pub faults: Vec<String>,
    /// Declared keys that no call site references and that are unbound.
    pub warnings: Vec<String>,
}

/// Each model call site of `module`, in module order, with the index of the provider
/// key it is routed to (0: `default`) after the step → prompt → `default` precedence: a
/// workflow state's or agent member's prompt, a composition `prompt` or `agent` step.
fn model_call_sites(module: &ir_spec::Module, mut site: impl FnMut(u32, String)) {
    use ir_spec::{AgentStart, StateBody, StepKind};
    let spec = &module.spec;
    if let Some(wf) = &module.workflow {
        for s in &wf.states {
            if let StateBody::Prompt(p) = s.body {
                site(
                    spec.prompt_provider(p),
                    format!("workflow state `{}`", module.str(s.key)),
                );
            }
        }
    }
    for a in &module.agents {
        if let AgentStart::Plain(Some(p)) = a.start {
            site(
                spec.prompt_provider(p),
                format!("agent member `{}`", module.str(a.key)),
            );
        }
    }
    for (ci, c) in module.compositions.iter().enumerate() {
        for (si, step) in c.steps.iter().enumerate() {
            if let StepKind::Prompt { prompt, .. } | StepKind::Agent { prompt, .. } = &step.kind {
                let comp = ir_spec::CompId(ci as u32);
                let id = ir_spec::StepId(si as u32);
                site(
                    spec.step_provider(comp, id, *prompt),
                    format!(
                        "step `{}` of composition `{}`",
                        module.str(step.id),
                        module.str(c.key)
                    ),
                );
            }
        }
    }
}

/// The first call site of `module` routed to the `default` provider, the host's primary
/// model: a host with no primary model must refuse such a pack before its first call
/// (every such call would fail), naming this site.
pub fn default_model_site(module: &ir_spec::Module) -> Option<String> {
    let mut first = None;
    model_call_sites(module, |p, site| {
        if p == 0 && first.is_none() {
            first = Some(site);
        }
    });
    first
}

/// Checks `module`'s provider references against the keys `bound` says the host serves.
///
/// Every key a call site references (a workflow state's or agent member's prompt, a
/// composition `prompt` or `agent` step, after the step → prompt → `default` precedence)
/// other than `default` must be bound, whether the pack declares it `required` or not.
/// `default` is left to the host's primary model. A compiled module only references
/// declared keys (an undeclared one is the compile error `unresolved_provider`, the pack
/// author's fault); an unbound one is the host's fault.
pub fn provider_faults(module: &ir_spec::Module, bound: impl Fn(&str) -> bool) -> ProviderFaults {
    let spec = &module.spec;
    let mut referenced: Vec<(u32, String)> = Vec::new();
    model_call_sites(module, |p, site| {
        if p != 0 && !referenced.iter().any(|(q, _)| *q == p) {
            referenced.push((p, site));
        }
    });
    let mut out = ProviderFaults::default();
    for (p, site) in &referenced {
        let key = spec.provider_key(*p);
        if !bound(key) {
            let optional = spec.providers.get(*p as usize).is_some_and(|d| !d.required);
            out.faults.push(format!(
                "provider `{key}`{} is declared by the pack but not bound by the host (RFC 0017: declared but unbound), and {site} calls it; bind it with --bind-provider {key}=URL,model=NAME",
                if optional { " (required: false)" } else { "" }
            ));
        }
    }
    for (i, d) in spec.providers.iter().enumerate().skip(1) {
        if !referenced.iter().any(|(p, _)| *p as usize == i) && !bound(&d.key) {
            out.warnings.push(format!(
                "provider `{}` ({}) is declared but not bound; no call site uses it",
                d.key,
                if d.required { "required" } else { "optional" }
            ));
        }
    }
    out
}

/// The tool keys a module may hand the host: tools of tool steps, tools and agent
/// members offered to models. In module order, without repeats.
pub fn callable_tools(module: &ir_spec::Module) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut add = |k: &str| {
        if !keys.iter().any(|x| x == k) {
            keys.push(k.to_owned());
        }
    };
    let refs = |list: &[ir_spec::ToolRef], add: &mut dyn FnMut(&str)| {
        for t in list {
            match t {
                ir_spec::ToolRef::Tool(id) => add(module.str(module.tools[id.index()].key)),
                ir_spec::ToolRef::Member(k) => add(module.str(*k)),
            }
        }
    };
    for p in &module.prompts {
        refs(&p.tools, &mut add);
    }
    for c in &module.compositions {
        for s in &c.steps {
            match &s.kind {
                ir_spec::StepKind::Tool { tool, .. } => {
                    add(module.str(module.tools[tool.index()].key))
                }
                ir_spec::StepKind::Agent { tools, .. } => refs(tools, &mut add),
                _ => {}
            }
        }
    }
    keys
}
