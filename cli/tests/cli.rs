//! The `packc` binary: exit codes, output formats, help.

use std::path::PathBuf;

mod common;
use common::{
    assert_code, assert_contains, assert_lacks, build_to, built_and_inspected, on_a_terminal,
    packc, packc_output, repo, run_host, scratch, stderr, stdout, write,
};

fn write_temp(name: &str, text: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-write-temp");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn clean_example_exits_zero() {
    let out = packc_output!("check", repo().join("examples/rfc0010-ex2.pack.yaml"));
    assert_code(&out, 0);
}

#[test]
fn errors_exit_one_and_json_lines_locate_them() {
    let pack = write_temp(
        "dup.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\nworkflow:\n  version: 1\n  entry: nowhere\n  states:\n    s: {prompt_task: p}\n",
    );
    let out = packc_output!(["check", "--format", "json"], &pack);
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
    let out = packc_output!(["check", "--color", "never"], &pack);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_contains(&stderr, "parse_error");
    assert_contains(&stderr, "bad.pack.yaml:");
}

#[test]
fn warnings_fail_only_when_denied() {
    let pack = write_temp(
        "warn.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"hi {{who}}\"}\n",
    );
    let out = packc_output!("check", &pack);
    assert_eq!(out.status.code(), Some(0));
    let out = packc_output!(["check", "--deny-warnings"], &pack);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn missing_file_and_bad_usage_exit_two() {
    let out = packc_output!(["check", "/nonexistent/x.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = packc_output!(["check"]);
    assert_eq!(out.status.code(), Some(2));
    let out = packc_output!(["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn oversized_file_is_limit_exceeded() {
    let pack = write_temp("big.pack.yaml", &vec![b'#'; 2048]);
    let out = packc_output!(
        ["check", "--max-source-bytes", "1024", "--format", "json"],
        &pack
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("limit_exceeded"));
}

#[test]
fn help_explains_check() {
    let out = packc_output!(["check", "--help"]);
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("--format"));
    assert!(help.contains("--deny-warnings"));
    assert!(help.contains("Examples:"));
}

#[test]
fn test_command_reports_passes_and_failures() {
    let out = packc_output!("test", repo().join("examples/cases"));
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
    let out = packc_output!(["test", "--allow-path"], repo().join("examples"), &bad);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.last(), Some(&"0 passed, 1 failed"), "{stdout}");
    assert!(lines[0].starts_with("FAIL "), "{stdout}");
    // What the case shows comes first.
    assert!(lines[1].starts_with("    about: "), "{stdout}");
    // The trace mismatch is a line diff: the expected line and the line run, each marked.
    assert!(
        lines.contains(&"      - skip extract_somethingelse")
            && lines.contains(&"      + skip extract_general")
            && lines.contains(&"        step classify"),
        "{stdout}"
    );
}

/// Every file of `tests/bad_cases` breaks the case format one way; each is a failure
/// naming its file and the line of the mistake, and none is run as if it were fine.
#[test]
fn broken_case_files_fail_with_file_and_line() {
    let dir = repo().join("tests/bad_cases");
    let out = packc_output!("test", &dir);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let expected = [
        (
            "call-member-misspelled",
            22,
            "unknown member `promt` in an `expect.calls` item; did you mean `prompt`?",
        ),
        (
            "calls-misspelled",
            21,
            "unknown member `cals` in `expect`; did you mean `calls`?",
        ),
        (
            "clock-wrong-type",
            17,
            "item 1 of `run.host.clock` must be a whole number",
        ),
        (
            "expect-member-misspelled",
            20,
            "unknown member `ouput` in `expect`; did you mean `output`?",
        ),
        ("expects-nothing", 19, "`expect` expects nothing"),
        ("not-yaml", 15, "not valid YAML"),
        (
            "queue-without-dash",
            19,
            "the answers for `reply` in `run.host.prompts` must be a list",
        ),
        (
            "run-member-misspelled",
            15,
            "unknown member `inptu` in `run`; did you mean `input`?",
        ),
        (
            "script-item-two-members",
            16,
            "a `run.script` item has exactly one member",
        ),
        (
            "top-member-misspelled",
            14,
            "unknown member `expected` in the case; did you mean `expect`?",
        ),
        (
            "trace-not-a-list",
            21,
            "`expect.trace` must be a list, not a string",
        ),
    ];
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, expected.len(), "one expectation per broken file");
    for (name, line, message) in expected {
        let file = dir.join(format!("{name}.case.yaml"));
        let located = format!("{}:{line}:", file.display());
        assert!(
            stdout.contains(&format!("FAIL {}", file.display()))
                && stdout
                    .lines()
                    .any(|l| l.contains(&located) && l.contains(message)),
            "{name}: expected {located} {message}\n{stdout}"
        );
    }
    assert!(
        stdout.ends_with(&format!("0 passed, {} failed\n", expected.len())),
        "{stdout}"
    );
}

#[test]
fn test_on_paths_without_cases_fails() {
    let empty = tempfile::tempdir().unwrap();
    let out = packc_output!("test", empty.path());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_contains(&stderr, "no case files found");
}

#[test]
fn run_host_script_is_checked_like_a_case() {
    let host = write_temp(
        "typo-host.yaml",
        b"input: {text: hi}
host:
  promts:
    doc_classifier: [{output: {type: general}}]
",
    );
    let out = run_host(repo().join("examples/rfc0010-ex2.pack.yaml"), &host);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:3:3: unknown member `promts` in `run.host`; did you mean `prompts`?",
            host.display()
        )),
        "{stderr}"
    );
}

#[test]
fn run_host_script_answers_and_queue_names_are_checked_when_read() {
    let pack = repo().join("examples/rfc0010-ex2.pack.yaml");
    let host = write_temp(
        "misspelt-answer-host.yaml",
        b"input: {text: hi}
host:
  prompts:
    doc_classifier:
      - ouput: {type: general}
",
    );
    let out = run_host(&pack, &host);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:5:9: an answer for `doc_classifier` in `run.host.prompts`: unknown member `ouput`; did you mean `output`?",
            host.display()
        )),
        "{stderr}"
    );
    let host = write_temp(
        "misspelt-queue-host.yaml",
        b"input: {text: hi}
host:
  prompts:
    doc_clasifier: [{output: {type: general}}]
",
    );
    let out = run_host(&pack, &host);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:4:5: `doc_clasifier` in `run.host.prompts` is no prompt of the pack, so its answers are never used; did you mean `doc_classifier`?",
            host.display()
        )),
        "{stderr}"
    );
}

#[test]
fn a_failing_case_names_a_queue_no_call_consumes() {
    let dir = scratch("unknown-queue");
    let case = dir.join("queue.case.yaml");
    std::fs::write(
        &case,
        format!(
            "about: a queue under a misspelt prompt name
pack_file: {}
run:
  input: {{text: hi}}
  host:
    prompts:
      doc_clasifier: [{{output: {{type: general}}}}]
expect:
  output: {{summary: memo}}
",
            repo().join("examples/rfc0010-ex2.pack.yaml").display()
        ),
    )
    .unwrap();
    let out = packc_output!(["test", "--allow-path"], repo().join("examples"), &case);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_contains(
        &stdout,
        "note: `doc_clasifier` in `run.host.prompts` is no prompt of the pack, so its answers are never used; did you mean `doc_classifier`?",
    );
}

#[test]
fn run_command_prints_the_output() {
    let host = write_temp(
        "host.yaml",
        b"host:\n  prompts:\n    doc_classifier:\n      - output: {type: general}\n    general_doc_extractor:\n      - output: {summary: memo}\n",
    );
    let out = packc_output!(
        "run",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        ["--input", r#"{"text": "a memo"}"#, "--trace", "--host"],
        &host
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output, serde_json::json!({"summary": "memo"}));
    assert_contains(&stderr, "branch route -> extract_general");

    // Without a host script every call fails: a run-time error exits 1.
    let out = packc_output!(
        "run",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        ["--input", r#"{"text": "a memo"}"#]
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("host_error"));
}

/// A pack with a warning runs, and the warning is shown as `packc check` shows it.
#[test]
fn run_and_build_print_warnings() {
    let pack = write_temp(
        "warn.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi, tools: [lookup_custmer]}\ntools:\n  lookup_customer: {name: lookup_customer, description: x}\nworkflow:\n  version: 1\n  entry: s\n  states:\n    s: {prompt_task: p, terminal: true}\n",
    );
    let host = write_temp(
        "warn-host.yaml",
        b"host:\n  prompts:\n    p: [{output: done}]\n",
    );
    let out = run_host(&pack, &host);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "\"done\"");
    assert!(
        stderr.contains("unresolved_tool") && stderr.contains("did you mean `lookup_customer`?"),
        "{stderr}"
    );
    let ppk = pack.with_extension("ppk");
    let out = build_to(&pack, &ppk);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_contains(&stderr, "did you mean `lookup_customer`?");
}

/// A `.json` pack is strict JSON: what the YAML reader would accept is a located error.
#[test]
fn json_packs_are_strict_json() {
    let body = "{\n  \"id\": \"demo\",\n  \"name\": \"Demo\",\n  \"version\": \"1.0.0\",\n  \"template_engine\": {\"version\": \"v1\", \"syntax\": \"x\"},\n  \"prompts\": {\"p\": {\"id\": \"p\", \"name\": \"P\", \"version\": \"1.0.0\", \"system_template\": \"hi\"}}\n}\n";
    let clean = write_temp("strict.pack.json", body.as_bytes());
    let out = packc_output!("check", &clean);
    assert_code(&out, 0);
    let broken = [
        (
            "trailing",
            body.replace("\"hi\"}}\n", "\"hi\"}},\n"),
            6,
            "a trailing comma",
        ),
        (
            "unquoted",
            body.replace("\"name\"", "name"),
            3,
            "key must be a string",
        ),
        (
            "comment",
            body.replace("  \"name\"", "  # the name\n  \"name\""),
            3,
            "not valid JSON",
        ),
    ];
    for (what, text, line, message) in broken {
        let file = write_temp(&format!("{what}.pack.json"), text.as_bytes());
        let out = packc_output!(["check", "--format", "json"], &file);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{what}: {stdout}");
        let d: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        assert_eq!(d["kind"], "parse_error", "{what}: {stdout}");
        assert_eq!(d["line"], line, "{what}: {stdout}");
        assert!(
            d["message"].as_str().unwrap().contains(message),
            "{what}: {stdout}"
        );
        // The same text named `.yaml` is YAML, which allows all three.
        let yaml = write_temp(&format!("{what}.pack.yaml"), text.as_bytes());
        let out = packc_output!("check", &yaml);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A secondary label above the primary one shares the primary's excerpt: no second
/// `file:line:col` header naming the primary's place over another line.
#[test]
fn secondary_labels_share_one_excerpt() {
    let pack = write_temp(
        "dup-step.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\ncompositions:\n  meta:\n    version: 1\n    steps:\n      - {id: summary, kind: prompt, prompt_task: p}\n      - {id: other, kind: prompt, prompt_task: p}\n      - {id: summary, kind: prompt, prompt_task: p}\n    output: summary\n",
    );
    let out = packc_output!(["check", "--color", "never"], &pack);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let headers: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("dup-step.pack.yaml:"))
        .collect();
    assert_eq!(headers.len(), 1, "{stderr}");
    assert!(headers[0].contains("dup-step.pack.yaml:13:"), "{stderr}");
    let first = stderr.find(" 11 │").expect("the first use is shown");
    let dup = stderr.find(" 13 │").expect("the duplicate is shown");
    assert!(first < dup, "lines in source order: {stderr}");
    assert_contains(&stderr, "first used here");
}

/// The README says how to put `packc` on the PATH before its first example runs the
/// bare `packc` command.
#[test]
fn readme_installs_packc_before_using_it() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let install = readme
        .find("cargo install --locked --path cli")
        .expect("an install command");
    let first_use = readme
        .lines()
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, l)| {
            let l = l.strip_prefix("$ ").unwrap_or(l);
            [
                "check", "build", "run", "test", "inspect", "graph", "resume", "bench",
            ]
            .iter()
            .any(|c| l.starts_with(&format!("packc {c} ")))
        })
        .map(|(at, _)| at)
        .expect("an example running packc");
    assert!(
        install < first_use,
        "install at {install}, first use at {first_use}"
    );
    assert!(
        std::path::Path::new(&repo().join("cli/Cargo.toml")).exists(),
        "the path it installs from"
    );
}

/// `--format json` prints the whole result: status, why it stopped, output, reply, state,
/// trace, every call with its input and answer, tokens; a failure as `failed` with its
/// error.
#[test]
fn run_format_json_prints_the_whole_result() {
    let host = write_temp(
        "json-host.yaml",
        b"host:\n  prompts:\n    doc_classifier:\n      - output: {type: general}\n    general_doc_extractor:\n      - output: {summary: memo}\n",
    );
    let out = packc_output!(
        "run",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        [
            "--input",
            r#"{"text": "a memo"}"#,
            "--format",
            "json",
            "--host"
        ],
        &host
    );
    assert_code(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "done");
    assert_eq!(r["stopped"], "done");
    assert_eq!(r["output"], serde_json::json!({"summary": "memo"}));
    assert_eq!(r["error"], serde_json::Value::Null);
    assert_eq!(r["tokens"], 0);
    let trace: Vec<&str> = r["trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        trace.contains(&"branch route -> extract_general"),
        "{trace:?}"
    );
    let calls = r["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{r}");
    assert_eq!(calls[0]["prompt"], "doc_classifier");
    assert_eq!(calls[0]["input"], serde_json::json!("a memo"));
    assert_eq!(
        calls[0]["answer"],
        serde_json::json!({"output": {"type": "general"}})
    );
    assert_eq!(calls[1]["answer"]["output"]["summary"], "memo");

    let out = packc_output!(
        "run",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        ["--input", r#"{"text": "a memo"}"#, "--format", "json"]
    );
    assert_eq!(out.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error"]["kind"], "host_error");
    assert!(
        r["calls"][0]["answer"]["error"]
            .as_str()
            .unwrap()
            .contains("no scripted answer"),
        "{r}"
    );
}

/// A workflow run that fails reports the state it failed in (a composition state's too);
/// a run of a composition alone has none.
#[test]
fn run_format_json_names_the_state_a_run_failed_in() {
    let host = write_temp(
        "json-wf-fail.json",
        br#"{"input": "hi", "host": {"prompts": {"triage": [{"output": "x", "event": "billing"}], "billing": [{"error": "boom"}]}}}"#,
    );
    let out = packc_output!(
        "run",
        repo().join("examples/guide-add-workflow.pack.yaml"),
        ["--format", "json", "--host"],
        &host
    );
    assert_code(&out, 1);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"]["kind"], "host_error", "{r}");
    assert_eq!(r["state"], "billing_state", "{r}");
    let out = packc_output!(
        "run",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        ["--input", r#"{"text": "a memo"}"#, "--format", "json"],
        ["--target", "composition:analyze_document"]
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&r["status"], &r["state"]),
        (&serde_json::json!("failed"), &serde_json::Value::Null),
        "{r}"
    );
}

/// The `calls` of `--format json` are what `packc test` compares: a case whose
/// `expect.calls` are the printed calls, each with its `answer`, passes, built-in
/// validator firings and a parallel step's calls included; the same case expecting
/// another answer for one call fails, naming the call.
#[test]
fn run_format_json_calls_replay_as_a_case() {
    let dir = scratch("json-calls-case");
    let pack = write(
        &dir,
        "guarded.pack.yaml",
        include_str!("packs/guarded_fan.yaml"),
    );
    let script = r#"{"input": "hi", "host": {"prompts": {"chat": [{"output": "a long answer"}], "left": [{"output": "fine"}], "right": [{"output": "darn it"}]}}}"#;
    let host = write(&dir, "host.json", script);
    let out = packc_output!("run", &pack, "--host", &host, ["--format", "json"]);
    assert_code(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = r["calls"].as_array().unwrap();
    assert_eq!(
        calls[1],
        serde_json::json!({"guardrail": "max_length", "at": "first", "action": "truncated", "length": 13}),
        "{r}"
    );
    assert_eq!(calls[3]["answer"], serde_json::json!({"output": "darn it"}));
    assert_eq!(calls[4]["guardrail"], "banned_words", "{r}");
    let case = |calls: &serde_json::Value| {
        serde_json::json!({
            "about": "copied from packc run --format json",
            "pack_file": "guarded.pack.yaml",
            "run": serde_json::from_str::<serde_json::Value>(script).unwrap(),
            "expect": {"output": r["output"], "trace": r["trace"], "calls": calls},
        })
        .to_string()
    };
    let copied = write(&dir, "copied.case.yaml", case(&r["calls"]));
    let out = packc_output!("test", &copied);
    assert_code(&out, 0);
    // The right branch expected to get the left one's answer.
    let mut other = r["calls"].clone();
    other[3]["answer"] = serde_json::json!({"output": "fine"});
    let other = write(&dir, "other.case.yaml", case(&other));
    let out = packc_output!("test", &other);
    assert_code(&out, 1);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("calls differ: calls[3].answer.output: expected \"fine\", got"),
        "{stdout}"
    );
    assert!(stdout.contains("darn it"), "{stdout}");
}

/// `--filter` runs the matching cases only; `--junit` writes what CI reads; failures are
/// listed again at the end, before the count.
#[test]
fn test_filter_junit_and_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let out = packc_output!(
        "test",
        repo().join("examples/cases"),
        repo().join("tests/bad_cases"),
        [
            "--filter",
            "rfc0010-ex2.case",
            "--filter",
            "calls-misspelled",
            "--junit"
        ],
        &junit
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.ends_with("1 passed, 1 failed\n"), "{stdout}");
    let summary = stdout.split("\nfailures:\n").nth(1).expect("a summary");
    assert!(summary.contains("calls-misspelled.case.yaml"), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"2\" failures=\"1\""
        ),
        "{xml}"
    );
    assert_contains(&xml, "<testcase name=\"rfc0010-ex2\"");
    assert_contains(&xml, "<testcase name=\"calls-misspelled\"");
    assert!(
        xml.contains("<failure message=\"") && xml.contains("did you mean `calls`?</failure>"),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");

    let out = packc_output!(
        "test",
        repo().join("examples/cases"),
        ["--filter", "no-such-case"]
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no case file matches --filter no-such-case")
    );
}

/// A composition state with `on_event` whose composition's output schema has no `event`
/// can never move on: a warning with the fix; with `event` in the schema, none.
#[test]
fn composition_state_without_event_output_warns() {
    let dir = scratch("event-output");
    let pack = write(&dir, "triage.pack.yaml", "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\nworkflow:\n  version: 1\n  entry: triage\n  states:\n    triage: {orchestration: composition, composition: c, on_event: {Escalate: human}}\n    human: {prompt_task: p, terminal: true}\ncompositions:\n  c:\n    version: 1\n    steps:\n      - {id: classify, kind: prompt, prompt_task: p, output_schema: verdict.json}\n    output: classify\n");
    let check = |schema: &str| {
        write(&dir, "verdict.json", schema);
        let out = packc_output!(["check", "--format", "json"], &pack);
        assert_code(&out, 0);
        String::from_utf8(out.stdout).unwrap()
    };
    let warned = check(r#"{"type": "object", "properties": {"label": {"type": "string"}}}"#);
    let d: serde_json::Value = serde_json::from_str(
        warned
            .lines()
            .find(|l| l.contains("event_never_output"))
            .unwrap_or_else(|| panic!("{warned}")),
    )
    .unwrap();
    assert_eq!(d["severity"], "warning");
    assert_eq!(d["pointer"], "/workflow/states/triage/on_event");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("no `event` property"),
        "{d}"
    );
    let string = check(r#"{"type": "string"}"#);
    assert_contains(&string, "its output is a string");
    let fine = check(r#"{"type": "object", "properties": {"event": {"type": "string"}}}"#);
    assert_lacks(&fine, "event_never_output");
}

/// `packc bench` runs the scripted run N times and prints runs/s, the time per run, host
/// calls and allocations per run.
#[test]
fn bench_measures_a_scripted_run() {
    let out = packc_output!(
        "bench",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        "--host",
        repo().join("examples/rfc0010-ex2.host.yaml"),
        ["--runs", "25", "--warmup", "2"]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figure = |label: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in {stdout}"));
        line.split_whitespace()
            .nth(label.split_whitespace().count())
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_contains(&stdout, "(target workflow, 25 runs after 2 warm-up)");
    assert!(figure("runs/s") > 0.0, "{stdout}");
    // The example's script answers two model calls per run.
    assert_eq!(figure("host calls"), 2.0, "{stdout}");
    assert!(figure("allocations") >= 1.0, "{stdout}");
    assert!(
        stdout.contains("per run      min ") && stdout.contains(" p99 "),
        "{stdout}"
    );
    assert_lacks(&stdout, "failed runs");
}

/// `undeclared_variable` points at the placeholder's own line inside a block template.
#[test]
fn undeclared_variable_points_at_the_placeholder() {
    let pack = write_temp(
        "placeholder.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p:\n    id: p\n    name: P\n    version: 1.0.0\n    system_template: |\n      Hello {{whoever_else}}.\n      line two\n      line three {{who}} here\n    variables: [{name: whoever_else, type: string, required: false}]\n",
    );
    let out = packc_output!(["check", "--format", "json"], &pack);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let d: serde_json::Value = serde_json::from_str(
        stdout
            .lines()
            .find(|l| l.contains("undeclared_variable"))
            .unwrap_or_else(|| panic!("{stdout}")),
    )
    .unwrap();
    assert_eq!(d["pointer"], "/prompts/p/system_template");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(13), Some(18)),
        "{d}"
    );
}

/// `--trace` on a terminal (a pty from util-linux `script`) also shows each call's input
/// and answer, shortened; piped, only the trace lines.
#[cfg(unix)]
#[test]
fn trace_on_a_terminal_shows_inputs_and_outputs() {
    let Some(shown) = on_a_terminal(&format!(
        "run {} --host {} --trace",
        repo().join("examples/rfc0010-ex2.pack.yaml").display(),
        repo().join("examples/rfc0010-ex2.host.yaml").display()
    )) else {
        return;
    };
    assert_contains(&shown, "branch route -> extract_paper");
    assert!(
        shown.contains("  prompt doc_classifier: ")
            && shown.contains(" -> {\"type\":\"research_paper\""),
        "{shown}"
    );
    let piped = packc_cmd_trace();
    assert_lacks(&piped, "  prompt doc_classifier: ");
}

#[cfg(unix)]
fn packc_cmd_trace() -> String {
    let out = packc_output!(
        "run",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        "--host",
        repo().join("examples/rfc0010-ex2.host.yaml"),
        "--trace"
    );
    stderr(&out)
}

#[test]
fn check_lists_host_validators_without_counting_them() {
    let pack = write_temp(
        "guarded.pack.yaml",
        include_bytes!("packs/check_lists_host_validators_without_counting_them.yaml"),
    );
    let out = packc_output!("check", &pack);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let infos: Vec<&str> = stderr.lines().filter(|l| l.starts_with("info:")).collect();
    assert_eq!(infos.len(), 1, "{stderr}");
    assert!(infos[0].contains("guarded.pack.yaml:13:9"), "{stderr}");
    assert!(
        infos[0].contains("`toxicity` (/prompts/chat/validators/1)"),
        "{stderr}"
    );
    assert_contains(&stderr, "no problems");
}

#[test]
fn check_names_the_built_in_a_host_validator_may_misspell() {
    let pack = write_temp(
        "near.pack.yaml",
        b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi,\n      validators: [{type: banned_word, params: {words: [x]}}]}\n",
    );
    let out = packc_output!("check", &pack);
    assert_code(&out, 0);
    assert_contains(
        String::from_utf8_lossy(&out.stderr),
        "host validator `banned_word` (/prompts/p/validators/0): the host judges it; a live run needs it bound under `guards:` in its --tools file (did you mean the built-in `banned_words`?)",
    );
    let out = packc_output!("check", "--format", "json", &pack);
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        line["host_validators"][0]["near_built_in"], "banned_words",
        "{line}"
    );
}

#[test]
fn check_json_lists_host_validators_per_file() {
    let yaml = write_temp(
        "guarded-json.pack.yaml",
        include_bytes!("packs/check_lists_host_validators_without_counting_them.yaml"),
    );
    // A clean JSON pack is checked without a span index: its validators are still located.
    let json = write_temp(
        "guarded.pack.json",
        br#"{
  "id": "g", "name": "G", "version": "1.0.0",
  "template_engine": {"version": "v1", "syntax": "{{variable}}"},
  "prompts": {
    "chat": {
      "id": "chat", "name": "Chat", "version": "1.0.0", "system_template": "Hi.",
      "validators": [
        {"type": "pii_detection"},
        {"type": "max_length", "params": {"max_characters": 10}}
      ]
    }
  }
}
"#,
    );
    let plain = write_temp("plain.pack.yaml", b"id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\n");
    let out = packc()
        .args(["check", "--format", "json"])
        .args([&yaml, &plain, &json])
        .output()
        .unwrap();
    assert_code(&out, 0);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // One line per pack that has host validators, none for the plain pack.
    assert_eq!(lines.len(), 2, "{stdout}");
    let expect = |file: &std::path::Path, ty: &str, index: u64, line: u64, column: u64| {
        serde_json::json!({
            "file": file.display().to_string(),
            "host_validators": [{
                "type": ty,
                "near_built_in": null,
                "pointer": format!("/prompts/chat/validators/{index}"),
                "line": line,
                "column": column,
            }],
        })
    };
    assert_eq!(lines[0], expect(&yaml, "toxicity", 1, 13, 9), "{stdout}");
    assert_eq!(
        lines[1],
        expect(&json, "pii_detection", 0, 8, 9),
        "{stdout}"
    );
    // The human format locates the clean JSON pack's validator too.
    let out = packc().arg("check").arg(&json).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("guarded.pack.json:8:9: host validator `pii_detection`"),
        "{text}"
    );
}

#[test]
fn graph_and_inspect_show_extension_steps() {
    let pack = write_temp(
        "ext.pack.yaml",
        include_bytes!("packs/graph_and_inspect_show_extension_steps.yaml"),
    );
    let graph = packc_output!("graph", &pack);
    let dot = String::from_utf8_lossy(&graph.stdout);
    assert_code(&graph, 0);
    assert_contains(&dot, "extension acme.rerank");
    let text = built_and_inspected(&pack, &pack.with_extension("ppk"));
    assert_contains(
        &text,
        r#"1 rerank  extension acme.rerank(${ask#0.output}) {"top_k":3}"#,
    );
    assert_contains(&text, "composition main: 1 model, 0 tool, 1 extension");
}

/// A pipe whose reader went away: a socket whose other end is closed before `packc`
/// starts, so every write to it fails with a broken pipe.
#[cfg(unix)]
fn closed_pipe() -> std::process::Stdio {
    let (closed, ours) = std::os::unix::net::UnixStream::pair().unwrap();
    drop(closed);
    std::process::Stdio::from(std::os::fd::OwnedFd::from(ours))
}

/// A run of ex2 with its host script, with `extra` arguments, and a check of a broken
/// pack, with the exit code each must end with.
#[cfg(unix)]
fn run_and_check(
    name: &str,
    extra: &[&str],
    codes: [i32; 2],
) -> [(Vec<std::ffi::OsString>, i32); 2] {
    let ex2 = repo().join("examples/rfc0010-ex2.pack.yaml");
    let host = repo().join("examples/rfc0010-ex2.host.yaml");
    let broken = write_temp(name, b"foo: [\n");
    let mut run: Vec<std::ffi::OsString> =
        vec!["run".into(), ex2.into(), "--host".into(), host.into()];
    run.extend(extra.iter().map(Into::into));
    [
        (run, codes[0]),
        (vec!["check".into(), broken.into()], codes[1]),
    ]
}

/// A reader that went away (`packc run … | head`) ends the command quietly with 141, as
/// `SIGPIPE` would, for output printed line by line and for diagnostics written in one
/// go; no panic.
#[cfg(unix)]
#[test]
fn a_closed_output_pipe_ends_quietly() {
    for (mut args, code) in run_and_check("closed-pipe.pack.yaml", &[], [141, 141]) {
        if args[0] == "check" {
            args.splice(1..1, ["--format".into(), "json".into()]);
        }
        let out = packc()
            .args(&args)
            .stdout(closed_pipe())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("error"),
            "{args:?}: {err}"
        );
    }
}

/// A closed standard error is no crash (101): a run's warning there (`--var` that fills
/// nothing) is lost and the run ends with the exit code its work earned, 0 with its
/// output on stdout; a check, whose diagnostics are its output, ends quietly with 141, as
/// for a closed stdout.
#[cfg(unix)]
#[test]
fn a_closed_error_pipe_loses_the_text_not_the_exit_code() {
    for (args, code) in run_and_check("closed-err.pack.yaml", &["--var", "nothing=1"], [0, 141]) {
        let out = packc()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(closed_pipe())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}

/// Notes honour the colour settings as errors do, and `run --quiet` leaves them out.
#[test]
fn notes_are_plain_without_colour_and_quiet_runs_leave_them_out() {
    let pack = repo().join("examples/guide-add-workflow.pack.yaml");
    let out = packc_output!("check", "--color", "never", &pack);
    assert_contains(stderr(&out), "[no_spec_version] Note:");
    assert_lacks(stderr(&out), "\u{1b}[");
    let out = packc_output!("check", "--color", "always", &pack);
    assert_contains(stderr(&out), "\u{1b}[36m[no_spec_version] Note:");
    let run = |quiet: bool| {
        let mut c = packc();
        c.args(["run", "--input", "\"my bill is wrong\""])
            .arg(&pack);
        if quiet {
            c.arg("--quiet");
        }
        c.output().unwrap()
    };
    // With no host script the first model call fails: the error is shown either way.
    let loud = run(false);
    assert_contains(stderr(&loud), "no_spec_version");
    let quiet = run(true);
    assert_lacks(stderr(&quiet), "no_spec_version");
    assert_contains(stderr(&quiet), "error[host_error]");
    assert_eq!(quiet.status.code(), loud.status.code());
}

/// The files a command writes never replace what it reads or a file of another kind:
/// `run --save` refuses the pack, the host script and a file that is not a save file
/// (before the run); `test --junit` refuses a case and any file that is not a JUnit
/// report; `build -o` refuses a device.
#[test]
fn written_files_never_replace_inputs_or_other_files() {
    let dir = scratch("written-files");
    for name in ["rfc0010-ex2.pack.yaml", "rfc0010-ex2.host.yaml"] {
        std::fs::copy(repo().join("examples").join(name), dir.join(name)).unwrap();
    }
    std::fs::create_dir(dir.join("schemas")).unwrap();
    for entry in std::fs::read_dir(repo().join("examples/schemas")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join("schemas").join(entry.file_name())).unwrap();
    }
    let pack = dir.join("rfc0010-ex2.pack.yaml");
    let host = dir.join("rfc0010-ex2.host.yaml");
    let before = (std::fs::read(&pack).unwrap(), std::fs::read(&host).unwrap());
    let notes = write(&dir, "notes.txt", "keep me");
    for target in [&pack, &host, &notes] {
        let out = packc_output!("run", &pack, "--host", &host, "--save", target);
        assert_code(&out, 2);
        assert_lacks(stderr(&out), "stopped");
    }
    let case = repo().join("examples/cases/rfc0010-ex2.case.yaml");
    for target in [&case, &pack, &notes] {
        let out = packc_output!("test", &case, "--junit", target);
        assert_code(&out, 2);
    }
    let report = dir.join("report.xml");
    for _ in 0..2 {
        assert_code(&packc_output!("test", &case, "--junit", &report), 0);
    }
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .starts_with("<?xml"));
    #[cfg(unix)]
    {
        let out = packc_output!("build", &pack, "-o", "/dev/null");
        assert_code(&out, 2);
        assert_contains(stderr(&out), "not a regular file");
    }
    assert_eq!(
        (std::fs::read(&pack).unwrap(), std::fs::read(&host).unwrap()),
        before
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep me");
}

/// A finding about the whole file (empty, too large) names the file and gives its help.
#[test]
fn whole_file_findings_name_the_file_and_the_fix() {
    let empty = write_temp("whole-file-empty.pack.yaml", b"");
    let out = packc_output!("check", "--color", "never", &empty);
    assert_code(&out, 1);
    assert_contains(stderr(&out), "[parse_error] Error: the file is empty");
    assert_contains(stderr(&out), "whole-file-empty.pack.yaml ]");
    assert_contains(
        stderr(&out),
        "Help: a pack file holds one YAML mapping or JSON object",
    );
    let pack = repo().join("examples/rfc0010-ex2.pack.yaml");
    let out = packc_output!("check", "--max-source-bytes", "10", &pack);
    assert_contains(stderr(&out), "rfc0010-ex2.pack.yaml ]");
    assert_contains(stderr(&out), "Help: sources this large are refused");
}

/// A pack that cannot be read is reported, the others are still checked, and the exit
/// code is 2 (I/O trouble), as for that file alone.
#[test]
fn an_unreadable_pack_does_not_stop_the_check_of_the_others() {
    let broken = write_temp("after-missing.pack.yaml", b"foo: [\n");
    let out = packc_output!(
        "check",
        repo().join("examples/rfc0010-ex1.pack.yaml"),
        repo().join("examples/no-such.pack.yaml"),
        &broken
    );
    assert_code(&out, 2);
    assert_contains(stderr(&out), "cannot read");
    assert_contains(stderr(&out), "after-missing.pack.yaml");
    assert_contains(
        stderr(&out),
        "checked 3 packs: 1 error(s), 0 warning(s), 1 could not be checked",
    );
    // A built artifact is named as one, not read as a broken pack.
    let dir = scratch("check-artifact");
    let ppk = dir.join("ex1.ppk");
    let built = packc_output!(
        "build",
        repo().join("examples/rfc0010-ex1.pack.yaml"),
        "-o",
        &ppk
    );
    assert_code(&built, 0);
    let out = packc_output!("check", &ppk);
    assert_code(&out, 2);
    assert_contains(
        stderr(&out),
        "is a built .ppk artifact, not a pack's source; `packc inspect",
    );
}

/// With `--format json`, a file that cannot be checked has its line on stdout too,
/// shaped like a diagnostic's.
#[test]
fn check_json_has_a_line_for_a_file_it_cannot_check() {
    let dir = scratch("check-json-unreadable");
    let ppk = dir.join("ex1.ppk");
    assert_code(
        &build_to(repo().join("examples/rfc0010-ex1.pack.yaml"), &ppk),
        0,
    );
    let missing = dir.join("no such.pack.yaml");
    let out = packc_output!(
        ["check", "--format", "json"],
        &missing,
        repo().join("examples/rfc0010-ex1.pack.yaml"),
        &ppk
    );
    assert_code(&out, 2);
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&out));
    assert_eq!(lines[0]["kind"], "unreadable");
    assert_eq!(lines[0]["severity"], "error");
    assert_eq!(lines[0]["file"], missing.display().to_string());
    assert_eq!(lines[0]["line"], serde_json::Value::Null);
    assert_contains(lines[0]["message"].as_str().unwrap(), "cannot read");
    assert_eq!(lines[1]["kind"], "not_a_pack");
    assert_eq!(lines[1]["file"], ppk.display().to_string());
}

/// `run` checks its input against the target's input_schema before any call, as
/// `batch` checks its rows.
#[test]
fn run_checks_the_input_against_the_input_schema() {
    let pack = repo().join("examples/rfc0010-ex2.pack.yaml");
    let host = repo().join("examples/rfc0010-ex2.host.yaml");
    let out = packc_output!(
        "run",
        &pack,
        "--host",
        &host,
        "--target",
        "composition:analyze_document",
        "--input",
        r#"{"text": 5}"#
    );
    assert_code(&out, 2);
    assert_contains(
        stderr(&out),
        "the input does not match the input_schema of composition `analyze_document` at `/text`",
    );
    assert!(out.stdout.is_empty());
    let out = packc_output!(
        "run",
        &pack,
        "--host",
        &host,
        "--input",
        r#"{"text": "A paper."}"#
    );
    assert_code(&out, 0);
}

/// A bench whose runs fail exits 1 (its times measure the failure), and a resume whose
/// pack moved says to name it with `--pack`.
#[test]
fn failing_bench_runs_and_a_moved_pack_are_said() {
    let dir = scratch("bench-fails");
    // No scripted answers: every run fails at its first model call.
    let host = write(&dir, "empty.host.yaml", "input: {text: t}\n");
    let out = packc_output!(
        "bench",
        repo().join("examples/rfc0010-ex2.pack.yaml"),
        "--host",
        &host,
        ["--runs", "3", "--warmup", "0"]
    );
    assert_code(&out, 1);
    assert_contains(String::from_utf8_lossy(&out.stdout), "failed runs  3");
    let pack = write(
        &dir,
        "moved.pack.yaml",
        std::fs::read(repo().join("examples/guide-add-workflow.pack.yaml")).unwrap(),
    );
    let answers = write(
        &dir,
        "billing.host.yaml",
        "host:\n  prompts:\n    triage:\n      - {output: billing, event: billing}\n    billing:\n      - output: Let me check your invoice.\n",
    );
    let snap = dir.join("run.snap");
    let out = packc_output!(
        "run",
        &pack,
        "--input",
        "\"my bill is wrong\"",
        "--host",
        &answers,
        "--save",
        &snap
    );
    assert!(snap.exists(), "{}", stderr(&out));
    std::fs::rename(&pack, dir.join("elsewhere.pack.yaml")).unwrap();
    let out = packc_output!("resume", &snap, "--turn", "\"thanks\"");
    assert_code(&out, 2);
    assert_contains(stderr(&out), "if it moved, name it with --pack");
}

#[test]
fn inspect_lists_each_prompts_validators() {
    let pack = write_temp(
        "guarded.pack.yaml",
        include_bytes!("packs/inspect_lists_each_prompts_validators.yaml"),
    );
    let text = built_and_inspected(&pack, &pack.with_extension("ppk"));
    // In declaration order under their prompt, `enabled: false` left out, each with what
    // it checks, what it reads when not only the answer, and the text it replaces with.
    assert_contains(
        &text,
        concat!(
            "    support\n",
            "      validator max_length  at most 20 characters (truncates)\n",
            "      validator content_excludes  bans [\"secret\", \"refund\", \"a\", \"b\", \"c\", … 2 more] (substrings, any case)  reads the input and the answer  message \"[withheld]\"\n",
            "      validator max_sentences  at most 3 sentences  default message\n",
            "      validator regex  must not match `^\\d+$`  default message\n",
            "      validator contains_any  requires one of [\"thanks\"]  default message\n",
            "      validator toxicity  judged by the host, params {\"threshold\":0.8}  default message\n",
            "    plain\n",
        ),
    );
}

#[test]
fn a_pack_not_named_as_one_is_refused_with_the_fix() {
    let dir = scratch("pack-names");
    let text = std::fs::read(repo().join("examples/rfc0010-ex1.pack.yaml")).unwrap();
    for (name, fix) in [
        ("p.pack.ymal", "did you mean `.yaml`? rename it"),
        ("p.pack.txt", "rename it to end in .yaml, .yml or .json"),
        ("p", "rename it to end in .yaml, .yml or .json"),
    ] {
        let pack = dir.join(name);
        std::fs::write(&pack, &text).unwrap();
        for command in ["check", "build", "run"] {
            let out = packc_output!(command, &pack);
            assert_ne!(out.status.code(), Some(0), "{command} {name}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_contains(&err, "is not named as a pack");
            assert_contains(&err, fix);
        }
        assert!(!dir.join(format!("{name}.ppk")).exists());
    }
}

#[test]
fn build_makes_the_folder_it_writes_into() {
    let dir = scratch("make-folder");
    let out = dir.join("build/deep/ex1.ppk");
    let res = build_to(repo().join("examples/rfc0010-ex1.pack.yaml"), &out);
    assert_code(&res, 0);
    assert!(out.is_file());
}
