//! The model/tool loop shared by prompt states, plain agent members and agent steps
//! (`workflow.md` §6, `compositions.md` §6.3).

use ir_spec::{OutputSchema, PromptId, ToolId, ToolRef};
use serde_json::{json, Value};

use crate::api::{Answer, Call, CallRecord, ErrorKind, ModelCall, OfferedTool, RunError, ToolCall};
use crate::exec::{Core, Lane};

/// One execution of the loop.
pub(crate) struct Loop<'a> {
    pub prompt: PromptId,
    pub system: String,
    pub input: Value,
    pub history: Vec<Value>,
    pub tools: &'a [ToolRef],
    pub events: Vec<String>,
    pub output_schema: Option<OutputSchema>,
    /// Model calls allowed in this execution.
    pub max_turns: u32,
    /// Past `max_turns`: `agent_step_limit` (true) or a normal end with a null output.
    pub cap_is_error: bool,
    /// Host tool calls allowed in this execution.
    pub max_tool_calls: Option<u32>,
    /// `termination.tool_called`.
    pub tool_called: Option<ToolId>,
}

/// How a loop ended.
pub(crate) enum End {
    /// A final answer: its output and event.
    Answer(Value, Option<String>),
    /// `tool_called` succeeded: that call's result.
    ToolCalled(Value),
    /// `max_steps` reached without a final answer.
    Exhausted,
}

fn host_error(message: impl Into<String>) -> RunError {
    RunError::new(ErrorKind::HostError, message)
}

/// Key of an offered tool.
fn key<'m>(core: &'m Core, t: &ToolRef) -> &'m str {
    match t {
        ToolRef::Tool(id) => core.m.str(core.m.tools[id.index()].key),
        ToolRef::Member(k) => core.m.str(*k),
    }
}

/// The offered tool definitions for a model call.
pub(crate) fn offered(core: &Core, tools: &[ToolRef]) -> Vec<OfferedTool> {
    tools
        .iter()
        .map(|t| match t {
            ToolRef::Tool(id) => {
                let tool = &core.m.tools[id.index()];
                OfferedTool {
                    key: core.m.str(tool.key).to_owned(),
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                }
            }
            ToolRef::Member(k) => OfferedTool {
                key: core.m.str(*k).to_owned(),
                name: core.m.str(*k).to_owned(),
                description: String::new(),
                parameters: Value::Null,
            },
        })
        .collect()
}

/// Runs the loop to its end.
pub(crate) async fn run(core: &Core, lane: &Lane, spec: Loop<'_>) -> Result<End, RunError> {
    let prompt_key = core
        .m
        .str(core.m.prompts[spec.prompt.index()].key)
        .to_owned();
    let tools = offered(core, spec.tools);
    let mut transcript: Vec<Value> = Vec::new();
    let mut tool_calls_made = 0u32;
    for turn in 1..=spec.max_turns {
        let mut history = spec.history.clone();
        history.extend(transcript.iter().cloned());
        let call = Call::Model(ModelCall {
            prompt: prompt_key.clone(),
            system: spec.system.clone(),
            input: spec.input.clone(),
            history,
            tools: tools.clone(),
            events: spec.events.clone(),
            output_schema: spec.output_schema.clone(),
        });
        let record = CallRecord::Model {
            prompt: prompt_key.clone(),
            input: spec.input.clone(),
            system: spec.system.clone(),
        };
        let requests = match core.host_call(lane, call, record).await? {
            Answer::Error(e) => {
                return Err(host_error(format!("model call `{prompt_key}` failed: {e}")))
            }
            Answer::Output { output, event } => return Ok(End::Answer(output, event)),
            Answer::ToolCalls(reqs) if reqs.is_empty() => {
                return Err(host_error(format!(
                    "model call `{prompt_key}`: empty `tool_calls`"
                )))
            }
            Answer::ToolCalls(reqs) => reqs,
        };
        transcript.push(json!({"tool_calls": requests.iter().map(|r| json!({"name": r.name, "args": r.args})).collect::<Vec<_>>()}));
        let mut finished = None;
        for req in requests {
            let offered = spec.tools.iter().find(|t| key(core, t) == req.name);
            let result = match offered {
                None => Err("tool not available".to_owned()),
                Some(_)
                    if spec
                        .max_tool_calls
                        .is_some_and(|cap| tool_calls_made >= cap) =>
                {
                    Err("tool call limit for this turn reached".to_owned())
                }
                Some(t) => {
                    tool_calls_made += 1;
                    let call = Call::Tool(ToolCall {
                        tool: req.name.clone(),
                        args: req.args.clone(),
                    });
                    let record = CallRecord::Tool {
                        tool: req.name.clone(),
                        args: req.args.clone(),
                    };
                    match core.host_call(lane, call, record).await? {
                        Answer::Output { output, .. } => {
                            if matches!(t, ToolRef::Tool(id) if Some(*id) == spec.tool_called) {
                                finished = Some(output.clone());
                            }
                            Ok(output)
                        }
                        Answer::Error(e) => Err(e),
                        Answer::ToolCalls(_) => Err("malformed tool answer".to_owned()),
                    }
                }
            };
            transcript.push(match result {
                Ok(v) => json!({"tool_result": {"name": req.name, "output": v}}),
                Err(e) => json!({"tool_result": {"name": req.name, "error": e}}),
            });
        }
        if let Some(v) = finished {
            return Ok(End::ToolCalled(v));
        }
        if turn == spec.max_turns {
            break;
        }
    }
    if spec.cap_is_error {
        Err(RunError::new(
            ErrorKind::AgentStepLimit,
            format!(
                "`{prompt_key}` still asked for tools after {} model calls",
                spec.max_turns
            ),
        ))
    } else {
        Ok(End::Exhausted)
    }
}
