//! Spec levels from the CLI (`shared/semantics/later-versions.md`): `--spec-level`, the
//! note `no_spec_version`, provider routing against two loopback servers with the
//! load-time refusal of an unbound key, `--record` of routed calls, admission by
//! `--environment`, and governance shown by `packc inspect`.

use std::path::PathBuf;
use std::process::Output;

use packc_host::mock::{MockServer, Reply};

mod common;
use common::{assert_contains, packc, packc_output, run_host, scratch, stderr, stdout, write};

fn text(out: &Output) -> (String, String) {
    (stdout(out), stderr(out))
}

/// A fresh folder for test `test` and the path of `text` written into it as `name`.
fn pack_in(test: &str, name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(test);
    let pack = write(&dir, name, text);
    (dir, pack)
}

/// RFC 0017: `draft` runs on `drafter` (the step's provider), `final` on `default`.
const ROUTED: &str = include_str!("packs/routed.yaml");

/// `packc run --provider openai --model big --base-url <primary>`.
fn big_model(primary: &MockServer) -> std::process::Command {
    let mut c = packc();
    c.args([
        "run",
        "--provider",
        "openai",
        "--model",
        "big",
        "--base-url",
    ])
    .arg(primary.base_url());
    c
}

#[test]
fn an_unbound_provider_is_refused_before_any_request() {
    let primary = MockServer::start(|_, _| Reply::text("primary"));
    let (_, pack) = pack_in("unbound", "routed.pack.yaml", ROUTED);
    let out = packc_output!(
        with big_model(&primary);
        &pack,
        ["--target", "composition:two_pass", "--input", "\"text\""]
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert_contains(&stderr, "provider `drafter`");
    assert_contains(&stderr, "declared but unbound");
    assert_contains(&stderr, "step `draft`");
    assert!(primary.received().is_empty(), "a request went out");
    // A misspelt key binds nothing: it is named, with the key it was likely meant to be.
    let out = packc_output!(
        with big_model(&primary);
        "--bind-provider",
        format!("drafer={},model=small", primary.base_url()),
        &pack,
        ["--target", "composition:two_pass", "--input", "\"text\""]
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert_contains(
        &stderr,
        "warning: --bind-provider `drafer` names no provider of the pack's `requires.providers` (did you mean `drafter`?)",
    );
    assert!(primary.received().is_empty(), "a request went out");
}

#[test]
fn routed_calls_go_to_the_server_bound_to_their_provider() {
    let primary = MockServer::start(|_, _| Reply::text("final summary"));
    let drafter = MockServer::start(|_, _| Reply::text("draft summary"));
    let (dir, pack) = pack_in("routed", "routed.pack.yaml", ROUTED);
    let case = dir.join("routed.case.yaml");
    let out = packc_output!(
        with big_model(&primary);
        "--bind-provider",
        format!("drafter={},model=small", drafter.base_url()),
        &pack,
        ["--target", "composition:two_pass", "--input", "\"text\""],
        "--record",
        &case
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.trim(), "\"final summary\"");
    let (p, d) = (primary.bodies(), drafter.bodies());
    assert_eq!((p.len(), d.len()), (1, 1), "{p:?} {d:?}");
    assert_eq!(d[0]["model"], "small");
    assert_eq!(d[0]["messages"][1]["content"], "text");
    assert_eq!(p[0]["model"], "big");
    assert_eq!(p[0]["messages"][1]["content"], "draft summary");
    // The recording says which provider answered, and replays offline.
    let recorded = std::fs::read_to_string(&case).unwrap();
    assert_contains(&recorded, "drafter/summarize");
    assert_contains(&recorded, "provider: drafter");
    let replay = packc_output!("test", &case);
    let (stdout, stderr) = text(&replay);
    assert!(replay.status.success(), "{stdout}{stderr}");
    assert_contains(&stdout, "1 passed, 0 failed");
    // With `default` bound too, --provider's model serves nothing, and it says so.
    let out = packc_output!(
        with big_model(&primary);
        "--bind-provider",
        format!("drafter={},model=small", drafter.base_url()),
        "--bind-provider",
        format!("default={},model=small", drafter.base_url()),
        &pack,
        ["--target", "composition:two_pass", "--input", "\"text\""]
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_contains(&stderr, "warning: every provider of the pack, `default` included, is bound with --bind-provider: no call goes to --provider's model or --base-url");
    assert_eq!(
        primary.bodies().len(),
        1,
        "no further request to --provider's server"
    );
}

#[test]
fn the_spec_level_flag_overrides_the_claim() {
    let (dir, pack) = pack_in(
        "level",
        "p.pack.yaml",
        include_str!("packs/the_spec_level_flag_overrides_the_claim.yaml"),
    );
    let check = |extra: &[&str]| {
        packc()
            .arg("check")
            .arg(&pack)
            .args(["--format", "json"])
            .args(extra)
            .output()
            .unwrap()
    };
    let at_claim = check(&[]);
    let (stdout, _) = text(&at_claim);
    assert_eq!(at_claim.status.code(), Some(1), "{stdout}");
    assert_contains(&stdout, "\"pointer\":\"/workflow/states/a/control\"");
    let at_1_8 = check(&["--spec-level", "1.8"]);
    let (stdout, stderr) = text(&at_1_8);
    assert_eq!(at_1_8.status.code(), Some(0), "{stdout}{stderr}");
    let bad = check(&["--spec-level", "2.0"]);
    assert_eq!(bad.status.code(), Some(2));
    // The level is recorded in the artifact and shown by inspect.
    let ppk = dir.join("p.ppk");
    let build = packc_output!("build", &pack, ["--spec-level", "1.9", "-o"], &ppk);
    assert!(build.status.success(), "{:?}", text(&build));
    let inspect = packc_output!("inspect", &ppk);
    let (stdout, _) = text(&inspect);
    assert_contains(&stdout, "  spec level: 1.9\n");
    assert_contains(&stdout, "a  prompt p  internal  control agent");
}

#[test]
fn a_note_is_printed_but_never_fails_deny_warnings() {
    let (dir, pack) = pack_in(
        "note",
        "p.pack.yaml",
        include_str!("packs/a_note_is_printed_but_never_fails_deny_warnings.yaml"),
    );
    let out = packc_output!("check", &pack, ["--deny-warnings", "--format", "json"]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["kind"], "no_spec_version");
    assert_eq!(line["severity"], "note");
    let human = packc_output!("check", &pack, ["--color", "never"]);
    let (_, stderr) = text(&human);
    assert_contains(&stderr, "no problems, 1 note(s)");
    let build = packc_output!("build", &pack, "--deny-warnings", "-o", dir.join("p.ppk"));
    assert!(build.status.success(), "{:?}", text(&build));
    let host = write(
        &dir,
        "host.yaml",
        "input: hi\nhost:\n  prompts:\n    p: [{output: a, event: Go}, {output: b, event: Done}, {output: c}]\n",
    );
    let run = run_host(&pack, &host);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "\"c\"");
    assert_contains(&stderr, "no_spec_version");
    assert_contains(&stderr, "reply:\n  a\n  \n  b\n  \n  c");
}

const GOVERNED: &str = include_str!("packs/governed.yaml");

#[test]
fn environments_outside_the_approved_list_are_refused() {
    let (dir, pack) = pack_in("environment", "g.pack.yaml", GOVERNED);
    let host = write(
        &dir,
        "host.yaml",
        "input: hi\nhost:\n  prompts:\n    p: [{output: ok}]\n",
    );
    let run = |env: &str| packc_output!("run", &pack, "--host", &host, ["--environment", env]);
    let refused = run("production-us");
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert_contains(&stderr, "`production-us`");
    assert_contains(&stderr, "staging, production-eu");
    let admitted = run("staging");
    assert!(admitted.status.success(), "{:?}", text(&admitted));
    // Governance is kept in the artifact and printed by inspect.
    let ppk = dir.join("g.ppk");
    assert!(packc()
        .arg("build")
        .arg(&pack)
        .arg("-o")
        .arg(&ppk)
        .status()
        .unwrap()
        .success());
    let inspect = packc_output!("inspect", &ppk);
    let (stdout, _) = text(&inspect);
    for line in [
        "governance:",
        "  purpose: Answers order questions.",
        "  autonomy level: suggests",
        "  risk: eu-aiact:RiskLevelTransparencyRequired",
        "  approved environments: staging, production-eu",
        "  obligation art50: eu-aiact:Article50",
        "    control eval: disclosure",
    ] {
        assert!(
            stdout.contains(&format!("{line}\n")),
            "{line:?} in {stdout}"
        );
    }
    // An agent member's own governance is kept and printed under it.
    assert!(
        stdout.contains(
            "    helper  prompt helper\n      governance:\n        autonomy level: acts_with_approval\n        approved environments: staging\n"
        ),
        "{stdout}"
    );
    // The artifact alone admits or refuses.
    let from_ppk = packc_output!("run", &ppk, "--host", &host, ["--environment", "dev"]);
    assert_eq!(from_ppk.status.code(), Some(2));
    // A run of the member answers to its list too: production-eu passes the pack's and
    // not the member's.
    let helper = write(
        &dir,
        "helper.yaml",
        "input: hi\nhost:\n  prompts:\n    helper: [{output: ok}]\n",
    );
    for source in [&pack, &ppk] {
        let member = |env: &str| {
            packc_output!(
                "run",
                source,
                "--host",
                &helper,
                ["--target", "agent:helper", "--environment", env]
            )
        };
        let refused = member("production-eu");
        let (_, stderr) = text(&refused);
        assert_eq!(refused.status.code(), Some(2), "{stderr}");
        assert_contains(
            &stderr,
            "environment `production-eu` is not among agent member `helper`'s approved_environments (staging)",
        );
        let admitted = member("staging");
        assert!(admitted.status.success(), "{:?}", text(&admitted));
    }
}

/// The corpus pack `transparency-obligation-with-controls` declares no `$schema`: at its
/// own level (1.5) it keeps its corpus verdict (rejected: `Validator.id` and
/// `extensions` are v1.8 members); checked at level 1.8 against the v1.8.1 schema it is
/// accepted, its obligation's validator and eval controls resolve.
#[test]
fn the_transparency_corpus_pack_checks_at_level_1_8() {
    let pack = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../shared/corpus/promptpack-spec-later/v1.8.1-examples--transparency-obligation-with-controls.pack.yaml",
    );
    if !pack.exists() {
        println!("note: ../shared is absent; skipping");
        return;
    }
    let check = |extra: &[&str]| {
        let out = packc()
            .arg("check")
            .arg(&pack)
            .args(["--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        // Diagnostics only: the pack's `host_validators` line has no `kind`.
        let kinds: Vec<(String, String, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v.get("kind").is_some())
            .map(|v| {
                (
                    v["kind"].as_str().unwrap().to_owned(),
                    v["severity"].as_str().unwrap().to_owned(),
                    v["pointer"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        (out.status.code(), kinds)
    };
    let (code, own) = check(&[]);
    assert_eq!(code, Some(1));
    assert!(own.contains(&(
        "schema_violation".into(),
        "error".into(),
        "/prompts/support/validators/0/id".into()
    )));
    let (code, at_1_8) = check(&["--spec-level", "1.8"]);
    assert_eq!(code, Some(0), "{at_1_8:?}");
    assert!(
        at_1_8.iter().all(|(_, sev, _)| sev != "error"),
        "{at_1_8:?}"
    );
}

/// RFC 0017 rules 3-4: every referenced key must be bound, `required: false` or not; an
/// unreferenced declared key only warns; `default` is left to the primary model.
#[test]
fn provider_faults_list_every_unbound_referenced_key() {
    let pack = include_str!("packs/provider_faults_list_every_unbound_referenced_key.yaml");
    let checked = packc_compiler::check_bytes(pack.as_bytes(), &Default::default());
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    let module = packc_compiler::lower(&checked, &Default::default()).unwrap();
    let none = packc_host::live::provider_faults(&module, |_| false);
    assert_eq!(none.faults.len(), 2, "{none:?}");
    assert!(
        none.faults[0].contains("`opt` (required: false)"),
        "{none:?}"
    );
    assert!(none.faults[0].contains("workflow state `s`"), "{none:?}");
    assert!(none.faults[1].contains("`judge`"), "{none:?}");
    assert!(
        none.faults[1].contains("step `x` of composition `c`"),
        "{none:?}"
    );
    assert_eq!(none.warnings.len(), 1, "{none:?}");
    assert!(none.warnings[0].contains("`spare`"), "{none:?}");
    let all = packc_host::live::provider_faults(&module, |_| true);
    assert!(all.faults.is_empty() && all.warnings.is_empty(), "{all:?}");
}
