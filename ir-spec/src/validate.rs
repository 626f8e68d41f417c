//! Checking a module once, at the door (STYLE.md item 5): after [`Module::validate`]
//! succeeds every typed index in the module is in range, so the VM may index its tables
//! directly.

use crate::{
    AgentStart, Bind, Composition, Module, Part, Pred, Ref, Root, StateBody, StepKind, ToolRef,
    VarRoot,
};

/// A module whose indices do not fit its tables.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid module: {0}")]
pub struct InvalidModule(pub String);

impl Module {
    /// Checks that every index in the module is in range and that each composition's
    /// schedule is acyclic: the walk is in table order, each step only reads slots of
    /// steps before it, `depends_on` and guards point back, branch targets and parallel
    /// branches point forward.
    pub fn validate(&self) -> Result<(), InvalidModule> {
        let bad = |what: &str| Err(InvalidModule(what.to_owned()));
        let str_ok = |s: crate::StrId| s.index() < self.strings.len();
        if !self.events.iter().all(|e| str_ok(*e)) {
            return bad("event name out of range");
        }
        let prompt_ok = |p: crate::PromptId| p.index() < self.prompts.len();
        let tool_ok = |t: crate::ToolId| t.index() < self.tools.len();
        let tref_ok = |r: &ToolRef| match r {
            ToolRef::Tool(t) => tool_ok(*t),
            ToolRef::Member(s) => str_ok(*s),
        };
        let n_artifacts = self.workflow.as_ref().map_or(0, |w| w.artifacts.len());
        for p in &self.prompts {
            if !str_ok(p.key) || !p.tools.iter().all(tref_ok) {
                return bad("prompt key or tool out of range");
            }
            for seg in &p.system {
                if let crate::Segment::Var(v) = seg {
                    let ok = match &v.root {
                        VarRoot::Declared(i) => (*i as usize) < p.variables.len(),
                        VarRoot::Artifact(Some(a)) => a.index() < n_artifacts,
                        _ => true,
                    };
                    if !ok {
                        return bad("placeholder root out of range");
                    }
                }
            }
        }
        if !self.tools.iter().all(|t| str_ok(t.key)) {
            return bad("tool key out of range");
        }
        if let Some(wf) = &self.workflow {
            let state_ok = |s: crate::StateId| s.index() < wf.states.len();
            if !state_ok(wf.entry) || !wf.artifacts.iter().all(|a| str_ok(*a)) {
                return bad("workflow entry or artifact out of range");
            }
            for s in &wf.states {
                let body_ok = match s.body {
                    StateBody::Prompt(p) => prompt_ok(p),
                    StateBody::Composition(c) => c.index() < self.compositions.len(),
                };
                let ok = str_ok(s.key)
                    && body_ok
                    && s.on_event
                        .iter()
                        .all(|(e, t)| e.index() < self.events.len() && state_ok(*t))
                    && s.on_max_visits.is_none_or(state_ok)
                    && s.artifacts.iter().all(|(a, _)| a.index() < n_artifacts);
                if !ok {
                    return bad("state index out of range");
                }
            }
        }
        for a in &self.agents {
            let ok = str_ok(a.key)
                && match a.start {
                    AgentStart::Plain(p) => p.is_none_or(prompt_ok),
                    AgentStart::State(s) => self
                        .workflow
                        .as_ref()
                        .is_some_and(|w| s.index() < w.states.len()),
                };
            if !ok {
                return bad("agent index out of range");
            }
        }
        for c in &self.compositions {
            validate_composition(self, c)?;
        }
        self.spec
            .validate(self)
            .map_err(|e| InvalidModule(e.to_owned()))
    }
}

fn validate_composition(m: &Module, c: &Composition) -> Result<(), InvalidModule> {
    let bad = |what: &str| Err(InvalidModule(format!("composition: {what}")));
    let n = c.steps.len();
    if c.key.index() >= m.strings.len() || c.walk.iter().any(|s| s.index() >= n) {
        return bad("walk out of range");
    }
    if c.output.is_some_and(|o| o.index() >= n) {
        return bad("output out of range");
    }
    // The schedule: the walk visits top-level steps in strictly increasing table order,
    // so "earlier in the table" below means "earlier in the walk" and no step runs twice.
    if c.walk.windows(2).any(|w| w[0].index() >= w[1].index()) {
        return bad("walk not in table order");
    }
    let mut in_walk = vec![false; n];
    for s in &c.walk {
        in_walk[s.index()] = true;
    }
    if c.output.is_some_and(|o| !in_walk[o.index()]) {
        return bad("output is not a top-level step");
    }
    // A reference may only read a step earlier in the table than the reader.
    let ref_ok = |r: &Ref, reader: usize| match r.root {
        Root::Input => true,
        Root::Step(s) => s.index() < reader,
    };
    fn bind_ok(b: &Bind, ok: &dyn Fn(&Ref) -> bool) -> bool {
        match b {
            Bind::Const(_) => true,
            Bind::Whole(r) => ok(r),
            Bind::Interp(parts) => parts.iter().all(|p| match p {
                Part::Text(_) => true,
                Part::Ref(r) => ok(r),
            }),
            Bind::Array(items) => items.iter().all(|i| bind_ok(i, ok)),
            Bind::Object(items) => items.iter().all(|(_, i)| bind_ok(i, ok)),
        }
    }
    fn pred_ok(p: &Pred, ok: &dyn Fn(&Ref) -> bool) -> bool {
        match p {
            Pred::Compare { path, .. } | Pred::Exists { path, .. } => ok(path),
            Pred::All(ps) | Pred::Any(ps) => ps.iter().all(|p| pred_ok(p, ok)),
            Pred::Not(p) => pred_ok(p, ok),
        }
    }
    for (i, s) in c.steps.iter().enumerate() {
        let ok = |r: &Ref| ref_ok(r, i);
        let step_ok = |id: crate::StepId| id.index() < n;
        let kind_ok = match &s.kind {
            StepKind::Prompt { prompt, input, .. } => {
                prompt.index() < m.prompts.len() && bind_ok(input, &ok)
            }
            StepKind::Agent {
                prompt,
                input,
                tools,
                tool_called,
                ..
            } => {
                prompt.index() < m.prompts.len()
                    && bind_ok(input, &ok)
                    && tools.iter().all(|t| match t {
                        ToolRef::Tool(t) => t.index() < m.tools.len(),
                        ToolRef::Member(k) => k.index() < m.strings.len(),
                    })
                    && tool_called.is_none_or(|t| t.index() < m.tools.len())
            }
            StepKind::Tool { tool, args } => tool.index() < m.tools.len() && bind_ok(args, &ok),
            StepKind::Extension { input, .. } => bind_ok(input, &ok),
            // A branch only selects top-level steps after it (the walk never goes back).
            StepKind::Branch {
                predicate,
                then,
                otherwise,
            } => {
                let forward = |t: crate::StepId| step_ok(t) && t.index() > i && in_walk[t.index()];
                pred_ok(predicate, &ok) && forward(*then) && otherwise.is_none_or(forward)
            }
            // A parallel's branches follow it in the table and are not walked on their own.
            StepKind::Parallel { branches, .. } => branches.iter().all(|b| {
                step_ok(*b)
                    && b.index() > i
                    && !in_walk[b.index()]
                    && matches!(
                        c.steps[b.index()].kind,
                        StepKind::Prompt { .. }
                            | StepKind::Agent { .. }
                            | StepKind::Tool { .. }
                            | StepKind::Extension { .. }
                    )
            }),
        };
        if !kind_ok
            || s.id.index() >= m.strings.len()
            || !s.depends_on.iter().all(|d| d.index() < i)
            || !s.guarded_by.iter().all(|d| d.index() < i)
        {
            return bad("step index out of range");
        }
    }
    Ok(())
}
