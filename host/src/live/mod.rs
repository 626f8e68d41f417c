//! The live host: model calls over the OpenAI-compatible Chat Completions API, tools
//! bound to commands or HTTP endpoints, answers checked against a step's `output_schema`.
//!
//! The VM is sans-IO, so this is ordinary host code around it. [`LiveHost::drive`] runs a
//! [`Run`] to the end: each newly issued call is copied out of its [`CallView`] into an
//! owned [`Job`] and handed to a bounded pool of worker threads, so the calls of a
//! parallel step go out concurrently; answers are fed back to the run one at a time, in
//! the order they arrive. Embedders with their own scheduler can call
//! [`LiveHost::answer`] on their own threads instead.
//!
//! What the model's answer becomes (`compositions.md` 11.2a, `workflow.md` §1):
//! - function calls → the VM's `tool_calls` answer, function names mapped back to tool
//!   keys; arguments that are not JSON are a `host_error` for the step;
//! - text → the output: parsed and checked when the step declares an embedded
//!   `output_schema` (a parse failure or mismatch is a `host_error` naming the failing
//!   path, so a `retry` modifier re-asks); without one, a text that is a complete JSON
//!   object or array is parsed and any other text stays a string;
//! - in a prompt state with events, the events are offered as the `transition` function
//!   (an enum argument). A call of it names the state's event; an event outside the list
//!   is answered with an error result and the model is asked again, at most
//!   [`LiveConfig::event_retries`] times, so the VM only sees valid events.
//!
//! Every failure (transport, HTTP status, a body that is not JSON, an unbound tool, a
//! worker thread that panicked) is an error answer with a message saying what happened,
//! which the VM turns into a `host_error` for the step (or an error result for the
//! model, for a tool in an agent loop). Answers pass the host's [`Redactor`] before the
//! VM sees them: an error message is redacted of the API key, URL credentials and the
//! bindings' header and `env:` values; a model's answer of the API key and URL
//! credentials (a server may echo them). So none of them appears in a message, trace,
//! recording or model input. A tool's successful result is its data and is left as it is.

mod binding_check;
mod config;
mod exchange;
mod guard_failure;
mod job;
pub mod openai;
mod preflight;
pub mod redact;
pub mod tools;
pub mod transport;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use packc_vm::driver::ScriptItem;
use packc_vm::{Answer, CallId, CallView, ErrorKind, Input, Need, OwnedOutcome, Run, RunError};
use serde_json::{json, Value};

pub use binding_check::BindingReport;
pub use config::{
    is_loopback, url_host, GuardFn, GuardHandler, LiveConfig, ModelEndpoint, MAX_CONCURRENCY,
};
pub use exchange::ModelExchange;
pub use guard_failure::GuardFailure;
pub use job::Job;
pub use openai::{Function, ModelRequest, OutputSchema, ReplyError};
pub use preflight::{
    callable_tools, default_model_site, extension_kinds, host_guard_types, provider_faults,
    unbound_extensions_message, unbound_guards_message, ProviderFaults,
};
pub use redact::Redactor;
pub use tools::{Binding, BindingsError, EnvVar, ToolBindings};
pub use transport::{TimeoutError, Transport, TransportConfig};

use crate::record::{answer_json, record_key, Recording};

/// Counts shown while a run goes on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Model calls issued.
    pub model_calls: u64,
    /// Tool calls issued.
    pub tool_calls: u64,
    /// Tool calls answered with an error (the command failed, the endpoint refused).
    pub tool_failures: u64,
    /// Calls issued and not answered yet.
    pub in_flight: u64,
    /// Tokens used, as the API reported them.
    pub tokens: u64,
}

/// Told what happens while [`LiveHost::drive`] runs (a terminal status line, a log).
pub trait Observer {
    /// The run moved on, a call went out or an answer came back.
    fn update(&mut self, _run: &Run, _stats: &Stats) {}
    /// A tool call failed (already counted in [`Stats::tool_failures`]): the tool key and
    /// the error, which names the exit status and the end of the tool's stderr.
    fn tool_failed(&mut self, _key: &str, _error: &str) {}
    /// A host validator's `guard` call failed or was not answered with a verdict: the
    /// run failed closed (the validator counts as triggered).
    fn guard_failed(&mut self, _failure: &GuardFailure) {}
    /// A call went out (each call once, when it is handed to a worker).
    fn call_sent(&mut self, _call: &CallView<'_>) {}
    /// The answer to call `id` came back; the run is given it next, as it is here.
    fn call_answered(&mut self, _id: CallId, _answer: &Answer) {}
}

/// An observer that ignores everything.
impl Observer for () {}

/// How a live run ended.
#[derive(Debug)]
pub enum Ended {
    /// The run ended without error.
    Done(OwnedOutcome),
    /// The run failed.
    Failed(RunError),
    /// The cancel flag was set (Ctrl-C): the run stopped where it was.
    Interrupted,
}

/// A live run's result: how it ended, the counts, and what a recording needs.
#[derive(Debug)]
pub struct LiveRun {
    /// How it ended.
    pub ended: Ended,
    /// The counts.
    pub stats: Stats,
    /// Every answer, keyed by the call it answered, and the clock readings; empty unless
    /// [`LiveConfig::record`] is on.
    pub recording: Recording,
}

/// The live host. Cheap to clone; clones share the cancel flag and the schema cache.
#[derive(Clone)]
pub struct LiveHost {
    inner: Arc<Inner>,
}

struct Inner {
    config: LiveConfig,
    transport: Transport,
    /// One client per HTTP tool binding, so its calls reuse connections.
    tool_clients: BTreeMap<String, Transport>,
    cancel: Arc<AtomicBool>,
    schemas: Mutex<HashMap<String, Result<Arc<jsonschema::Validator>, String>>>,
    /// The API keys, URL credentials and the bindings' secrets: for error messages.
    redactor: Redactor,
    /// The API keys and URL credentials of every model endpoint (the `default` one and
    /// each provider's): for model answers.
    model_redactor: Redactor,
}

impl LiveHost {
    /// A host with `config`.
    pub fn new(config: LiveConfig) -> LiveHost {
        let cancel = Arc::new(AtomicBool::new(false));
        // The keys and URL credentials of every endpoint a model call may go to: the
        // `default` one and each bound provider's.
        let mut model_secrets = Vec::new();
        for m in config.model.iter().chain(config.providers.values()) {
            model_secrets.extend(m.api_key.clone());
            model_secrets.extend(redact::url_credentials(&m.base_url));
        }
        let mut secrets = config.tools.secrets();
        secrets.extend(model_secrets.iter().cloned());
        LiveHost {
            inner: Arc::new(Inner {
                redactor: Redactor::new(secrets),
                model_redactor: Redactor::new(model_secrets),
                transport: Transport::new(config.transport.clone(), cancel.clone()),
                tool_clients: config.tools.http_clients(&config.transport, &cancel),
                config,
                cancel,
                schemas: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The flag that stops [`LiveHost::drive`] (set it from a Ctrl-C handler).
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.inner.cancel.clone()
    }

    /// The configuration.
    pub fn config(&self) -> &LiveConfig {
        &self.inner.config
    }

    /// Carries out one call (blocking); returns the answer and the tokens used. An
    /// error is redacted of all the host's secrets, a model's answer of the API key and
    /// URL credentials.
    pub fn answer(&self, job: &Job) -> (Answer, u64) {
        let (mut answer, tokens) = self.answer_unredacted(job);
        self.redact(job, &mut answer);
        (answer, tokens)
    }

    /// Redacts the answer to `job` as [`LiveHost::answer`] does: an error of all the
    /// host's secrets, a model's answer of the API key and URL credentials; a tool's,
    /// an extension's or a guard's result is left as it is.
    pub fn redact(&self, job: &Job, answer: &mut Answer) {
        match (&*answer, job) {
            (Answer::Error(_), _) => self.inner.redactor.answer(answer),
            (_, Job::Model(_)) => self.inner.model_redactor.answer(answer),
            // A tool's or an extension's result is its data; a guard's is a verdict.
            (_, Job::Tool { .. } | Job::Extension { .. } | Job::Guard { .. }) => {}
        }
    }

    fn answer_unredacted(&self, job: &Job) -> (Answer, u64) {
        match job {
            Job::Model(req) => self.model_answer(req),
            Job::Tool { key, args } => (
                match self.inner.config.tools.call_via(
                    key,
                    args,
                    &self.inner.config.transport,
                    self.inner.tool_clients.get(key),
                    &self.inner.cancel,
                ) {
                    Ok(output) => Answer::Output {
                        output,
                        event: None,
                    },
                    Err(e) => Answer::Error(e),
                },
                0,
            ),
            Job::Extension {
                kind,
                params,
                input,
            } => {
                let config = &self.inner.config;
                let answer = match config.tools.call_extension(
                    kind,
                    params,
                    input,
                    &config.transport,
                    &self.inner.cancel,
                ) {
                    Ok(output) => Answer::Output {
                        output,
                        event: None,
                    },
                    Err(e) => Answer::Error(e),
                };
                (answer, 0)
            }
            Job::Guard {
                validator,
                params,
                text,
            } => {
                let config = &self.inner.config;
                let result = match config.guard_handlers.get(validator) {
                    Some(handler) => (handler.0)(params, text).map(|pass| json!({"pass": pass})),
                    None => config.tools.call_guard(
                        validator,
                        params,
                        text,
                        &config.transport,
                        &self.inner.cancel,
                    ),
                };
                let answer = match result {
                    Ok(output) => Answer::Output {
                        output,
                        event: None,
                    },
                    Err(e) => Answer::Error(e),
                };
                (answer, 0)
            }
        }
    }

    /// When `answer` to host validator call `view` gave no verdict (an error, or not
    /// `{"pass": bool}`): what failed, its binding and what the run does about it, redacted
    /// like an error. `None` for a verdict or a call that is not a `guard` call.
    pub fn guard_failure(&self, view: &CallView<'_>, answer: &Answer) -> Option<GuardFailure> {
        let note = guard_failure::GuardCallNote::of(view)?;
        self.noted_guard_failure(note, answer)
    }

    fn noted_guard_failure(
        &self,
        note: guard_failure::GuardCallNote,
        answer: &Answer,
    ) -> Option<GuardFailure> {
        let mut failure = note.failure(answer, &self.inner.config)?;
        failure.error = self.inner.redactor.text(&failure.error);
        Some(failure)
    }

    /// The endpoint serving provider `key`: its binding, else (for `default`) `model`.
    pub fn endpoint(&self, key: &str) -> Option<&ModelEndpoint> {
        let config = &self.inner.config;
        config.providers.get(key).or_else(|| {
            (key == "default")
                .then_some(config.model.as_ref())
                .flatten()
        })
    }

    fn model_answer(&self, req: &ModelRequest) -> (Answer, u64) {
        let mut exchange = match self.exchange(req) {
            Ok(x) => x,
            Err(unbound) => return (unbound, 0),
        };
        let (url, headers, what) = (exchange.url(), exchange.headers(), exchange.what());
        loop {
            let body = exchange.body();
            let reply = self.inner.transport.post_json(&what, &url, &headers, &body);
            if let Some(answer) = exchange.reply(reply) {
                return (answer, exchange.tokens());
            }
        }
    }

    /// The output a model text becomes (`compositions.md` 11.2a).
    pub(crate) fn output_value(
        &self,
        text: Option<&str>,
        schema: Option<&OutputSchema>,
    ) -> Result<Value, String> {
        let declared = schema.and_then(|s| s.schema.as_ref().map(|v| (s.name.as_str(), v)));
        let Some((name, schema)) = declared else {
            let Some(text) = text else {
                return Ok(Value::Null);
            };
            let t = text.trim();
            if t.starts_with('{') || t.starts_with('[') {
                if let Ok(v @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(t) {
                    return Ok(v);
                }
            }
            return Ok(Value::String(text.to_owned()));
        };
        let text = text.unwrap_or_default();
        let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
            format!("the answer is not JSON, but the step declares output_schema `{name}` ({e})")
        })?;
        let validator = self.validator(name, schema)?;
        if let Some(err) = validator.iter_errors(&value).next() {
            let path = err.instance_path().as_str();
            return Err(format!(
                "the answer does not match output_schema `{name}` at `{}`: {err}",
                if path.is_empty() { "/" } else { path }
            ));
        }
        Ok(value)
    }

    fn validator(&self, name: &str, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self.inner.schemas.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(name.to_owned())
            .or_insert_with(|| {
                jsonschema::validator_for(schema)
                    .map(Arc::new)
                    .map_err(|e| format!("output_schema `{name}` cannot be used: {e}"))
            })
            .clone()
    }

    /// Runs `run` to the end: the caller does `script`, then finishes. Calls are carried
    /// out on a pool of at most [`LiveConfig::concurrency`] threads (started as calls go
    /// out, never more than [`MAX_CONCURRENCY`]); `observer` hears of every
    /// step. Returns early, with [`Ended::Interrupted`], once the cancel flag is set.
    pub fn drive(
        &self,
        run: &mut Run,
        script: &[ScriptItem],
        observer: &mut dyn Observer,
    ) -> LiveRun {
        let host = self.clone();
        self.drive_with(run, script, observer, move |job| host.answer(job))
    }

    /// [`LiveHost::drive`] with the calls carried out by `answer`. A call whose `answer`
    /// panics is answered with an error saying so; the worker goes on with the next.
    fn drive_with(
        &self,
        run: &mut Run,
        script: &[ScriptItem],
        observer: &mut dyn Observer,
        answer: impl Fn(&Job) -> (Answer, u64) + Clone + Send + 'static,
    ) -> LiveRun {
        let (job_tx, job_rx) = mpsc::channel::<(CallId, Job)>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (answer_tx, answer_rx) = mpsc::channel::<(CallId, Answer, u64)>();
        // Workers start as calls go out, one per call in flight up to the pool's size: a
        // pack that makes one call at a time uses one thread, whatever `concurrency` is.
        let mut most_workers = self.inner.config.concurrency.clamp(1, MAX_CONCURRENCY);
        let mut workers = 0usize;
        let spawn_worker = || {
            let (answer, jobs, answers) = (answer.clone(), job_rx.clone(), answer_tx.clone());
            let redactor = self.inner.redactor.clone();
            std::thread::Builder::new().spawn(move || loop {
                let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok((id, job)) = job else { break };
                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(&job)));
                let (answer, tokens) = done.unwrap_or_else(|panic| {
                    let why = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "no message".to_owned());
                    (
                        Answer::Error(
                            redactor
                                .text(&format!("the host failed carrying out this call: {why}")),
                        ),
                        0,
                    )
                });
                if answers.send((id, answer, tokens)).is_err() {
                    break;
                }
            })
        };

        let started = Instant::now();
        let mut stats = Stats::default();
        let record = self.inner.config.record;
        let mut recording = Recording::default();
        let mut sent: HashSet<CallId> = HashSet::new();
        let mut keys: HashMap<CallId, String> = HashMap::new();
        // The key of every tool call out, so its failure can be reported by name.
        let mut tool_keys: HashMap<CallId, String> = HashMap::new();
        // Likewise every `guard` call out.
        let mut guard_calls: HashMap<CallId, guard_failure::GuardCallNote> = HashMap::new();
        let mut script = script.iter();
        let mut input = Input::Start;
        let finish = |ended, stats, recording| LiveRun {
            ended,
            stats,
            recording,
        };
        let module = run.program().module();
        let (guards, extensions) = (
            self.inner.config.unbound_guards(module),
            self.inner.config.unbound_extensions(module),
        );
        if !guards.is_empty() || !extensions.is_empty() {
            let mut faults = Vec::new();
            if !guards.is_empty() {
                faults.push(unbound_guards_message(&guards));
            }
            if !extensions.is_empty() {
                faults.push(unbound_extensions_message(&extensions));
            }
            let e = RunError::new(ErrorKind::HostError, faults.join("; "));
            return finish(Ended::Failed(e), stats, recording);
        }
        loop {
            if self.inner.cancel.load(Ordering::Relaxed) {
                return finish(Ended::Interrupted, stats, recording);
            }
            let need = match run.resume(input) {
                Ok(n) => n,
                Err(e) => return finish(Ended::Failed(e), stats, recording),
            };
            observer.update(run, &stats);
            input = match need {
                Need::Done => {
                    let ended = match run.outcome() {
                        Some(o) => Ended::Done(o.into_owned()),
                        None => Ended::Failed(RunError::new(
                            ErrorKind::Protocol,
                            "done without an outcome",
                        )),
                    };
                    return finish(ended, stats, recording);
                }
                Need::Clock => {
                    let ms = started.elapsed().as_millis() as u64;
                    if record {
                        recording.clock.push(ms);
                    }
                    Input::Clock(ms)
                }
                Need::Caller => match script.next() {
                    Some(ScriptItem::Turn(v)) => Input::Turn(v.clone()),
                    Some(ScriptItem::Event(e)) => Input::Event(e.clone()),
                    None => Input::Finish,
                },
                Need::Calls | Need::Wait => {
                    for view in run.pending() {
                        if sent.insert(view.id()) {
                            if record {
                                keys.insert(view.id(), record_key(&view));
                            }
                            if view.is_model() {
                                stats.model_calls += 1;
                            } else {
                                stats.tool_calls += 1;
                                if let Some(key) = view.tool() {
                                    tool_keys.insert(view.id(), key.to_owned());
                                }
                                if let Some(note) = guard_failure::GuardCallNote::of(&view) {
                                    guard_calls.insert(view.id(), note);
                                }
                            }
                            stats.in_flight += 1;
                            if workers < most_workers && stats.in_flight as usize > workers {
                                match spawn_worker() {
                                    Ok(_) => workers += 1,
                                    // The system has no thread to spare: the workers
                                    // there are carry the calls.
                                    Err(_) if workers > 0 => most_workers = workers,
                                    Err(e) => {
                                        let e = RunError::new(
                                            ErrorKind::HostError,
                                            format!("cannot start a thread for the calls: {e}"),
                                        );
                                        return finish(Ended::Failed(e), stats, recording);
                                    }
                                }
                            }
                            observer.call_sent(&view);
                            // The workers outlive this loop only on interruption.
                            let _ = job_tx.send((view.id(), Job::of(&view)));
                        }
                    }
                    observer.update(run, &stats);
                    if stats.in_flight == 0 {
                        let e = RunError::new(
                            ErrorKind::Protocol,
                            "the run waits, but no call is outstanding",
                        );
                        return finish(Ended::Failed(e), stats, recording);
                    }
                    let (id, answer, tokens) = loop {
                        match answer_rx.recv_timeout(Duration::from_millis(50)) {
                            Ok(a) => break a,
                            Err(mpsc::RecvTimeoutError::Timeout) => {
                                if self.inner.cancel.load(Ordering::Relaxed) {
                                    return finish(Ended::Interrupted, stats, recording);
                                }
                                observer.update(run, &stats);
                            }
                            Err(mpsc::RecvTimeoutError::Disconnected) => {
                                let e = RunError::new(
                                    ErrorKind::HostError,
                                    "the host's workers stopped",
                                );
                                return finish(Ended::Failed(e), stats, recording);
                            }
                        }
                    };
                    stats.in_flight -= 1;
                    stats.tokens += tokens;
                    if let Some(key) = tool_keys.remove(&id) {
                        if let Answer::Error(e) = &answer {
                            stats.tool_failures += 1;
                            observer.tool_failed(&key, e);
                        }
                    }
                    if let Some(note) = guard_calls.remove(&id) {
                        if let Some(failure) = self.noted_guard_failure(note, &answer) {
                            observer.guard_failed(&failure);
                        }
                    }
                    if record {
                        let key = keys.remove(&id).unwrap_or_default();
                        recording.answers.push((key, answer_json(&answer)));
                    }
                    observer.call_answered(id, &answer);
                    Input::Answer(id, answer)
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packc_vm::{Program, RunOptions, Target};

    #[test]
    fn a_worker_that_panics_gives_an_error_answer_not_a_hang() {
        let pack = "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: '{{variable}}'}\n\
            prompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\n\
            compositions:\n  c:\n    version: 1\n    steps:\n      - {id: s, kind: prompt, prompt_task: p, input: x}\n";
        let options = packc_compiler::Options::default();
        let checked = packc_compiler::check_bytes(pack.as_bytes(), &options);
        assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
        let module = packc_compiler::lower(&checked, &options).unwrap();
        let program = Arc::new(Program::new(module).unwrap());
        let target = Target::parse(program.module(), "composition:c").unwrap();
        let mut run = Run::new(program, target, RunOptions::default()).unwrap();
        let host = LiveHost::new(LiveConfig {
            concurrency: 1,
            ..LiveConfig::default()
        });
        let (tx, rx) = mpsc::channel();
        let mut script = vec![ScriptItem::Turn(Value::Null)];
        std::thread::spawn(move || {
            let live = host.drive_with(&mut run, &script.split_off(0), &mut (), |_| {
                panic!("duration overflow")
            });
            let _ = tx.send(live.ended);
        });
        let ended = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the run ends instead of waiting forever");
        let Ended::Failed(e) = ended else {
            panic!("{ended:?}")
        };
        assert_eq!(e.kind, ErrorKind::HostError, "{e}");
        assert!(
            e.message
                .contains("the host failed carrying out this call: duration overflow"),
            "{e}"
        );
    }
}
