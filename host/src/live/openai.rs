//! The OpenAI-compatible Chat Completions protocol: a [`ModelRequest`] becomes a request
//! body, a response body becomes a [`Reply`]. Pure functions, no I/O, so every byte the
//! host sends is testable on its own.
//!
//! Messages, in order: the rendered `system_template` as the system message (left out
//! when empty); each earlier exchange of a prompt state's history as a user and an
//! assistant message; the call's input as the user message (a string as is, any other
//! value in the shared text form, `compositions.md` §3.6); then this execution's tool
//! loop: an assistant message carrying `tool_calls`, and one `tool` message per result.
//! The VM keeps no provider call ids, so the host numbers them (`call_<block>_<n>`),
//! which is all the protocol asks: that each result names a call of the message before.

use ir_spec::text_form::text_form;
use serde_json::{json, Map, Value};

/// The generation parameters a prompt's `parameters` may hold (the `Parameters`
/// definition of every official schema, which closes it); a model request sends these and
/// nothing else from it.
pub const PARAMETERS: &[&str] = &[
    "temperature",
    "max_tokens",
    "top_p",
    "top_k",
    "frequency_penalty",
    "presence_penalty",
];

/// An owned copy of a model call, as a worker thread needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// The prompt key (`prompt_task`).
    pub prompt: String,
    /// The effective provider key (`default` unless the pack routes the call elsewhere,
    /// RFC 0017): which of the host's bindings serves the call.
    pub provider: String,
    /// The rendered system prompt.
    pub system: String,
    /// The input.
    pub input: Value,
    /// The history (`workflow.md` §12), as [`CallView::history`](packc_vm::CallView::history)
    /// gives it.
    pub history: Vec<Value>,
    /// The prompt's `parameters` (an object, or `null`).
    pub parameters: Value,
    /// The offered tools, as functions.
    pub tools: Vec<Function>,
    /// The events the answer may name; offered as the transition function.
    pub events: Vec<String>,
    /// The step's output schema, when it declares one.
    pub output_schema: Option<OutputSchema>,
}

/// A step's declared output schema.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSchema {
    /// The declared name (the schema file's reference).
    pub name: String,
    /// The embedded schema; `None` when packc did not find the file (the step then has
    /// no schema, `compositions.md` 11.2a).
    pub schema: Option<Value>,
}

/// A tool offered to the model as a function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// The pack's key for the tool (what the VM's answers name).
    pub key: String,
    /// The function name the model sees: unique, `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// The description.
    pub description: String,
    /// The parameter schema (JSON Schema of an object).
    pub parameters: Value,
}

/// The name of the function that carries a prompt state's event, unless a tool has it.
pub const TRANSITION: &str = "transition";

impl ModelRequest {
    /// Builds the function list of a call from the offered tools: each keeps its `name`
    /// when that is a valid function name not taken yet, else its key (made valid), made
    /// unique by a numeric suffix. The transition function, when there are events, gets
    /// `transition` (or a free variant) and is not in this list; see
    /// [`ModelRequest::transition_name`].
    pub fn functions<'a>(
        offered: impl Iterator<Item = (&'a str, &'a str, &'a str, Option<Value>)>,
    ) -> Vec<Function> {
        let mut out: Vec<Function> = Vec::new();
        for (key, name, description, parameters) in offered {
            let taken = |n: &str| out.iter().any(|f| f.name == n) || n == TRANSITION;
            let name = if is_function_name(name) && !taken(name) {
                name.to_owned()
            } else {
                unique(&function_name(key), taken)
            };
            out.push(Function {
                key: key.to_owned(),
                name,
                description: description.to_owned(),
                parameters: parameters
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            });
        }
        out
    }

    /// The name of the transition function: `transition`, unless a tool took it.
    pub fn transition_name(&self) -> String {
        unique(TRANSITION, |n| self.tools.iter().any(|f| f.name == n))
    }

    /// The function name the model knows tool `key` by (the key itself when the tool is
    /// not offered, e.g. a request for a tool that is not available).
    pub fn function_of(&self, key: &str) -> String {
        self.tools
            .iter()
            .find(|f| f.key == key)
            .map_or_else(|| key.to_owned(), |f| f.name.clone())
    }

    /// The tool key of function `name`; `None` for a name the request did not offer.
    pub fn key_of(&self, name: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.key.as_str())
    }

    /// The request body for `model`. `extra` messages (the host's own event
    /// re-asks) go last. `top_k` is sent unless `openai_strict` (OpenAI's own API has
    /// no `top_k` and refuses it).
    pub fn body(&self, model: &str, extra: &[Value], openai_strict: bool) -> Value {
        let mut messages = Vec::new();
        if !self.system.is_empty() {
            messages.push(json!({"role": "system", "content": self.system}));
        }
        let (earlier, this): (Vec<&Value>, Vec<&Value>) = self
            .history
            .iter()
            .partition(|e| e.get("input").is_some() && e.get("output").is_some());
        for e in earlier {
            messages.push(json!({"role": "user", "content": text_form(&e["input"])}));
            messages.push(json!({"role": "assistant", "content": text_form(&e["output"])}));
        }
        messages.push(json!({"role": "user", "content": text_form(&self.input)}));
        let mut ids: std::collections::VecDeque<String> = Default::default();
        for (block, e) in this.into_iter().enumerate() {
            if let Some(calls) = e.get("tool_calls").and_then(Value::as_array) {
                ids.clear();
                let calls: Vec<Value> = calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let id = format!("call_{block}_{i}");
                        ids.push_back(id.clone());
                        let name = c["name"].as_str().unwrap_or_default();
                        json!({"id": id, "type": "function", "function": {
                            "name": self.function_of(name),
                            "arguments": c["args"].to_string(),
                        }})
                    })
                    .collect();
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
            } else if let Some(r) = e.get("tool_result") {
                let content = match (r.get("output"), r.get("error")) {
                    (Some(out), _) => text_form(out),
                    (None, Some(err)) => format!("error: {}", text_form(err)),
                    (None, None) => String::new(),
                };
                let id = ids.pop_front().unwrap_or_default();
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
        }
        messages.extend(extra.iter().cloned());

        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert("messages".into(), Value::Array(messages));
        if let Value::Object(params) = &self.parameters {
            for (k, v) in params {
                // Only the generation parameters the schema defines go out: a hand-made
                // artifact's `model`, `n`, `stream` or `messages` would otherwise override
                // what the command line chose, or multiply what a call costs.
                if v.is_null() || !PARAMETERS.contains(&k.as_str()) {
                    continue;
                }
                if openai_strict && k == "top_k" {
                    continue;
                }
                body.insert(k.clone(), v.clone());
            }
        }
        let mut tools: Vec<Value> = self
            .tools
            .iter()
            .map(|f| {
                json!({"type": "function", "function": {
                    "name": f.name, "description": f.description, "parameters": f.parameters,
                }})
            })
            .collect();
        if !self.events.is_empty() {
            tools.push(json!({"type": "function", "function": {
                "name": self.transition_name(),
                "description": "Move the conversation to its next stage: call this with the event that has happened.",
                "parameters": {
                    "type": "object",
                    "properties": {"event": {"type": "string", "enum": self.events}},
                    "required": ["event"],
                },
            }}));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(OutputSchema {
            name,
            schema: Some(schema),
        }) = &self.output_schema
        {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": schema_name(name), "schema": schema,
                }}),
            );
        }
        Value::Object(body)
    }
}

/// A model's reply, read from a response body.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The text (`message.content`), when there is one.
    pub content: Option<String>,
    /// The requested function calls, in order: `(function name, arguments text)`.
    pub calls: Vec<(String, String)>,
    /// `usage.total_tokens`, when the server reports it.
    pub tokens: Option<u64>,
}

/// Reads a Chat Completions response body.
pub fn parse_reply(body: &Value) -> Result<Reply, ReplyError> {
    let message = body
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .ok_or(ReplyError::NoMessage)?;
    let content = match message.get("content") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    };
    let mut calls = Vec::new();
    if let Some(list) = message.get("tool_calls").and_then(Value::as_array) {
        for c in list {
            let f = c.get("function").ok_or(ReplyError::CallWithoutFunction)?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or(ReplyError::CallWithoutName)?;
            let args = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) if !v.is_null() => v.to_string(),
                _ => "{}".to_owned(),
            };
            calls.push((name.to_owned(), args));
        }
    }
    let tokens = body
        .get("usage")
        .and_then(|u| u.get("total_tokens"))
        .and_then(Value::as_u64);
    Ok(Reply {
        content,
        calls,
        tokens,
    })
}

/// A Chat Completions response body [`parse_reply`] cannot read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// No `choices[0].message`.
    #[error("the response has no `choices[0].message`")]
    NoMessage,
    /// An entry of `tool_calls` without `function`.
    #[error("a tool call without `function`")]
    CallWithoutFunction,
    /// A `function` without `name`.
    #[error("a tool call without a function name")]
    CallWithoutName,
}

/// The error message of an error response body (`{"error": {"message": ...}}`), if any.
pub fn error_message(body: &Value) -> Option<String> {
    let e = body.get("error")?;
    Some(match e.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => e.as_str().map_or_else(|| e.to_string(), str::to_owned),
    })
}

fn is_function_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `s` with every character outside `[A-Za-z0-9_-]` replaced by `_`, cut to 64 bytes.
fn function_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    out
}

fn schema_name(s: &str) -> String {
    let base = s.rsplit('/').next().unwrap_or(s);
    function_name(base.strip_suffix(".json").unwrap_or(base))
}

fn unique(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let cut = base.len().min(64 - suffix.len());
            format!("{}{suffix}", &base[..cut])
        })
        .find(|n| !taken(n))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ModelRequest {
        ModelRequest {
            prompt: "p".into(),
            provider: "default".into(),
            system: "Be brief.".into(),
            input: json!({"b": 2, "a": 1}),
            history: vec![],
            parameters: json!({"temperature": 0.2, "top_k": 40}),
            tools: ModelRequest::functions(
                [
                    ("lookup", "lookup", "Look up.", None),
                    ("other", "lookup", "Same name.", None),
                    ("a.b", "bad name!", "", None),
                ]
                .into_iter(),
            ),
            events: vec![],
            output_schema: None,
        }
    }

    #[test]
    fn function_names_are_valid_and_unique() {
        let names: Vec<String> = request().tools.into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["lookup", "other", "a_b"]);
        let taken = ModelRequest::functions([("t", "transition", "", None)].into_iter());
        assert_eq!(taken[0].name, "t");
    }

    #[test]
    fn body_sends_only_the_schemas_parameters() {
        let mut r = request();
        r.parameters = json!({"model": "Z", "n": 9, "stream": true, "messages": [],
                              "temperature": 0.5, "max_tokens": 10});
        let body = r.body("cheap", &[], true);
        assert_eq!(body["model"], "cheap");
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["max_tokens"], 10);
        for k in ["n", "stream"] {
            assert!(body.get(k).is_none(), "{k}: {body}");
        }
        assert!(body["messages"].as_array().is_some_and(|m| !m.is_empty()));
    }

    #[test]
    fn body_has_system_user_parameters_and_tools() {
        let body = request().body("m", &[], true);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(body["messages"][1]["content"], r#"{"a":1,"b":2}"#);
        assert_eq!(body["temperature"], 0.2);
        assert!(body.get("top_k").is_none());
        assert_eq!(request().body("m", &[], false)["top_k"], 40);
        assert_eq!(body["tools"][2]["function"]["name"], "a_b");
    }

    #[test]
    fn tool_loop_history_pairs_ids() {
        let mut r = request();
        r.history = vec![
            json!({"input": "hi", "output": {"x": 1}}),
            json!({"tool_calls": [{"name": "other", "args": {"q": 1}}, {"name": "zzz", "args": {}}]}),
            json!({"tool_result": {"name": "other", "output": "found"}}),
            json!({"tool_result": {"name": "zzz", "error": "tool not available"}}),
        ];
        let m = &r.body("m", &[], true)["messages"];
        assert_eq!(m[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(m[2], json!({"role": "assistant", "content": r#"{"x":1}"#}));
        assert_eq!(m[3]["role"], "user");
        assert_eq!(m[4]["tool_calls"][0]["function"]["name"], "other");
        assert_eq!(m[4]["tool_calls"][0]["function"]["arguments"], r#"{"q":1}"#);
        assert_eq!(m[4]["tool_calls"][1]["function"]["name"], "zzz");
        assert_eq!(
            m[5],
            json!({"role": "tool", "tool_call_id": "call_0_0", "content": "found"})
        );
        assert_eq!(m[6]["tool_call_id"], "call_0_1");
        assert_eq!(m[6]["content"], "error: tool not available");
    }

    #[test]
    fn replies_are_read() {
        let body = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":1}"}}
        ]}}], "usage": {"total_tokens": 12}});
        let r = parse_reply(&body).unwrap();
        assert_eq!(r.calls, [("lookup".to_owned(), r#"{"q":1}"#.to_owned())]);
        assert_eq!((r.content, r.tokens), (None, Some(12)));
        assert!(parse_reply(&json!({"choices": []})).is_err());
        assert_eq!(
            error_message(&json!({"error": {"message": "bad key"}})).as_deref(),
            Some("bad key")
        );
    }
}
