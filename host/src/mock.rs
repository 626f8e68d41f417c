//! A mock OpenAI-compatible server on 127.0.0.1 for tests (feature `mock`): it records
//! every request (path, headers, JSON body) and answers each with whatever the test's
//! handler returns, one thread per request, so concurrent calls really overlap.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, parsed as JSON (`null` when it is not JSON).
    pub body: Value,
    /// The client's address: requests on one kept-alive connection share it.
    pub peer: Option<std::net::SocketAddr>,
}

impl Received {
    /// The value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body text.
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(body: Value) -> Reply {
        Reply {
            status: 200,
            headers: vec![],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// A 200 Chat Completions answer whose message has `content`.
    pub fn text(content: &str) -> Reply {
        Reply::json(json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }))
    }

    /// A 200 Chat Completions answer calling functions: `(name, arguments)`.
    pub fn calls(calls: &[(&str, Value)]) -> Reply {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("c{i}"), "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        Reply::json(json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
            "usage": {"total_tokens": 7},
        }))
    }

    /// A status with a raw body.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    /// This reply with a header added.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// This reply, sent after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

type Handler = dyn Fn(usize, &Received) -> Reply + Send + Sync;

/// A running mock server; it stops when dropped.
pub struct MockServer {
    server: Arc<tiny_http::Server>,
    received: Arc<Mutex<Vec<Received>>>,
    port: u16,
}

impl MockServer {
    /// Starts a server on a free port of 127.0.0.1; `handler(n, request)` answers the
    /// `n`-th request (0-based, in arrival order).
    pub fn start(
        handler: impl Fn(usize, &Received) -> Reply + Send + Sync + 'static,
    ) -> MockServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let port = server.server_addr().to_ip().map_or(0, |a| a.port());
        let received = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (s, r) = (server.clone(), received.clone());
        std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let mut text = String::new();
                let _ = request.as_reader().read_to_string(&mut text);
                let got = Received {
                    peer: request.remote_addr().copied(),
                    path: request.url().to_owned(),
                    headers: request
                        .headers()
                        .iter()
                        .map(|h| {
                            (
                                h.field.as_str().as_str().to_ascii_lowercase(),
                                h.value.as_str().to_owned(),
                            )
                        })
                        .collect(),
                    body: serde_json::from_str(&text).unwrap_or(Value::Null),
                };
                let n = {
                    let mut all = r.lock().unwrap();
                    all.push(got.clone());
                    all.len() - 1
                };
                let handler = handler.clone();
                std::thread::spawn(move || {
                    let reply = handler(n, &got);
                    std::thread::sleep(reply.delay);
                    let mut resp =
                        tiny_http::Response::from_string(reply.body).with_status_code(reply.status);
                    for (k, v) in reply.headers {
                        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
                            resp = resp.with_header(h);
                        }
                    }
                    let _ = request.respond(resp);
                });
            }
        });
        MockServer {
            server,
            received,
            port,
        }
    }

    /// The base URL to give a host: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The requests received so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The bodies of the requests received so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.received().into_iter().map(|r| r.body).collect()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}
