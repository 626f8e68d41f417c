//! Governance at the door (RFC 0013, `shared/semantics/later-versions.md` §6): the facts
//! are carried in the artifact for inspection and change nothing about how a run
//! executes; the one thing a host does with them is admission by environment.

use ir_spec::Module;
use serde_json::Value;

/// Admission by environment: a pack whose governance lists `approved_environments`
/// without `environment` is refused, before any call, with a message naming both.
/// `Ok` admits: no environment given, no governance, or no list (absence means
/// undeclared, not cleared nowhere).
pub fn admission(module: &Module, environment: Option<&str>) -> Result<(), Refused> {
    let Some(env) = environment else {
        return Ok(());
    };
    let Some(approved) = module
        .spec
        .governance
        .as_ref()
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
    })
}

/// A run refused by [`admission`]: the environment is not among the approved ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "environment `{environment}` is not among the pack's approved_environments ({}): the run is refused before any call",
    approved_list(approved)
)]
pub struct Refused {
    /// The environment the run was asked for.
    pub environment: String,
    /// The pack's `approved_environments`.
    pub approved: Vec<String>,
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
}
