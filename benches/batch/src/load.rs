//! A closed-loop HTTP/1.1 load generator: `connections` keep-alive connections, each
//! sending the next request as soon as the last one is answered, for a fixed time.
//!
//! It measures the mock's ceiling alone, with the request `packc batch` sends most (the
//! classifier's, about 900 bytes). Requests answered in the first `warmup` are not
//! counted, so connection set-up does not lower the rate.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// What one load run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Connections kept busy.
    pub connections: usize,
    /// Requests answered `200` after the warm-up.
    pub answered: u64,
    /// Requests that failed (a status other than `200`, or a broken connection).
    pub failed: u64,
    /// The time they were counted over (the run less its warm-up).
    pub counted: Duration,
    /// Median request latency (microseconds), over the counted requests.
    pub p50_us: u64,
    /// 99th percentile request latency (microseconds).
    pub p99_us: u64,
}

impl LoadReport {
    /// Requests per second over the counted time.
    pub fn rate(&self) -> f64 {
        self.answered as f64 / self.counted.as_secs_f64()
    }
}

/// A classifier request of RFC 0010 example 2, as a Chat Completions client sends it.
pub fn classify_request() -> Bytes {
    let text = "Deep Residual Learning for Image Recognition. Kaiming He, Xiangyu Zhang, Shaoqing Ren, Jian Sun. Abstract: We present a residual learning framework that eases the training of substantially deeper networks.";
    let body = serde_json::json!({
        "model": "mock",
        "messages": [
            {"role": "system", "content": format!("Classify the document into exactly one type: research_paper, technical_report, manual or general. Return JSON: {{\"type\": <type>, \"confidence\": <0..1>}}.\n\nDocument:\n{text}")},
            {"role": "user", "content": text},
        ],
        "temperature": 0.0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "classify", "strict": false, "schema": {"type": "object", "required": ["type"]}}},
    });
    Bytes::from(body.to_string())
}

/// Keeps `connections` connections to `addr` busy for `warmup + measure`, then reports.
pub async fn run(
    addr: SocketAddr,
    connections: usize,
    warmup: Duration,
    measure: Duration,
) -> anyhow::Result<LoadReport> {
    let body = classify_request();
    let start = Instant::now();
    let counted_from = start + warmup;
    let deadline = counted_from + measure;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let body = body.clone();
        tasks.spawn(connection(addr, body, counted_from, deadline));
    }
    let mut latencies = Vec::new();
    let mut failed = 0;
    while let Some(done) = tasks.join_next().await {
        let (mut l, f) = done?;
        latencies.append(&mut l);
        failed += f;
    }
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as u64
    };
    Ok(LoadReport {
        connections,
        answered: latencies.len() as u64,
        failed,
        counted: measure,
        p50_us: at(0.50),
        p99_us: at(0.99),
    })
}

/// One connection's loop: the latencies (µs) of the requests answered inside the counted
/// window, and how many failed.
async fn connection(
    addr: SocketAddr,
    body: Bytes,
    counted_from: Instant,
    deadline: Instant,
) -> (Vec<u32>, u64) {
    let mut latencies = Vec::new();
    let mut failed = 0;
    while Instant::now() < deadline {
        let Ok(stream) = TcpStream::connect(addr).await else {
            failed += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok((mut sender, conn)) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
        else {
            failed += 1;
            continue;
        };
        tokio::spawn(conn);
        while Instant::now() < deadline {
            let request = Request::post("/v1/chat/completions")
                .header(hyper::header::HOST, "127.0.0.1")
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .body(Full::new(body.clone()))
                .expect("a fixed, valid request");
            let sent = Instant::now();
            let ok = match sender.send_request(request).await {
                Ok(response) => {
                    let status = response.status();
                    response.into_body().collect().await.is_ok() && status.is_success()
                }
                Err(_) => false,
            };
            let now = Instant::now();
            if !ok {
                failed += 1;
                break; // a fresh connection
            }
            if now >= counted_from && now < deadline {
                latencies.push((now - sent).as_micros().min(u32::MAX as u128) as u32);
            }
        }
    }
    (latencies, failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_mock_answers_every_request_after_its_latency() {
        let server = crate::mock::start(0, Duration::from_millis(20))
            .await
            .unwrap();
        let report = run(
            server.addr,
            4,
            Duration::from_millis(50),
            Duration::from_millis(400),
        )
        .await
        .unwrap();
        assert_eq!(report.failed, 0);
        assert!(report.answered > 0);
        assert!(report.p50_us >= 20_000, "p50 {} µs", report.p50_us);
        // Warm-up requests are answered but not counted.
        assert!(server.counters.answered() >= report.answered);
        assert_eq!(
            server
                .counters
                .refused
                .load(std::sync::atomic::Ordering::Relaxed),
            0
        );
    }
}
