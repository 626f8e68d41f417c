//! How many items of each kind a module may hold: the reader's limits on a `.ppk` file.
//!
//! The same numbers bound a pack source in the compiler (`packc_compiler::load::Limits`),
//! so a pack that compiles under the defaults loads under the defaults. They are not part
//! of the format (FORMAT.md): a reader picks its own, and an artifact built under raised
//! compiler limits needs the same raised limits to load.
//!
//! They exist because a run's buffers are sized from the module (one output slot per
//! step of the largest composition, one visit counter per state): a 64 MiB artifact of
//! a few bytes per step would otherwise make every run of it allocate gigabytes.
//! Decoding itself is bounded by [`DecodeLimits::max_artifact_bytes`]: postcard never
//! allocates more than the bytes present justify, so the counts are checked on the
//! decoded module, before [`Module::validate`].

use crate::container::DEFAULT_MAX_ARTIFACT_BYTES;
use crate::error::ArtifactError;
use crate::Module;

/// Compositions a module may hold by default.
pub const DEFAULT_MAX_COMPOSITIONS: usize = 10_000;
/// Steps one composition may hold by default, parallel branches included.
pub const DEFAULT_MAX_STEPS_PER_COMPOSITION: usize = 10_000;
/// Steps all compositions together may hold by default.
pub const DEFAULT_MAX_TOTAL_STEPS: usize = 100_000;
/// Workflow states a module may hold by default.
pub const DEFAULT_MAX_STATES: usize = 10_000;
/// Prompts a module may hold by default.
pub const DEFAULT_MAX_PROMPTS: usize = 10_000;
/// Tools a module may hold by default.
pub const DEFAULT_MAX_TOOLS: usize = 10_000;
/// Agent members a module may hold by default.
pub const DEFAULT_MAX_AGENTS: usize = 10_000;
/// The most attempts a step's `retry` modifier may ask for by default: each attempt is a
/// host call, and a run keeps a record of each.
pub const DEFAULT_MAX_ATTEMPTS: usize = 100;
/// Patterns (regular expressions: variable `pattern`s and `Regex` validators together) a
/// module may hold by default: each is compiled when the module is loaded.
pub const DEFAULT_MAX_PATTERNS: usize = 1_000;
/// The most memory one compiled `pattern` may take by default, in bytes (the `regex`
/// crate's `size_limit`): what bounds the time compiling it takes.
pub const DEFAULT_MAX_PATTERN_SIZE: usize = 256 * 1024;
/// The UTF-8 bytes the words of all `banned_words` lists may hold by default (lowercased,
/// as the module stores them): each list is compiled into one regex when the module is
/// loaded ([`words_pattern`](crate::words_pattern)), at about 90 bytes of compiled size
/// per byte of its words.
pub const DEFAULT_MAX_BANNED_WORD_BYTES: usize = 256 * 1024;

/// What [`Artifact::decode_with`](crate::Artifact::decode_with) accepts. Past any of
/// them the file is refused with [`ArtifactError::Limit`] naming the field.
///
/// The nesting of predicates and bindings is not here: FORMAT.md fixes it at
/// [`MAX_NESTING`](crate::artifact::MAX_NESTING) levels for every reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// The largest file accepted, in bytes (64 MiB by default); checked before anything
    /// is read, and what bounds the memory a decode may use.
    pub max_artifact_bytes: usize,
    /// Compositions (10,000 by default).
    pub max_compositions: usize,
    /// Steps of any one composition, parallel branches included (10,000 by default).
    pub max_steps_per_composition: usize,
    /// Steps of all compositions together (100,000 by default).
    pub max_total_steps: usize,
    /// Workflow states (10,000 by default).
    pub max_states: usize,
    /// Prompts (10,000 by default).
    pub max_prompts: usize,
    /// Tools (10,000 by default).
    pub max_tools: usize,
    /// Agent members (10,000 by default).
    pub max_agents: usize,
    /// Attempts of one step, `retry.max_attempts` (100 by default).
    pub max_attempts: usize,
    /// Patterns of all prompts together, variable `pattern`s and `Regex` validators (1,000
    /// by default). The compiled size of each is the loader's to bound
    /// (`packc_vm::Program::with_max_pattern_size`).
    pub max_patterns: usize,
    /// UTF-8 bytes of the words of all `BannedWords` checks together (256 KiB by
    /// default). Each list compiles within [`words_size_limit`](crate::words_size_limit)
    /// of its own words, so this bounds what compiling them all may take.
    pub max_banned_word_bytes: usize,
}

impl Default for DecodeLimits {
    fn default() -> DecodeLimits {
        DecodeLimits {
            max_artifact_bytes: DEFAULT_MAX_ARTIFACT_BYTES,
            max_compositions: DEFAULT_MAX_COMPOSITIONS,
            max_steps_per_composition: DEFAULT_MAX_STEPS_PER_COMPOSITION,
            max_total_steps: DEFAULT_MAX_TOTAL_STEPS,
            max_states: DEFAULT_MAX_STATES,
            max_prompts: DEFAULT_MAX_PROMPTS,
            max_tools: DEFAULT_MAX_TOOLS,
            max_agents: DEFAULT_MAX_AGENTS,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_patterns: DEFAULT_MAX_PATTERNS,
            max_banned_word_bytes: DEFAULT_MAX_BANNED_WORD_BYTES,
        }
    }
}

impl DecodeLimits {
    /// Checks the counts of a decoded module; the first count past its limit is the error.
    pub fn check(&self, m: &Module) -> Result<(), ArtifactError> {
        let over = |limit: &'static str, what: &'static str, found: usize, max: usize| {
            if found > max {
                Err(ArtifactError::Limit { limit, what, max })
            } else {
                Ok(())
            }
        };
        let states = m.workflow.as_ref().map_or(0, |w| w.states.len());
        let largest = m.compositions.iter().map(|c| c.steps.len()).max();
        let total = m
            .compositions
            .iter()
            .fold(0usize, |n, c| n.saturating_add(c.steps.len()));
        over(
            "max_compositions",
            "compositions",
            m.compositions.len(),
            self.max_compositions,
        )?;
        over(
            "max_steps_per_composition",
            "steps in one composition",
            largest.unwrap_or(0),
            self.max_steps_per_composition,
        )?;
        over("max_total_steps", "steps", total, self.max_total_steps)?;
        over("max_states", "workflow states", states, self.max_states)?;
        over("max_prompts", "prompts", m.prompts.len(), self.max_prompts)?;
        over("max_tools", "tools", m.tools.len(), self.max_tools)?;
        over(
            "max_agents",
            "agent members",
            m.agents.len(),
            self.max_agents,
        )?;
        let attempts = m
            .compositions
            .iter()
            .flat_map(|c| &c.steps)
            .map(|s| s.max_attempts as usize)
            .max();
        over(
            "max_attempts",
            "attempts of one step",
            attempts.unwrap_or(0),
            self.max_attempts,
        )?;
        let patterns = m.prompts.iter().fold(0usize, |n, p| {
            let variables = p
                .variables
                .iter()
                .filter(|v| v.validation.pattern.is_some());
            let validators = p
                .guards
                .iter()
                .filter(|g| matches!(g.check, crate::Check::Regex { .. }));
            n.saturating_add(variables.count())
                .saturating_add(validators.count())
        });
        over(
            "max_patterns",
            "patterns (variable patterns and regex validators)",
            patterns,
            self.max_patterns,
        )?;
        let word_bytes = m
            .prompts
            .iter()
            .flat_map(|p| &p.guards)
            .filter_map(|g| match &g.check {
                crate::Check::BannedWords { words, .. } => Some(words),
                _ => None,
            })
            .flatten()
            .fold(0usize, |n, w| n.saturating_add(w.len()));
        over(
            "max_banned_word_bytes",
            "bytes of banned words",
            word_bytes,
            self.max_banned_word_bytes,
        )
    }
}
