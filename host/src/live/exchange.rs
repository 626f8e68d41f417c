//! One model call as a sans-IO exchange: the host asks [`ModelExchange::body`] what to
//! send, posts it however it likes (the blocking [`Transport`](super::Transport), or an
//! async client), and hands the reply to [`ModelExchange::reply`], which either gives the
//! call's [`Answer`] or asks for another round (a model that named an event outside the
//! allowed list is told so and asked again). So the blocking live host and the batch
//! engine's async host send the same bytes and read replies the same way.

use packc_vm::{Answer, ToolRequest};
use serde_json::{json, Value};

use super::openai::{self, ModelRequest};
use super::{LiveHost, ModelEndpoint};

/// A model call in progress: built by [`LiveHost::exchange`].
pub struct ModelExchange<'a> {
    host: &'a LiveHost,
    req: &'a ModelRequest,
    endpoint: &'a ModelEndpoint,
    transition: String,
    /// The host's own messages after the request's (the event re-asks).
    extra: Vec<Value>,
    round: u32,
    tokens: u64,
}

impl LiveHost {
    /// Starts model call `req`; an error answer when its provider is not bound (saying
    /// how to bind it).
    pub fn exchange<'a>(&'a self, req: &'a ModelRequest) -> Result<ModelExchange<'a>, Answer> {
        let Some(endpoint) = self.endpoint(&req.provider) else {
            let how = if req.provider == "default" {
                "pass --provider openai --model NAME".to_owned()
            } else {
                format!(
                    "bind it with --bind-provider {}=URL,model=NAME",
                    req.provider
                )
            };
            return Err(Answer::Error(format!(
                "model call for prompt `{}`: provider `{}` is not bound ({how})",
                req.prompt, req.provider
            )));
        };
        Ok(ModelExchange {
            host: self,
            req,
            endpoint,
            transition: req.transition_name(),
            extra: Vec::new(),
            round: 0,
            tokens: 0,
        })
    }
}

impl ModelExchange<'_> {
    /// Where to POST: `<base_url>/chat/completions`.
    pub fn url(&self) -> String {
        self.endpoint.url()
    }

    /// The request headers besides the content type: the bearer token, when the endpoint
    /// has a key.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        if let Some(key) = &self.endpoint.api_key {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        headers
    }

    /// How errors name this call: "model call for prompt `p`".
    pub fn what(&self) -> String {
        format!("model call for prompt `{}`", self.req.prompt)
    }

    /// The body of this round's request.
    pub fn body(&self) -> Value {
        self.req
            .body(&self.endpoint.model, &self.extra, self.endpoint.is_openai())
    }

    /// The tokens the replies so far reported.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Takes this round's reply: the parsed JSON body, or the error of the POST (which
    /// may start with "`what` failed: ", taken off: the run names the failed call
    /// itself). `Some(answer)` ends the call (not yet redacted:
    /// [`LiveHost::redact`]); `None` asks for another round: post [`ModelExchange::body`]
    /// again.
    pub fn reply(&mut self, reply: Result<Value, String>) -> Option<Answer> {
        let reply = match reply {
            Ok(v) => v,
            Err(e) => {
                let prefix = format!("{} failed: ", self.what());
                let e = e.strip_prefix(&prefix).map_or(e.clone(), str::to_owned);
                return Some(Answer::Error(e));
            }
        };
        let reply = match openai::parse_reply(&reply) {
            Ok(r) => r,
            Err(e) => return Some(Answer::Error(e.to_string())),
        };
        let req = self.req;
        self.tokens += reply.tokens.unwrap_or(0);
        let transition = self.transition.as_str();
        let is_transition = |name: &str| !req.events.is_empty() && name == transition;
        let mut requests = Vec::new();
        for (name, args) in reply.calls.iter().filter(|(n, _)| !is_transition(n)) {
            let args: Value = match serde_json::from_str(args) {
                Ok(a) => a,
                Err(e) => {
                    return Some(Answer::Error(format!(
                        "the model called `{name}` with arguments that are not JSON ({e})"
                    )))
                }
            };
            requests.push(ToolRequest {
                name: req.key_of(name).unwrap_or(name).to_owned(),
                args,
            });
        }
        if !requests.is_empty() {
            return Some(Answer::ToolCalls(requests));
        }
        let output = match self
            .host
            .output_value(reply.content.as_deref(), req.output_schema.as_ref())
        {
            Ok(v) => v,
            Err(e) => return Some(Answer::Error(e)),
        };
        let Some((_, args)) = reply.calls.iter().find(|(n, _)| is_transition(n)) else {
            return Some(Answer::Output {
                output,
                event: None,
            });
        };
        let named = serde_json::from_str::<Value>(args)
            .ok()
            .and_then(|a| a.get("event").and_then(Value::as_str).map(str::to_owned));
        match named {
            Some(e) if req.events.contains(&e) => Some(Answer::Output {
                output,
                event: Some(e),
            }),
            named => {
                let shown = named.as_deref().unwrap_or("(none)");
                let retries = self.host.config().event_retries;
                if self.round >= retries {
                    return Some(Answer::Error(format!(
                        "the model named event `{shown}`, not one of {}, {} times",
                        req.events.join(", "),
                        self.round + 1
                    )));
                }
                let id = format!("transition_{}", self.round);
                self.extra.push(json!({"role": "assistant", "content": reply.content, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": transition, "arguments": args}}
                ]}));
                self.extra.push(
                    json!({"role": "tool", "tool_call_id": id, "content": format!(
                        "error: `{shown}` is not an event here; call {transition} with one of: {}",
                        req.events.join(", ")
                    )}),
                );
                self.round += 1;
                None
            }
        }
    }
}
