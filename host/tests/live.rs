//! The live host against a mock OpenAI-compatible server on 127.0.0.1: the exact request
//! bodies, tool round trips, concurrency, schema checks with retry, and the transport's
//! handling of 429, 5xx, bodies that are not JSON, refused connections and timeouts.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use packc_compiler::Options;
use packc_host::live::TransportConfig;
use packc_host::live::{
    Ended, GuardFailure, Job, LiveConfig, LiveHost, LiveRun, ModelEndpoint, Observer, ToolBindings,
};
use packc_host::mock::{MockServer, Reply};
use packc_host::record::{to_case, CaseSpec};
use packc_vm::driver::ScriptItem;
use packc_vm::{Answer, GuardEffect, Program, Run, RunOptions, Target};
use serde_json::{json, Value};

const HEAD: &str =
    "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: \"{{variable}}\"}\n";

/// A scratch folder holding `pack.yaml` (HEAD + `body`) and `schemas/answer.json`.
fn scratch(name: &str, body: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("live")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("schemas")).unwrap();
    std::fs::write(
        dir.join("schemas/answer.json"),
        r#"{"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("pack.yaml"), format!("{HEAD}{body}")).unwrap();
    dir
}

fn program(dir: &std::path::Path) -> Arc<Program> {
    let bytes = std::fs::read(dir.join("pack.yaml")).unwrap();
    let options = Options {
        base_dir: Some(dir.to_path_buf()),
        ..Options::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    Arc::new(Program::new(packc_compiler::lower(&checked, &options).unwrap()).unwrap())
}

fn config(server: Option<&MockServer>) -> LiveConfig {
    LiveConfig {
        model: server.map(|s| ModelEndpoint {
            base_url: s.base_url(),
            model: "test-model".into(),
            api_key: Some("sk-secret".into()),
        }),
        transport: TransportConfig {
            timeout: Duration::from_secs(5),
            retries: 2,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(3),
        },
        ..LiveConfig::default()
    }
}

fn drive(program: &Arc<Program>, target: &str, input: Value, config: LiveConfig) -> (LiveRun, Run) {
    let target = Target::parse(program.module(), target).unwrap();
    let mut run = Run::new(program.clone(), target, RunOptions::default()).unwrap();
    let live = LiveHost::new(config).drive(&mut run, &[ScriptItem::Turn(input)], &mut ());
    (live, run)
}

/// `composition:c` with input `{"text": "x"}` against `server` with the default config.
fn score_x(p: &Arc<Program>, server: &MockServer) -> LiveRun {
    drive(
        p,
        "composition:c",
        json!({"text": "x"}),
        config(Some(server)),
    )
    .0
}

fn output(live: &LiveRun) -> &Value {
    match &live.ended {
        Ended::Done(o) => &o.output,
        other => panic!("the run did not end well: {other:?}"),
    }
}

fn failure(live: &LiveRun) -> String {
    match &live.ended {
        Ended::Failed(e) => {
            assert_eq!(e.kind.as_str(), "host_error", "{e}");
            e.message.clone()
        }
        other => panic!("the run did not fail: {other:?}"),
    }
}

/// Asserts that `text` contains `needle`, showing the text when it does not.
#[track_caller]
fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{text}");
}

/// Asserts that `text` does not contain `needle`, showing the text when it does.
#[track_caller]
fn assert_lacks(text: &str, needle: &str) {
    assert!(!text.contains(needle), "{text}");
}

const SCORE: &str = r#"
prompts:
  scorer:
    id: scorer
    name: Scorer
    version: 1.0.0
    system_template: "Score this text: {{input}}"
    parameters: {temperature: 0.1, max_tokens: 50, top_k: 40}
compositions:
  c:
    version: 1
    steps:
      - id: s
        kind: prompt
        prompt_task: scorer
        input: "${input.text}"
        output_schema: "schemas/answer.json"
        modifiers:
          retry: {max_attempts: 2}
"#;

#[test]
fn a_prompt_step_sends_exactly_this_request() {
    let server = MockServer::start(|_, _| Reply::text(r#"{"score": 7}"#));
    let p = program(&scratch("exact", SCORE));
    let (live, _) = drive(
        &p,
        "composition:c",
        json!({"text": "good"}),
        config(Some(&server)),
    );
    assert_eq!(output(&live), &json!({"score": 7}));
    assert_eq!(live.stats.tokens, 15);
    let got = server.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/v1/chat/completions");
    assert_eq!(got[0].header("authorization"), Some("Bearer sk-secret"));
    assert_eq!(
        got[0].body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Score this text: good"},
                {"role": "user", "content": "good"},
            ],
            "temperature": 0.1,
            "max_tokens": 50,
            "top_k": 40,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "answer",
                "schema": {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]},
            }},
        })
    );
}

#[test]
fn a_schema_mismatch_is_a_host_error_that_retry_asks_again() {
    let server = MockServer::start(|n, _| match n {
        0 => Reply::text(r#"{"score": "high"}"#),
        _ => Reply::text(r#"{"score": 9}"#),
    });
    let p = program(&scratch("mismatch", SCORE));
    let (live, run) = drive(
        &p,
        "composition:c",
        json!({"text": "x"}),
        config(Some(&server)),
    );
    assert_eq!(output(&live), &json!({"score": 9}));
    assert_eq!(run.trace_lines(), ["step s", "retry s 2"]);
    assert_eq!(server.received().len(), 2);

    // Without a second attempt the mismatch is the run's error, naming the path.
    let server = MockServer::start(|_, _| Reply::text("not json at all"));
    let live = score_x(&p, &server);
    assert!(failure(&live).contains("not JSON"), "{}", failure(&live));
    let server = MockServer::start(|_, _| Reply::text(r#"{"score": "high"}"#));
    let message = failure(&score_x(&p, &server));
    assert_contains(
        &message,
        "does not match output_schema `schemas/answer.json` at `/score`",
    );
}

#[test]
fn without_a_schema_json_text_is_parsed_and_other_text_stays_text() {
    let pack = SCORE.replace("        output_schema: \"schemas/answer.json\"\n", "");
    let p = program(&scratch("noschema", &pack));
    for (text, want) in [
        (r#" {"type": "paper"} "#, json!({"type": "paper"})),
        ("[1, 2]", json!([1, 2])),
        ("plain words", json!("plain words")),
        ("{not json", json!("{not json")),
        ("42", json!("42")),
    ] {
        let server = MockServer::start(move |_, _| Reply::text(text));
        let live = score_x(&p, &server);
        assert_eq!(output(&live), &want, "{text}");
        assert!(server.received()[0].body.get("response_format").is_none());
    }
}

const AGENT: &str = r#"
prompts:
  helper:
    id: helper
    name: Helper
    version: 1.0.0
    system_template: "Help."
tools:
  echo:
    name: echo
    description: Echo the arguments.
    parameters: {type: object, properties: {q: {type: string}}}
compositions:
  c:
    version: 1
    steps:
      - id: a
        kind: agent
        prompt_task: helper
        input: "${input}"
        tools: [echo]
        termination: {max_steps: 4}
"#;

#[test]
fn an_agent_step_round_trips_a_tool_call() {
    let server = MockServer::start(|n, _| match n {
        0 => Reply::calls(&[("echo", json!({"q": "hail"}))]),
        _ => Reply::text("all done"),
    });
    let p = program(&scratch("agent", AGENT));
    let mut cfg = config(Some(&server));
    cfg.tools = ToolBindings::parse(
        "tools:\n  echo: {command: [sh, -c, cat]}\n",
        std::path::Path::new("."),
    )
    .unwrap();
    let (live, _) = drive(&p, "composition:c", json!("claim 7"), cfg);
    assert_eq!(output(&live), &json!("all done"));
    assert_eq!((live.stats.model_calls, live.stats.tool_calls), (2, 1));
    let bodies = server.bodies();
    assert_eq!(
        bodies[0]["tools"],
        json!([{"type": "function", "function": {"name": "echo", "description": "Echo the arguments.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}])
    );
    assert_eq!(
        bodies[1]["messages"],
        json!([
            {"role": "system", "content": "Help."},
            {"role": "user", "content": "claim 7"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0_0", "type": "function",
                "function": {"name": "echo", "arguments": "{\"q\":\"hail\"}"}}]},
            {"role": "tool", "tool_call_id": "call_0_0", "content": "{\"q\":\"hail\"}"},
        ])
    );
}

#[test]
fn an_unbound_tool_is_an_error_result_for_the_model() {
    let server = MockServer::start(|n, _| match n {
        0 => Reply::calls(&[("echo", json!({}))]),
        _ => Reply::text("gave up"),
    });
    let p = program(&scratch("unbound", AGENT));
    let (live, _) = drive(&p, "composition:c", json!("x"), config(Some(&server)));
    assert_eq!(output(&live), &json!("gave up"));
    // The run ended normally, yet the failed tool call is counted.
    assert_eq!((live.stats.tool_calls, live.stats.tool_failures), (1, 1));
    let tool_message = &server.bodies()[1]["messages"][3];
    assert_eq!(tool_message["role"], "tool");
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains("not bound"),
        "{tool_message}"
    );
}

#[test]
fn a_parallel_steps_calls_go_out_together() {
    let pack = r#"
prompts:
  p1: {id: p1, name: P1, version: 1.0.0, system_template: "one"}
  p2: {id: p2, name: P2, version: 1.0.0, system_template: "two"}
compositions:
  c:
    version: 1
    steps:
      - id: both
        kind: parallel
        branches:
          - {id: x, kind: prompt, prompt_task: p1, input: "${input}"}
          - {id: y, kind: prompt, prompt_task: p2, input: "${input}"}
        reduce: {strategy: barrier, into: out}
"#;
    // Each request waits until both have arrived: a serial host would time out here.
    let arrived = Arc::new(AtomicUsize::new(0));
    let seen = arrived.clone();
    let server = MockServer::start(move |_, req| {
        seen.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(3);
        while seen.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if seen.load(Ordering::SeqCst) < 2 {
            return Reply::status(
                400,
                r#"{"error": {"message": "calls were not concurrent"}}"#,
            );
        }
        let system = req.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Reply::text(&format!("answer to {system}"))
    });
    let p = program(&scratch("parallel", pack));
    let (live, _) = drive(&p, "composition:c", json!("go"), config(Some(&server)));
    assert_eq!(
        output(&live),
        &json!({"out": {"x": "answer to one", "y": "answer to two"}})
    );
    assert_eq!(arrived.load(Ordering::SeqCst), 2);
}

#[test]
fn a_429_waits_for_retry_after() {
    let server = MockServer::start(|n, _| match n {
        0 => Reply::status(429, r#"{"error": {"message": "slow down"}}"#)
            .with_header("Retry-After", "1"),
        _ => Reply::text(r#"{"score": 1}"#),
    });
    let p = program(&scratch("429", SCORE));
    let started = Instant::now();
    let live = score_x(&p, &server);
    assert_eq!(output(&live), &json!({"score": 1}));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.received().len(), 2);
}

#[test]
fn a_500_is_retried_then_reported() {
    let server =
        MockServer::start(|_, _| Reply::status(500, r#"{"error": {"message": "upstream broke"}}"#));
    let p = program(&scratch("500", SCORE));
    let mut cfg = config(Some(&server));
    cfg.transport.retries = 1;
    let (live, _) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
    let message = failure(&live);
    assert_contains(&message, "answered 500: upstream broke (after 2 attempts)");
    // Two attempts of the step (retry modifier), each with one transport retry.
    assert_eq!(server.received().len(), 4);
}

#[test]
fn bad_keys_and_unknown_models_say_so_without_the_key() {
    let server = MockServer::start(|_, req| match req.body["model"].as_str() {
        Some("test-model") => Reply::status(
            401,
            r#"{"error": {"message": "Incorrect API key provided"}}"#,
        ),
        _ => Reply::status(
            404,
            r#"{"error": {"message": "The model `nope` does not exist"}}"#,
        ),
    });
    let p = program(&scratch("401", SCORE));
    let message = failure(&score_x(&p, &server));
    assert_contains(&message, "401 (check the API key): Incorrect API key");
    assert!(!message.contains("sk-secret"));
    let mut cfg = config(Some(&server));
    cfg.model.as_mut().unwrap().model = "nope".into();
    let (live, _) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
    assert!(failure(&live)
        .contains("404 (check the model name and --base-url): The model `nope` does not exist"));
    // Neither is retried by the transport: 2 step attempts each.
    assert_eq!(server.received().len(), 4);
}

#[test]
fn a_body_that_is_not_json_is_a_host_error() {
    let server = MockServer::start(|_, _| Reply::status(200, "<html>proxy error</html>"));
    let p = program(&scratch("html", SCORE));
    let message = failure(&score_x(&p, &server));
    assert_contains(
        &message,
        "answered 200 with a body that is not JSON: <html>proxy error</html>",
    );
}

#[test]
fn a_refused_connection_is_a_host_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = program(&scratch("refused", SCORE));
    let mut cfg = config(None);
    cfg.model = Some(ModelEndpoint {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "m".into(),
        api_key: None,
    });
    let (live, _) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
    let message = failure(&live);
    assert!(
        message.contains(&format!(
            "cannot connect to http://127.0.0.1:{port}/v1/chat/completions"
        )),
        "{message}"
    );
}

#[test]
fn a_slow_server_times_out() {
    let server =
        MockServer::start(|_, _| Reply::text(r#"{"score": 1}"#).after(Duration::from_secs(3)));
    let p = program(&scratch("timeout", SCORE));
    let mut cfg = config(Some(&server));
    cfg.transport.timeout = Duration::from_millis(300);
    cfg.transport.retries = 0;
    let started = Instant::now();
    let (live, _) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
    let message = failure(&live);
    // Which timeout and its value; the call named once.
    assert_contains(&message, "within the call timeout of 0.3 s");
    assert_eq!(message.matches("model call").count(), 1, "{message}");
    // Two step attempts of 0.3 s each, nowhere near the server's 3 s.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

const TOOLS: &str = r#"
prompts:
  unused: {id: unused, name: Unused, version: 1.0.0, system_template: "-"}
tools:
  lookup:
    name: lookup
    description: Look up an order.
    parameters: {type: object, properties: {id: {type: string}}}
  fetch:
    name: fetch
    description: Fetch a page.
    parameters: {type: object, properties: {url: {type: string}}}
compositions:
  c:
    version: 1
    steps:
      - {id: l, kind: tool, tool: lookup, args: {id: "${input.order}"}}
      - {id: f, kind: tool, tool: fetch, args: {url: "${l.output.page}"}}
"#;

/// A config without a model whose tools are bound by `bindings`, written to
/// `dir/tools.yaml` (so commands run relative to `dir`).
fn bound(dir: &std::path::Path, bindings: &str) -> LiveConfig {
    std::fs::write(dir.join("tools.yaml"), bindings).unwrap();
    let mut cfg = config(None);
    cfg.tools = ToolBindings::read(&dir.join("tools.yaml")).unwrap();
    cfg
}

#[test]
fn tools_bound_to_a_command_and_to_http_both_work() {
    let server = MockServer::start(|_, req| {
        assert_eq!(req.path, "/fetch");
        assert_eq!(req.header("x-team"), Some("docs"));
        Reply::json(json!({"fetched": req.body["url"]}))
    });
    let dir = scratch("tools", TOOLS);
    std::fs::write(
        dir.join("lookup.sh"),
        "#!/bin/sh\nread args\nprintf '{\"page\": \"https://example.test/%s\", \"args\": %s}' \"$(echo \"$args\" | sed 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/')\" \"$args\"\n",
    )
    .unwrap();
    let bindings = format!(
        "tools:\n  lookup: {{command: [sh, ./lookup.sh]}}\n  fetch: {{http: 'http://127.0.0.1:{}/fetch', headers: {{x-team: docs}}}}\n",
        server.port()
    );
    let cfg = bound(&dir, &bindings);
    let p = program(&dir);
    let (live, run) = drive(&p, "composition:c", json!({"order": "A-17"}), cfg);
    assert_eq!(
        output(&live),
        &json!({"fetched": "https://example.test/A-17"})
    );
    assert_eq!(run.trace_lines(), ["step l", "step f"]);
    // Not recording: no call was keyed or kept.
    assert!(live.recording.answers.is_empty());
    assert_eq!(
        server.bodies(),
        [json!({"url": "https://example.test/A-17"})]
    );
}

#[test]
fn an_http_tool_bindings_calls_reuse_one_connection() {
    let peers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = peers.clone();
    let server = MockServer::start(move |_, req| {
        seen.lock().unwrap().push(req.peer);
        Reply::json(json!({"ok": req.body["n"]}))
    });
    let dir = scratch("http-reuse", TOOLS);
    let bindings = format!(
        "tools:\n  fetch: {{http: 'http://127.0.0.1:{}/fetch'}}\n",
        server.port()
    );
    let cfg = bound(&dir, &bindings);
    let host = LiveHost::new(cfg);
    for n in 0..3 {
        let job = Job::Tool {
            key: "fetch".into(),
            args: json!({"n": n}),
        };
        let (answer, _) = host.answer(&job);
        assert_eq!(
            answer,
            Answer::Output {
                output: json!({"ok": n}),
                event: None
            }
        );
    }
    let peers = peers.lock().unwrap();
    assert_eq!(peers.len(), 3);
    assert!(peers[0].is_some());
    assert!(peers.iter().all(|p| *p == peers[0]), "{peers:?}");
}

#[test]
fn events_are_offered_as_a_transition_function_and_bad_ones_asked_again() {
    let pack = r#"
prompts:
  triage: {id: triage, name: Triage, version: 1.0.0, system_template: "Triage."}
  closing: {id: closing, name: Closing, version: 1.0.0, system_template: "Close."}
workflow:
  version: 1
  entry: triage
  states:
    triage:
      prompt_task: triage
      on_event: {Billing: closing, Escalate: closing}
    closing:
      prompt_task: closing
      terminal: true
"#;
    let server = MockServer::start(|n, _| match n {
        0 => Reply::calls(&[("transition", json!({"event": "Refund"}))]),
        1 => Reply::calls(&[("transition", json!({"event": "Billing"}))]),
        _ => Reply::text("closed"),
    });
    let p = program(&scratch("events", pack));
    let (live, run) = drive(
        &p,
        "workflow",
        json!("my card was charged twice"),
        config(Some(&server)),
    );
    assert_eq!(output(&live), &json!("closed"));
    assert_eq!(
        run.trace_lines(),
        [
            "enter triage",
            "transition triage -> closing on Billing",
            "enter closing"
        ]
    );
    let bodies = server.bodies();
    assert_eq!(
        bodies[0]["tools"][0]["function"]["parameters"],
        json!({"type": "object", "properties": {"event": {"type": "string", "enum": ["Billing", "Escalate"]}}, "required": ["event"]})
    );
    let re_ask = &bodies[1]["messages"];
    assert_eq!(re_ask.as_array().unwrap().len(), 4);
    assert!(
        re_ask[3]["content"]
            .as_str()
            .unwrap()
            .contains("`Refund` is not an event here"),
        "{re_ask}"
    );
    // The terminal state offers no transition.
    assert!(bodies[2].get("tools").is_none());
}

#[test]
fn a_recorded_run_replays_green() {
    let pack = format!(
        "{}{}",
        AGENT.replace("compositions:\n  c:", "compositions:\n  solo:"),
        r#"  c:
    version: 1
    steps:
      - id: both
        kind: parallel
        branches:
          - {id: x, kind: agent, prompt_task: helper, input: "${input}", tools: [echo], termination: {max_steps: 3}}
          - {id: y, kind: agent, prompt_task: helper, input: "second", tools: [echo], termination: {max_steps: 3}}
        reduce: {strategy: barrier, into: out}
"#
    );
    // Branch y answers first on purpose: the case must still replay in branch order.
    let server = MockServer::start(|_, req| {
        let msgs = req.body["messages"].as_array().unwrap();
        let input = msgs[1]["content"].as_str().unwrap_or_default().to_owned();
        if msgs.len() == 2 {
            let delay = if input == "second" { 0 } else { 200 };
            Reply::calls(&[("echo", json!({"q": input}))]).after(Duration::from_millis(delay))
        } else {
            Reply::text(&format!("done with {input}"))
        }
    });
    let dir = scratch("record", &pack);
    let p = program(&dir);
    let mut cfg = config(Some(&server));
    cfg.record = true;
    cfg.tools = ToolBindings::parse(
        "tools:\n  echo: {command: [sh, -c, cat]}\n",
        std::path::Path::new("."),
    )
    .unwrap();
    let (live, _) = drive(&p, "composition:c", json!("first"), cfg);
    let out = output(&live).clone();
    assert_eq!(
        out,
        json!({"out": {"x": "done with first", "y": "done with second"}})
    );
    let spec = CaseSpec {
        about: "recorded".into(),
        pack_file: "pack.yaml".into(),
        target: "composition:c",
        script: &[ScriptItem::Turn(json!("first"))],
        variables: &Default::default(),
    };
    let (case, agrees) = to_case(&p, &live.recording, &spec, Ok(&out)).unwrap();
    assert!(agrees);
    assert_eq!(case["expect"]["output"], out);
    let file = dir.join("recorded.case.yaml");
    std::fs::write(&file, packc_host::yaml::to_yaml(&case)).unwrap();
    packc_host::run_case_file(&file).unwrap();
}

/// Every answer of a live run, as its recording keeps them, as one text.
fn recorded_text(live: &LiveRun) -> String {
    live.recording
        .answers
        .iter()
        .map(|(k, a)| format!("{k} {a}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_server_echoing_the_key_gets_it_redacted_from_messages_and_the_recording() {
    for (status, body) in [
        (
            401,
            r#"{"error": {"message": "Incorrect API key provided: sk-secret"}}"#,
        ),
        (
            500,
            "<html><body>upstream refused Bearer sk-secret</body></html>",
        ),
    ] {
        let server = MockServer::start(move |_, _| Reply::status(status, body));
        let p = program(&scratch(&format!("echo-key-{status}"), SCORE));
        let mut cfg = config(Some(&server));
        cfg.record = true;
        cfg.transport.retries = 0;
        let (live, run) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
        let message = failure(&live);
        assert!(message.contains(&format!("answered {status}")), "{message}");
        assert_contains(&message, "[redacted]");
        let recorded = recorded_text(&live);
        assert_contains(&recorded, "[redacted]");
        for text in [message, recorded, run.trace_lines().join("\n")] {
            assert_lacks(&text, "sk-secret");
        }
    }
}

#[test]
fn url_credentials_are_never_shown() {
    let server = MockServer::start(|_, req| {
        Reply::status(
            500,
            &format!("auth was {}", req.header("authorization").unwrap_or("none")),
        )
    });
    let p = program(&scratch("url-credentials", SCORE));
    let mut cfg = config(Some(&server));
    cfg.transport.retries = 0;
    let endpoint = cfg.model.as_mut().unwrap();
    endpoint.base_url = format!("http://user:PW-s3cret@127.0.0.1:{}/v1", server.port());
    endpoint.api_key = None;
    let shown = endpoint.to_string();
    assert_lacks(&shown, "PW-s3cret");
    let (live, _) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
    let message = failure(&live);
    assert!(
        message.contains(&format!("http://[redacted]@127.0.0.1:{}/v1", server.port())),
        "{message}"
    );
    assert_lacks(&message, "PW-s3cret");
    // The client sends them as basic auth; the server's echo of that is redacted too.
    assert!(message.ends_with("auth was Basic [redacted]"), "{message}");
}

#[test]
fn an_http_tools_error_body_is_redacted_of_its_headers() {
    let server = MockServer::start(|_, req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        Reply::status(403, &format!("token {auth} is not allowed here"))
    });
    let dir = scratch("tool-header-echo", TOOLS);
    let bindings = format!(
        "tools:\n  lookup: {{http: 'http://127.0.0.1:{}/lookup', headers: {{authorization: 'Bearer tool-t0ken-123'}}}}\n  fetch: {{command: [cat]}}\n",
        server.port()
    );
    let cfg = bound(&dir, &bindings);
    let p = program(&dir);
    let (live, _) = drive(&p, "composition:c", json!({"order": "A"}), cfg);
    let message = failure(&live);
    assert_contains(&message, "token [redacted] is not allowed here");
    assert_lacks(&message, "tool-t0ken-123");
    // The header itself was sent.
    assert_eq!(
        server.received()[0].header("authorization"),
        Some("Bearer tool-t0ken-123")
    );
}

#[test]
fn model_calls_do_not_follow_redirects_and_say_where_they_pointed() {
    let elsewhere = MockServer::start(|_, _| Reply::text(r#"{"score": 9}"#));
    let target = format!("{}/chat/completions", elsewhere.base_url());
    for status in [301, 302, 303, 307, 308] {
        let to = target.clone();
        let server =
            MockServer::start(move |_, _| Reply::status(status, "").with_header("Location", &to));
        let p = program(&scratch(&format!("redirect-{status}"), SCORE));
        let message = failure(&score_x(&p, &server));
        assert!(
            message.contains(&format!("answered {status}, a redirect (to {target})")),
            "{message}"
        );
        assert_contains(&message, "not followed");
    }
    // Neither the request nor the key went to where the redirects pointed.
    assert!(elsewhere.received().is_empty());
}

#[test]
fn retry_after_is_capped_by_the_timeout() {
    let server = MockServer::start(|n, _| match n {
        0 => Reply::status(429, r#"{"error": {"message": "slow down"}}"#)
            .with_header("Retry-After", "60"),
        _ => Reply::text(r#"{"score": 1}"#),
    });
    let p = program(&scratch("retry-after-cap", SCORE));
    let mut cfg = config(Some(&server));
    cfg.transport.timeout = Duration::from_millis(500);
    cfg.transport.max_backoff = Duration::from_secs(60);
    let started = Instant::now();
    let (live, _) = drive(&p, "composition:c", json!({"text": "x"}), cfg);
    assert_eq!(output(&live), &json!({"score": 1}));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_model_answer_echoing_the_key_is_redacted() {
    let server = MockServer::start(|_, _| Reply::text("your key is sk-secret, keep it safe"));
    let pack = r#"
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "Say something."}
compositions:
  c:
    version: 1
    steps:
      - {id: s, kind: prompt, prompt_task: p, input: "${input}"}
"#;
    let p = program(&scratch("echo-key-answer", pack));
    let mut cfg = config(Some(&server));
    cfg.record = true;
    let (live, _) = drive(&p, "composition:c", json!("hi"), cfg);
    assert_eq!(
        output(&live),
        &json!("your key is [redacted], keep it safe")
    );
    assert!(!recorded_text(&live).contains("sk-secret"));
}

/// A prompt with a `toxicity` host validator, in a text step (`c`) and in a structured
/// step with `retry` (`s`).
const GUARDED: &str = r#"
prompts:
  chat:
    id: chat
    name: Chat
    version: 1.0.0
    system_template: "Answer: {{input}}"
    validators:
      - type: toxicity
        params: {threshold: 0.5}
        message: Let's keep this civil.
compositions:
  c:
    version: 1
    steps:
      - {id: reply, kind: prompt, prompt_task: chat, input: "${input.text}"}
  s:
    version: 1
    steps:
      - id: score
        kind: prompt
        prompt_task: chat
        input: "${input.text}"
        output_schema: "schemas/answer.json"
        modifiers:
          retry: {max_attempts: 2}
"#;

/// The model of `server` with `toxicity` bound to `guard_url` over HTTP.
fn guarded(dir: &std::path::Path, server: &MockServer, guard_url: &str) -> LiveConfig {
    let mut cfg = bound(
        dir,
        &format!("guards:\n  toxicity: {{http: '{guard_url}', timeout_sec: 5}}\n"),
    );
    cfg.model = config(Some(server)).model;
    cfg
}

/// A model that answers "you fool" when asked to be rude, else "hello there"; `guard`
/// answers the POSTs to `/guard`.
fn rude_model(guard: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> MockServer {
    MockServer::start(move |_, req| match req.path.as_str() {
        "/guard" => guard(&req.body),
        _ => {
            let asked = req.body["messages"][1]["content"].as_str().unwrap_or("");
            Reply::text(if asked.contains("rude") {
                "you fool"
            } else {
                "hello there"
            })
        }
    })
}

fn guard_url(server: &MockServer) -> String {
    format!("http://127.0.0.1:{}/guard", server.port())
}

fn guard_bodies(server: &MockServer) -> Vec<Value> {
    let got = server.received().into_iter();
    got.filter(|r| r.path == "/guard").map(|r| r.body).collect()
}

#[test]
fn a_host_validator_bound_to_http_is_called_and_enforced() {
    let server = rude_model(|body| {
        let text = body["text"].as_str().unwrap_or("");
        Reply::json(json!({"pass": !text.contains("fool")}))
    });
    let dir = scratch("guard-http", GUARDED);
    let p = program(&dir);
    let cfg = guarded(&dir, &server, &guard_url(&server));
    let (live, run) = drive(&p, "composition:c", json!({"text": "be rude"}), cfg.clone());
    assert_eq!(output(&live), "Let's keep this civil.");
    assert_eq!(
        run.trace_lines(),
        ["step reply", "guardrail toxicity reply"]
    );
    assert_eq!(
        guard_bodies(&server),
        [json!({"type": "toxicity", "params": {"threshold": 0.5}, "text": "you fool"})]
    );
    // A passing verdict leaves the answer as it is.
    let (live, run) = drive(&p, "composition:c", json!({"text": "be nice"}), cfg);
    assert_eq!(output(&live), "hello there");
    assert_eq!(run.trace_lines(), ["step reply"]);
    assert_eq!(guard_bodies(&server).len(), 2);
}

/// Keeps the host validator failures a live run reports.
#[derive(Default)]
struct GuardFailures(Vec<GuardFailure>);

impl Observer for GuardFailures {
    fn guard_failed(&mut self, failure: &GuardFailure) {
        self.0.push(failure.clone());
    }
}

/// [`drive`], keeping the host validator failures reported.
fn drive_observed(
    program: &Arc<Program>,
    target: &str,
    input: Value,
    config: LiveConfig,
) -> (LiveRun, Run, Vec<GuardFailure>) {
    let target = Target::parse(program.module(), target).unwrap();
    let mut run = Run::new(program.clone(), target, RunOptions::default()).unwrap();
    let mut seen = GuardFailures::default();
    let script = [ScriptItem::Turn(input)];
    let live = LiveHost::new(config).drive(&mut run, &script, &mut seen);
    (live, run, seen.0)
}

#[test]
fn a_failing_guard_endpoint_fails_closed_and_is_reported() {
    type GuardReply = fn(&Value) -> Reply;
    let cases: [(&str, GuardReply, &str); 3] = [
        ("a 500", |_| Reply::status(500, "overloaded"), "500"),
        (
            "a body that is not JSON",
            |_| Reply::status(200, "yes"),
            "not JSON",
        ),
        (
            "an answer without `pass`",
            |_| Reply::json(json!({"verdict": "fine"})),
            r#"it answered {"verdict":"fine"}, not {"pass": true|false}"#,
        ),
    ];
    for (what, answer, error) in cases {
        let server = rude_model(answer);
        let dir = scratch("guard-http-failing", GUARDED);
        let p = program(&dir);
        let cfg = guarded(&dir, &server, &guard_url(&server));
        // Even a harmless answer is replaced: the validator could not clear it.
        let (live, run, failures) =
            drive_observed(&p, "composition:c", json!({"text": "be nice"}), cfg);
        assert_eq!(output(&live), "Let's keep this civil.", "{what}");
        assert_eq!(
            run.trace_lines(),
            ["step reply", "guardrail toxicity reply"],
            "{what}"
        );
        // Not retried: one guard request per verdict.
        assert_eq!(guard_bodies(&server).len(), 1, "{what}");
        let [f] = &failures[..] else {
            panic!("{what}: {failures:?}")
        };
        assert_eq!(
            (f.validator.as_str(), f.at.as_str(), f.effect),
            ("toxicity", "reply", GuardEffect::Replaced),
            "{what}"
        );
        assert_eq!(f.binding, format!("http {}", guard_url(&server)), "{what}");
        assert!(f.error.contains(error), "{what}: {f}");
        assert!(
            f.to_string()
                .ends_with("failing closed: the answer is replaced by the validator's message"),
            "{f}"
        );
    }
    // Nothing listens on the guard's port.
    let server = rude_model(|_| unreachable!());
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dir = scratch("guard-http-refused", GUARDED);
    let cfg = guarded(&dir, &server, &format!("http://127.0.0.1:{port}/guard"));
    let (live, _, failures) = drive_observed(
        &program(&dir),
        "composition:c",
        json!({"text": "be nice"}),
        cfg,
    );
    assert_eq!(output(&live), "Let's keep this civil.");
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].error.contains("connection refused"),
        "{failures:?}"
    );
    // A verdict, passing or failing, is no failure of the call.
    let server = rude_model(|body| {
        let text = body["text"].as_str().unwrap_or("");
        Reply::json(json!({"pass": !text.contains("fool")}))
    });
    let cfg = guarded(&dir, &server, &guard_url(&server));
    for input in ["be rude", "be nice"] {
        let (_, _, failures) = drive_observed(
            &program(&dir),
            "composition:c",
            json!({"text": input}),
            cfg.clone(),
        );
        assert!(failures.is_empty(), "{failures:?}");
    }
}

#[test]
fn a_structured_answer_a_guard_endpoint_fails_is_blocked_and_retried() {
    let guard_calls = Arc::new(AtomicUsize::new(0));
    let seen = guard_calls.clone();
    let server = MockServer::start(move |_, req| match req.path.as_str() {
        // The first verdict fails the answer, the second clears it.
        "/guard" => Reply::json(json!({"pass": seen.fetch_add(1, Ordering::SeqCst) > 0})),
        _ => Reply::text(r#"{"score": 7}"#),
    });
    let dir = scratch("guard-http-structured", GUARDED);
    let p = program(&dir);
    let cfg = guarded(&dir, &server, &guard_url(&server));
    let (live, run) = drive(&p, "composition:s", json!({"text": "x"}), cfg);
    // Never rewritten: the attempt fails with `guardrail_blocked`, and `retry` asks again.
    assert_eq!(output(&live), &json!({"score": 7}));
    assert_eq!(live.stats.model_calls, 2);
    assert_eq!(
        guard_bodies(&server),
        [
            json!({"type": "toxicity", "params": {"threshold": 0.5}, "text": r#"{"score":7}"#}),
            json!({"type": "toxicity", "params": {"threshold": 0.5}, "text": r#"{"score":7}"#}),
        ]
    );
    assert!(
        run.trace_lines()
            .contains(&"guardrail toxicity score".to_owned()),
        "{:?}",
        run.trace_lines()
    );
    // A guard endpoint that always fails blocks every attempt: the run fails.
    let server = MockServer::start(|_, req| match req.path.as_str() {
        "/guard" => Reply::status(503, "down"),
        _ => Reply::text(r#"{"score": 7}"#),
    });
    let cfg = guarded(&dir, &server, &guard_url(&server));
    let (live, _, failures) = drive_observed(&p, "composition:s", json!({"text": "x"}), cfg);
    assert_eq!(failures.len(), 2, "one per attempt: {failures:?}");
    assert_eq!(failures[0].effect, GuardEffect::Blocked);
    match &live.ended {
        Ended::Failed(e) => {
            assert_eq!(e.kind.as_str(), "guardrail_blocked", "{e}");
            assert!(e.message.contains("toxicity"), "{e}");
        }
        other => panic!("the run did not fail: {other:?}"),
    }
    assert_eq!(guard_bodies(&server).len(), 2);
}

/// An extension step served over HTTP, after a prompt step.
const EXTENDED: &str = r#"
$schema: https://promptpack.org/schema/v1.8.1/promptpack.schema.json
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "Answer: {{input}}"}
compositions:
  main:
    version: 1
    steps:
      - {id: ask, kind: prompt, prompt_task: p, input: "${input.text}"}
      - {id: rerank, kind: acme.rerank, input: "${ask.output}", top_k: 3}
    output: rerank
"#;

#[test]
fn an_extension_step_bound_to_http_is_called_and_its_failure_reported() {
    let server = rude_model(|_| unreachable!());
    let ext = MockServer::start(|n, req| match n {
        0 => Reply::json(json!({"ranked": [req.body["input"]], "k": req.body["params"]["top_k"]})),
        _ => Reply::status(500, "reranker down"),
    });
    let dir = scratch("ext-http", EXTENDED);
    let mut cfg = bound(
        &dir,
        &format!(
            "extensions:\n  acme.rerank: {{http: 'http://127.0.0.1:{}/rerank'}}\n",
            ext.port()
        ),
    );
    cfg.model = config(Some(&server)).model;
    let p = program(&dir);
    let (live, run) = drive(&p, "composition:main", json!({"text": "hi"}), cfg.clone());
    assert_eq!(output(&live), &json!({"ranked": ["hello there"], "k": 3}));
    assert_eq!(run.trace_lines(), ["step ask", "step rerank"]);
    let got = ext.received();
    assert_eq!(got[0].path, "/rerank");
    assert_eq!(
        got[0].body,
        json!({"kind": "acme.rerank", "params": {"top_k": 3}, "input": "hello there"})
    );
    // A failing endpoint fails the step as a host error naming the kind.
    let (live, _) = drive(&p, "composition:main", json!({"text": "hi"}), cfg);
    let message = failure(&live);
    assert!(message.contains("extension `acme.rerank`"), "{message}");
    assert!(message.contains("500"), "{message}");
}

#[test]
fn a_bound_providers_key_and_url_credentials_are_redacted_like_the_default_ones() {
    // The `default` endpoint has no key; `drafter`'s endpoint has a key and URL
    // credentials, and its server echoes both: in an error, then in an answer.
    for fails in [true, false] {
        let server = MockServer::start(move |_, req| {
            let auth = req.header("authorization").unwrap_or("none").to_owned();
            if fails {
                Reply::status(401, &format!("Incorrect API key provided: {auth}"))
            } else {
                Reply::text(&format!("your header is {auth}"))
            }
        });
        let pack = r#"$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json
requires:
  providers: [drafter]
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "Say something."}
compositions:
  c:
    version: 1
    steps:
      - {id: s, kind: prompt, prompt_task: p, provider: drafter, input: "${input}"}
"#;
        let p = program(&scratch(&format!("provider-key-{fails}"), pack));
        let mut cfg = config(Some(&server));
        cfg.record = true;
        cfg.transport.retries = 0;
        cfg.model.as_mut().unwrap().api_key = None;
        cfg.providers.insert(
            "drafter".into(),
            ModelEndpoint {
                base_url: format!("http://alice:pw-SECRET456@127.0.0.1:{}/v1", server.port()),
                model: "small".into(),
                api_key: Some("sk-DRAFTER123".into()),
            },
        );
        let (live, run) = drive(&p, "composition:c", json!("hi"), cfg);
        let shown = if fails {
            failure(&live)
        } else {
            output(&live).to_string()
        };
        assert_contains(&shown, "[redacted]");
        for text in [shown, recorded_text(&live), run.trace_lines().join("\n")] {
            for secret in ["sk-DRAFTER123", "pw-SECRET456"] {
                assert_lacks(&text, secret);
            }
        }
    }
}
