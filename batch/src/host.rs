//! The async live host: what a row's calls become. Model calls go through the shared
//! [`Client`] (its gate holds the global limits) and are read by the same
//! [`ModelExchange`](packc_host::live::ModelExchange) as the blocking live host, so the
//! requests, the answers, the API-key routing and the redaction are the same. Tool,
//! guard and extension calls run the blocking host's bindings on tokio's blocking pool,
//! at most `tool_concurrency` at once.

use std::sync::Arc;

use packc_host::live::{Job, LiveConfig, LiveHost};
use packc_vm::Answer;
use tokio::sync::Semaphore;

use crate::http::{Client, Limits};

/// The async host shared by all rows of a batch.
pub struct AsyncHost {
    live: LiveHost,
    client: Client,
    tools: Semaphore,
}

impl AsyncHost {
    /// A host for `config`, with the global model-call `limits` and at most
    /// `tool_concurrency` tool calls at once.
    pub fn new(
        config: LiveConfig,
        limits: Limits,
        tool_concurrency: usize,
    ) -> Result<AsyncHost, String> {
        let client = Client::new(config.transport.clone(), limits)?;
        Ok(AsyncHost {
            live: LiveHost::new(config),
            client,
            tools: Semaphore::new(tool_concurrency.max(1)),
        })
    }

    /// The blocking live host behind it (its configuration, its tool bindings).
    pub fn live(&self) -> &LiveHost {
        &self.live
    }

    /// The shared HTTP client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Carries out one call; the answer (redacted as the blocking host redacts) and the
    /// tokens used.
    pub async fn answer(self: Arc<Self>, job: Job) -> (Answer, u64) {
        let (mut answer, tokens) = match &job {
            Job::Model(req) => self.model(req).await,
            _ => {
                let _permit = self.tools.acquire().await.expect("never closed");
                let host = self.live.clone();
                let job = job.clone();
                match tokio::task::spawn_blocking(move || host.answer(&job)).await {
                    Ok(done) => return done,
                    Err(e) => (
                        Answer::Error(format!("the host failed carrying out this call: {e}")),
                        0,
                    ),
                }
            }
        };
        self.live.redact(&job, &mut answer);
        (answer, tokens)
    }

    async fn model(&self, req: &packc_host::live::ModelRequest) -> (Answer, u64) {
        let mut exchange = match self.live.exchange(req) {
            Ok(x) => x,
            Err(unbound) => return (unbound, 0),
        };
        let (url, headers, what) = (exchange.url(), exchange.headers(), exchange.what());
        loop {
            let body = exchange.body();
            let reply = self.client.post_json(&what, &url, &headers, &body).await;
            let before = exchange.tokens();
            let answer = exchange.reply(reply);
            self.client.gate.spend(exchange.tokens() - before);
            if let Some(answer) = answer {
                return (answer, exchange.tokens());
            }
        }
    }
}
