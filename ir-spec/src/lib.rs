//! The packc intermediate representation (IR).
//!
//! The compiler checks a pack (`packc_compiler::check_bytes`), then *lowers* it
//! (`packc_compiler::lower`) into one flat [`Module`]; the VM (`packc_vm`) runs a module.
//! Data flows one way: nothing in the IR points back at the pack source.
//!
//! What lowering settles once, so that the VM never does it while running:
//!
//! - every name that refers to something is a typed index ([`StepId`], [`StateId`],
//!   [`PromptId`], [`ToolId`], [`CompId`], [`EventId`], [`ArtifactId`], [`AgentId`]) into the
//!   module's tables; display names live in the interned [`Module::strings`] table;
//! - templates are split into [`Segment`]s with fragments already expanded and each
//!   placeholder root classified ([`VarRoot`]);
//! - every `${...}` binding is a [`Ref`] with a root (the input or a step's output slot)
//!   and a path of member names; predicates are a compact tree with pre-typed constants
//!   ([`Pred`]);
//! - each composition's steps are in walk order, with the skip rules' inputs (guards,
//!   `depends_on`) precomputed.
//!
//! Everything derives `serde::Serialize` / `Deserialize`, so a later `.ppk` container can
//! encode a module with postcard. Values carried by the pack (defaults, constants, tool
//! parameter schemas, embedded output schemas) are `serde_json::Value`s.
#![forbid(unsafe_code)]

pub mod artifact;
pub mod bounds;
mod composition;
pub mod container;
mod error;
mod ids;
pub mod json;
mod json_text;
pub mod limits;
pub mod suggest;
pub use json_text::{JsonText, MAX_JSON_NESTING};
mod nesting;
mod prompt;
mod spec;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text_form;
mod validate;
mod workflow;

pub use artifact::{Artifact, ArtifactError};
pub use composition::{
    Bind, Compare, Composition, Ordering, Part, Path, Pred, Reduce, Ref, Root, Step, StepKind,
};
pub use ids::{AgentId, ArtifactId, CompId, EventId, PromptId, StateId, StepId, StrId, ToolId};
pub use limits::DecodeLimits;
pub use prompt::{
    banned_word_list, words_pattern, words_size_limit, Check, Direction, Guard, OutputSchema,
    PathSeg, Placeholder, Prompt, Segment, ToolPolicy, ToolRef, Validation, VarRoot, VarType,
    Variable, DEFAULT_BLOCKED_MESSAGE,
};
pub use spec::{Provider, SpecInfo, SpecLevel};
pub use validate::InvalidModule;
pub use workflow::{ArtifactMode, Budget, Orchestration, State, StateBody, Workflow};

use serde::{Deserialize, Serialize};

/// One lowered pack: flat tables addressed by typed indices.
///
/// ```yaml
/// id: demo            # -> Module::id
/// prompts: {...}      # -> Module::prompts
/// tools: {...}        # -> Module::tools
/// workflow: {...}     # -> Module::workflow
/// agents: {...}       # -> Module::agents
/// compositions: {...} # -> Module::compositions
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// The pack's `id`.
    pub id: String,
    /// The interned string table: keys of prompts, tools, states, steps and members.
    pub strings: Vec<String>,
    /// Event names used in any `on_event`, indexed by [`EventId`].
    pub events: Vec<StrId>,
    /// The pack's `prompts`, in source order, indexed by [`PromptId`].
    pub prompts: Vec<Prompt>,
    /// The pack's `tools`, in source order, indexed by [`ToolId`].
    pub tools: Vec<Tool>,
    /// The pack's `workflow`, when it has one.
    pub workflow: Option<Workflow>,
    /// The members of `agents.members`, in source order, indexed by [`AgentId`].
    pub agents: Vec<Agent>,
    /// The pack's `compositions`, in source order, indexed by [`CompId`].
    pub compositions: Vec<Composition>,
    /// The spec level and what it settles (control, providers, governance). Not part of
    /// the `MODL` payload: an artifact carries it in its optional `spec` section.
    #[serde(skip)]
    pub spec: SpecInfo,
}

impl Module {
    /// The interned string `id`; the empty string for an id out of range.
    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id.index()).map_or("", String::as_str)
    }

    /// Every prompt's guards, in prompt order (the `GARD` section's payload).
    pub fn guards(&self) -> Vec<&Vec<Guard>> {
        self.prompts.iter().map(|p| &p.guards).collect()
    }

    /// The name of event `id`.
    pub fn event(&self, id: EventId) -> &str {
        self.events.get(id.index()).map_or("", |s| self.str(*s))
    }

    /// The composition keyed `name`. For hosts resolving a `composition:<name>` target
    /// once, before a run starts; the VM never looks names up while running.
    pub fn composition_by_name(&self, name: &str) -> Option<CompId> {
        let i = self
            .compositions
            .iter()
            .position(|c| self.str(c.key) == name)?;
        CompId::from_index(i)
    }

    /// The agent member keyed `name` (an `agent:<name>` target), resolved before a run.
    pub fn agent_by_name(&self, name: &str) -> Option<AgentId> {
        let i = self.agents.iter().position(|a| self.str(a.key) == name)?;
        AgentId::from_index(i)
    }
}

/// A tool of the pack's `tools` map.
///
/// ```yaml
/// tools:
///   kb_lookup:                      # key -> Tool::key (its identity everywhere)
///     name: kb_lookup               # -> Tool::name (the function name offered to a model)
///     description: Search the KB.   # -> Tool::description
///     parameters: {type: object}    # -> Tool::parameters
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The key in `tools`.
    pub key: StrId,
    /// The `name` field.
    pub name: String,
    /// The `description` field (empty when absent).
    pub description: String,
    /// The `parameters` JSON Schema (`null` when absent), kept as JSON text: a host
    /// passes it to the model API; the VM never reads it.
    pub parameters: JsonText,
}

/// A member of `agents.members`.
///
/// ```yaml
/// agents:
///   members:
///     triage: {state: triage}   # -> Agent { key: triage, start: AgentStart::State(triage) }
///     analyst: {}               # -> Agent { key: analyst, start: AgentStart::Plain(analyst) }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// The member key.
    pub key: StrId,
    /// How an `agent:<key>` run starts.
    pub start: AgentStart,
}

/// How an agent member runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AgentStart {
    /// No `state`: each turn runs the prompt keyed by the member key
    /// (`None` when no such prompt exists; such a run fails when it starts).
    Plain(Option<PromptId>),
    /// `state: <s>`: a workflow run starting at that state.
    State(StateId),
}
