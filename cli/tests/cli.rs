//! The `packc` binary: exit codes, output formats, help.

use std::path::PathBuf;
use std::process::Command;

fn packc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_packc"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn write_temp(name: &str, text: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("packc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn clean_example_exits_zero() {
    let out = packc()
        .arg("check")
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn errors_exit_one_and_json_lines_locate_them() {
    let pack = write_temp(
        "dup.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\nworkflow:\n  version: 1\n  entry: nowhere\n  states:\n    s: {prompt_task: p}\n",
    );
    let out = packc()
        .args(["check", "--format", "json"])
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let d = lines
        .iter()
        .find(|d| d["kind"] == "unresolved_state")
        .expect("unresolved_state reported");
    assert_eq!(d["pointer"], "/workflow/entry");
    assert_eq!(d["line"], 9);
    assert_eq!(d["column"], 3);
    assert_eq!(d["severity"], "error");
}

#[test]
fn human_output_names_kind_file_and_line() {
    let pack = write_temp("bad.pack.yaml", b"id: [unclosed\n");
    let out = packc()
        .args(["check", "--color", "never"])
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("parse_error"), "{stderr}");
    assert!(stderr.contains("bad.pack.yaml:"), "{stderr}");
}

#[test]
fn warnings_fail_only_when_denied() {
    let pack = write_temp(
        "warn.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"hi {{who}}\"}\n",
    );
    let out = packc().arg("check").arg(&pack).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = packc()
        .args(["check", "--deny-warnings"])
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn missing_file_and_bad_usage_exit_two() {
    let out = packc()
        .args(["check", "/nonexistent/x.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = packc().args(["check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = packc().args(["frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn oversized_file_is_limit_exceeded() {
    let pack = write_temp("big.pack.yaml", &vec![b'#'; 2048]);
    let out = packc()
        .args(["check", "--max-source-bytes", "1024", "--format", "json"])
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("limit_exceeded"));
}

#[test]
fn help_explains_check() {
    let out = packc().args(["check", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--format"));
    assert!(help.contains("--deny-warnings"));
    assert!(help.contains("Examples:"));
}

#[test]
fn test_command_reports_passes_and_failures() {
    let out = packc()
        .arg("test")
        .arg(repo().join("examples/cases"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{stdout}");

    let case = std::fs::read_to_string(repo().join("examples/cases/rfc0010-ex2.case.yaml"))
        .unwrap()
        .replace("- skip extract_general", "- skip extract_somethingelse")
        .replace(
            "pack_file: ../",
            &format!("pack_file: {}/", repo().join("examples").display()),
        );
    let bad = write_temp("bad.case.yaml", case.as_bytes());
    let out = packc().arg("test").arg(&bad).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.last(), Some(&"0 passed, 1 failed"), "{stdout}");
    assert!(
        lines[0].starts_with("FAIL ") && lines[0].contains("skip extract_somethingelse"),
        "{stdout}"
    );
}

#[test]
fn run_command_prints_the_output() {
    let host = write_temp(
        "host.yaml",
        b"host:\n  prompts:\n    doc_classifier:\n      - output: {type: general}\n    general_doc_extractor:\n      - output: {summary: memo}\n",
    );
    let out = packc()
        .arg("run")
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .args(["--input", r#"{"text": "a memo"}"#, "--trace", "--host"])
        .arg(&host)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output, serde_json::json!({"summary": "memo"}));
    assert!(
        stderr.contains("branch route -> extract_general"),
        "{stderr}"
    );

    // Without a host script every call fails: a run-time error exits 1.
    let out = packc()
        .arg("run")
        .arg(repo().join("examples/rfc0010-ex2.pack.yaml"))
        .args(["--input", r#"{"text": "a memo"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("host_error"));
}

#[test]
fn check_lists_host_validators_without_counting_them() {
    let pack = write_temp(
        "guarded.pack.yaml",
        br#"id: g
name: G
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  chat:
    id: chat
    name: Chat
    version: 1.0.0
    system_template: Hi.
    validators:
      - {type: max_length, params: {max_characters: 10}}
      - {type: toxicity, params: {threshold: 0.5}}
      - {type: pii_leakage, enabled: false}
"#,
    );
    let out = packc().arg("check").arg(&pack).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let infos: Vec<&str> = stderr.lines().filter(|l| l.starts_with("info:")).collect();
    assert_eq!(infos.len(), 1, "{stderr}");
    assert!(infos[0].contains("guarded.pack.yaml:13:9"), "{stderr}");
    assert!(
        infos[0].contains("`toxicity` (/prompts/chat/validators/1)"),
        "{stderr}"
    );
    assert!(stderr.contains("no problems"), "{stderr}");
}

#[test]
fn graph_and_inspect_show_extension_steps() {
    let pack = write_temp(
        "ext.pack.yaml",
        br#"$schema: https://promptpack.org/schema/v1.8.1/promptpack.schema.json
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
      - {id: rerank, kind: acme.rerank, input: "${ask.output}", top_k: 3}
"#,
    );
    let graph = packc().arg("graph").arg(&pack).output().unwrap();
    let dot = String::from_utf8_lossy(&graph.stdout);
    assert_eq!(
        graph.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&graph.stderr)
    );
    assert!(dot.contains("extension acme.rerank"), "{dot}");
    let ppk = pack.with_extension("ppk");
    let build = packc()
        .arg("build")
        .arg(&pack)
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
    let inspect = packc().arg("inspect").arg(&ppk).output().unwrap();
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        text.contains(r#"1 rerank  extension acme.rerank(${ask#0.output}) {"top_k":3}"#),
        "{text}"
    );
    assert!(
        text.contains("composition main: 1 model, 0 tool, 1 extension"),
        "{text}"
    );
}
