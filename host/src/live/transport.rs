//! HTTP for the live host: JSON POSTs with a per-call timeout, and retries with
//! exponential backoff on 429 and 5xx answers and on timeouts, honouring `Retry-After`
//! up to the call's timeout. Redirects are not followed: a 3xx is an error naming where
//! it pointed, so a request and its headers (the API key) go only to the URL given.
//! Credentials in a URL never appear in an error. The client is `ureq` (rustls); nothing
//! here writes HTTP by hand.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// The longest timeout the live host takes (a day): longer ones are refused where they
/// are read (`--timeout`, `timeout_sec`), since a deadline past it would overflow.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A timeout given in seconds, checked: a positive finite number of at most
/// [`MAX_TIMEOUT_SECS`]. `what` names it in the error (`--timeout`, `timeout_sec`).
pub fn timeout_secs(secs: f64, what: &str) -> Result<Duration, TimeoutError> {
    let what = what.to_owned();
    if !(secs.is_finite() && secs > 0.0) {
        return Err(TimeoutError::NotPositive { what, secs });
    }
    if secs > MAX_TIMEOUT_SECS {
        return Err(TimeoutError::PastMaximum { what, secs });
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A timeout [`timeout_secs`] refuses; `what` names it (`--timeout`, `timeout_sec`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TimeoutError {
    /// Zero, negative, or not a finite number.
    #[error("{what} must be a positive number of seconds, not {secs}")]
    NotPositive {
        /// What the timeout is.
        what: String,
        /// The number given.
        secs: f64,
    },
    /// Longer than [`MAX_TIMEOUT_SECS`].
    #[error("{what} of {secs} seconds is past the maximum of {MAX_TIMEOUT_SECS} (a day)")]
    PastMaximum {
        /// What the timeout is.
        what: String,
        /// The number given.
        secs: f64,
    },
}

/// How calls are made and retried.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// The longest one attempt may take, connection and body included.
    pub timeout: Duration,
    /// How many times a failed attempt (429, 5xx, a timeout) is retried.
    pub retries: u32,
    /// The first wait between attempts; each next one doubles it.
    pub backoff: Duration,
    /// The longest wait between attempts, `Retry-After` included; a wait is never longer
    /// than [`TransportConfig::timeout`] either.
    pub max_backoff: Duration,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            timeout: Duration::from_secs(120),
            retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// A JSON-over-HTTP client shared by the worker threads.
#[derive(Clone)]
pub struct Transport {
    agent: ureq::Agent,
    config: TransportConfig,
    cancel: Arc<AtomicBool>,
}

/// A POST's successful result: the JSON body.
pub type PostResult = Result<Value, String>;

impl Transport {
    /// A client with `config`; waits between retries end early when `cancel` is set.
    pub fn new(config: TransportConfig, cancel: Arc<AtomicBool>) -> Transport {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        Transport {
            agent,
            config,
            cancel,
        }
    }

    /// POSTs `body` as JSON to `url` with `headers`, retrying as configured. `what`
    /// names the call in errors ("model call", "tool `x`"). Header values and URL
    /// credentials never appear in an error written here (a body the server echoes them
    /// in is the [`Redactor`](super::redact::Redactor)'s to clean).
    pub fn post_json(
        &self,
        what: &str,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> PostResult {
        let text = body.to_string();
        let mut attempt = 0;
        loop {
            let (retryable, wait, error) = match self.attempt(url, headers, &text) {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fatal(e) => return Err(format!("{what} failed: {e}")),
                Attempt::Retry { error, after, .. } => (true, after, error),
            };
            if !retryable || attempt >= self.config.retries || self.cancel.load(Ordering::Relaxed) {
                let tries = if attempt == 0 {
                    String::new()
                } else {
                    format!(" (after {} attempts)", attempt + 1)
                };
                return Err(format!("{what} failed: {error}{tries}"));
            }
            let backoff = self.config.backoff.saturating_mul(1 << attempt.min(16));
            let max = self.config.max_backoff.min(self.config.timeout);
            let wait = next_wait(wait, backoff, max);
            self.sleep(wait);
            attempt += 1;
        }
    }

    fn sleep(&self, d: Duration) {
        let step = Duration::from_millis(20);
        let mut left = d;
        while !left.is_zero() && !self.cancel.load(Ordering::Relaxed) {
            let s = left.min(step);
            std::thread::sleep(s);
            left -= s;
        }
    }

    fn attempt(&self, url: &str, headers: &[(String, String)], body: &str) -> Attempt {
        let shown = super::redact::shown_url(url);
        let mut req = self
            .agent
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json");
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut resp = match req.send(body) {
            Ok(r) => r,
            Err(e) => return transport_error(&shown, e, self.config.timeout),
        };
        let status = resp.status().as_u16();
        let resp_location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let retry_after = retry_after(
            resp.headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()),
        );
        let text = match resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
        {
            Ok(t) => t,
            Err(e) => {
                return match e {
                    ureq::Error::Timeout(_) => Attempt::timed_out(format!(
                        "timed out after {:?} reading the answer of {shown}",
                        self.config.timeout
                    )),
                    e => Attempt::Fatal(format!("cannot read the answer of {shown}: {e}")),
                }
            }
        };
        judge(&shown, status, resp_location.as_deref(), retry_after, &text)
    }
}

/// What one HTTP attempt came to; shared by the blocking transport and the batch host's
/// async client, so both read answers, name failures and decide on retries alike.
#[derive(Debug)]
pub enum Attempt {
    /// A 2xx answer with a JSON body.
    Done(Value),
    /// A failure that another attempt would not mend; the text says why.
    Fatal(String),
    /// A failure worth another attempt (429, 5xx, a timeout).
    Retry {
        /// What went wrong.
        error: String,
        /// The server's `Retry-After`, when it gave one.
        after: Option<Duration>,
        /// A 429: the server asks every caller to slow down.
        rate_limited: bool,
    },
}

impl Attempt {
    /// A timeout, `error` saying which: worth another attempt, with no `Retry-After`.
    pub fn timed_out(error: String) -> Attempt {
        Attempt::Retry {
            error,
            after: None,
            rate_limited: false,
        }
    }
}

/// `timeout` is the whole call's limit (`--timeout`, a binding's `timeout_sec`), the only
/// timeout set, so ureq's `Timeout(global)` is named by it.
fn transport_error(url: &str, e: ureq::Error, timeout: Duration) -> Attempt {
    match e {
        ureq::Error::Timeout(_) => Attempt::timed_out(format!(
            "timed out calling {url}: no complete answer within the call timeout of {}",
            seconds(timeout)
        )),
        ureq::Error::ConnectionFailed => {
            Attempt::Fatal(format!("cannot connect to {url}: connection failed"))
        }
        ureq::Error::HostNotFound => {
            Attempt::Fatal(format!("cannot connect to {url}: host not found"))
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            Attempt::Fatal(format!("cannot connect to {url}: connection refused"))
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            Attempt::timed_out(format!("timed out calling {url}"))
        }
        e => Attempt::Fatal(format!("cannot call {url}: {e}")),
    }
}

/// A `Retry-After` header's value: seconds (fractions allowed), or an HTTP date, the
/// wait until then (nothing for a date past); `None` when absent, negative, not finite
/// or neither ([`next_wait`] reads a wait of 0 as none).
pub fn retry_after(value: Option<&str>) -> Option<Duration> {
    let value = value?.trim();
    if let Ok(s) = value.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The wait before the next attempt: `after` (the server's `Retry-After`), else
/// `backoff`, at most `max`. A `Retry-After` of 0 counts as none: the back-off paces the
/// retries, which would otherwise come as one burst.
pub fn next_wait(after: Option<Duration>, backoff: Duration, max: Duration) -> Duration {
    after.filter(|d| !d.is_zero()).unwrap_or(backoff).min(max)
}

/// What an answer read in full comes to: `shown` names the endpoint in messages,
/// `location` is the `Location` header, `retry_after` the parsed `Retry-After`
/// ([`retry_after`]), `text` the body.
pub fn judge(
    shown: &str,
    status: u16,
    location: Option<&str>,
    retry_after: Option<Duration>,
    text: &str,
) -> Attempt {
    let json: Result<Value, _> = serde_json::from_str(text);
    if (200..300).contains(&status) {
        return match json {
            Ok(v) => Attempt::Done(v),
            Err(_) => Attempt::Fatal(format!(
                "{shown} answered {status} with a body that is not JSON: {}",
                snippet(text)
            )),
        };
    }
    let detail = match &json {
        Ok(v) => super::openai::error_message(v).unwrap_or_else(|| snippet(text)),
        Err(_) => snippet(text),
    };
    // The hints name the model API's settings: a tool, validator or extension endpoint
    // (bound in a --tools file) gets none.
    let model_api = shown.ends_with(super::ModelEndpoint::PATH);
    let reason = match status {
        401 if model_api => " (check the API key)",
        403 if model_api => " (the key may not be allowed this model or endpoint)",
        404 if model_api => " (check the model name and --base-url)",
        _ => "",
    };
    if (300..400).contains(&status) {
        let to = location.map_or_else(
            || "no Location given".to_owned(),
            |l| format!("to {}", super::redact::shown_url(l)),
        );
        return Attempt::Fatal(format!(
            "{shown} answered {status}, a redirect ({to}); redirects are not followed: give the URL it names if you trust it"
        ));
    }
    let error = format!("{shown} answered {status}{reason}: {detail}");
    if status == 429 || status >= 500 {
        Attempt::Retry {
            error,
            after: retry_after,
            rate_limited: status == 429,
        }
    } else {
        Attempt::Fatal(error)
    }
}

/// The start of a body, for an error message.
fn snippet(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        return "(empty body)".into();
    }
    super::redact::head(t, 200)
}

/// `120 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        assert_eq!(
            retry_after(Some(" 1.5 ")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_after(Some("0")), Some(Duration::ZERO));
        for bad in [None, Some("-1"), Some("NaN"), Some("soon"), Some("")] {
            assert_eq!(retry_after(bad), None, "{bad:?}");
        }
        // A date past is no wait; one ahead is the time until then.
        assert_eq!(
            retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            Some(Duration::ZERO)
        );
        let ahead = std::time::SystemTime::now() + Duration::from_secs(120);
        let wait = retry_after(Some(&httpdate::fmt_http_date(ahead))).unwrap();
        assert!(
            (Duration::from_secs(100)..=Duration::from_secs(120)).contains(&wait),
            "{wait:?}"
        );
        // A `Retry-After: 0` is paced by the back-off; any other by itself, up to the most.
        let (backoff, max) = (Duration::from_millis(500), Duration::from_secs(60));
        assert_eq!(next_wait(Some(Duration::ZERO), backoff, max), backoff);
        assert_eq!(next_wait(None, backoff, max), backoff);
        let short = Duration::from_millis(200);
        assert_eq!(next_wait(Some(short), backoff, max), short);
        assert_eq!(next_wait(Some(Duration::from_secs(600)), backoff, max), max);
    }

    /// The hints of a refused model request name the model API's settings; a tool's
    /// endpoint refusing gets the status and its message alone.
    #[test]
    fn only_the_model_api_gets_model_hints() {
        let fatal = |url: &str, status: u16| match judge(
            url,
            status,
            None,
            None,
            "{\"error\": {\"message\": \"no\"}}",
        ) {
            Attempt::Fatal(e) => e,
            other => panic!("{other:?}"),
        };
        let model = "http://127.0.0.1:9/v1/chat/completions";
        assert_eq!(
            fatal(model, 404),
            format!("{model} answered 404 (check the model name and --base-url): no")
        );
        assert!(fatal(model, 401).contains("401 (check the API key)"));
        let tool = "http://127.0.0.1:9/search";
        assert_eq!(fatal(tool, 404), format!("{tool} answered 404: no"));
        assert_eq!(fatal(tool, 401), format!("{tool} answered 401: no"));
    }

    #[test]
    fn timeouts_are_checked() {
        assert_eq!(timeout_secs(2.5, "t"), Ok(Duration::from_millis(2500)));
        assert!(timeout_secs(MAX_TIMEOUT_SECS, "t").is_ok());
        for bad in [
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e19,
            1e20,
            MAX_TIMEOUT_SECS + 1.0,
        ] {
            let e = timeout_secs(bad, "--timeout").unwrap_err().to_string();
            assert!(e.starts_with("--timeout"), "{e}");
        }
        assert!(timeout_secs(1e20, "x")
            .unwrap_err()
            .to_string()
            .contains("maximum"));
    }
}
