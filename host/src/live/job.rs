//! [`Job`]: an issued call copied out of the run, for a worker thread.

use packc_vm::CallView;
use serde_json::Value;

use super::openai::{ModelRequest, OutputSchema};

/// An owned copy of an issued call: what a worker thread needs to carry it out.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    /// A model call.
    Model(Box<ModelRequest>),
    /// A tool call (a pack tool or an agent member used as a tool).
    Tool {
        /// The tool key.
        key: String,
        /// The arguments.
        args: Value,
    },
    /// An extension step's call.
    Extension {
        /// The step kind, `vendor.name`.
        kind: String,
        /// The step's other members.
        params: Value,
        /// The resolved input.
        input: Value,
    },
    /// A host validator's `guard` call.
    Guard {
        /// The validator type.
        validator: String,
        /// Its params.
        params: Value,
        /// The text to judge.
        text: String,
    },
}

impl Job {
    /// Copies a call out of the run.
    pub fn of(view: &CallView<'_>) -> Job {
        if let Some((kind, params)) = view.extension() {
            return Job::Extension {
                kind: kind.to_owned(),
                params: params.parse(),
                input: view.input().to_value(),
            };
        }
        if let Some(g) = view.guard() {
            return Job::Guard {
                validator: g.validator.to_owned(),
                params: g.params.parse(),
                text: g.text.into_owned(),
            };
        }
        match view.prompt_task() {
            Some(prompt) => Job::Model(Box::new(ModelRequest {
                prompt: prompt.to_owned(),
                provider: view.provider().unwrap_or("default").to_owned(),
                system: view.system(),
                input: view.input().to_value(),
                history: view.history(),
                parameters: view.parameters().map_or(Value::Null, |p| p.parse()),
                tools: ModelRequest::functions(view.offered_tools().map(|t| {
                    (
                        t.key,
                        t.name,
                        t.description,
                        t.parameters.map(|p| p.parse()),
                    )
                })),
                events: view.events().map(str::to_owned).collect(),
                output_schema: view.output_schema().map(|s| OutputSchema {
                    name: s.name.clone(),
                    schema: s.schema.as_ref().map(|j| j.parse()),
                }),
            })),
            None => Job::Tool {
                key: view.tool().unwrap_or_default().to_owned(),
                args: view.input().to_value(),
            },
        }
    }
}
