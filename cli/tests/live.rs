//! `packc run --provider openai` against a mock server: the output, `--record`, and a
//! recorded run replayed green by `packc test`.

use std::path::PathBuf;
use std::process::Command;

use packc_host::mock::{MockServer, Reply};

fn packc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_packc"));
    c.env_remove("OPENAI_API_KEY");
    c
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli-live")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

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
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .args([
            "--input",
            r#"{"text": "Deep Residual Learning"}"#,
            "--record",
        ])
        .arg(&case)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output["title"], "ResNet");
    // Not a terminal: only the result (the status line and notes are for terminals).
    assert_eq!(stderr, "", "{stderr}");
    assert_eq!(server.received().len(), 2);

    let text = std::fs::read_to_string(&case).unwrap();
    assert!(text.contains("doc_classifier:"), "{text}");
    let replay = packc().arg("test").arg(&case).output().unwrap();
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&replay.stdout),
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(String::from_utf8_lossy(&replay.stdout).contains("1 passed, 0 failed"));
}

#[test]
fn a_hosted_api_without_a_key_is_refused_before_any_call() {
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "gpt-4o-mini"])
        .arg(repo().join("examples/rfc0010-ex1.pack.yaml"))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OPENAI_API_KEY is not set"), "{stderr}");
}

#[test]
fn unbound_tools_are_named_before_the_run_and_fail_as_host_errors() {
    let server = MockServer::start(|_, _| Reply::text("title"));
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(repo().join("examples/rfc0010-ex3.pack.yaml"))
        .args(["--input", r#"{"text": "x"}"#])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
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
        assert!(warning.contains(tool), "{warning}");
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error[host_error]: ")
            && stderr.contains("tool `doc.parse_structure` is not bound"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_run_and_says_where_it_was() {
    use std::time::{Duration, Instant};
    let server = MockServer::start(|_, _| Reply::text("{}").after(Duration::from_secs(20)));
    let child = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .args(["--input", r#"{"text": "x"}"#])
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
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted in state `main`, at step `classify`, after 1 model call, 0 tool calls (1 still in flight)"),
        "{stderr}"
    );
}

#[test]
fn a_built_artifact_runs_live_without_its_source() {
    let dir = scratch("ppk");
    let ppk = dir.join("ex2.ppk");
    let build = packc()
        .arg("build")
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .arg("-o")
        .arg(&ppk)
        .output()
        .unwrap();
    assert_eq!(
        build.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let server = MockServer::start(|_, req| {
        // The embedded schema travels in the artifact: it is the response format.
        assert_eq!(req.body["response_format"]["type"], "json_schema");
        Reply::text(r#"{"type": "general", "summary": "s"}"#)
    });
    let out = packc()
        .args([
            "run",
            "--quiet",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
        ])
        .arg(server.base_url())
        .arg(&ppk)
        .args(["--input", r#"{"text": "x"}"#])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The classifier's answer has a member its schema forbids (`summary`): checked
    // against the embedded schema, it is a host_error naming the path.
    assert!(
        stderr.contains("does not match output_schema `schemas/document-type.json`"),
        "{stderr}"
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
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to make a terminal");
        return;
    }
    let server = MockServer::start(|_, _| {
        Reply::text(r#"{"type": "manual"}"#).after(std::time::Duration::from_millis(300))
    });
    let packc = env!("CARGO_BIN_EXE_packc");
    let pack = repo().join("examples/rfc0010-ex1.pack.yaml");
    let command = format!(
        "{packc} run --provider openai --model m --base-url {} {} --input '{{\"text\": \"x\"}}' >/dev/null",
        server.base_url(),
        pack.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("1 model call, 0 tool calls (1 in flight)"),
        "{shown}"
    );
    assert!(
        shown.contains("\x1b[2K"),
        "the status line is cleared: {shown:?}"
    );
    assert!(
        shown.contains("1 model call, 0 tool calls, 15 tokens"),
        "{shown}"
    );
}

/// A pack whose one prompt state has a `toxicity` host validator.
const TOXIC_PACK: &str = r#"
id: civil
name: Civil
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  chat:
    id: chat
    name: Chat
    version: 1.0.0
    system_template: Answer politely.
    validators:
      - type: toxicity
        params: {threshold: 0.5}
        message: Let's keep this civil.
workflow:
  version: 1
  entry: main
  states:
    main: {prompt_task: chat, terminal: true}
"#;

#[test]
fn a_host_validator_without_a_binding_is_refused_before_any_request() {
    let server = MockServer::start(|_, _| Reply::text("you fool"));
    let dir = scratch("toxic-unbound");
    let pack = dir.join("civil.pack.yaml");
    std::fs::write(&pack, TOXIC_PACK).unwrap();
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(&pack)
        .args(["--input", r#""hi""#])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("toxicity"), "{stderr}");
    assert!(server.received().is_empty(), "no request may be made");
}

#[test]
fn a_host_validator_bound_to_a_command_is_called_and_enforced() {
    let server = MockServer::start(|_, _| Reply::text("you fool"));
    let dir = scratch("toxic-bound");
    let pack = dir.join("civil.pack.yaml");
    std::fs::write(&pack, TOXIC_PACK).unwrap();
    // The validator: fails any text containing "fool", and logs what it was asked.
    std::fs::write(
        dir.join("toxicity.py"),
        "import json, sys\nreq = json.load(sys.stdin)\nopen('asked.json', 'w').write(json.dumps(req))\nprint(json.dumps({'pass': 'fool' not in req['text']}))\n",
    )
    .unwrap();
    let bindings = dir.join("tools.yaml");
    std::fs::write(
        &bindings,
        "guards:\n  toxicity: {command: [python3, toxicity.py], timeout_sec: 30}\n",
    )
    .unwrap();
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(&pack)
        .args(["--input", r#""hi""#, "--tools"])
        .arg(&bindings)
        .arg("--record")
        .arg(dir.join("civil.case.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
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
    assert!(case.contains("guards:"), "{case}");
    let replay = packc()
        .arg("test")
        .arg(dir.join("civil.case.yaml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains("1 passed, 0 failed"), "{text}{case}");
}

#[test]
fn an_extension_step_without_a_binding_is_refused_before_any_request() {
    let server = MockServer::start(|_, _| Reply::text("hi"));
    let dir = scratch("ext-unbound");
    let pack = dir.join("ext.pack.yaml");
    std::fs::write(
        &pack,
        r#"$schema: https://promptpack.org/schema/v1.8.1/promptpack.schema.json
id: ext
name: Ext
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: S}
compositions:
  main:
    version: 1
    steps:
      - {id: ask, kind: prompt, prompt_task: p}
      - {id: rerank, kind: acme.rerank, input: "${ask.output}"}
"#,
    )
    .unwrap();
    let out = packc()
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(&pack)
        .args(["--target", "composition:main", "--input", r#""q""#])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("acme.rerank"), "{stderr}");
    assert!(server.received().is_empty(), "no request may be made");
}
