//! How a live host is set up: where model calls go ([`ModelEndpoint`]), the bindings,
//! transport and limits of a run ([`LiveConfig`]), and in-process host validators
//! ([`GuardHandler`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::preflight::{extension_kinds, host_guard_types};
use super::redact;
use super::tools::ToolBindings;
use super::transport::TransportConfig;

/// Where model calls go.
#[derive(Clone, Debug)]
pub struct ModelEndpoint {
    /// The API base, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`;
    /// requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The API key, sent as a bearer token; `None` for servers that need none.
    pub api_key: Option<String>,
}

impl ModelEndpoint {
    /// OpenAI's own API base.
    pub const OPENAI: &'static str = "https://api.openai.com/v1";

    /// The host OpenAI's own API is served from.
    pub const OPENAI_HOST: &'static str = "api.openai.com";

    /// The path every model call adds to the base URL.
    pub const PATH: &'static str = "/chat/completions";

    /// Where model calls go: `<base_url>/chat/completions`.
    pub fn url(&self) -> String {
        format!("{}{}", self.base_url.trim_end_matches('/'), Self::PATH)
    }

    /// The base to give instead of `base_url` when it already ends with the path the
    /// host adds ([`ModelEndpoint::PATH`]), which would be doubled; `None` otherwise.
    ///
    /// ```
    /// use packc_host::live::ModelEndpoint;
    /// let given = "http://127.0.0.1:8080/v1/chat/completions/";
    /// assert_eq!(ModelEndpoint::base_of(given), Some("http://127.0.0.1:8080/v1"));
    /// assert_eq!(ModelEndpoint::base_of("http://127.0.0.1:8080/v1"), None);
    /// ```
    pub fn base_of(base_url: &str) -> Option<&str> {
        base_url.trim_end_matches('/').strip_suffix(Self::PATH)
    }

    /// Whether this is OpenAI's own API (which refuses parameters such as `top_k`): the
    /// URL's host is [`ModelEndpoint::OPENAI_HOST`].
    pub fn is_openai(&self) -> bool {
        url_host(&self.base_url).is_some_and(|h| h.eq_ignore_ascii_case(Self::OPENAI_HOST))
    }
}

/// The host of a URL (`https://user@api.openai.com:443/v1` → `api.openai.com`; an IPv6
/// address without its brackets); `None` when it has none.
pub fn url_host(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host_port.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// Whether `host` is this machine: `localhost`, 127.0.0.0/8 or `::1`.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl std::fmt::Display for ModelEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}", self.model, redact::shown_url(&self.base_url))
    }
}

/// The most worker threads [`LiveHost::drive`](super::LiveHost::drive) starts
/// ([`LiveConfig::concurrency`]): calls wait on the network, so more threads buy nothing
/// but the risk of exhausting the system's.
pub const MAX_CONCURRENCY: usize = 256;

/// How the live host works.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Where model calls on the `default` provider go, unless `providers` binds
    /// `default`; `None`: every such call is a `host_error` saying so.
    pub model: Option<ModelEndpoint>,
    /// Per provider key (`requires.providers`, RFC 0017): where the calls routed to that
    /// key go. [`provider_faults`](crate::live::preflight::provider_faults) lists the keys a pack references that are unbound.
    pub providers: std::collections::BTreeMap<String, ModelEndpoint>,
    /// The tool bindings.
    pub tools: ToolBindings,
    /// Timeouts and retries of model calls.
    pub transport: TransportConfig,
    /// The most calls in flight at once (the worker pool's size), at least 1 and at most
    /// [`MAX_CONCURRENCY`]. Each worker is a thread, started when a call finds every
    /// worker busy: a run never has more workers than calls in flight at once.
    pub concurrency: usize,
    /// How many times a model that names an event outside the allowed list is asked
    /// again before the call fails.
    pub event_retries: u32,
    /// Host validators served by the embedder's own code, by validator type; they take
    /// precedence over `tools.guards` bindings.
    pub guard_handlers: BTreeMap<String, GuardHandler>,
    /// Keep what a recording needs ([`LiveRun::recording`](crate::live::LiveRun::recording): every answer keyed by its
    /// call, and the clock readings); off (the default), the recording stays empty and no
    /// call is keyed.
    pub record: bool,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            model: None,
            providers: std::collections::BTreeMap::new(),
            tools: ToolBindings::default(),
            guard_handlers: BTreeMap::new(),
            transport: TransportConfig::default(),
            concurrency: 4,
            event_retries: 2,
            record: false,
        }
    }
}

/// A host validator implemented in Rust: given the validator's params and the text,
/// `Ok(true)` passes it, `Ok(false)` triggers it, an error fails closed (triggers it).
///
/// ```
/// use packc_host::live::{GuardHandler, LiveConfig};
/// let mut config = LiveConfig::default();
/// config.guard_handlers.insert(
///     "no_shouting".into(),
///     GuardHandler::new(|_params, text| Ok(text.to_uppercase() != text)),
/// );
/// ```
#[derive(Clone)]
pub struct GuardHandler(pub Arc<GuardFn>);

/// The function behind a [`GuardHandler`].
pub type GuardFn = dyn Fn(&Value, &str) -> Result<bool, String> + Send + Sync;

impl GuardHandler {
    /// Wraps a closure.
    pub fn new(f: impl Fn(&Value, &str) -> Result<bool, String> + Send + Sync + 'static) -> Self {
        GuardHandler(Arc::new(f))
    }
}

impl std::fmt::Debug for GuardHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GuardHandler(..)")
    }
}

impl LiveConfig {
    /// The extension step kinds `module` uses that no `extensions:` binding serves.
    pub fn unbound_extensions(&self, module: &ir_spec::Module) -> Vec<String> {
        extension_kinds(module)
            .into_iter()
            .filter(|k| !self.tools.extensions.contains_key(k))
            .collect()
    }

    /// The host validator types `module` uses that neither a handler nor a `guards:`
    /// binding serves. A live run must refuse to start when there is one (fail closed).
    pub fn unbound_guards(&self, module: &ir_spec::Module) -> Vec<String> {
        host_guard_types(module)
            .into_iter()
            .filter(|t| !self.guard_handlers.contains_key(t) && !self.tools.guards.contains_key(t))
            .collect()
    }
}
