//! The `packc` binary against hostile packs and paths: files a pack names stay inside its
//! folder, diagnostics stay bounded, terminal output is escaped, files are written safely.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

mod common;
use common::{assert_contains, assert_lacks, build_to, packc, packc_output, scratch, write};

/// A fresh folder for one test: `pack/` (the pack's folder) and `secret/` beside it,
/// holding a schema file whose text must never reach an artifact or the output.
fn folder(test: &str) -> PathBuf {
    let dir = scratch(test);
    std::fs::create_dir_all(dir.join("pack/schemas")).unwrap();
    std::fs::create_dir_all(dir.join("secret")).unwrap();
    write(
        &dir,
        "secret/s.json",
        r#"{"type": "object", "description": "TOPSECRET-7f3a"}"#,
    );
    write(&dir, "pack/schemas/ok.json", r#"{"type": "object"}"#);
    dir
}

const SECRET: &str = "TOPSECRET-7f3a";

/// A pack whose one step names `schema` as its `output_schema`.
fn pack_naming(dir: &Path, schema: &str) -> PathBuf {
    let text = format!(
        r#"id: demo
name: Demo
version: 1.0.0
template_engine: {{version: v1, syntax: "{{{{variable}}}}"}}
prompts:
  p: {{id: p, name: P, version: 1.0.0, system_template: "Hi."}}
workflow:
  version: 1
  entry: main
  states:
    main: {{orchestration: composition, composition: c, terminal: true}}
compositions:
  c:
    version: 1
    steps:
      - {{id: a, kind: prompt, prompt_task: p, output_schema: "{schema}"}}
"#
    );
    write(dir, "pack/demo.pack.yaml", text)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `packc build` refuses with `unsafe_path` at the reference, writes nothing and shows
/// nothing of the file.
fn assert_build_refused(dir: &Path, pack: &Path) {
    let out_file = dir.join("out.ppk");
    let out = packc_output!(["build", "--format", "json", "-o"], &out_file, pack);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let d: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .expect("one diagnostic"),
    )
    .unwrap();
    assert_eq!(d["kind"], "unsafe_path", "{all}");
    assert_eq!(d["pointer"], "/compositions/c/steps/0/output_schema");
    assert_eq!(d["line"], 16);
    assert!(!out_file.exists(), "nothing is written");
    assert_lacks(&all, SECRET);
}

#[test]
fn a_parent_path_is_refused() {
    let dir = folder("parent");
    let pack = pack_naming(&dir, "../secret/s.json");
    assert_build_refused(&dir, &pack);
}

#[test]
fn an_absolute_path_is_refused_whether_or_not_it_exists() {
    let dir = folder("absolute");
    for target in [
        dir.join("secret/s.json"),
        dir.join("secret/missing.json"),
        PathBuf::from("/etc/passwd"),
    ] {
        let pack = pack_naming(&dir, target.to_str().unwrap());
        assert_build_refused(&dir, &pack);
    }
}

#[test]
fn a_missing_outside_file_is_refused_like_a_present_one() {
    let dir = folder("oracle");
    let check = |name: &str| {
        let pack = pack_naming(&dir, &format!("../secret/{name}"));
        let out = packc_output!(["check", "--format", "json"], &pack);
        assert_eq!(out.status.code(), Some(1));
        // The same answer but for the name itself.
        String::from_utf8_lossy(&out.stdout).replace(name, "X")
    };
    assert_eq!(check("s.json"), check("missing.json"));
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_folder_is_refused_by_every_command() {
    let dir = folder("symlink");
    std::os::unix::fs::symlink(dir.join("secret/s.json"), dir.join("pack/schemas/out.json"))
        .unwrap();
    std::os::unix::fs::symlink(dir.join("secret"), dir.join("pack/schemas/outdir")).unwrap();
    std::os::unix::fs::symlink(
        dir.join("secret/missing.json"),
        dir.join("pack/schemas/dangling.json"),
    )
    .unwrap();
    for name in [
        "schemas/out.json",
        "schemas/outdir/s.json",
        "schemas/dangling.json",
    ] {
        let pack = pack_naming(&dir, name);
        assert_build_refused(&dir, &pack);
        for args in [&["check"][..], &["graph"], &["run", "--input", "{}"]] {
            let out = packc().args(args).arg(&pack).output().unwrap();
            let all = text(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {all}");
            assert!(all.contains("[unsafe_path]"), "{args:?}: {all}");
            assert_lacks(&all, SECRET);
        }
        let case = write(
            &dir,
            "pack/demo.case.yaml",
            "about: a run\npack_file: demo.pack.yaml\nrun: {input: {}}\nexpect: {output: null}\n",
        );
        let out = packc_output!("test", &case);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert_contains(&all, "unsafe_path");
    }
    // A link that stays inside the folder is followed.
    std::os::unix::fs::symlink("ok.json", dir.join("pack/schemas/alias.json")).unwrap();
    let pack = pack_naming(&dir, "schemas/alias.json");
    let out = packc_output!("check", &pack);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn allow_path_widens_the_reach_deliberately() {
    let dir = folder("allow");
    let pack = pack_naming(&dir, "../secret/s.json");
    let out_file = dir.join("out.ppk");
    let out = packc_output!(
        "build",
        "--allow-path",
        dir.join("secret"),
        "-o",
        &out_file,
        &pack
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let bytes = std::fs::read(&out_file).unwrap();
    let embedded = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
    assert!(embedded, "the allowed schema is embedded");
    let host = write(&dir, "host.yaml", "host: {prompts: {p: [{output: {}}]}}\n");
    for cmd in [
        &["check"][..],
        &["graph"],
        &["run", "--host", host.to_str().unwrap()],
    ] {
        let out = packc()
            .args(cmd)
            .arg("--allow-path")
            .arg(dir.join("secret"))
            .arg(&pack)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{cmd:?}: {}", text(&out));
    }
    // A folder that does not exist is a usage error, not a silent no-op.
    let out = packc_output!(["check", "--allow-path"], dir.join("nowhere"), &pack);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--allow-path"), "{}", text(&out));
}

/// A one-line JSON pack with 10,000 steps, each missing its `prompt_task`: 10,000 errors
/// that all blame the same 300 KB line.
fn ten_thousand_errors(dir: &Path) -> PathBuf {
    let steps: Vec<String> = (0..10_000)
        .map(|i| format!(r#"{{"id":"s{i}","kind":"prompt"}}"#))
        .collect();
    let text = format!(
        r#"{{"id":"demo","name":"Demo","version":"1.0.0","template_engine":{{"version":"v1","syntax":"{{{{variable}}}}"}},"prompts":{{"p":{{"id":"p","name":"P","version":"1.0.0","system_template":"Hi."}}}},"workflow":{{"version":1,"entry":"main","states":{{"main":{{"orchestration":"composition","composition":"c","terminal":true}}}}}},"compositions":{{"c":{{"version":1,"steps":[{}]}}}}}}"#,
        steps.join(",")
    );
    write(dir, "many.pack.json", text)
}

#[test]
fn ten_thousand_diagnostics_are_bounded_and_fast() {
    let dir = folder("many");
    ten_thousand_errors(&dir);
    let timed = |args: &[&str]| {
        let start = std::time::Instant::now();
        let out = packc().args(args).current_dir(&dir).output().unwrap();
        let took = start.elapsed();
        assert_eq!(out.status.code(), Some(1));
        assert!(took.as_secs() < 10, "{args:?} took {took:?}");
        out
    };
    // Human: the first 200, cut around their span, then a count of the rest.
    let out = timed(&["check", "many.pack.json"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("[schema_violation] Error").count(), 200);
    assert!(stderr.ends_with(
        "… and 9800 more diagnostic(s) (`--max-diagnostics 0` prints them all)\nchecked 1 pack: 10000 error(s), 0 warning(s)\n"
    ));
    assert_eq!(stderr.len(), 107_144);
    assert!(
        stderr.lines().all(|l| l.chars().count() < 300),
        "long lines are cut"
    );
    // Every one of them when asked, still linear.
    let out = timed(&["check", "--max-diagnostics", "0", "many.pack.json"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("[schema_violation] Error").count(), 10_000);
    // JSON: one line per diagnostic, all of them.
    let out = timed(&["check", "--format", "json", "many.pack.json"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 10_000);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["pointer"], "/compositions/c/steps/9999");
    assert_eq!(last["line"], 1);
}

/// Asserts that `shown` (what a command printed) holds no control character and shows
/// `escaped`, the escaped form of the pack text that had them.
#[track_caller]
fn assert_escaped(shown: &[u8], escaped: &str) {
    let text = String::from_utf8_lossy(shown);
    assert!(!has_control(shown), "{text:?}");
    assert!(text.contains(escaped), "{text:?}");
}

fn has_control(text: &[u8]) -> bool {
    String::from_utf8_lossy(text)
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[test]
fn pack_text_never_reaches_the_terminal_raw() {
    let dir = folder("escape");
    // A composition key and an unresolved prompt name carrying escape sequences.
    let pack = dir.join("pack/esc.pack.yaml");
    let source = "id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: \"{{variable}}\"}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"Hi.\"}\nworkflow:\n  version: 1\n  entry: main\n  states:\n    main: {orchestration: composition, composition: \"c\\e]0;owned\\a\", terminal: true}\ncompositions:\n  \"c\\e]0;owned\\a\":\n    version: 1\n    steps:\n      - {id: a, kind: prompt, prompt_task: PROMPT}\n";
    std::fs::write(&pack, source.replace("PROMPT", "\"q\\e[2J\\r\"")).unwrap();
    let out = packc_output!("check", &pack);
    assert_eq!(out.status.code(), Some(1));
    assert_escaped(&out.stderr, "`q\\u{1b}[2J\\u{d}`");
    // The same in an artifact's strings, and in a run's error and trace.
    std::fs::write(&pack, source.replace("PROMPT", "p")).unwrap();
    let ppk = dir.join("esc.ppk");
    let out = build_to(&pack, &ppk);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = packc_output!("inspect", &ppk);
    assert_eq!(out.status.code(), Some(0));
    assert_escaped(&out.stdout, "c\\u{1b}]0;owned\\u{7}");
    let host = write(
        &dir,
        "host.yaml",
        "host: {prompts: {p: [{error: \"boom\\e[2J\"}]}}\n",
    );
    let out = packc_output!(["run", "--trace", "--host"], &host, &ppk);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        !has_control(&out.stderr),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("boom\\u{1b}[2J"));
}

/// A model answer with an OSC title sequence, a colour, DEL and the C1 CSI.
const HOSTILE: &str = "a\u{1b}]0;owned\u{7}\u{1b}[31mred\u{7f}\u{9b}2J";

/// [`HOSTILE`] as printed for a person.
const HOSTILE_ESCAPED: &str = "a\\u{1b}]0;owned\\u{7}\\u{1b}[31mred\\u{7f}\\u{9b}2J";

/// [`HOSTILE`] in a YAML double-quoted string.
const HOSTILE_YAML: &str = r#""a\e]0;owned\a\e[31mred\x7f\x9b2J""#;

/// A workflow `a` -> `b` -> `c` (terminal) of one prompt `p`, whose reply joins the three
/// states' answers.
const THREE_STATES: &str = "id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: \"{{variable}}\"}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"Hi.\"}\nworkflow:\n  version: 1\n  entry: a\n  states:\n    a: {prompt_task: p, on_event: {Go: b}}\n    b: {prompt_task: p, on_event: {Done: c}}\n    c: {prompt_task: p, terminal: true}\n";

#[test]
fn model_answers_never_reach_the_terminal_raw() {
    let dir = folder("answers");
    let pack = write(&dir, "pack/three.pack.yaml", THREE_STATES);
    let host = write(
        &dir,
        "host.yaml",
        format!(
            "script:\n  - turn: hi\nhost:\n  prompts:\n    p: [{{output: {HOSTILE_YAML}, event: Go}}, {{output: two, event: Done}}, {{output: {HOSTILE_YAML}}}]\n"
        ),
    );
    // The output on stdout, and the reply (the three answers) on stderr.
    let out = packc_output!("run", &pack, "--host", &host);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!has_control(&out.stdout), "{}", text(&out));
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output, HOSTILE);
    assert_escaped(&out.stderr, &format!("reply:\n  {HOSTILE_ESCAPED}\n"));
    // The JSON result: still the same strings once parsed.
    let out = packc_output!("run", &pack, "--host", &host, ["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!has_control(&out.stdout), "{}", text(&out));
    assert!(!has_control(&out.stderr), "{}", text(&out));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["output"], HOSTILE);
    assert_eq!(result["calls"][0]["answer"]["output"], HOSTILE);
    // A saved run prints its output the same way.
    let out = packc_output!(
        "run",
        &pack,
        "--host",
        &host,
        "--save",
        dir.join("run.snap")
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!has_control(&out.stdout), "{}", text(&out));
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(output, HOSTILE);
}

#[test]
fn run_errors_are_escaped_alike_with_and_without_save() {
    let dir = folder("errors");
    let pack = write(&dir, "pack/three.pack.yaml", THREE_STATES);
    let host = write(
        &dir,
        "host.yaml",
        format!("script:\n  - turn: hi\nhost:\n  prompts:\n    p: [{{error: {HOSTILE_YAML}}}]\n"),
    );
    let error_line = |out: &Output| -> String {
        assert_eq!(out.status.code(), Some(1), "{}", text(out));
        assert_escaped(&out.stderr, HOSTILE_ESCAPED);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        // In a session the line follows the `> ` prompt.
        let line = stderr
            .lines()
            .find_map(|l| l.find("error[").map(|at| &l[at..]));
        line.unwrap_or_else(|| panic!("{stderr}")).to_owned()
    };
    let plain = error_line(&packc_output!("run", &pack, "--host", &host));
    assert_contains(&plain, "error[host_error]: ");
    let saved = packc_output!(
        "run",
        &pack,
        "--host",
        &host,
        "--save",
        dir.join("run.snap")
    );
    assert_eq!(error_line(&saved), plain);
    // The first turn typed on the terminal.
    let mut child = packc()
        .arg("run")
        .arg(&pack)
        .arg("--host")
        .arg(&host)
        .arg("--interactive")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hi\n").unwrap();
    let interactive = child.wait_with_output().unwrap();
    assert_eq!(error_line(&interactive), plain);
}

/// A tool that fails with escape sequences on its stderr is a warning with them escaped,
/// in a live run and in a saved one.
#[cfg(unix)]
#[test]
fn tool_stderr_never_reaches_the_terminal_raw() {
    let dir = folder("tool-stderr");
    let pack = write(
        &dir,
        "pack/tool.pack.yaml",
        "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: x}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: hi}\ntools:\n  lookup: {name: lookup, description: x}\ncompositions:\n  c:\n    version: 1\n    steps:\n      - {id: a, kind: tool, tool: lookup, args: {q: \"${input}\"}}\n",
    );
    let tools = write(
        &dir,
        "tools.yaml",
        r#"tools:
  lookup: {command: [sh, -c, 'printf ''\033]0;owned\007\033[31mno\177\302\233'' >&2; exit 3']}
"#,
    );
    let run = |extra: &[&std::ffi::OsStr]| {
        packc()
            .arg("run")
            .arg(&pack)
            .args(["--target", "composition:c", "--input", "\"x\"", "--tools"])
            .arg(&tools)
            .args(extra)
            .output()
            .unwrap()
    };
    let shown = "tool `lookup` exited with exit status: 3: \\u{1b}]0;owned\\u{7}\\u{1b}[31mno\\u{7f}\\u{9b}";
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_escaped(&out.stderr, &format!("warning: {shown}"));
    let snap = dir.join("run.snap");
    let out = run(&["--save".as_ref(), snap.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_escaped(
        &out.stderr,
        &format!("warning: tool `lookup` failed: {shown}"),
    );
}

#[test]
fn graphs_and_json_diagnostics_escape_pack_text() {
    let dir = folder("graph");
    let pack = dir.join("pack/esc.pack.yaml");
    let source = "id: demo\nname: Demo\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: \"{{variable}}\"}\nprompts:\n  p: {id: p, name: P, version: 1.0.0, system_template: \"Hi.\"}\nworkflow:\n  version: 1\n  entry: main\n  states:\n    main: {orchestration: composition, composition: \"c\\e]0;t\\a\\x9b\", terminal: true}\ncompositions:\n  \"c\\e]0;t\\a\\x9b\":\n    version: 1\n    steps:\n      - {id: a, kind: prompt, prompt_task: PROMPT}\n";
    std::fs::write(&pack, source.replace("PROMPT", "p")).unwrap();
    let out = packc_output!("graph", &pack);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // DOT writes the escape's backslash as `\\`.
    assert_escaped(
        &out.stdout,
        r#"label="composition c\\u{1b}]0;t\\u{7}\\u{9b}";"#,
    );
    let out = packc_output!("graph", &pack, ["--format", "mermaid"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_escaped(&out.stdout, r#"["composition c\u{1b}]0;t\u{7}\u{9b}"]"#);
    // A diagnostic quoting pack text, as JSON: escaped by JSON, the same string parsed.
    std::fs::write(&pack, source.replace("PROMPT", "\"q\\e[2J\\x9b\"")).unwrap();
    let out = packc_output!("check", &pack, ["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!has_control(&out.stdout), "{}", text(&out));
    let messages: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let line: serde_json::Value = serde_json::from_str(l).unwrap();
            line["message"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("`q\u{1b}[2J\u{9b}`")),
        "{messages:?}"
    );
}

/// The example pack copied into `dir`, and a mock model server answering its calls.
fn live_pack(dir: &Path) -> (PathBuf, packc_host::mock::MockServer) {
    use packc_host::mock::{MockServer, Reply};
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = dir.join("pack/ex1.pack.yaml");
    std::fs::copy(repo.join("examples/rfc0010-ex1.pack.yaml"), &pack).unwrap();
    let server = MockServer::start(|_, _| Reply::text(r#"{"summary": "s"}"#));
    (pack, server)
}

fn live_run(
    pack: &Path,
    server: &packc_host::mock::MockServer,
    extra: &[&std::ffi::OsStr],
) -> Output {
    packc()
        .env_remove("OPENAI_API_KEY")
        .args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(server.base_url())
        .arg(pack)
        .args(["--input", r#"{"text": "x"}"#])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn record_is_checked_before_any_call_and_never_clobbers() {
    let dir = folder("record");
    let (pack, server) = live_pack(&dir);
    let original = std::fs::read(&pack).unwrap();
    fn record(p: &Path) -> [&std::ffi::OsStr; 2] {
        [std::ffi::OsStr::new("--record"), p.as_os_str()]
    }
    // A folder that does not exist: refused before the run, not after it.
    let out = live_run(&pack, &server, &record(&dir.join("nodir/x.case.yaml")));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("nodir"), "{}", text(&out));
    // The pack itself, however it is spelled.
    let out = live_run(
        &pack,
        &server,
        &record(&dir.join("pack/../pack/ex1.pack.yaml")),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("itself"), "{}", text(&out));
    let out = live_run(
        &pack,
        &server,
        &[
            std::ffi::OsStr::new("--force"),
            std::ffi::OsStr::new("--record"),
            pack.as_os_str(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(std::fs::read(&pack).unwrap(), original);
    // An existing file, without --force.
    let case = write(&dir, "run.case.yaml", "old");
    let out = live_run(&pack, &server, &record(&case));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--force"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&case).unwrap(), "old");
    assert_eq!(server.received().len(), 0, "no call was made");
    // With --force it is replaced; a link there is replaced, not written through.
    #[cfg(unix)]
    {
        let victim = write(&dir, "victim.txt", "keep");
        std::fs::remove_file(&case).unwrap();
        std::os::unix::fs::symlink(&victim, &case).unwrap();
    }
    let mut args = vec![std::ffi::OsStr::new("--force")];
    args.extend(record(&case));
    let out = live_run(&pack, &server, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(std::fs::read_to_string(&case)
        .unwrap()
        .contains("pack_file: pack/ex1.pack.yaml"));
    #[cfg(unix)]
    assert_eq!(
        std::fs::read_to_string(dir.join("victim.txt")).unwrap(),
        "keep"
    );
}

#[test]
fn build_never_writes_over_its_own_pack() {
    let dir = folder("build-self");
    let pack = pack_naming(&dir, "schemas/ok.json");
    let original = std::fs::read(&pack).unwrap();
    let out = build_to(&pack, dir.join("pack/./demo.pack.yaml"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("itself"), "{}", text(&out));
    assert_eq!(std::fs::read(&pack).unwrap(), original);
    // A file where the folder should be is refused before any work.
    let out = build_to(&pack, pack.join("x.ppk"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is not a folder"), "{}", text(&out));
}

#[cfg(unix)]
#[test]
fn a_pack_name_that_is_not_utf8_keeps_its_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let dir = folder("bytes");
    let named = pack_naming(&dir, "schemas/ok.json");
    let pack = dir.join(std::ffi::OsStr::from_bytes(b"pack/p\xff.pack.yaml"));
    std::fs::rename(&named, &pack).unwrap();
    let out = packc_output!("build", &pack);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let built = dir.join(std::ffi::OsStr::from_bytes(b"pack/p\xff.pack.yaml.ppk"));
    assert!(built.exists(), "{}", text(&out));
    // `--record` cannot name such a pack in a case file: refused before the run.
    let server = packc_host::mock::MockServer::start(|_, _| packc_host::mock::Reply::text("x"));
    let out = live_run(
        &pack,
        &server,
        &[
            std::ffi::OsStr::new("--record"),
            dir.join("r.case.yaml").as_os_str(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("not UTF-8"), "{}", text(&out));
    assert_eq!(server.received().len(), 0);
}

/// A case written by someone else cannot show the tester a file elsewhere: its
/// `pack_file` is read only from the case's folder, the current folder or a folder given
/// with `--allow-path`, and a file outside is refused before it is read (it is not a
/// pack, and its diagnostics would quote it).
#[test]
fn a_cases_pack_file_outside_its_folder_is_never_read() {
    let dir = folder("pack-file");
    write(&dir, "secret/key.yaml", format!("KEY {SECRET} KEY\n"));
    write(&dir, "secret/id_ed25519", format!("KEY {SECRET} KEY\n"));
    std::fs::create_dir_all(dir.join("repo/cases")).unwrap();
    // Not a pack's name: refused wherever it is.
    let case = write(
        &dir,
        "repo/cases/c.case.yaml",
        "about: x\npack_file: ../../secret/id_ed25519\nexpect: {warnings: []}\n",
    );
    let out = packc_output!(["test", "--allow-path"], dir.join("secret"), &case);
    assert_contains(text(&out), "must name a pack file (.yaml, .yml or .json)");
    assert_lacks(text(&out), SECRET);
    let absolute = dir.join("secret/key.yaml");
    for name in ["../../secret/key.yaml", absolute.to_str().unwrap()] {
        let case = write(
            &dir,
            "repo/cases/c.case.yaml",
            format!("about: x\npack_file: {name}\nexpect: {{warnings: []}}\n"),
        );
        let out = packc_output!("test", &case);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert_contains(
            text(&out),
            "is outside the case's folder, the folder above it",
        );
        assert_lacks(text(&out), SECRET);
        // Allowed deliberately, it is read (and, not being a pack, fails to check).
        let out = packc_output!(["test", "--allow-path"], dir.join("secret"), &case);
        assert_contains(text(&out), "schema_violation");
    }
}
