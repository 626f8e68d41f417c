//! `packc run --provider openai` against a mock server: the output, `--record`, and a
//! recorded run replayed green by `packc test`.

use std::path::{Path, PathBuf};
use std::process::Command;

use packc_host::mock::{MockServer, Reply};

mod common;
use common::{
    assert_code, assert_contains, assert_lacks, build_to, live, live_output, on_a_terminal, packc,
    packc_output, repo, scratch, stderr, write,
};

#[test]
fn a_live_run_is_recorded_and_replays_under_packc_test() {
    let server = MockServer::start(|_, req| {
        let system = req.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        if system.starts_with("Classify") {
            Reply::text(r#"{"type": "research_paper", "confidence": 0.9}"#)
        } else {
            Reply::text(r#"{"summary": "Residual nets train deep.", "title": "ResNet"}"#)
        }
    });
    let dir = scratch("ex2");
    let case = dir.join("ex2.case.yaml");
    let out = live_output!(
        server.base_url(),
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        [
            "--input",
            r#"{"text": "Deep Residual Learning"}"#,
            "--record"
        ],
        &case
    );
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output["title"], "ResNet");
    // Not a terminal: only the result (the status line and notes are for terminals).
    assert_eq!(stderr, "", "{stderr}");
    assert_eq!(server.received().len(), 2);

    let text = std::fs::read_to_string(&case).unwrap();
    assert_contains(&text, "doc_classifier:");
    // The pack is outside the case's folder and the one above it: the first line says
    // to allow its folder, and the replay does.
    let examples = std::fs::canonicalize(repo().join("examples")).unwrap();
    assert_contains(
        &text,
        &format!(
            "replay it with `packc test --allow-path {} ",
            examples.display()
        ),
    );
    let replay = packc_output!(["test", "--allow-path"], &examples, &case);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&replay.stdout),
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(String::from_utf8_lossy(&replay.stdout).contains("1 passed, 0 failed"));
}

/// The recorded case's first line says how to replay it, its path quoted for a shell.
#[test]
fn a_recording_says_how_to_replay_it_with_its_path_quoted() {
    let server = MockServer::start(|_, _| Reply::text("hello"));
    let dir = scratch("record-quoted");
    let pack = write(
        &dir,
        "chat.pack.yaml",
        "id: c\nname: C\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  chat: {id: chat, name: Chat, version: 1.0.0, system_template: Hi.}\nworkflow:\n  version: 1\n  entry: s\n  states:\n    s: {prompt_task: chat, terminal: true}\n",
    );
    let case = dir.join("rec 1.case.yaml");
    let out = live_output!(
        server.base_url(),
        &pack,
        ["--input", r#""hi""#, "--record"],
        &case
    );
    assert_code(&out, 0);
    let text = std::fs::read_to_string(&case).unwrap();
    let quoted = format!("'{}'", case.display());
    assert_contains(
        text.lines().next().unwrap(),
        &format!("replay it with `packc test {quoted}`"),
    );
    assert_code(&packc_output!("test", &case), 0);
}

/// A live run given no input says it runs with `null` (which the model gets as the text
/// "null"), unless `--quiet`.
#[test]
fn a_live_run_without_input_says_its_input_is_null() {
    let server = MockServer::start(|_, _| Reply::text("hello"));
    let dir = scratch("live-no-input");
    let pack = write(
        &dir,
        "guarded.pack.yaml",
        include_str!("packs/guarded_fan.yaml"),
    );
    let note = "note: no --input given: the run's input is null (give --input JSON)";
    let out = live_output!(server.base_url(), &pack);
    assert_code(&out, 0);
    assert_contains(stderr(&out), note);
    let out = live_output!(server.base_url(), &pack, "--quiet");
    assert_code(&out, 0);
    assert_lacks(stderr(&out), note);
}

/// A live run's `--format json` gives every call its answer, each the one its call got
/// though the parallel branches' answers arrive in another order, and lists the built-in
/// validators' firings as `packc test` does.
#[test]
fn a_live_json_result_gives_every_call_its_answer() {
    let server = MockServer::start(|_, req| {
        match req.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
        {
            "Be brief" => Reply::text("a long answer"),
            // The first branch's answer comes back last.
            "Left" => Reply::text("fine").after(std::time::Duration::from_millis(300)),
            _ => Reply::text("darn it"),
        }
    });
    let dir = scratch("json-answers");
    let pack = write(
        &dir,
        "guarded.pack.yaml",
        include_str!("packs/guarded_fan.yaml"),
    );
    let out = live_output!(
        server.base_url(),
        &pack,
        ["--input", r#""hi""#, "--format", "json"]
    );
    assert_code(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = r["calls"].as_array().unwrap();
    let summary: Vec<(String, serde_json::Value)> = calls
        .iter()
        .map(|c| match c.get("prompt") {
            Some(p) => (p.as_str().unwrap().to_owned(), c["answer"].clone()),
            None => (format!("guardrail {}", c["guardrail"]), c["action"].clone()),
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "chat".into(),
                serde_json::json!({"output": "a long answer"})
            ),
            (
                "guardrail \"max_length\"".into(),
                serde_json::json!("truncated")
            ),
            ("left".into(), serde_json::json!({"output": "fine"})),
            ("right".into(), serde_json::json!({"output": "darn it"})),
            (
                "guardrail \"banned_words\"".into(),
                serde_json::json!("replaced")
            ),
        ],
        "{r}"
    );
}

#[test]
fn a_hosted_api_without_a_key_is_refused_before_any_call() {
    let out = packc_output!(
        ["run", "--provider", "openai", "--model", "gpt-4o-mini"],
        repo().join("examples/rfc0010-ex1.pack.yaml")
    );
    assert_ne!(out.status.code(), Some(0));
    let stderr = stderr(&out);
    assert_contains(&stderr, "OPENAI_API_KEY is not set");
}

#[test]
fn unbound_tools_are_named_before_the_run_and_fail_as_host_errors() {
    let server = MockServer::start(|_, _| Reply::text("title"));
    let out = live_output!(
        server.base_url(),
        repo().join("examples/rfc0010-ex3.pack.yaml"),
        ["--input", r#"{"text": "x"}"#]
    );
    let stderr = stderr(&out);
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning: the pack may call tools that are not bound: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    for tool in [
        "doc.parse_structure",
        "doc.extract_citations",
        "doc.section_lookup",
        "ref.search",
        "kb.lookup",
    ] {
        assert_contains(warning, tool);
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error[host_error]: ")
            && stderr.contains("tool `doc.parse_structure` is not bound"),
        "{stderr}"
    );
}

/// Ctrl-C, and SIGTERM (what `timeout`, Docker and Kubernetes send), alike.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_run_and_says_where_it_was() {
    for signal in ["-INT", "-TERM"] {
        interrupted_by(signal);
    }
}

/// Ctrl-C stops a run saved with `--save` or recorded with `--record` the same way,
/// saving and recording nothing.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_a_saved_or_recorded_run_and_writes_nothing() {
    let dir = scratch("interrupted-save");
    for (flag, file, said) in [
        (
            "--save",
            dir.join("run.snap"),
            "interrupted in state `main`, at step `classify` (nothing saved)",
        ),
        (
            "--record",
            dir.join("run.case.yaml"),
            "note: the run was interrupted: nothing recorded",
        ),
    ] {
        let out = interrupted_with("-INT", &[flag, file.to_str().unwrap()]);
        let stderr = stderr(&out);
        assert_eq!(out.status.code(), Some(130), "{flag}: {stderr}");
        assert_contains(&stderr, said);
        assert!(!file.exists(), "{flag} wrote {}", file.display());
    }
}

#[cfg(unix)]
fn interrupted_by(signal: &str) {
    let out = interrupted_with(signal, &[]);
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{signal}: {stderr}");
    assert_contains(&stderr, "interrupted in state `main`, at step `classify`, after 1 model call, 0 tool calls (1 still in flight)");
}

/// A live run of example 2 with `args`, sent `signal` once its first call reached a
/// server that takes 20 s to answer; it must end within 5 s of the signal.
#[cfg(unix)]
fn interrupted_with(signal: &str, args: &[&str]) -> std::process::Output {
    use std::time::{Duration, Instant};
    let server = MockServer::start(|_, _| Reply::text("{}").after(Duration::from_secs(20)));
    let child = live(server.base_url())
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .args(["--input", r#"{"text": "x"}"#])
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the call to reach the server, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.received().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    let kill = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{signal} {args:?}"
    );
    out
}

/// What `--provider` needs is checked before any request: the flags that only it reads,
/// a base URL given with the path packc adds, and the input against the composition's
/// `input_schema` (a paid model never sees an input its pack refuses).
#[test]
fn live_flags_and_the_input_are_checked_before_any_request() {
    let server = MockServer::start(|_, _| Reply::text("{}"));
    let ex2 = repo().join("examples/rfc0010-ex2.pack.yaml");
    let out = packc_output!("run", &ex2, ["--model", "m", "--input", r#"{"text": "x"}"#]);
    assert_code(&out, 2);
    assert_contains(stderr(&out), "--provider");
    let out = packc_output!(
        "run",
        &ex2,
        [
            "--provider",
            "openai",
            "--model",
            "",
            "--input",
            r#"{"text": "x"}"#
        ]
    );
    assert_code(&out, 2);
    assert_contains(stderr(&out), "a value is required for '--model <NAME>'");
    let out = live_output!(
        format!("{}/chat/completions", server.base_url()),
        &ex2,
        ["--input", r#"{"text": "x"}"#]
    );
    assert_code(&out, 2);
    assert_contains(
        stderr(&out),
        &format!(
            "ends with /chat/completions, which packc adds to it: give --base-url {}",
            server.base_url()
        ),
    );
    let out = live_output!(server.base_url(), &ex2, ["--input", r#"{"text": ""}"#]);
    assert_code(&out, 2);
    assert_contains(
        stderr(&out),
        "the input does not match the input_schema of composition `analyze_document` at `/text`",
    );
    assert!(server.received().is_empty(), "a request went out");
}

#[test]
fn a_built_artifact_runs_live_without_its_source() {
    let dir = scratch("ppk");
    let ppk = dir.join("ex2.ppk");
    let build = build_to(repo().join("examples/rfc0010-ex2.pack.yaml"), &ppk);
    assert_code(&build, 0);
    let server = MockServer::start(|_, req| {
        // The embedded schema travels in the artifact: it is the response format.
        assert_eq!(req.body["response_format"]["type"], "json_schema");
        Reply::text(r#"{"type": "general", "summary": "s"}"#)
    });
    let out = packc_output!(
        [
            "run",
            "--quiet",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url"
        ],
        server.base_url(),
        &ppk,
        ["--input", r#"{"text": "x"}"#]
    );
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The classifier's answer has a member its schema forbids (`summary`): checked
    // against the embedded schema, it is a host_error naming the path.
    assert_contains(
        &stderr,
        "does not match output_schema `schemas/document-type.json`",
    );
    assert!(
        stderr.lines().count() == 1,
        "--quiet prints only the error: {stderr}"
    );
}

/// On a terminal (a pty from util-linux `script`), the status line and a summary.
#[cfg(unix)]
#[test]
fn a_terminal_gets_a_status_line_and_a_summary() {
    let server = MockServer::start(|_, _| {
        Reply::text(r#"{"type": "manual"}"#).after(std::time::Duration::from_millis(300))
    });
    let pack = repo().join("examples/rfc0010-ex1.pack.yaml");
    let Some(shown) = on_a_terminal(&format!(
        "run --provider openai --model m --base-url {} {} --input '{{\"text\": \"x\"}}'",
        server.base_url(),
        pack.display()
    )) else {
        return;
    };
    assert_contains(&shown, "1 model call, 0 tool calls (1 in flight)");
    assert!(
        shown.contains("\x1b[2K"),
        "the status line is cleared: {shown:?}"
    );
    assert_contains(&shown, "1 model call, 0 tool calls, 15 tokens");
    // `--trace` on a terminal lists each call with its input and answer.
    let Some(shown) = on_a_terminal(&format!(
        "run --provider openai --model m --base-url {} {} --input '{{\"text\": \"x\"}}' --trace",
        server.base_url(),
        pack.display()
    )) else {
        return;
    };
    assert_contains(&shown, "step classify");
    assert_contains(&shown, r#"prompt doc_classifier: "x" -> {"type":"manual"}"#);
}

/// A pack whose composition `c` calls tool `dump` (a tool step), then stops.
const DUMP_PACK: &str = include_str!("packs/dump_pack.yaml");

/// `packc run <pack> --target composition:c --tools <tools>`, with `pack` and `tools` (the
/// text of each) written to `dir` first.
fn dump_run(dir: &Path, pack: &str, tools: &str) -> Command {
    let mut c = packc();
    c.arg("run")
        .arg(write(dir, "pack.yaml", pack))
        .args(["--target", "composition:c", "--tools"])
        .arg(write(dir, "tools.yaml", tools));
    c
}

#[test]
fn the_default_key_goes_only_to_api_openai_com_unless_named() {
    let server = MockServer::start(|_, _| Reply::text("ok"));
    let run = |extra: &[&str]| {
        let out = live(server.base_url())
            .env("OPENAI_API_KEY", "sk-from-env-123")
            .arg(repo().join("examples/rfc0010-ex1.pack.yaml"))
            .args(["--input", r#"{"text": "x"}"#])
            .args(extra)
            .output()
            .unwrap();
        stderr(&out)
    };
    // Another host: the key stays home, and a note says how to send it.
    let stderr = run(&[]);
    assert_contains(&stderr, "note: OPENAI_API_KEY is not sent to 127.0.0.1, only to api.openai.com; pass --api-key-env OPENAI_API_KEY");
    assert_lacks(&stderr, "sk-from-env-123");
    let received = server.received();
    assert!(!received.is_empty());
    assert!(received.iter().all(|r| r.header("authorization").is_none()));
    // Named explicitly, it goes; loopback over plain HTTP is no cause for a warning.
    let seen = received.len();
    let stderr = run(&["--api-key-env", "OPENAI_API_KEY"]);
    assert!(
        !stderr.contains("warning:") && !stderr.contains("note:"),
        "{stderr}"
    );
    let received = server.received();
    assert!(received.len() > seen);
    assert!(received[seen..]
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer sk-from-env-123")));
    // A named variable that is empty or unset is refused before any call.
    let out = live_output!(
        server.base_url(),
        repo().join("examples/rfc0010-ex1.pack.yaml"),
        ["--api-key-env", "PACKC_TEST_NO_SUCH_KEY"]
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = common::stderr(&out);
    assert_contains(&stderr, "PACKC_TEST_NO_SUCH_KEY is not set");
    // A URL that merely contains the name is not OpenAI's.
    let seen = server.received().len();
    let out = live(format!("{}/api.openai.com", server.base_url()))
        .env("OPENAI_API_KEY", "sk-from-env-123")
        .arg(repo().join("examples/rfc0010-ex1.pack.yaml"))
        .args(["--input", r#"{"text": "x"}"#])
        .output()
        .unwrap();
    let stderr = common::stderr(&out);
    assert_contains(&stderr, "is not sent to 127.0.0.1");
    let received = server.received();
    assert!(received.len() > seen, "{stderr}");
    assert!(received[seen..]
        .iter()
        .all(|r| r.header("authorization").is_none()));
}

#[test]
fn a_key_over_plain_http_to_another_machine_is_warned_about() {
    // 0.0.0.0 is not a loopback name, and a connection to it is refused at once.
    let out = packc()
        .env("MY_KEY", "sk-plain-123")
        .args(["run", "--provider", "openai", "--model", "m", "--quiet"])
        .args([
            "--base-url",
            "http://0.0.0.0:9/v1",
            "--api-key-env",
            "MY_KEY",
        ])
        .arg(repo().join("examples/rfc0010-ex1.pack.yaml"))
        .args(["--timeout", "2", "--retries", "0"])
        .output()
        .unwrap();
    let stderr = stderr(&out);
    assert_contains(
        &stderr,
        "warning: the API key is sent over plain HTTP to 0.0.0.0",
    );
    assert_lacks(&stderr, "sk-plain-123");
}

#[test]
fn a_key_echoed_by_the_server_is_not_printed_nor_recorded() {
    let server = MockServer::start(|_, req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        Reply::status(
            401,
            &format!(r#"{{"error": {{"message": "Incorrect API key provided: {auth}"}}}}"#),
        )
    });
    let dir = scratch("echo-key");
    let case = dir.join("run.case.yaml");
    let out = live(server.base_url())
        .env("MY_KEY", "sk-echoed-456")
        .args(["--api-key-env", "MY_KEY"])
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .args(["--input", r#"{"text": "x"}"#, "--trace", "--record"])
        .arg(&case)
        .output()
        .unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_contains(&stderr, "Incorrect API key provided: Bearer [redacted]");
    let recorded = std::fs::read_to_string(&case).unwrap();
    assert_contains(&recorded, "[redacted]");
    for text in [&*stderr, &recorded, &String::from_utf8_lossy(&out.stdout)] {
        assert_lacks(text, "sk-echoed-456");
    }
}

#[test]
fn url_credentials_in_base_url_are_not_printed() {
    let server = MockServer::start(|_, _| Reply::status(500, "down"));
    let url = format!("http://admin:PW-hunter22@127.0.0.1:{}/v1", server.port());
    let out = packc_output!(
        [
            "run",
            "--provider",
            "openai",
            "--model",
            "m",
            "--retries",
            "0"
        ],
        ["--base-url", &url],
        repo().join("examples/rfc0010-ex1.pack.yaml"),
        ["--input", r#"{"text": "x"}"#]
    );
    let stderr = stderr(&out);
    assert_contains(&stderr, "http://[redacted]@127.0.0.1:");
    assert_lacks(&stderr, "PW-hunter22");
}

#[test]
fn timeouts_past_the_maximum_are_refused_at_parse_time() {
    for t in ["1e19", "1e20", "-1", "0", "NaN", "inf", "86401"] {
        let started = std::time::Instant::now();
        let out = packc_output!(
            ["run", "--provider", "openai", "--model", "m"],
            ["--base-url", "http://127.0.0.1:9/v1"],
            format!("--timeout={t}"),
            repo().join("examples/rfc0010-ex1.pack.yaml")
        );
        let stderr = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{t}: {stderr}");
        assert!(stderr.contains("--timeout"), "{t}: {stderr}");
        assert!(!stderr.contains("panicked"), "{t}: {stderr}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
    let dir = scratch("timeout-sec");
    let tools = "tools:\n  dump: {command: [cat], timeout_sec: 1e19}\n";
    let out = dump_run(&dir, DUMP_PACK, tools).output().unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "tools.dump: `timeout_sec` of 10000000000000000000 seconds is past the maximum"
        ),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn a_bound_command_sees_only_a_clean_environment_and_its_env() {
    let dir = scratch("clean-env");
    let tools = r#"tools:
  dump:
    command: [sh, -c, 'cat >/dev/null; printf "{\"key\": \"%s\", \"other\": \"%s\", \"passed\": \"%s\", \"set\": \"%s\", \"path\": %s}" "$OPENAI_API_KEY" "$OTHER_SECRET" "$PASSED" "$MODE" "$([ -n "$PATH" ] && echo true || echo false)"']
    env: {PASSED: null, MODE: test}
"#;
    let out = dump_run(&dir, DUMP_PACK, tools)
        .env("OPENAI_API_KEY", "sk-never-for-tools")
        .env("OTHER_SECRET", "hidden")
        .env("PASSED", "given")
        .output()
        .unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        seen,
        serde_json::json!({"key": "", "other": "", "passed": "given", "set": "test", "path": true})
    );
}

#[test]
fn host_calls_are_capped_by_default_and_by_flag() {
    let case = repo().join("../shared/conformance/cases/comp-retry-exhausted.case.yaml");
    if !case.exists() {
        return; // ../shared is absent
    }
    // `packc test`: the case makes two calls; a cap of 1 fails it with limit_exceeded.
    let out = packc_output!("test", &case);
    assert_eq!(out.status.code(), Some(0));
    let out = packc_output!(["test", "--max-host-calls", "1"], &case);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_contains(&stdout, "limit_exceeded");
    // `packc run`: a retried failing tool, capped.
    let dir = scratch("host-call-cap");
    let pack = DUMP_PACK.replace(
        "args: {}}",
        "args: {}, modifiers: {retry: {max_attempts: 50}}}",
    );
    let tools = "tools:\n  dump: {command: [sh, -c, 'exit 1']}\n";
    let out = dump_run(&dir, &pack, tools)
        .args(["--max-host-calls", "5"])
        .output()
        .unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_contains(&stderr, "error[limit_exceeded]: the embedder's limit of 5 host calls was reached (`max_host_calls`) (raise it with --max-host-calls N)");
    // The default is shown by --help.
    let help = packc_output!(["run", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert_contains(&help, "--max-host-calls <N>");
    assert_contains(&help, "[default: 10000]");
}

/// A pack whose composition `c` calls tool `lookup_customer` in a tool step, then
/// `lookup_order` in a second one.
#[cfg(unix)]
fn tool_pack(dir: &std::path::Path) -> PathBuf {
    write(dir, "tools.pack.yaml", "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\ntools:\n  lookup_customer: {name: lookup_customer, description: x}\n  lookup_order: {name: lookup_order, description: x}\ncompositions:\n  c:\n    version: 1\n    steps:\n      - {id: a, kind: tool, tool: lookup_customer, args: {q: \"${input}\"}}\n      - {id: b, kind: tool, tool: lookup_order, args: {q: \"${input}\"}}\n    output: b\n")
}

/// Runs composition `c` of [`tool_pack`] in a fresh folder for test `test`, with `tools`
/// as its tools file.
fn run_with_tools(test: &str, tools: &str) -> std::process::Output {
    let dir = scratch(test);
    let pack = tool_pack(&dir);
    let tools = write(&dir, "tools.yaml", tools);
    packc_output!(
        [
            "run",
            "--target",
            "composition:c",
            "--input",
            "\"x\"",
            "--tools"
        ],
        &tools,
        &pack
    )
}

/// Bindings are checked before the first call: a misspelled script stops the run with
/// the path; a binding key naming no tool is a warning with "did you mean".
#[cfg(unix)]
#[test]
fn tool_bindings_are_checked_before_the_run() {
    let out = run_with_tools("binding-check", "tools:\n  lookup_customer: {command: [./tools/lookup_custmer.sh]}\n  lookup_ordr: {command: [sh, -c, 'echo {}']}\n  lookup_order: {http: 'not a url'}\n");
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
    assert_contains(&stderr, "warning: tool binding `lookup_ordr` names no tool of the pack; did you mean `lookup_order`?");
    assert!(
        stderr.contains("tool `lookup_customer`: command `")
            && stderr.contains("tools/lookup_custmer.sh` does not exist"),
        "{stderr}"
    );
    assert_contains(
        &stderr,
        "tool `lookup_order`: `not a url` is not an http:// or https:// URL",
    );
}

/// A tool that fails is a warning line as it happens (name, exit status, the end of its
/// stderr), even when the run goes on.
#[cfg(unix)]
#[test]
fn tool_failures_are_shown_as_they_happen() {
    let out = run_with_tools("tool-failure", "tools:\n  lookup_customer: {command: [sh, -c, 'echo no such customer >&2; exit 3']}\n  lookup_order: {command: [sh, -c, 'echo {}']}\n");
    let stderr = stderr(&out);
    assert!(
        stderr.contains(
            "warning: tool `lookup_customer` exited with exit status: 3: no such customer"
        ),
        "{stderr}"
    );
}

/// A pack whose one prompt state has a `toxicity` host validator.
const TOXIC_PACK: &str = include_str!("packs/toxic_pack.yaml");

/// The toxic pack in a fresh folder `name`, with a tools file binding its `toxicity`
/// validator to `server`'s `/guard`: (pack, tools file, the guard's URL).
fn toxic_pack_guarded_over_http(name: &str, server: &MockServer) -> (PathBuf, PathBuf, String) {
    let dir = scratch(name);
    let pack = write(&dir, "civil.pack.yaml", TOXIC_PACK);
    let url = format!("http://127.0.0.1:{}/guard", server.port());
    let bindings = write(
        &dir,
        "tools.yaml",
        format!("guards:\n  toxicity: {{http: '{url}'}}\n"),
    );
    (pack, bindings, url)
}

#[test]
fn a_host_validator_without_a_binding_is_refused_before_any_request() {
    let server = MockServer::start(|_, _| Reply::text("you fool"));
    let dir = scratch("toxic-unbound");
    let pack = write(&dir, "civil.pack.yaml", TOXIC_PACK);
    let out = live_output!(server.base_url(), &pack, ["--input", r#""hi""#]);
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_contains(&stderr, "toxicity");
    assert!(server.received().is_empty(), "no request may be made");
}

#[test]
fn a_host_validator_bound_to_a_command_is_called_and_enforced() {
    let server = MockServer::start(|_, _| Reply::text("you fool"));
    let dir = scratch("toxic-bound");
    let pack = write(&dir, "civil.pack.yaml", TOXIC_PACK);
    // The validator: fails any text containing "fool", and logs what it was asked.
    write(&dir, "toxicity.py", "import json, sys\nreq = json.load(sys.stdin)\nopen('asked.json', 'w').write(json.dumps(req))\nprint(json.dumps({'pass': 'fool' not in req['text']}))\n");
    let bindings = write(
        &dir,
        "tools.yaml",
        "guards:\n  toxicity: {command: [python3, toxicity.py], timeout_sec: 30}\n",
    );
    let out = live_output!(
        server.base_url(),
        &pack,
        ["--input", r#""hi""#, "--tools"],
        &bindings,
        "--record",
        dir.join("civil.case.yaml")
    );
    let stderr = stderr(&out);
    if Command::new("python3").arg("--version").output().is_err() {
        println!("note: python3 is not available; skipping");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output, "Let's keep this civil.");
    let asked: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("asked.json")).unwrap()).unwrap();
    assert_eq!(
        asked,
        serde_json::json!({"type": "toxicity", "params": {"threshold": 0.5}, "text": "you fool"})
    );
    assert_eq!(server.received().len(), 1);
    // The recording answers the validator under `guards:` and replays green.
    let case = std::fs::read_to_string(dir.join("civil.case.yaml")).unwrap();
    assert_contains(&case, "guards:");
    let replay = packc_output!("test", dir.join("civil.case.yaml"));
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains("1 passed, 0 failed"), "{text}{case}");
}

#[test]
fn an_extension_step_without_a_binding_is_refused_before_any_request() {
    let server = MockServer::start(|_, _| Reply::text("hi"));
    let dir = scratch("ext-unbound");
    let pack = write(
        &dir,
        "ext.pack.yaml",
        include_str!(
            "packs/an_extension_step_without_a_binding_is_refused_before_any_request.yaml"
        ),
    );
    let out = live_output!(
        server.base_url(),
        &pack,
        ["--target", "composition:main", "--input", r#""q""#]
    );
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_contains(&stderr, "acme.rerank");
    assert!(server.received().is_empty(), "no request may be made");
}

#[test]
fn a_host_validator_that_gives_no_verdict_is_a_warning_line() {
    let server = MockServer::start(|_, req| match req.path.as_str() {
        "/guard" => Reply::status(500, "overloaded"),
        _ => Reply::text("hello there"),
    });
    let (pack, bindings, url) = toxic_pack_guarded_over_http("toxic-failing", &server);
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(&pack)
        .args(["--input", r#""hi""#, "--tools"])
        .arg(&bindings)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The run goes on, failing closed, and says so.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output, "Let's keep this civil.");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    let [line] = &warnings[..] else {
        panic!("{stderr}")
    };
    assert!(
        line.starts_with(&format!(
            "warning: host validator `toxicity` at `main` (http {url}) gave no verdict: "
        )),
        "{stderr}"
    );
    assert!(line.contains("500"), "{stderr}");
    assert!(
        line.ends_with("; failing closed: the answer is replaced by the validator's message"),
        "{stderr}"
    );
}

/// The same warning when the run goes one turn at a time (`--interactive`).
#[test]
fn an_interactive_run_warns_of_a_host_validator_that_gives_no_verdict() {
    use std::io::Write;
    let server = MockServer::start(|_, req| match req.path.as_str() {
        "/guard" => Reply::json(serde_json::json!({"verdict": "fine"})),
        _ => Reply::text("hello there"),
    });
    let (pack, bindings, url) = toxic_pack_guarded_over_http("toxic-interactive", &server);
    let mut child = packc()
        .args([
            "run",
            "--interactive",
            "--provider",
            "openai",
            "--model",
            "m",
        ])
        .arg("--base-url")
        .arg(server.base_url())
        .arg(&pack)
        .arg("--tools")
        .arg(&bindings)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hi\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: host validator `toxicity` at `main` (http {url}) gave no verdict: it answered {{\"verdict\":\"fine\"}}, not {{\"pass\": true|false}}; failing closed: the answer is replaced by the validator's message"
        )),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Let's keep this civil."), "{stdout}");
}
