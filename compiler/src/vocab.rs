//! The words of the composition language, defined once for [`check`](crate::check) and
//! [`lower`](mod@crate::lower): step kinds, predicate operators and reduce strategies.
//!
//! The checker turns a word into one of these enums (or reports it); lowering matches
//! the enum, never the string again.

/// A step's `branches` when it is a `parallel` step, the one kind whose `branches` are
/// steps: on an extension step, `branches` is one of the members handed to the host as
/// its `params` (`later-versions.md` §5), never steps to check, number or run.
pub fn parallel_branches<'s>(step: &crate::doc::Node<'s>) -> Option<&'s [crate::doc::Node<'s>]> {
    if step.get("kind").and_then(crate::doc::Node::as_str) != Some("parallel") {
        return None;
    }
    step.get("branches").and_then(crate::doc::Node::as_array)
}

/// A step's `kind` (`compositions.md` §1): the five v1 kinds, or a vendor kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `kind: prompt`
    Prompt,
    /// `kind: agent`
    Agent,
    /// `kind: tool`
    Tool,
    /// `kind: branch`
    Branch,
    /// `kind: parallel`
    Parallel,
    /// A vendor kind `vendor.name` (level 1.8+), served by the host.
    Extension,
}

/// Every member a v1 step may hold, whatever its kind: the members every kind shares
/// ([`SHARED_STEP_MEMBERS`]), then those some kind owns ([`KIND_MEMBERS`]). What a
/// misspelt member is compared with when a required one is missing.
pub const STEP_MEMBERS: &[&str] = &[
    "id",
    "kind",
    "description",
    "depends_on",
    "modifiers",
    "prompt_task",
    "input",
    "output_schema",
    "tools",
    "termination",
    "tool",
    "args",
    "predicate",
    "then",
    "else",
    "branches",
    "reduce",
];

/// The members every step kind takes: `id`, `kind`, `description`, `depends_on` and
/// `modifiers`.
pub const SHARED_STEP_MEMBERS: &[&str] = STEP_MEMBERS.split_at(5).0;

/// Every member some v1 step kind owns; a step carrying another kind's member is an error.
pub const KIND_MEMBERS: &[&str] = STEP_MEMBERS.split_at(5).1;

impl Kind {
    /// The five v1 kinds, for "did you mean" help lines.
    pub const V1: [Kind; 5] = [
        Kind::Prompt,
        Kind::Agent,
        Kind::Tool,
        Kind::Branch,
        Kind::Parallel,
    ];

    /// The kind `s` names in a pack read at level 1.8+ (`level_1_8`) or below: a v1 kind,
    /// or, from level 1.8, a vendor kind ([`is_extension_kind`]).
    pub fn parse_at(s: &str, level_1_8: bool) -> Option<Kind> {
        Kind::parse(s).or_else(|| (level_1_8 && is_extension_kind(s)).then_some(Kind::Extension))
    }

    /// The v1 kind `s` names: `prompt`, `agent`, `tool`, `branch` or `parallel`.
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "prompt" => Kind::Prompt,
            "agent" => Kind::Agent,
            "tool" => Kind::Tool,
            "branch" => Kind::Branch,
            "parallel" => Kind::Parallel,
            _ => return None,
        })
    }

    /// The kind's name in messages; `extension` for every vendor kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Prompt => "prompt",
            Kind::Agent => "agent",
            Kind::Tool => "tool",
            Kind::Branch => "branch",
            Kind::Parallel => "parallel",
            Kind::Extension => "extension",
        }
    }

    /// The kind-specific members a step of this kind takes (beyond `id`, `kind`,
    /// `description`, `depends_on` and `modifiers`).
    pub fn members(self) -> &'static [&'static str] {
        match self {
            Kind::Prompt => &["prompt_task", "input", "output_schema"],
            Kind::Agent => &[
                "prompt_task",
                "input",
                "output_schema",
                "tools",
                "termination",
            ],
            Kind::Tool => &["tool", "args"],
            Kind::Branch => &["predicate", "then", "else"],
            Kind::Parallel => &["branches", "reduce"],
            // Every other member is a param the host reads.
            Kind::Extension => KIND_MEMBERS,
        }
    }

    /// Whether a step of this kind makes a model call (and so may name a `provider`).
    pub fn calls_model(self) -> bool {
        matches!(self, Kind::Prompt | Kind::Agent)
    }
}

/// Whether `kind` is a vendor step kind (the v1.8.1 / v1.9.0 schemas' `ExtensionStep`):
/// `^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_.-]*$`.
pub fn is_extension_kind(kind: &str) -> bool {
    let Some((vendor, name)) = kind.split_once('.') else {
        return false;
    };
    let head = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    let tail = |s: &str, extra: &[char]| {
        s.chars().skip(1).all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c) || extra.contains(&c)
        })
    };
    head(vendor) && tail(vendor, &[]) && head(name) && tail(name, &['.'])
}

/// A compare predicate's `op` (`compositions.md` §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `equals`
    Equals,
    /// `not_equals`
    NotEquals,
    /// `in`
    In,
    /// `not_in`
    NotIn,
    /// `less_than`
    LessThan,
    /// `less_than_or_equals`
    LessThanOrEquals,
    /// `greater_than`
    GreaterThan,
    /// `greater_than_or_equals`
    GreaterThanOrEquals,
}

impl Op {
    /// Every operator, in the order messages list them.
    pub const ALL: [Op; 8] = [
        Op::Equals,
        Op::NotEquals,
        Op::In,
        Op::NotIn,
        Op::LessThan,
        Op::LessThanOrEquals,
        Op::GreaterThan,
        Op::GreaterThanOrEquals,
    ];

    /// The operator `s` names.
    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == s)
    }

    /// The operator as written in a pack.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Equals => "equals",
            Op::NotEquals => "not_equals",
            Op::In => "in",
            Op::NotIn => "not_in",
            Op::LessThan => "less_than",
            Op::LessThanOrEquals => "less_than_or_equals",
            Op::GreaterThan => "greater_than",
            Op::GreaterThanOrEquals => "greater_than_or_equals",
        }
    }
}

/// A parallel step's `reduce.strategy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `append`
    Append,
    /// `replace`
    Replace,
    /// `barrier`
    Barrier,
}

impl Strategy {
    /// Every strategy, for "did you mean" help lines.
    pub const ALL: [Strategy; 3] = [Strategy::Append, Strategy::Replace, Strategy::Barrier];

    /// The strategy `s` names.
    pub fn parse(s: &str) -> Option<Strategy> {
        Some(match s {
            "append" => Strategy::Append,
            "replace" => Strategy::Replace,
            "barrier" => Strategy::Barrier,
            _ => return None,
        })
    }

    /// The strategy as written in a pack.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Append => "append",
            Strategy::Replace => "replace",
            Strategy::Barrier => "barrier",
        }
    }

    /// The IR's reducer for this strategy.
    pub fn reduce(self) -> ir_spec::Reduce {
        match self {
            Strategy::Append => ir_spec::Reduce::Append,
            Strategy::Replace => ir_spec::Reduce::Replace,
            Strategy::Barrier => ir_spec::Reduce::Barrier,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_members_split_into_shared_and_kind_members() {
        assert_eq!(
            SHARED_STEP_MEMBERS,
            ["id", "kind", "description", "depends_on", "modifiers"]
        );
        assert_eq!(KIND_MEMBERS.first(), Some(&"prompt_task"));
        assert!(Kind::Parallel
            .members()
            .iter()
            .all(|m| KIND_MEMBERS.contains(m)));
    }

    #[test]
    fn words_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.as_str()), Some(op));
        }
        for k in [
            Kind::Prompt,
            Kind::Agent,
            Kind::Tool,
            Kind::Branch,
            Kind::Parallel,
        ] {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        for s in [Strategy::Append, Strategy::Replace, Strategy::Barrier] {
            assert_eq!(Strategy::parse(s.as_str()), Some(s));
        }
        assert_eq!(Op::parse("like"), None);
        assert_eq!(Kind::parse("extension"), None);
    }

    #[test]
    fn vendor_kinds() {
        assert_eq!(Kind::parse_at("acme.search", true), Some(Kind::Extension));
        assert_eq!(Kind::parse_at("acme.search", false), None);
        assert!(!is_extension_kind("Acme.search"));
        assert!(!is_extension_kind("acme."));
        assert!(is_extension_kind("acme-co.web.search_v2"));
    }
}
