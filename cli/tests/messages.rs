//! What `packc` says when a user gets something wrong: each message names the thing, the
//! place and what to do.

use std::path::PathBuf;

mod common;
use common::{
    assert_contains, assert_stderr_contains, built_and_inspected, packc, packc_output, run_host,
    scratch, stderr, write,
};

/// A review workflow: `drafting` moves on `Submit` to the external state `editor`, which
/// takes `Approve` or `Reject`; an agent member `helper`; a composition whose second step
/// reads a member the first step's output lacks, and whose branch negates a comparison.
const PACK: &str = include_str!("packs/messages.yaml");

/// A fresh folder for test `test`, and the path of [`PACK`] written into it.
fn pack(test: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(test);
    let pack = write(&dir, "review.pack.yaml", PACK);
    (dir, pack)
}

#[test]
fn input_that_is_not_json_says_how_to_quote_it() {
    let (dir, pack) = pack("input");
    let out = packc_output!("run", &pack, ["--input", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(&out, r#"write `--input '"hello"'`"#);
    assert_stderr_contains(&out, "@file");
    let bad = write(&dir, "bad.json", "{oops");
    let out = packc_output!("run", &pack, "--input", format!("@{}", bad.display()));
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(&out, &format!("{} is not JSON", bad.display()));
}

#[test]
fn an_unknown_target_member_gets_did_you_mean() {
    let (_, pack) = pack("target");
    let out = packc_output!("run", &pack, ["--target", "agent:helpr"]);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(
        &out,
        "no agent member `helpr` in target `agent:helpr`; did you mean `helper`?",
    );
    let out = packc_output!("run", &pack, ["--target", "agent:nobody"]);
    assert_stderr_contains(&out, "the agent members are: `helper`");
}

#[test]
fn an_invalid_event_lists_the_states_events() {
    let (dir, pack) = pack("event");
    let host = write(&dir, "host.yaml", "script:\n  - turn: go\n  - event: Aprove\nhost:\n  prompts:\n    draft: [{output: d, event: Submit}]\n");
    let out = run_host(&pack, &host);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "error[invalid_event]: state `editor` has no event `Aprove`; did you mean `Approve`?"
        ),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        &host,
        "script:\n  - turn: go\n  - event: Later\nhost:\n  prompts:\n    draft: [{output: d, event: Submit}]\n",
    )
    .unwrap();
    let out = run_host(&pack, &host);
    assert_stderr_contains(&out, "the events of this state are: `Approve`, `Reject`");
}

#[test]
fn a_runtime_unresolved_binding_names_its_step() {
    let (dir, pack) = pack("binding");
    let host = write(
        &dir,
        "host.yaml",
        "host:\n  prompts:\n    draft: [{output: {lang: fr}}]\n",
    );
    let out = packc_output!(
        "run",
        &pack,
        ["--target", "composition:c", "--input", "\"x\"", "--host"],
        &host
    );
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(&out, "error[unresolved_binding]: `${first.output.missing}` in the input of step `second` does not resolve");
}

#[test]
fn a_placeholder_that_does_not_resolve_is_named() {
    let dir = scratch("placeholder");
    let pack = write(
        &dir,
        "p.pack.yaml",
        "id: d\nname: D\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  classify: {id: classify, name: C, version: 1.0.0, system_template: \"Classify: {{input.text}}\"}\ncompositions:\n  flow:\n    version: 1\n    steps:\n      - {id: a, kind: prompt, prompt_task: classify, input: \"${input.text}\"}\n",
    );
    let out = packc_output!(
        "run",
        &pack,
        [
            "--target",
            "composition:flow",
            "--input",
            r#"{"text": "hi"}"#
        ]
    );
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(
        &out,
        "prompt `classify`: `{{input.text}}` does not resolve: the value has no such member or element",
    );
    // `workflow`, the default target, in a pack without one says what to run.
    let out = packc_output!("run", &pack);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(
        &out,
        "this pack has no workflow; run `composition:flow` instead",
    );
}

#[test]
fn inspect_writes_not_around_what_it_negates() {
    let (dir, pack) = pack("inspect");
    let stdout = built_and_inspected(&pack, &dir.join("review.ppk"));
    assert_contains(
        &stdout,
        r#"if not (${first#0.output.lang} == "en") then second"#,
    );
}

#[test]
fn run_help_documents_the_tools_file() {
    let out = packc_output!(["run", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("command: [python3, tools/lookup_order.py]")
            && help.contains("http: http://127.0.0.1:8080/search")
            && !help.contains("packc_host::"),
        "{help}"
    );
}

/// A command printed to copy has each path quoted as a shell needs it.
#[test]
fn suggested_commands_quote_paths_with_spaces() {
    let (dir, pack) = pack("quoted");
    write(
        &dir,
        "host.yaml",
        "host:\n  prompts:\n    draft: [{output: d, event: Submit}]\n",
    );
    let in_dir = || {
        let mut c = packc();
        c.current_dir(&dir);
        c
    };
    let out =
        packc_output!(with in_dir(); "run", &pack, ["--host", "host.yaml", "--save", "run 1.snap"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_stderr_contains(
        &out,
        "saved to run 1.snap (continue with `packc resume 'run 1.snap' --turn JSON` or `--event NAME`)",
    );
    let built = packc_output!(with in_dir(); "build", &pack, ["-o", "it's built.ppk"]);
    assert_eq!(built.status.code(), Some(0), "{}", stderr(&built));
    let out = packc_output!(with in_dir(); ["check", "it's built.ppk"]);
    assert_stderr_contains(&out, r#"`packc inspect 'it'"'"'s built.ppk'`"#);
}
