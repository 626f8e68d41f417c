//! Lowering: a checked pack value → one flat [`ir_spec::Module`].
//!
//! Lowering runs only on packs that [`crate::check_loaded`] found free of errors, so it
//! can trust the shapes the checks guarantee. It still never panics: a shape it cannot
//! lower is a [`LowerError`] naming the JSON pointer of the node.
//!
//! One module per job:
//! - `prompts`: prompts (templates, variables, offered tools, policy) and tools;
//! - `workflow`: states, transitions, budget, artifacts, agents;
//! - `compositions`: steps in walk order, bindings, predicates;
//! - `spec`: the spec level, who holds the turn, providers, governance.

mod compositions;
mod prompts;
pub(crate) mod spec;
mod workflow;

use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;

use crate::doc::{Node, Obj};
use crate::members::Name;
use ir_spec::{Module, PromptId, StrId, ToolId};

use crate::diag::At;

/// What lowering needs beyond the pack value.
#[derive(Clone, Debug, Default)]
pub struct LowerOptions {
    /// The folder of the pack file: step `output_schema` files are read from it and
    /// embedded. `None` for a pack that is not a file (inline in a case file): schema
    /// names are kept without a schema.
    pub base_dir: Option<PathBuf>,
    /// The spec level override (`--spec-level`); `None` reads the pack's `$schema` claim.
    pub spec_level: Option<ir_spec::SpecLevel>,
    /// Further folders the files a pack names may be read from (see
    /// [`crate::paths::Folders::allow`]).
    pub allow_paths: Vec<PathBuf>,
}

impl LowerOptions {
    /// Where the files the pack names may be read from; `None` when they are not read.
    pub fn folders(&self) -> Option<crate::paths::Folders> {
        self.base_dir.as_ref().map(|base| crate::paths::Folders {
            base: base.clone(),
            allow: self.allow_paths.clone(),
        })
    }
}

/// A pack shape lowering cannot handle. The checks reject every such pack first, so this
/// only shows up when lowering is called on a pack with errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot lower {}: {message}", if pointer.is_empty() { "the pack" } else { pointer })]
pub struct LowerError {
    /// The JSON pointer of the offending node.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl LowerError {
    fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        LowerError {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// Lowers a checked pack.
///
/// ```
/// let text = r#"{"id": "p", "prompts": {"hi": {"system_template": "Hi {{name}}"}}}"#;
/// let arena = packc_compiler::doc::Arena::new();
/// let pack = packc_compiler::doc::parse(text, &arena, &Default::default()).unwrap();
/// let module = packc_compiler::lower::lower(&pack, &Default::default()).unwrap();
/// assert_eq!(module.prompts.len(), 1);
/// ```
pub fn lower(pack: &Node, options: &LowerOptions) -> Result<Module, LowerError> {
    let root = pack
        .as_object()
        .ok_or_else(|| LowerError::new("", "the pack is not an object"))?;
    let mut cx = Cx::new(root, options);
    cx.level = crate::schema::level_of(pack, options.spec_level);
    cx.module.id = root
        .get("id")
        .and_then(Node::as_str)
        .unwrap_or_default()
        .to_owned();
    prompts::lower_tools(&mut cx);
    // Artifact ids are needed by templates, so the workflow's artifact table comes first.
    let artifacts = workflow::collect_artifacts(&mut cx);
    prompts::lower_prompts(&mut cx)?;
    compositions::lower_all(&mut cx)?;
    let states = workflow::state_ids(&cx);
    workflow::lower_workflow(&mut cx, artifacts, &states)?;
    workflow::lower_agents(&mut cx, &states)?;
    spec::lower_spec(&mut cx, crate::schema::level_of(pack, options.spec_level));
    Ok(cx.module)
}

/// Lowering state: the module being built and the name → index maps.
struct Cx<'a> {
    root: &'a Obj<'a>,
    /// The spec level the pack is read at.
    level: ir_spec::SpecLevel,
    options: &'a LowerOptions,
    module: Module,
    /// The module's strings, by their text in the document.
    strings: HashMap<Name<'a>, StrId>,
    prompts: HashMap<Name<'a>, PromptId>,
    tools: HashMap<Name<'a>, ToolId>,
    members: Vec<&'a str>,
    /// The workflow's artifacts, by their names in the document.
    artifacts: HashMap<Name<'a>, ir_spec::ArtifactId>,
}

impl<'a> Cx<'a> {
    fn new(root: &'a Obj<'a>, options: &'a LowerOptions) -> Self {
        let keys = |v: Option<&'a Node<'a>>| -> Vec<&'a str> {
            v.and_then(Node::as_object)
                .map(|m| m.keys().map(|k| k.as_str()).collect())
                .unwrap_or_default()
        };
        let ids = |names: Vec<&'a str>| names.into_iter().enumerate();
        Cx {
            root,
            level: ir_spec::SpecLevel::default(),
            options,
            module: Module::default(),
            strings: HashMap::default(),
            prompts: ids(keys(root.get("prompts")))
                .filter_map(|(i, k)| Some((Name(k), PromptId::from_index(i)?)))
                .collect(),
            tools: ids(keys(root.get("tools")))
                .filter_map(|(i, k)| Some((Name(k), ToolId::from_index(i)?)))
                .collect(),
            members: keys(root.get("agents").and_then(|a| a.get("members"))),
            artifacts: HashMap::default(),
        }
    }

    /// Interns `s`, a string of the document, in the module's string table (the table
    /// keeps the only copy).
    fn intern(&mut self, s: &'a str) -> StrId {
        let next = StrId::from_index(self.module.strings.len()).unwrap_or(StrId(u32::MAX));
        let id = *self.strings.entry(Name(s)).or_insert(next);
        if id == next {
            self.module.strings.push(s.to_owned());
        }
        id
    }

    fn prompt(&self, name: &str, ptr: &At<'_>) -> Result<PromptId, LowerError> {
        self.prompts
            .get(&Name(name))
            .copied()
            .ok_or_else(|| LowerError::new(ptr, format!("no prompt `{name}`")))
    }

    fn tool(&self, name: &str, ptr: &At<'_>) -> Result<ToolId, LowerError> {
        self.tools
            .get(&Name(name))
            .copied()
            .ok_or_else(|| LowerError::new(ptr, format!("no tool `{name}`")))
    }
}

/// The strings of an array member, skipping other items (none when it is not an array).
fn strings<'a>(v: Option<&'a Node<'_>>) -> impl Iterator<Item = &'a str> {
    v.and_then(Node::as_array)
        .into_iter()
        .flatten()
        .filter_map(Node::as_str)
}

/// A non-negative integer member as `u64`.
fn uint(v: Option<&Node>) -> Option<u64> {
    v.and_then(Node::as_u64).or_else(|| {
        v.and_then(Node::as_f64)
            .filter(|f| *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// A non-negative integer member as `u32`, saturating.
fn uint32(v: Option<&Node>) -> Option<u32> {
    uint(v).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}
