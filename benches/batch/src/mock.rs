//! A loopback OpenAI-compatible Chat Completions server that answers RFC 0010 Example 2.
//!
//! `POST /v1/chat/completions` waits a fixed latency, then answers by the request's system
//! prompt, found by a substring search of the raw body (no JSON parse, so the mock spends
//! its CPU on HTTP, not on reading what it is asked):
//!
//! | system prompt starts with | answer (the message's `content`) |
//! | --- | --- |
//! | `Classify the document` | `{"type":"research_paper",...}` when the body mentions `Abstract`, else `{"type":"general",...}` |
//! | `Extract from this research paper` | a title, authors, summary and findings |
//! | `Extract a one-sentence summary` | a summary and entities |
//!
//! Any other body is answered `400`, any other path `404`. The answers are built once and
//! shared, so a request costs the HTTP exchange, the search and one timer. HTTP/1.1 with
//! keep-alive, and HTTP/2 with prior knowledge, on the same port.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use memchr::memmem;
use tokio::net::{TcpListener, TcpSocket};

/// What the mock has answered so far.
#[derive(Debug, Default)]
pub struct Counters {
    /// Chat completion requests answered `200`.
    pub answered: AtomicU64,
    /// Requests answered with an error status (unknown path or prompt, unreadable body).
    pub refused: AtomicU64,
    /// Connections accepted.
    pub connections: AtomicU64,
}

impl Counters {
    /// The number of requests answered `200` so far.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

/// The answers, serialised once.
struct Answers {
    paper_type: Bytes,
    general_type: Bytes,
    paper: Bytes,
    general: Bytes,
}

impl Answers {
    fn new() -> Self {
        Answers {
            paper_type: completion(r#"{"type":"research_paper","confidence":0.93}"#, 64, 9),
            general_type: completion(r#"{"type":"general","confidence":0.88}"#, 58, 9),
            paper: completion(
                r#"{"title":"Deep Residual Learning for Image Recognition","authors":["Kaiming He","Xiangyu Zhang"],"summary":"Residual connections make much deeper networks trainable.","findings":["152-layer residual nets train well"]}"#,
                70,
                48,
            ),
            general: completion(
                r#"{"summary":"The Berlin data center is offline for a power upgrade.","entities":["Berlin data center"]}"#,
                62,
                24,
            ),
        }
    }

    /// The answer to a request body, by the system prompt it carries.
    fn to(&self, body: &[u8]) -> Option<Bytes> {
        let has = |needle: &str| memmem::find(body, needle.as_bytes()).is_some();
        if has("Classify the document") {
            Some(
                if has("Abstract") {
                    &self.paper_type
                } else {
                    &self.general_type
                }
                .clone(),
            )
        } else if has("Extract from this research paper") {
            Some(self.paper.clone())
        } else if has("Extract a one-sentence summary") {
            Some(self.general.clone())
        } else {
            None
        }
    }
}

/// A whole `chat.completion` response whose message content is `content`.
fn completion(content: &str, prompt_tokens: u32, completion_tokens: u32) -> Bytes {
    let body = serde_json::json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "model": "mock",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    });
    Bytes::from(body.to_string())
}

/// A running mock: where it listens and what it has answered.
pub struct Mock {
    /// The address it listens on (loopback, a free port unless one was asked for).
    pub addr: SocketAddr,
    /// What it has answered so far.
    pub counters: Arc<Counters>,
}

impl Mock {
    /// The base URL to give an OpenAI client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

/// Binds `127.0.0.1:port` (0: a free port) with a listen backlog large enough for
/// thousands of connections opened at once, and serves on the current tokio runtime
/// until the runtime shuts down.
pub async fn start(port: u16, latency: Duration) -> std::io::Result<Mock> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    let listener = socket.listen(8192)?;
    let addr = listener.local_addr()?;
    let counters = Arc::new(Counters::default());
    tokio::spawn(accept(
        listener,
        latency,
        Arc::new(Answers::new()),
        counters.clone(),
    ));
    Ok(Mock { addr, counters })
}

async fn accept(
    listener: TcpListener,
    latency: Duration,
    answers: Arc<Answers>,
    counters: Arc<Counters>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors, or a connection reset before it was accepted:
            // wait a moment rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        counters.connections.fetch_add(1, Ordering::Relaxed);
        let answers = answers.clone();
        let counters = counters.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                answer(request, latency, answers.clone(), counters.clone())
            });
            // A client that hangs up mid-request is not the mock's failure.
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    latency: Duration,
    answers: Arc<Answers>,
    counters: Arc<Counters>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let routed = request.uri().path().ends_with("/chat/completions");
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            return Ok(refuse(
                &counters,
                StatusCode::BAD_REQUEST,
                "unreadable body",
            ))
        }
    };
    if !routed {
        return Ok(refuse(&counters, StatusCode::NOT_FOUND, "no such route"));
    }
    let Some(reply) = answers.to(&body) else {
        return Ok(refuse(
            &counters,
            StatusCode::BAD_REQUEST,
            "not a prompt of RFC 0010 example 2",
        ));
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    counters.answered.fetch_add(1, Ordering::Relaxed);
    Ok(json(StatusCode::OK, reply))
}

fn refuse(counters: &Counters, status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    counters.refused.fetch_add(1, Ordering::Relaxed);
    let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}});
    json(status, Bytes::from(body.to_string()))
}

fn json(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(reply: &Bytes) -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_slice(reply).unwrap();
        let text = v["choices"][0]["message"]["content"].as_str().unwrap();
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn classifies_by_the_word_abstract() {
        let answers = Answers::new();
        let paper = br#"{"messages":[{"role":"system","content":"Classify the document into ... Abstract: We present"}]}"#;
        let notice = br#"{"messages":[{"role":"system","content":"Classify the document into ... Q3 maintenance notice"}]}"#;
        assert_eq!(
            content(&answers.to(paper).unwrap())["type"],
            "research_paper"
        );
        assert_eq!(content(&answers.to(notice).unwrap())["type"], "general");
    }

    #[test]
    fn extractors_answer_the_analysis_schema() {
        let answers = Answers::new();
        let paper = content(
            &answers
                .to(b"Extract from this research paper its title")
                .unwrap(),
        );
        assert!(paper["summary"].is_string() && paper["authors"].is_array());
        let general = content(&answers.to(b"Extract a one-sentence summary and").unwrap());
        assert!(general["summary"].is_string() && general["entities"].is_array());
        assert!(answers.to(b"Summarise this").is_none());
    }
}
