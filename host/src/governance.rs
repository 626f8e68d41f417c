//! Governance at the door (RFC 0013, `shared/semantics/later-versions.md` §6): the facts
//! are carried in the artifact for inspection and change nothing about how a run
//! executes; the one thing a host does with them is admission by environment.

use ir_spec::{AgentId, Module};
use serde_json::Value;

/// Admission by environment: a pack whose governance lists `approved_environments`
/// without `environment` is refused, before any call, with a message naming both.
/// `Ok` admits: no environment given, no governance, or no list (absence means
/// undeclared, not cleared nowhere).
pub fn admission(module: &Module, environment: Option<&str>) -> Result<(), Refused> {
    admit(module.spec.governance.as_ref(), environment, None)
}

/// Admission of a run of agent member `agent` (`--target agent:<key>`): the pack's
/// [`admission`], then the member's own `governance.approved_environments`, when it
/// lists them, the same way.
pub fn member_admission(
    module: &Module,
    agent: AgentId,
    environment: Option<&str>,
) -> Result<(), Refused> {
    admission(module, environment)?;
    let member = module.agents.get(agent.index()).map(|a| module.str(a.key));
    admit(
        module.spec.agent_governance(agent),
        environment,
        member.map(str::to_owned),
    )
}

fn admit(
    governance: Option<&Value>,
    environment: Option<&str>,
    member: Option<String>,
) -> Result<(), Refused> {
    let Some(env) = environment else {
        return Ok(());
    };
    let Some(approved) = governance
        .and_then(|g| g.get("approved_environments"))
        .and_then(Value::as_array)
    else {
        return Ok(());
    };
    let names: Vec<&str> = approved.iter().filter_map(Value::as_str).collect();
    if names.contains(&env) {
        return Ok(());
    }
    Err(Refused {
        environment: env.to_owned(),
        approved: names.iter().map(|n| (*n).to_owned()).collect(),
        member,
    })
}

/// A run refused by [`admission`] or [`member_admission`]: the environment is not among
/// the approved ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "environment `{environment}` is not among {}'s approved_environments ({}): the run is refused before any call",
    member.as_ref().map_or("the pack".to_owned(), |m| format!("agent member `{m}`")),
    approved_list(approved)
)]
pub struct Refused {
    /// The environment the run was asked for.
    pub environment: String,
    /// The `approved_environments` that refused it.
    pub approved: Vec<String>,
    /// The agent member whose governance refused it; `None`: the pack's.
    pub member: Option<String>,
}

/// The approved environments for a message; "none" when the list is empty.
fn approved_list(approved: &[String]) -> String {
    if approved.is_empty() {
        "it approves none".to_owned()
    } else {
        approved.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_listed_environment_is_admitted() {
        let mut m = Module::default();
        assert!(admission(&m, Some("prod")).is_ok());
        m.spec.governance = Some(json!({"intended_purpose": "x"}));
        assert!(admission(&m, Some("prod")).is_ok());
        m.spec.governance = Some(json!({"approved_environments": ["staging"]}));
        assert!(admission(&m, None).is_ok());
        assert!(admission(&m, Some("staging")).is_ok());
        let e = admission(&m, Some("prod")).unwrap_err().to_string();
        assert!(e.contains("`prod`") && e.contains("staging"), "{e}");
        m.spec.governance = Some(json!({"approved_environments": []}));
        let e = admission(&m, Some("staging")).unwrap_err().to_string();
        assert!(
            e.contains("approved_environments (it approves none)"),
            "{e}"
        );
    }

    /// A run of an agent member answers to the pack's list and to the member's own.
    #[test]
    fn a_members_run_needs_the_members_environment_too() {
        let mut m = Module {
            strings: vec!["helper".into(), "other".into()],
            ..Module::default()
        };
        for key in [0, 1] {
            m.agents.push(ir_spec::Agent {
                key: ir_spec::StrId(key),
                start: ir_spec::AgentStart::Plain(None),
            });
        }
        m.spec.agent_governance = vec![Some(json!({"approved_environments": ["staging"]})), None];
        let (helper, other) = (AgentId(0), AgentId(1));
        assert!(member_admission(&m, helper, None).is_ok());
        assert!(member_admission(&m, helper, Some("staging")).is_ok());
        assert!(member_admission(&m, other, Some("prod")).is_ok());
        assert!(admission(&m, Some("prod")).is_ok());
        let e = member_admission(&m, helper, Some("prod")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "environment `prod` is not among agent member `helper`'s approved_environments \
             (staging): the run is refused before any call"
        );
        // The pack's list is asked first.
        m.spec.governance = Some(json!({"approved_environments": ["dev"]}));
        let e = member_admission(&m, other, Some("prod")).unwrap_err();
        assert_eq!(e.member, None);
        assert!(e.to_string().contains("among the pack's"), "{e}");
    }
}
