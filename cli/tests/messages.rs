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

/// Text that starts like JSON and does not parse gets the JSON error and its place, not
/// the advice to quote it as a string.
#[test]
fn input_that_looks_like_json_gets_its_error_not_quoting_advice() {
    let (_, pack) = pack("input-json");
    for (input, error) in [
        (
            r#"{"text": 1e400}"#,
            "number out of range at line 1 column 14",
        ),
        ("{text: hi}", "key must be a string at line 1 column 2"),
        ("[1, 2", "EOF while parsing a list at line 1 column 5"),
    ] {
        let out = packc_output!("run", &pack, ["--input", input]);
        assert_eq!(out.status.code(), Some(2));
        assert_stderr_contains(&out, &format!("--input is not valid JSON: {error}"));
        assert!(!stderr(&out).contains("quoted"), "{}", stderr(&out));
    }
}

/// `--input` and `--turn` are read as strictly as a pack: a key given twice is refused;
/// an integer past 64 bits is read as the nearest double, with a warning.
#[test]
fn input_json_with_a_key_twice_is_refused_and_a_huge_integer_is_named() {
    let (dir, pack) = pack("input-strict");
    let out = packc_output!("run", &pack, ["--input", r#"{"text": "a", "text": "b"}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(
        &out,
        "error: --input: the key `text` is given twice in one object at line 1 column 20",
    );
    let file = write(&dir, "in.json", "{\n  \"a\": 1,\n  \"a\": 2\n}\n");
    let out = packc_output!("run", &pack, "--input", format!("@{}", file.display()));
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(&out, "the key `a` is given twice in one object at line 3");

    let host = write(
        &dir,
        "host.yaml",
        "host:\n  prompts:\n    draft: [{output: d}]\n",
    );
    let out = packc_output!(
        "run",
        &pack,
        [
            "--format",
            "json",
            "--input",
            r#"{"n": 18446744073709551616}"#,
            "--host"
        ],
        &host
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_stderr_contains(
        &out,
        "warning: --input: the integer 18446744073709551616 does not fit in 64 bits; it is read as the nearest double",
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["calls"][0]["input"]["n"],
        18_446_744_073_709_551_616.0_f64
    );
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

/// A run given no input says it runs with `null`, unless `--quiet` or the host script
/// gives the turns.
#[test]
fn a_run_without_input_says_its_input_is_null() {
    let (dir, pack) = pack("no-input");
    let note = "note: no --input given: the run's input is null (give --input JSON)";
    let host = write(
        &dir,
        "host.yaml",
        "host:\n  prompts:\n    draft: [{output: d}]\n",
    );
    let out = packc_output!("run", &pack, "--host", &host);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_stderr_contains(&out, note);
    let out = packc_output!("run", &pack, "--host", &host, "-q");
    assert!(!stderr(&out).contains(note), "{}", stderr(&out));
    let out = packc_output!("run", &pack, "--host", &host, ["--input", "\"hi\""]);
    assert!(!stderr(&out).contains(note), "{}", stderr(&out));
    let turns = write(
        &dir,
        "turns.yaml",
        "input: hi\nhost:\n  prompts:\n    draft: [{output: d}]\n",
    );
    let out = packc_output!("run", &pack, "--host", &turns);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains(note), "{}", stderr(&out));
}

/// A pack whose one prompt declares the required variable `customer` and names a
/// fragment that does not exist (`{{fragments.intor}}`, for `intro`).
const GREETER: &str = "id: g\nname: G\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nfragments:\n  intro: Be kind.\nprompts:\n  greet:\n    id: greet\n    name: Greet\n    version: 1.0.0\n    system_template: \"{{fragments.intor}} Greet {{customer}}.\"\n    variables:\n      - {name: customer, type: string, required: true}\nworkflow:\n  version: 1\n  entry: hi\n  states:\n    hi: {prompt_task: greet, terminal: true}\n";

#[test]
fn an_unknown_fragment_is_named_with_did_you_mean() {
    let dir = scratch("unknown-fragment");
    let pack = write(&dir, "g.pack.yaml", GREETER);
    let out = packc_output!("check", &pack);
    assert_stderr_contains(
        &out,
        "`{{fragments.intor}}` names no fragment: the pack's `fragments` has no `intor`",
    );
    assert_stderr_contains(&out, "did you mean `intro`?");
    assert!(
        !stderr(&out).contains("`{{fragments}}`"),
        "{}",
        stderr(&out)
    );
}

/// A required variable that is missing says where a declared variable comes from; a
/// call with no answer says where answers come from.
#[test]
fn missing_variables_and_answers_say_where_they_come_from() {
    let dir = scratch("missing-variable");
    let pack = write(
        &dir,
        "g.pack.yaml",
        GREETER.replace("{{fragments.intor}} ", ""),
    );
    let out = packc_output!(
        "run",
        &pack,
        ["--input", r#""hi""#, "--var", "customer=Ana"]
    );
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(
        &out,
        "required variable `customer` is missing: a declared variable is read from the member `customer` of the call's input object",
    );
    assert_stderr_contains(
        &out,
        "warning: --var customer: prompt `greet` declares `customer`, so it is read from the input object's member `customer`",
    );
    let out = packc_output!(
        "run",
        &pack,
        ["--input", r#"{"customer": "Ana"}"#, "--var", "nosuch=1"]
    );
    assert_stderr_contains(
        &out,
        "warning: --var nosuch: no prompt's template has a `{{nosuch}}` it would fill; it has no effect",
    );
    let out = packc_output!(
        "run",
        &pack,
        ["--input", r#"{"customer": "Ana"}"#, "--var", "input=x"]
    );
    assert_stderr_contains(
        &out,
        "warning: --var input: `{{input}}` always reads the run's input, never a host variable",
    );
    let out = packc_output!("run", &pack, ["--input", r#"{"customer": "Ana"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(&out, "no scripted answer for prompt greet");
    assert_stderr_contains(
        &out,
        "no scripted answer is left for this call: give it one under `host:` in the --host script",
    );
}

/// A pack handed to `packc test` is named as such, in one line, not as a list of the
/// case format's unknown members.
#[test]
fn a_pack_given_to_test_is_named_a_pack() {
    let dir = scratch("test-a-pack");
    let pack = write(&dir, "g.case.yaml", GREETER);
    let out = packc_output!("test", &pack);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_contains(&stdout, "g.case.yaml:1:1: this is a pack, not a case");
    assert_contains(&stdout, "pack_file: PATH");
    assert!(!stdout.contains("unknown member"), "{stdout}");
}

/// Two diagnostics inside one template line are printed left to right, in the human and
/// the JSON form alike.
#[test]
fn diagnostics_on_one_line_come_left_to_right() {
    let dir = scratch("one-line-order");
    let pack = write(
        &dir,
        "t.pack.yaml",
        "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"A {{ input.text }} B {{nosuch}}\"}\nworkflow:\n  version: 1\n  entry: a\n  states:\n    a: {prompt_task: p, terminal: true}\n",
    );
    let out = packc_output!("check", &pack, ["--format", "json"]);
    let kinds: Vec<(String, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["kind"].as_str().unwrap().to_owned(),
                v["column"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("spaced_placeholder".to_owned(), 59),
            ("undeclared_variable".to_owned(), 78)
        ]
    );
    let human = stderr(&packc_output!("check", &pack));
    let first = human.find("spaced_placeholder").unwrap();
    let second = human.find("undeclared_variable").unwrap();
    assert!(first < second, "{human}");
}

/// A member of a later version, under a `--spec-level` that reads the pack below it,
/// blames the flag, not the pack's `$schema`.
#[test]
fn a_spec_level_override_is_blamed_for_a_later_member() {
    let dir = scratch("spec-level-override");
    let pack = write(
        &dir,
        "c.pack.yaml",
        "$schema: https://promptpack.org/schema/v1.9.0/promptpack.schema.json\nid: c\nname: C\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"Hi.\"}\nworkflow:\n  version: 1\n  entry: a\n  states:\n    a: {prompt_task: p, control: user, on_event: {Go: b}}\n    b: {prompt_task: p, terminal: true}\n",
    );
    let out = packc_output!("check", &pack);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = packc_output!("check", &pack, ["--spec-level", "1.5"]);
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(&out, "because `--spec-level` (`spec_level`) says so");
    assert!(
        !stderr(&out).contains("declare `$schema`"),
        "{}",
        stderr(&out)
    );
}

/// A predicate with an unknown op still has its path checked: both errors in one pass,
/// and a shorthand op (`gte`) is named in full.
#[test]
fn a_bad_op_does_not_hide_a_bad_path() {
    let dir = scratch("bad-op-bad-path");
    let pack = write(
        &dir,
        "p.pack.yaml",
        "id: pr\nname: Pr\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"Hi.\"}\ncompositions:\n  flow:\n    version: 1\n    steps:\n      - {id: a, kind: prompt, prompt_task: p, input: \"${input.text}\"}\n      - {id: route, kind: branch, predicate: {path: \"${zz.output.x}\", op: gte, value: 3}, then: b}\n      - {id: b, kind: prompt, prompt_task: p, input: \"${a.output}\"}\n",
    );
    let out = packc_output!("check", &pack);
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(&out, "unknown op \"gte\"");
    assert_stderr_contains(&out, "did you mean `greater_than_or_equals`?");
    assert_stderr_contains(&out, "no step `zz` in this composition");
}

/// A reference to a step inside a parallel step names the reference to write instead,
/// as the parallel step's reducer shapes its output.
#[test]
fn a_reference_into_a_parallel_names_the_merged_form() {
    let dir = scratch("parallel-branch-ref");
    let pack = |strategy: &str| {
        format!("id: pa\nname: Pa\nversion: 1.0.0\ntemplate_engine: {{version: v1, syntax: x}}\nprompts:\n  p: {{id: p, name: P, version: 1.0.0, system_template: \"Hi.\"}}\ncompositions:\n  flow:\n    version: 1\n    steps:\n      - id: gather\n        kind: parallel\n        branches:\n          - {{id: summ, kind: prompt, prompt_task: p, input: \"${{input.text}}\"}}\n          - {{id: cls, kind: prompt, prompt_task: p, input: \"${{input.text}}\"}}\n        reduce: {{strategy: {strategy}, into: info}}\n      - {{id: b, kind: prompt, prompt_task: p, input: \"${{summ.output}}\"}}\n")
    };
    for (strategy, form) in [
        ("barrier", "`${gather.output.info.summ}`"),
        ("append", "`${gather.output.info}` (its `append` reducer"),
        ("replace", "REPLACE"),
    ] {
        let file = write(&dir, &format!("{strategy}.pack.yaml"), pack(strategy));
        let out = packc_output!("check", &file);
        assert_eq!(out.status.code(), Some(1));
        let expected = if form == "REPLACE" {
            "`summ` is nested in a parallel step, whose `replace` reducer keeps only the last branch's output, not `summ`'s (with `strategy: barrier`, `${gather.output.info.summ}` reads it)".to_owned()
        } else {
            format!("read the parallel step's merged output instead: {form}")
        };
        assert_stderr_contains(&out, &expected);
    }
}

/// `inspect` of a pack source, and `check` of a folder, say what to run instead.
#[test]
fn inspect_of_a_pack_and_check_of_a_folder_say_what_to_run() {
    let dir = scratch("inspect-a-pack");
    let pack = write(&dir, "g.pack.yaml", GREETER);
    let out = packc_output!("inspect", &pack);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(&out, "is a pack, not a built artifact: `packc build ");
    let out = packc_output!("check", &dir);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(
        &out,
        "it is a folder; name the pack files in it (e.g. `packc check ",
    );
    let case = write(
        &dir,
        "g.case.yaml",
        "about: x\npack_file: g.pack.yaml\nexpect: {warnings: []}\n",
    );
    for command in ["check", "run"] {
        let out = packc_output!(command, &case);
        assert_eq!(out.status.code(), Some(2));
        assert_stderr_contains(&out, "is a case file (a pack with its script and what to expect), not a pack: run it with `packc test ");
    }
}

/// `--format json` carries the turn's `reply` (RFC 0014): the string outputs of the states
/// that spoke in the turn, and it replays as a case's `expect.reply`.
#[test]
fn the_json_result_has_the_reply() {
    let dir = scratch("json-reply");
    let pack = write(
        &dir,
        "r.pack.yaml",
        "$schema: https://promptpack.org/schema/v1.7.0/promptpack.schema.json\nid: r\nname: R\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  v: {id: v, name: V, version: 1.0.0, system_template: \"Verify.\"}\n  t: {id: t, name: T, version: 1.0.0, system_template: \"Route.\"}\n  r: {id: r, name: R, version: 1.0.0, system_template: \"Answer.\"}\nworkflow:\n  version: 2\n  entry: verifying\n  states:\n    verifying: {prompt_task: v, control: user, on_event: {Ok: triage}}\n    triage: {prompt_task: t, control: agent, on_event: {Serve: resolution}}\n    resolution: {prompt_task: r, control: user, terminal: true}\n",
    );
    let host = write(
        &dir,
        "host.yaml",
        "host:\n  prompts:\n    v: [{output: \"Verified.\", event: Ok}]\n    t: [{output: \"\", event: Serve}]\n    r: [{output: \"Balance: 42.\"}]\n",
    );
    let out = packc_output!(
        "run",
        &pack,
        ["--input", r#""hi""#, "--format", "json", "--host"],
        &host
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["output"], "Balance: 42.");
    assert_eq!(r["reply"], "Verified.\n\nBalance: 42.");
}

/// Errors and warnings are painted as `packc check` paints its diagnostics, when
/// standard error is a terminal or `CLICOLOR_FORCE` asks; `NO_COLOR` and `--color never`
/// keep them plain. `packc test` paints its `FAIL` lines the same way on stdout.
#[test]
fn errors_are_coloured_where_colour_is_asked_for() {
    let (dir, pack) = pack("colour");
    let missing = dir.join("nothere.pack.yaml");
    let coloured = |envs: &[(&str, &str)], args: &[&std::ffi::OsStr]| {
        let mut cmd = packc();
        cmd.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.args(args).output().unwrap()
    };
    let run = ["run".as_ref(), missing.as_os_str()];
    let out = coloured(&[("CLICOLOR_FORCE", "1")], &run);
    assert!(
        stderr(&out).starts_with("\u{1b}[1;31merror\u{1b}[0m: "),
        "{}",
        stderr(&out)
    );
    for envs in [
        &[][..],
        &[("CLICOLOR_FORCE", "0")][..],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")][..],
    ] {
        let out = coloured(envs, &run);
        assert!(
            stderr(&out).starts_with("error: "),
            "{envs:?}: {}",
            stderr(&out)
        );
    }
    // A check's own flag wins over the environment, for its diagnostics and its errors.
    let check = [
        "check".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
        pack.as_os_str(),
        missing.as_os_str(),
    ];
    let out = coloured(&[("CLICOLOR_FORCE", "1")], &check);
    assert!(!stderr(&out).contains('\u{1b}'), "{}", stderr(&out));
    // `packc test`: a failing case's FAIL line and the count of failures.
    let case = write(
        &dir,
        "wrong.case.yaml",
        "pack_file: review.pack.yaml\nexpect: {compile_error: duplicate_step_id}\n",
    );
    let out = coloured(
        &[("CLICOLOR_FORCE", "1")],
        &["test".as_ref(), case.as_os_str()],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("\u{1b}[1;31mFAIL\u{1b}[0m "), "{stdout}");
    assert!(
        stdout.ends_with("0 passed, \u{1b}[1;31m1 failed\u{1b}[0m\n"),
        "{stdout}"
    );
}

/// A variable that breaks its declaration says how: the type it is and the one wanted,
/// its value or length and the bound it passes.
#[test]
fn a_variable_of_the_wrong_type_or_size_says_what_it_is() {
    let dir = scratch("variable-checks");
    let pack = write(
        &dir,
        "vt.pack.yaml",
        r#"id: vt
name: VT
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  p:
    id: p
    name: P
    version: 1.0.0
    system_template: "Hi {{customer}} {{age}} {{code}}"
    variables:
      - {name: customer, type: string, required: true}
      - {name: age, type: number, required: false, validation: {minimum: 18, maximum: 130}}
      - {name: code, type: string, required: false, validation: {max_length: 3}}
workflow:
  version: 1
  entry: a
  states:
    a: {prompt_task: p, terminal: true}
"#,
    );
    for (input, said) in [
        (
            r#"{"customer": 5}"#,
            "variable `customer` is a number, not a string",
        ),
        (
            r#"{"customer": "x", "age": 7}"#,
            "variable `age` is 7, below the least (18)",
        ),
        (
            r#"{"customer": "x", "age": 131.5}"#,
            "variable `age` is 131.5, past the most (130)",
        ),
        (
            r#"{"customer": "x", "code": "ABCDE"}"#,
            "variable `code` is 5 characters long, past the most (3)",
        ),
    ] {
        let out = packc_output!("run", &pack, "--input", input);
        assert_eq!(out.status.code(), Some(1), "{input}");
        assert_stderr_contains(
            &out,
            &format!("error[invalid_variable]: prompt `p`: {said}"),
        );
        // Under the error, where it happened in the source.
        assert_stderr_contains(
            &out,
            &format!("\n  --> {}:19:5: state `a`\n", pack.display()),
        );
    }
    // A step's failure points at the step, in a parallel step at the branch.
    let fan = write(
        &dir,
        "fan.pack.yaml",
        r#"id: fan
name: Fan
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  p: {id: p, name: P, version: 1.0.0, system_template: "Hi"}
compositions:
  c:
    version: 1
    steps:
      - id: both
        kind: parallel
        reduce: {strategy: barrier, into: all}
        branches:
          - {id: ok, kind: prompt, prompt_task: p}
          - {id: bad, kind: prompt, prompt_task: p}
"#,
    );
    let host = write(
        &dir,
        "fan.host.yaml",
        "host:\n  prompts:\n    p: [{output: fine}, {error: down}]\n",
    );
    let out = packc_output!("run", &fan, "--target", "composition:c", "--host", &host);
    assert_eq!(out.status.code(), Some(1));
    assert_stderr_contains(
        &out,
        &format!(
            "  --> {}:16:13: step `bad` of composition `c`",
            fan.display()
        ),
    );
}
