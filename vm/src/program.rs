//! [`Program`]: a validated module plus the tables a run needs, built once per module.

use std::sync::OnceLock;

use ir_spec::{Budget, Module, PromptId, StepKind, ToolRef};
use regex::{Regex, RegexBuilder};

use crate::error::{ErrorKind, RunError};
use crate::pred::Compiled;

/// A module checked once at the door (`Module::validate`), with precomputed tables:
/// compiled predicates, compiled variable and validator patterns, and the sizes a run
/// reserves its buffers from. Share it between runs in an `Arc`.
#[derive(Debug)]
pub struct Program {
    pub(crate) m: Module,
    /// Per prompt, per declared variable: its compiled `validation.pattern`
    /// (`Some(None)`: the pattern does not compile, so no value matches it).
    pub(crate) patterns: Vec<Vec<Option<Option<Regex>>>>,
    /// Per prompt: rendering cannot fail (no declared variables, and every placeholder is
    /// `{{input}}` without a path), so the check before a call is skipped.
    pub(crate) render_infallible: Vec<bool>,
    /// Per prompt: how the length of its rendered system prompt is found.
    pub(crate) system_len: Vec<SystemLen>,
    /// Per prompt, per guard: its compiled matcher (empty for a prompt without guards).
    pub(crate) guards: Vec<Vec<crate::guard::Matcher>>,
    /// Per prompt: some guard reads the call's input (`direction: input` or `both`).
    pub(crate) input_guards: Vec<bool>,
    /// Per composition, per step: the compiled predicate of a branch step.
    pub(crate) preds: Vec<Vec<Option<Compiled>>>,
    /// The most steps of any composition (the size of a run's slot table).
    pub(crate) max_steps: usize,
    /// The most branches of any parallel step (at least 1): the most calls outstanding.
    pub(crate) max_lanes: usize,
    /// Trace entries a run reserves room for.
    pub(crate) trace_hint: usize,
    /// Eval requests a run reserves room for.
    pub(crate) eval_hint: usize,
    fingerprint: OnceLock<u64>,
}

/// A variable pattern compiled within `max` bytes; `Ok(None)` when it is not a valid
/// regular expression (no value matches it, `workflow.md` §14).
fn compile_pattern(pattern: &str, max: usize) -> Result<Option<Regex>, RunError> {
    match RegexBuilder::new(pattern).size_limit(max).build() {
        Ok(re) => Ok(Some(re)),
        Err(regex::Error::CompiledTooBig(_)) => Err(too_big("a variable pattern", max)),
        Err(_) => Ok(None),
    }
}

/// The `limit_exceeded` error of `what` (a pattern) compiling past `max` bytes.
fn too_big(what: &str, max: usize) -> RunError {
    RunError::new(
        ErrorKind::LimitExceeded,
        format!(
            "{what} compiles to more than {max} bytes, past the loader's limit `max_pattern_size`"
        ),
    )
}

/// Why [`Program::load`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not an intact, valid `.ppk` artifact within the limits.
    #[error(transparent)]
    Artifact(ir_spec::ArtifactError),
    /// A variable or validator pattern compiles past the default size (`limit_exceeded`).
    #[error(transparent)]
    Run(RunError),
}

/// How the length of a prompt's rendered system prompt is found
/// ([`RunOptions::max_built_bytes`](crate::RunOptions::max_built_bytes)).
#[derive(Clone, Copy, Debug)]
pub(crate) enum SystemLen {
    /// No placeholder: the template's length.
    Fixed(usize),
    /// Only `{{input}}` placeholders: `text` plus `inputs` times the input's text.
    Inputs { text: usize, inputs: usize },
    /// Measured by a rendering walk.
    Rendered,
}

impl Program {
    /// Validates `module` and builds its tables, each variable and validator pattern
    /// compiled within the default size ([`ir_spec::limits::DEFAULT_MAX_PATTERN_SIZE`]).
    pub fn new(module: Module) -> Result<Program, RunError> {
        Program::with_max_pattern_size(module, ir_spec::limits::DEFAULT_MAX_PATTERN_SIZE)
    }

    /// [`Program::new`] with each variable `pattern` and `regex` validator pattern
    /// compiled within `max` bytes (the `regex` crate's `size_limit`, which bounds the
    /// time compiling takes); a pattern past it is a `limit_exceeded` error naming
    /// `max_pattern_size`. The compiler holds packs to the same limit
    /// (`Limits::max_pattern_size`), so what it built under the same value loads.
    pub fn with_max_pattern_size(module: Module, max: usize) -> Result<Program, RunError> {
        module
            .validate()
            .map_err(|e| RunError::new(ErrorKind::InvalidModule, e.to_string()))?;
        Program::build(module, max)
    }

    /// Decodes a `.ppk` artifact within `limits` and builds its program, verifying the
    /// module once (the decoder's [`Module::validate`]); each variable and validator
    /// pattern is compiled within the default size. A damaged or invalid artifact is an
    /// [`ArtifactError`](ir_spec::ArtifactError) in a [`LoadError`].
    pub fn load(
        bytes: &[u8],
        limits: &ir_spec::limits::DecodeLimits,
    ) -> Result<Program, LoadError> {
        let artifact =
            ir_spec::Artifact::decode_with(bytes, limits).map_err(LoadError::Artifact)?;
        Program::build(artifact.module, ir_spec::limits::DEFAULT_MAX_PATTERN_SIZE)
            .map_err(LoadError::Run)
    }

    /// The tables of a module already validated.
    fn build(module: Module, max: usize) -> Result<Program, RunError> {
        let mut patterns = Vec::with_capacity(module.prompts.len());
        for p in &module.prompts {
            let mut row = Vec::with_capacity(p.variables.len());
            for v in &p.variables {
                row.push(match &v.validation.pattern {
                    None => None,
                    Some(pat) => Some(compile_pattern(pat, max)?),
                });
            }
            patterns.push(row);
        }
        let render_infallible: Vec<bool> = module
            .prompts
            .iter()
            .map(|p| {
                p.variables.is_empty()
                    && p.system.iter().all(|seg| match seg {
                        ir_spec::Segment::Text(_) => true,
                        ir_spec::Segment::Var(v) => {
                            matches!(v.root, ir_spec::VarRoot::Input) && v.path.is_empty()
                        }
                    })
            })
            .collect();
        let system_len = module
            .prompts
            .iter()
            .zip(&render_infallible)
            .map(|(p, infallible)| {
                let text = p.system.iter().fold(0usize, |n, seg| match seg {
                    ir_spec::Segment::Text(t) => n.saturating_add(t.len()),
                    ir_spec::Segment::Var(_) => n,
                });
                let vars = p.system.len()
                    - p.system
                        .iter()
                        .filter(|s| matches!(s, ir_spec::Segment::Text(_)))
                        .count();
                match (vars, infallible) {
                    (0, _) => SystemLen::Fixed(text),
                    (inputs, true) => SystemLen::Inputs { text, inputs },
                    _ => SystemLen::Rendered,
                }
            })
            .collect();
        let guards = module
            .prompts
            .iter()
            .map(|p| {
                p.guards
                    .iter()
                    .map(|g| {
                        crate::guard::compile(g, max)
                            .map_err(|max| match g.check {
                            ir_spec::Check::BannedWords { .. } => RunError::new(
                                ErrorKind::LimitExceeded,
                                format!("the word list of a `banned_words` validator compiles to more than {max} bytes, 128 per byte of its words"),
                            ),
                            _ => too_big("the pattern of a `regex` validator", max),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let input_guards = module
            .prompts
            .iter()
            .map(|p| p.guards.iter().any(|g| g.direction.input()))
            .collect();
        let preds = module
            .compositions
            .iter()
            .map(|c| {
                c.steps
                    .iter()
                    .map(|s| match &s.kind {
                        StepKind::Branch { predicate, .. } => Some(Compiled::new(predicate)),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let max_steps = module
            .compositions
            .iter()
            .map(|c| c.steps.len())
            .max()
            .unwrap_or(0);
        let max_lanes = module
            .compositions
            .iter()
            .flat_map(|c| c.steps.iter())
            .map(|s| match &s.kind {
                StepKind::Parallel { branches, .. } => branches.len(),
                _ => 1,
            })
            .max()
            .unwrap_or(1)
            .max(1);
        // One line per step and retry of the largest composition, plus an enter and a
        // transition line per state; a longer run (several compositions in a turn, loops,
        // many turns) grows the buffer, amortized.
        let n_states = module.workflow.as_ref().map_or(0, |w| w.states.len());
        let trace_hint = module
            .compositions
            .iter()
            .map(|c| {
                c.steps
                    .iter()
                    .map(|s| s.max_attempts.clamp(1, 8) as usize)
                    .sum::<usize>()
            })
            .max()
            .unwrap_or(0)
            + 2 * n_states
            + 8;
        let eval_hint = module
            .compositions
            .iter()
            .flat_map(|c| c.steps.iter())
            .filter(|s| !s.evals.is_empty())
            .count();
        Ok(Program {
            m: module,
            patterns,
            render_infallible,
            system_len,
            guards,
            input_guards,
            preds,
            max_steps,
            max_lanes,
            trace_hint,
            eval_hint,
            fingerprint: OnceLock::new(),
        })
    }

    /// The module.
    pub fn module(&self) -> &Module {
        &self.m
    }

    /// The module's fingerprint (FNV-1a 64 of its postcard bytes), computed once.
    pub fn fingerprint(&self) -> u64 {
        *self
            .fingerprint
            .get_or_init(|| crate::hash::fingerprint(&self.m))
    }

    /// The workflow budget of a run of this target, `None` outside workflow runs.
    pub(crate) fn budget(&self, workflow_run: bool) -> Option<Budget> {
        self.m
            .workflow
            .as_ref()
            .map(|w| w.budget)
            .filter(|_| workflow_run)
    }

    /// The key of an offered tool (a tool key or a member key).
    pub(crate) fn tool_key(&self, t: &ToolRef) -> &str {
        match t {
            ToolRef::Tool(id) => self.m.str(self.m.tools[id.index()].key),
            ToolRef::Member(k) => self.m.str(*k),
        }
    }

    /// The key of prompt `p`.
    pub(crate) fn prompt_key(&self, p: PromptId) -> &str {
        self.m.str(self.m.prompts[p.index()].key)
    }
}
