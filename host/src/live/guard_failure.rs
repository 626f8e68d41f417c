//! [`GuardFailure`]: a host validator's `guard` call that did not give a verdict, as the
//! live host reports it ([`Observer::guard_failed`](super::Observer::guard_failed)).
//!
//! The VM fails closed on such an answer (`later-versions.md` §4): the validator counts as
//! triggered, so a run can go on with a replaced answer although nothing judged it. The
//! report says so, so that a broken validator service is not mistaken for a strict one.

use packc_vm::{Answer, CallView, GuardEffect};
use serde_json::Value;

use super::redact::shown_url;
use super::tools::Binding;
use super::LiveConfig;

/// A host validator's call that failed, or whose answer was not `{"pass": bool}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardFailure {
    /// The validator's `type`.
    pub validator: String,
    /// Where the judged answer was made: the step id, state name or agent member key.
    pub at: String,
    /// What serves the type: `http <url>`, `command <argv>` or `a handler of the embedder`.
    pub binding: String,
    /// What went wrong.
    pub error: String,
    /// What the run did about it (fail closed).
    pub effect: GuardEffect,
}

impl std::fmt::Display for GuardFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "host validator `{}` at `{}` ({}) gave no verdict: {}; failing closed: {}",
            self.validator,
            self.at,
            self.binding,
            self.error,
            self.effect.describe()
        )
    }
}

/// What the drive loop keeps of an outstanding `guard` call.
#[derive(Debug)]
pub(crate) struct GuardCallNote {
    validator: String,
    at: String,
    effect: GuardEffect,
}

impl GuardCallNote {
    /// The note of `view`, when it is a `guard` call.
    pub(crate) fn of(view: &CallView<'_>) -> Option<GuardCallNote> {
        let g = view.guard()?;
        Some(GuardCallNote {
            validator: g.validator.to_owned(),
            at: g.at.to_owned(),
            effect: g.effect,
        })
    }

    /// The failure `answer` is, if it is not a verdict (the VM reads `{"pass": bool}`, or
    /// a bare boolean).
    pub(crate) fn failure(self, answer: &Answer, config: &LiveConfig) -> Option<GuardFailure> {
        let error = match answer {
            Answer::Error(e) => e.clone(),
            Answer::Output { output, .. } => match output {
                Value::Bool(_) => return None,
                v if v.get("pass").is_some_and(Value::is_boolean) => return None,
                other => {
                    let shown = super::redact::head(&other.to_string(), 200);
                    format!("it answered {shown}, not {{\"pass\": true|false}}")
                }
            },
            _ => "it was not answered with an output".to_owned(),
        };
        let binding = binding_text(config, &self.validator);
        Some(GuardFailure {
            validator: self.validator,
            at: self.at,
            binding,
            error,
            effect: self.effect,
        })
    }
}

/// What serves host validator `ty` in `config`.
fn binding_text(config: &LiveConfig, ty: &str) -> String {
    if config.guard_handlers.contains_key(ty) {
        return "a handler of the embedder".to_owned();
    }
    match config.tools.guards.get(ty) {
        Some(Binding::Http { url, .. }) => format!("http {}", shown_url(url)),
        Some(Binding::Command { argv, .. }) => format!("command {}", argv.join(" ")),
        None => "unbound".to_owned(),
    }
}
