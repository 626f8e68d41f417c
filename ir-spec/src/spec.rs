//! What a pack's spec version settles beyond the v1.5 module: the level it was compiled at,
//! who holds the turn after a model-driven transition (RFC 0014 `control`), the provider of
//! every model call (RFC 0012, RFC 0017) and the governance facts (RFC 0013, RFC 0016).
//!
//! It is written as the optional section `spec` of a format 1.1 artifact; a format 1.0
//! artifact has none and loads as [`SpecInfo::default`]: level 1.5, every turn continuing
//! into runtime-driven states, every call on the `default` provider, no governance.

use serde::{Deserialize, Serialize};

/// The spec level a pack is read at (`shared/semantics/later-versions.md` §1), picked
/// from its `$schema` claim.
///
/// ```yaml
/// $schema: https://promptpack.org/schema/v1.8.1/promptpack.schema.json   # -> SpecLevel::V1_8
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum SpecLevel {
    /// v1.0 to v1.5.0, a `v1` claim, or no claim: the v1.4.0 schema with the v1.5 additions.
    #[default]
    V1_5,
    /// v1.5.1 to v1.6: compositions, `requires.providers`, `AgentDef.state`.
    V1_5_1,
    /// v1.7 and v1.8: `control`, governance, `extensions` slots, extension steps.
    V1_8,
    /// v1.9, `latest`, and any later version: `provider` on prompts and steps.
    V1_9,
}

impl SpecLevel {
    /// Every level, lowest first.
    pub const ALL: [SpecLevel; 4] = [
        SpecLevel::V1_5,
        SpecLevel::V1_5_1,
        SpecLevel::V1_8,
        SpecLevel::V1_9,
    ];

    /// `1.5`, `1.5.1`, `1.8` or `1.9`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SpecLevel::V1_5 => "1.5",
            SpecLevel::V1_5_1 => "1.5.1",
            SpecLevel::V1_8 => "1.8",
            SpecLevel::V1_9 => "1.9",
        }
    }

    /// The level a `--spec-level` argument names: `1.5`, `1.5.1`, `1.8`, `1.9`, a version
    /// the level covers (`1.6` → 1.5.1, `1.7` → 1.8; `v1.7.0` too), or `latest` (1.9, as a
    /// `…/latest/…` claim reads).
    pub fn parse(text: &str) -> Option<SpecLevel> {
        if text.trim() == "latest" {
            return Some(SpecLevel::V1_9);
        }
        let t = text.trim().trim_start_matches('v');
        let mut parts = t.split('.').map(|p| p.parse::<u64>().ok());
        let major = parts.next()??;
        let minor = parts.next().unwrap_or(Some(0))?;
        let patch = parts.next().unwrap_or(Some(0))?;
        if parts.next().is_some() || major != 1 {
            return None;
        }
        SpecLevel::of_version((major, minor, patch))
    }

    /// The level of a claimed version: up to 1.5.0 → 1.5, 1.5.1–1.6 → 1.5.1, 1.7–1.8
    /// → 1.8, 1.9 and above → 1.9. `None` below 1.0.
    pub fn of_version(v: (u64, u64, u64)) -> Option<SpecLevel> {
        Some(match v {
            v if v < (1, 0, 0) => return None,
            v if v <= (1, 5, 0) => SpecLevel::V1_5,
            v if v < (1, 7, 0) => SpecLevel::V1_5_1,
            v if v < (1, 9, 0) => SpecLevel::V1_8,
            _ => SpecLevel::V1_9,
        })
    }
}

impl std::fmt::Display for SpecLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of `requires.providers` (RFC 0012).
///
/// ```yaml
/// requires:
///   providers:
///     - drafter                                  # -> {key: drafter, role: llm, required: true}
///     - {key: embed, role: embedding, required: false}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provider {
    /// `key`: the name calls route by.
    pub key: String,
    /// `role` (`llm` for the string shorthand).
    pub role: String,
    /// `required` (true unless `required: false`).
    pub required: bool,
}

/// The provider of each model call and the rest of [`SpecInfo`], resolved at compile time.
///
/// Index 0 of [`SpecInfo::providers`] is always `default`, declared or not; a provider
/// index is a `u32` into that table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecInfo {
    /// The level the pack was compiled at.
    pub level: SpecLevel,
    /// Per workflow state (by [`StateId`](crate::StateId)): whether the turn stops when a
    /// model-driven transition enters it, the state then running on the next turn
    /// (`control: user`, the default at level 1.8 and above, on a non-terminal state).
    /// Empty: no state stops the turn (levels below 1.8).
    pub holds_turn: Vec<bool>,
    /// `requires.providers`, after `default` at index 0. Empty: only `default`.
    pub providers: Vec<Provider>,
    /// Per prompt (by [`PromptId`](crate::PromptId)): its `provider`, the provider of
    /// workflow states, agent members and steps that do not name their own. Empty: all
    /// `default`.
    pub prompt_providers: Vec<u32>,
    /// Per composition (by [`CompId`](crate::CompId)), per step (by
    /// [`StepId`](crate::StepId)): the effective provider of a `prompt` or `agent` step
    /// (its own `provider`, else its prompt's). An empty list: every step uses its prompt's.
    pub step_providers: Vec<Vec<u32>>,
    /// `metadata.governance`, as written (RFC 0013, RFC 0016); carried for inspection, never
    /// read by the VM.
    #[serde(with = "crate::json_text::option")]
    pub governance: Option<serde_json::Value>,
    /// Per agent member (by [`AgentId`](crate::AgentId)): its `governance` as written
    /// (RFC 0013, RFC 0016); carried for inspection and admission, never read by the VM.
    /// Not in the `spec` payload: an artifact carries it in its optional `agov` section
    /// (format 1.2). Empty: no member has governance.
    #[serde(skip)]
    pub agent_governance: Vec<Option<serde_json::Value>>,
}

impl SpecInfo {
    /// The `governance` of agent member `agent`, if it has one.
    pub fn agent_governance(&self, agent: crate::AgentId) -> Option<&serde_json::Value> {
        self.agent_governance.get(agent.index())?.as_ref()
    }

    /// The key of provider `index`: `default` for index 0 or an index past the table.
    pub fn provider_key(&self, index: u32) -> &str {
        match self.providers.get(index as usize) {
            Some(p) if index != 0 => &p.key,
            _ => "default",
        }
    }

    /// The provider index of a call made with prompt `prompt`.
    pub fn prompt_provider(&self, prompt: crate::PromptId) -> u32 {
        self.prompt_providers
            .get(prompt.index())
            .copied()
            .unwrap_or(0)
    }

    /// The provider index of a call made by step `step` of composition `comp` with
    /// prompt `prompt`.
    pub fn step_provider(
        &self,
        comp: crate::CompId,
        step: crate::StepId,
        prompt: crate::PromptId,
    ) -> u32 {
        self.step_providers
            .get(comp.index())
            .and_then(|s| s.get(step.index()))
            .copied()
            .unwrap_or_else(|| self.prompt_provider(prompt))
    }

    /// Whether a model-driven transition into `state` ends the turn before it runs.
    pub fn holds_turn(&self, state: crate::StateId) -> bool {
        self.holds_turn.get(state.index()).copied().unwrap_or(false)
    }

    /// Checks the tables against the module's: every provider index in range, every
    /// per-item list empty or as long as its table.
    pub(crate) fn validate(&self, m: &crate::Module) -> Result<(), &'static str> {
        let n = self.providers.len().max(1) as u32;
        let states = m.workflow.as_ref().map_or(0, |w| w.states.len());
        if !self.holds_turn.is_empty() && self.holds_turn.len() != states {
            return Err("spec: holds_turn does not match the states");
        }
        if !self.prompt_providers.is_empty() && self.prompt_providers.len() != m.prompts.len() {
            return Err("spec: prompt_providers does not match the prompts");
        }
        if !self.step_providers.is_empty() && self.step_providers.len() != m.compositions.len() {
            return Err("spec: step_providers does not match the compositions");
        }
        for (s, c) in self.step_providers.iter().zip(&m.compositions) {
            if !s.is_empty() && s.len() != c.steps.len() {
                return Err("spec: step_providers does not match a composition's steps");
            }
        }
        let all = self
            .prompt_providers
            .iter()
            .chain(self.step_providers.iter().flatten());
        if all.into_iter().any(|p| *p >= n) {
            return Err("spec: provider index out of range");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_of_versions() {
        let l = |v| SpecLevel::of_version(v);
        assert_eq!(l((1, 0, 0)), Some(SpecLevel::V1_5));
        assert_eq!(l((1, 5, 0)), Some(SpecLevel::V1_5));
        assert_eq!(l((1, 5, 1)), Some(SpecLevel::V1_5_1));
        assert_eq!(l((1, 6, 3)), Some(SpecLevel::V1_5_1));
        assert_eq!(l((1, 7, 0)), Some(SpecLevel::V1_8));
        assert_eq!(l((1, 8, 1)), Some(SpecLevel::V1_8));
        assert_eq!(l((1, 9, 0)), Some(SpecLevel::V1_9));
        assert_eq!(l((2, 0, 0)), Some(SpecLevel::V1_9));
        assert_eq!(l((0, 9, 0)), None);
        assert_eq!(SpecLevel::parse("latest"), Some(SpecLevel::V1_9));
        assert_eq!(SpecLevel::parse("1.8"), Some(SpecLevel::V1_8));
        assert_eq!(SpecLevel::parse("1.5.1"), Some(SpecLevel::V1_5_1));
        assert_eq!(SpecLevel::parse("v1.9"), Some(SpecLevel::V1_9));
        assert_eq!(SpecLevel::parse("1.7"), Some(SpecLevel::V1_8));
        assert_eq!(SpecLevel::parse("2.0"), None);
        assert_eq!(SpecLevel::parse("x"), None);
    }
}
