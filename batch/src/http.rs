//! The async HTTP side of the batch host: one pooled client (HTTP/2 where the server
//! offers it) and the [`Gate`] every model request passes, shared by all rows.
//!
//! The gate holds the global limits: at most `concurrency` requests in flight, requests
//! spaced to stay under `rpm` requests a minute, and no request while the tokens reported
//! in the last minute are past `tpm`. A 429 closes the gate for everyone: its
//! `Retry-After` (or the back-off) pauses every row's next request, not only the one that
//! got it. Retries follow the blocking transport's rules (429, 5xx and timeouts, doubling
//! back-off, `Retry-After` honoured up to the call's timeout, redirects not followed), and
//! its error texts; a 429 does not use up `--retries` (the gate paces the batch), up to
//! [`MAX_RATE_LIMITED`] of them per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use packc_host::live::redact::shown_url;
use packc_host::live::transport::{judge, next_wait, retry_after, Attempt};
use packc_host::live::TransportConfig;
use serde_json::Value;
use tokio::sync::{Mutex, Semaphore, SemaphorePermit};

/// The most 429 answers one request takes before its call fails.
pub const MAX_RATE_LIMITED: u32 = 32;

/// The global limits on model requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// The most model requests in flight at once (at least 1).
    pub concurrency: usize,
    /// The most requests a minute; `None`: no limit.
    pub rpm: Option<u32>,
    /// The most tokens a minute (as the API reports them); `None`: no limit.
    pub tpm: Option<u64>,
}

/// What every model request passes through.
pub struct Gate {
    permits: Semaphore,
    /// The earliest time of the next request under `rpm`, and the spacing.
    pace: Option<(Mutex<Instant>, Duration)>,
    /// Tokens left in the minute's budget (negative: spent past it), refilled at `tpm`
    /// a minute, and when it was last refilled.
    tokens: Option<(std::sync::Mutex<(f64, Instant)>, u64)>,
    /// No request starts before this time (the last 429's back-off).
    paused_until: std::sync::Mutex<Option<Instant>>,
    /// 429 answers taken so far.
    rate_limited: AtomicU64,
    /// Requests sent again after another retryable failure (5xx, a timeout, no
    /// connection).
    retried: AtomicU64,
}

impl Gate {
    /// A gate with `limits`.
    pub fn new(limits: Limits) -> Gate {
        Gate {
            permits: Semaphore::new(limits.concurrency.max(1)),
            pace: limits.rpm.filter(|r| *r > 0).map(|rpm| {
                (
                    Mutex::new(Instant::now()),
                    Duration::from_secs_f64(60.0 / f64::from(rpm)),
                )
            }),
            tokens: limits
                .tpm
                .filter(|t| *t > 0)
                .map(|tpm| (std::sync::Mutex::new((tpm as f64, Instant::now())), tpm)),
            paused_until: std::sync::Mutex::new(None),
            rate_limited: AtomicU64::new(0),
            retried: AtomicU64::new(0),
        }
    }

    /// How long no request starts yet, while a 429's back-off holds the gate closed.
    pub fn paused_for(&self) -> Option<Duration> {
        self.paused().map(|until| until - Instant::now())
    }

    /// The 429 answers taken so far.
    pub fn rate_limited(&self) -> u64 {
        self.rate_limited.load(Ordering::Relaxed)
    }

    /// The requests sent again so far after a 5xx, a timeout or a failed connection
    /// (429s apart: see [`Gate::rate_limited`]).
    pub fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }

    /// Waits until a request may start; the permit ends it.
    pub async fn enter(&self) -> SemaphorePermit<'_> {
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the gate is never closed");
        loop {
            self.wait_pause().await;
            self.wait_tokens().await;
            if let Some((next, spacing)) = &self.pace {
                let at = {
                    let mut next = next.lock().await;
                    let at = (*next).max(Instant::now());
                    *next = at + *spacing;
                    at
                };
                tokio::time::sleep_until(at).await;
            }
            if self.paused().is_none() {
                return permit;
            }
        }
    }

    /// Closes the gate for `wait` (a 429's back-off), unless it is closed longer already.
    pub fn pause(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut p = self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        if p.is_none_or(|t| t < until) {
            *p = Some(until);
        }
    }

    /// Counts `tokens` against the minute's budget.
    pub fn spend(&self, tokens: u64) {
        if let Some((bucket, _)) = &self.tokens {
            let mut b = bucket.lock().unwrap_or_else(|e| e.into_inner());
            b.0 -= tokens as f64;
        }
    }

    fn paused(&self) -> Option<Instant> {
        let p = *self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        p.filter(|t| *t > Instant::now())
    }

    async fn wait_pause(&self) {
        while let Some(until) = self.paused() {
            tokio::time::sleep_until(until).await;
        }
    }

    async fn wait_tokens(&self) {
        let Some((bucket, tpm)) = &self.tokens else {
            return;
        };
        let per_sec = *tpm as f64 / 60.0;
        loop {
            let wait = {
                let mut b = bucket.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                b.0 = (b.0 + now.duration_since(b.1).as_secs_f64() * per_sec).min(*tpm as f64);
                b.1 = now;
                if b.0 > 0.0 {
                    return;
                }
                Duration::from_secs_f64((-b.0 + 1.0) / per_sec)
            };
            tokio::time::sleep(wait.min(Duration::from_secs(1))).await;
        }
    }
}

/// A JSON-over-HTTP client for model calls, shared by all rows.
pub struct Client {
    http: reqwest::Client,
    config: TransportConfig,
    /// The limits every request passes.
    pub gate: Gate,
}

impl Client {
    /// A client with the call timeouts and retries of `config` and the gate's `limits`.
    pub fn new(config: TransportConfig, limits: Limits) -> Result<Client, String> {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(limits.concurrency.max(1))
            .build()
            .map_err(|e| format!("cannot start the HTTP client: {e}"))?;
        Ok(Client {
            http,
            config,
            gate: Gate::new(limits),
        })
    }

    /// POSTs `body` to `url` through the gate, retrying as configured; the JSON answer,
    /// or an error starting with "`what` failed: ". Header values and URL credentials
    /// never appear in an error written here.
    pub async fn post_json(
        &self,
        what: &str,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> Result<Value, String> {
        let text = body.to_string();
        let (mut attempt, mut limited) = (0u32, 0u32);
        loop {
            let result = {
                let _permit = self.gate.enter().await;
                self.attempt(url, headers, &text).await
            };
            let (error, after, rate_limited) = match result {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fatal(e) => return Err(format!("{what} failed: {e}")),
                Attempt::Retry {
                    error,
                    after,
                    rate_limited,
                } => (error, after, rate_limited),
            };
            if rate_limited {
                self.gate.rate_limited.fetch_add(1, Ordering::Relaxed);
            }
            let tries = attempt + limited;
            let spent = if rate_limited {
                limited >= MAX_RATE_LIMITED
            } else {
                attempt >= self.config.retries
            };
            if spent {
                let tries = match tries {
                    0 => String::new(),
                    n => format!(" (after {} attempts)", n + 1),
                };
                return Err(format!("{what} failed: {error}{tries}"));
            }
            let n = if rate_limited { limited } else { attempt };
            let backoff = self.config.backoff.saturating_mul(1 << n.min(16));
            let max = self.config.max_backoff.min(self.config.timeout);
            let wait = next_wait(after, backoff, max);
            if rate_limited {
                // Everyone waits, then this request goes through the gate again.
                self.gate.pause(wait);
                limited += 1;
            } else {
                self.gate.retried.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        }
    }

    async fn attempt(&self, url: &str, headers: &[(String, String)], body: &str) -> Attempt {
        let shown = shown_url(url);
        let mut req = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body.to_owned());
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return Attempt::timed_out(format!(
                    "timed out calling {shown}: no complete answer within the call timeout of {} s",
                    self.config.timeout.as_secs_f64()
                ))
            }
            Err(e) if e.is_connect() => {
                return Attempt::Fatal(format!("cannot connect to {shown}: connection failed"))
            }
            Err(e) => return Attempt::Fatal(format!("cannot call {shown}: {}", e.without_url())),
        };
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let location = header("location");
        let retry_after = retry_after(header("retry-after").as_deref());
        let text = match resp.text().await {
            Ok(t) => t,
            Err(e) if e.is_timeout() => {
                return Attempt::timed_out(format!(
                    "timed out after {:?} reading the answer of {shown}",
                    self.config.timeout
                ))
            }
            Err(e) => {
                return Attempt::Fatal(format!(
                    "cannot read the answer of {shown}: {}",
                    e.without_url()
                ))
            }
        };
        judge(&shown, status, location.as_deref(), retry_after, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_are_spaced_under_rpm() {
        let gate = Gate::new(Limits {
            concurrency: 8,
            rpm: Some(600),
            tpm: None,
        });
        let start = Instant::now();
        for _ in 0..11 {
            drop(gate.enter().await);
        }
        // 11 requests at 10 a second: the last one 1 s after the first.
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(999), "{took:?}");
        assert!(took < Duration::from_millis(1100), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_every_request() {
        let gate = Gate::new(Limits {
            concurrency: 8,
            rpm: None,
            tpm: None,
        });
        gate.pause(Duration::from_secs(2));
        let start = Instant::now();
        drop(gate.enter().await);
        assert!(start.elapsed() >= Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn spent_tokens_hold_requests_until_the_budget_refills() {
        let gate = Gate::new(Limits {
            concurrency: 8,
            rpm: None,
            tpm: Some(600),
        });
        drop(gate.enter().await);
        gate.spend(1200);
        let start = Instant::now();
        drop(gate.enter().await);
        // 600 over the budget at 10 a second: about a minute.
        let took = start.elapsed();
        assert!(took >= Duration::from_secs(59), "{took:?}");
        assert!(took < Duration::from_secs(62), "{took:?}");
    }
}
