//! Human in the loop through the built binary: `packc run --save`, `packc resume`, and
//! `packc run --interactive` with piped stdin, all with a scripted host.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

mod common;
use common::{assert_contains, assert_stderr_contains, packc, packc_output, scratch, write};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A review: `drafting` submits to the external state `editor`, which waits for
/// `Approve` (to `done`) or `Reject`.
fn review(dir: &Path) -> (PathBuf, PathBuf) {
    let pack = write(dir, "review.pack.yaml", include_str!("packs/review.yaml"));
    let host = write(dir, "host.yaml", "host:\n  prompts:\n    draft: [{output: draft 1, event: Submit}]\n    publish: [{output: published}]\n");
    (pack, host)
}

/// `packc run --interactive` of the review pack in a scratch folder `name`, with `lines`
/// typed on its standard input.
fn interactive(name: &str, lines: &[u8]) -> std::process::Output {
    interactive_with(name, &[], lines)
}

/// [`interactive`] with further arguments to `packc run`.
fn interactive_with(name: &str, args: &[&str], lines: &[u8]) -> std::process::Output {
    let dir = scratch(name);
    let (pack, host) = review(&dir);
    let mut child = packc()
        .args(["run", "--interactive"])
        .args(args)
        .arg("--host")
        .arg(&host)
        .arg(&pack)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(lines).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_run_waiting_for_approval_is_saved_and_resumed() {
    let dir = scratch("save");
    let (pack, host) = review(&dir);
    let snap = dir.join("run.snap");

    // Without --save the run ends, but says what it was waiting for.
    let out = packc_output!(["run", "--input", "\"write it\"", "--host"], &host, &pack);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "note: the run stopped waiting for an event in state editor: Approve | Reject"
        ),
        "{}",
        text(&out.stderr)
    );

    let mut c = packc();
    c.args(["run", "--input", "\"write it\"", "--host"])
        .arg(&host)
        .arg(&pack)
        .arg("--save")
        .arg(&snap);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "\"draft 1\"");
    assert!(
        text(&out.stderr)
            .contains("stopped: waiting for an event in state editor: Approve | Reject; saved to"),
        "{}",
        text(&out.stderr)
    );

    // A wrong event leaves the saved run as it was.
    let out = packc_output!(["resume", "--event", "Later", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_stderr_contains(&out, "error[invalid_event]");

    let out = packc_output!(
        ["resume", "--event", "Approve", "--trace", "--host"],
        &host,
        &snap
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_contains(&stderr, "transition editor -> done on Approve");
    assert_contains(
        &stderr,
        "stopped: waiting for a turn in terminal state done",
    );

    // The next turn runs the terminal state.
    let out = packc_output!(["resume", "--turn", "\"go\"", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "\"published\"",
        "{}",
        text(&out.stderr)
    );
}

/// `packc resume --format json` prints the result as `packc run --format json` does, its
/// calls those made since the save; `-q` leaves out the line saying where it stopped.
#[test]
fn resume_prints_the_json_result_and_quiet_prints_nothing_else() {
    let dir = scratch("resume-json");
    let (pack, host) = review(&dir);
    let snap = dir.join("run.snap");
    let json = |out: &std::process::Output| -> serde_json::Value {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let out = packc_output!(
        [
            "run",
            "--input",
            "\"write it\"",
            "--format",
            "json",
            "--host"
        ],
        &host,
        &pack,
        "--save",
        &snap
    );
    let r = json(&out);
    assert_eq!(r["status"], "waiting");
    assert_eq!(
        r["stopped"],
        "waiting for an event in state editor: Approve | Reject"
    );
    assert_eq!(r["calls"][0]["answer"]["event"], "Submit", "{r}");
    assert_contains(text(&out.stderr), "saved to");

    let out = packc_output!(
        ["resume", "--event", "Approve", "--format", "json", "-q", "--host"],
        &host,
        &snap
    );
    let r = json(&out);
    assert_eq!(r["state"], "done");
    assert_eq!(r["calls"], serde_json::json!([]), "{r}");
    assert_eq!(text(&out.stderr), "");

    let out = packc_output!(
        ["resume", "--turn", "\"go\"", "--format", "json", "--quiet", "--host"],
        &host,
        &snap
    );
    let r = json(&out);
    // A terminal state takes turn after turn: the run waits again.
    assert_eq!(r["status"], "waiting");
    assert_eq!(r["output"], "published");
    let calls = r["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{r}");
    assert_eq!(calls[0]["prompt"], "publish");
    assert_eq!(calls[0]["answer"]["output"], "published");
    assert_contains(
        r["trace"].to_string(),
        "transition drafting -> editor on Submit",
    );
    assert_eq!(text(&out.stderr), "");
}

/// Without `--turn` or `--event`, `packc resume` says to give one, and what the run
/// waits for.
#[test]
fn resume_without_a_turn_or_event_says_what_the_run_waits_for() {
    let dir = scratch("resume-neither");
    let (pack, host) = review(&dir);
    let snap = dir.join("run.snap");
    let out = packc_output!(
        ["run", "--input", "\"write it\"", "--host"],
        &host,
        &pack,
        "--save",
        &snap
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = packc_output!("resume", &snap);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(
        &out,
        "give --turn JSON or --event NAME: the saved run is waiting for an event in state editor: Approve | Reject",
    );
}

/// A run saved in a state the model drives (`control: user`: it waits for the user's
/// turn, then the model names the event) is continued with a turn only: neither the
/// save line nor `packc resume` offers `--event`, which that state refuses.
#[test]
fn a_state_the_model_drives_is_resumed_with_a_turn_only() {
    let dir = scratch("resume-model-driven");
    let pack = write(&dir, "user.pack.yaml", include_str!("packs/user_turn.yaml"));
    let host = write(
        &dir,
        "host.yaml",
        "host:\n  prompts:\n    greet: [{output: hi, event: Greeted}]\n    collect: [{output: noted, event: Collected}]\n    finish: [{output: bye}]\n",
    );
    let snap = dir.join("run.snap");
    let out = packc_output!(
        ["run", "--input", "\"hello\"", "--host"],
        &host,
        &pack,
        "--save",
        &snap
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("stopped: waiting for a turn in state collecting; saved to"),
        "{stderr}"
    );
    assert!(stderr.contains("--turn JSON`)"), "{stderr}");
    assert!(!stderr.contains("--event"), "{stderr}");
    let out = packc_output!("resume", &snap);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(
        &out,
        "give --turn JSON: the saved run is waiting for a turn in state collecting",
    );
    let out = packc_output!(["resume", "--turn", "\"team a\"", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_contains(text(&out.stdout), "bye");
}

#[test]
fn a_save_file_naming_another_file_never_shows_that_file() {
    let dir = scratch("secret");
    let secret = write(
        &dir,
        "id_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    let env = write(&dir, "dotenv.yaml", "OPENAI_API_KEY: sk-SECRET-789\n");
    for (name, pack, said) in [
        ("a", secret.as_path(), "is not named as a pack"),
        ("b", env.as_path(), "which does not compile now"),
    ] {
        let snap = write(
            &dir,
            &format!("{name}.snap"),
            format!(
                "packc-run-save 1\npack: {}\ntarget: workflow\nmodule: 0\n\n",
                pack.display()
            ),
        );
        let out = packc_output!(["resume", "--turn", "\"hi\""], &snap);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let all = text(&out.stderr) + &text(&out.stdout);
        assert!(!all.contains("b3Blbn") && !all.contains("SECRET"), "{all}");
        assert_contains(&all, said);
    }
    // A device or pipe named by a save file is refused before it is read (the pipe
    // would block the read), whatever its name.
    let zero = write(
        &dir,
        "zero.snap",
        "packc-run-save 1\npack: /dev/zero\ntarget: workflow\nmodule: 0\n\n",
    );
    let out = packc_output!(["resume", "--turn", "\"hi\""], &zero);
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_contains(&out, "/dev/zero is not named as a pack");
    let fifo = dir.join("pipe.pack.yaml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let pipe = write(
            &dir,
            "pipe.snap",
            format!(
                "packc-run-save 1\npack: {}\ntarget: workflow\nmodule: 0\n\n",
                fifo.display()
            ),
        );
        let out = packc_output!(["resume", "--turn", "\"hi\""], &pipe);
        assert_eq!(out.status.code(), Some(2));
        assert_stderr_contains(&out, "not a regular file");
    }
}

#[test]
fn a_saved_run_is_refused_for_another_pack() {
    let dir = scratch("other");
    let (pack, host) = review(&dir);
    let snap = dir.join("run.snap");
    let out = packc_output!(
        ["run", "--input", "\"x\"", "--host"],
        &host,
        &pack,
        "--save",
        &snap
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let other = dir.join("other.pack.yaml");
    let source = std::fs::read_to_string(&pack)
        .unwrap()
        .replace("Publish.", "Ship it.");
    std::fs::write(&other, source).unwrap();
    let out = packc_output!(["resume", "--event", "Approve", "--pack"], &other, &snap);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_stderr_contains(&out, "was saved from another artifact");
    // The call cap counts the call made before the save: `publish` would be the second.
    let out = packc_output!(["resume", "--event", "Approve", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = packc_output!(
        [
            "resume",
            "--turn",
            "\"go\"",
            "--max-host-calls",
            "1",
            "--host"
        ],
        &host,
        &snap
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_stderr_contains(&out, "limit_exceeded");
    let garbage = write(&dir, "garbage.snap", "hello");
    let out = packc_output!(["resume", "--event", "Approve"], &garbage);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a run saved by `packc run --save`"));
}

#[test]
fn interactive_reads_turns_and_events_from_stdin() {
    let out = interactive("interactive", b"write it\n/event Approve\nship it\n");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stops: Vec<&str> = stderr.lines().filter(|l| l.contains("stopped: ")).collect();
    assert_eq!(
        stops,
        [
            "stopped: waiting for a turn in state drafting",
            "> stopped: waiting for an event in state editor: Approve | Reject",
            "> stopped: waiting for a turn in terminal state done",
            "> stopped: waiting for a turn in terminal state done",
            "> stopped: done",
        ],
        "{stderr}"
    );
    assert!(stdout.starts_with("\"draft 1\"\n"), "{stdout}");
    assert_contains(&stdout, "\"published\"");
}

/// `--interactive --trace` prints each turn's trace lines as the turn ends, before saying
/// where the run stopped, and each line once.
#[test]
fn interactive_trace_follows_each_turn() {
    let out = interactive_with(
        "interactive-trace",
        &["--trace"],
        b"write it\n/event Approve\nship it\n",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.trim_start_matches("> "))
        .filter(|l| !l.starts_with("note:"))
        .collect();
    let at = |line: &str| {
        let found: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == line).collect();
        assert_eq!(found.len(), 1, "`{line}` once in:\n{stderr}");
        found[0]
    };
    let to_editor = at("transition drafting -> editor on Submit");
    let waiting = at("stopped: waiting for an event in state editor: Approve | Reject");
    let to_done = at("transition editor -> done on Approve");
    assert!(to_editor < waiting && waiting < to_done, "{stderr}");
}

/// In an interactive session a wrong event is refused and the run keeps waiting for a
/// right one, rather than ending (an event the run refuses ends a run).
#[test]
fn interactive_refuses_a_wrong_event_and_goes_on() {
    let out = interactive(
        "interactive-wrong-event",
        b"write it\n/event Later\n/event Approve\nship it\n",
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_contains(
        &stderr,
        "> error[invalid_event]: state `editor` has no event `Later`",
    );
    assert_contains(&stderr, "the run is still waiting");
    assert_contains(&stderr, "stopped: done");
    assert_contains(&stdout, "\"published\"");
}

/// `/quit` ends the session with the output the run waited with, which the last turn
/// printed: it is not printed a second time.
#[test]
fn interactive_quit_prints_the_last_output_once() {
    let out = interactive("interactive-quit", b"write it\n/quit\n");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "\"draft 1\"\n", "{stderr}");
    assert_contains(&stderr, "stopped: done");
}

/// One host script serves a whole session: a prompt called again after a resume gets
/// its next answer, not its first (the save file counts what the run used).
#[test]
fn a_resumed_run_goes_on_in_the_host_script() {
    let dir = scratch("script-goes-on");
    let (pack, _) = review(&dir);
    let host = write(
        &dir,
        "two.yaml",
        "host:\n  prompts:\n    draft:\n      - {output: draft 1, event: Submit}\n      - {output: draft 2, event: Submit}\n",
    );
    let snap = dir.join("run.snap");
    let out = packc()
        .args(["run", "--input", "\"write it\"", "--host"])
        .arg(&host)
        .arg(&pack)
        .arg("--save")
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stdout).trim(),
        "\"draft 1\"",
        "{}",
        text(&out.stderr)
    );
    let saved = std::fs::read(&snap).unwrap();
    assert!(
        text(&saved).contains("\nanswered: {\"prompt draft\":1}\n\n"),
        "{}",
        text(&saved[..200.min(saved.len())])
    );
    let out = packc_output!(["resume", "--event", "Reject", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = packc_output!(["resume", "--turn", "\"again\"", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "\"draft 2\"",
        "{}",
        text(&out.stderr)
    );
    // A third draft has no answer left.
    let out = packc_output!(["resume", "--event", "Reject", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = packc_output!(["resume", "--turn", "\"more\"", "--host"], &host, &snap);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_stderr_contains(&out, "no scripted answer for prompt draft");
}
