//! `packc batch` against a loopback mock model: restarts after SIGKILL, a rate-limited
//! model, malformed rows, and what is refused before any call.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use packc_batch::mock::{Mock, MockReply};
use serde_json::{json, Value};

mod common;
use common::{assert_code, assert_contains, packc, packc_output, repo, scratch, stderr};

fn ex2() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rfc0010-ex2.pack.yaml")
}

/// Which prompt a request is for, and the document it is about: the mock's key of a
/// (row, call).
fn key(body: &Value) -> (String, String) {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let text = body["messages"][1]["content"].as_str().unwrap_or_default();
    let prompt = if system.starts_with("Classify") {
        "doc_classifier"
    } else if system.starts_with("Extract from this research paper") {
        "research_paper_extractor"
    } else {
        "general_doc_extractor"
    };
    (text.to_owned(), prompt.to_owned())
}

fn answer(body: &Value) -> MockReply {
    let (text, prompt) = key(body);
    if prompt == "doc_classifier" {
        let kind = if text.starts_with("paper") {
            "research_paper"
        } else {
            "general"
        };
        MockReply::text(&json!({"type": kind, "confidence": 0.5}).to_string())
    } else {
        MockReply::text(&json!({"summary": format!("{prompt} read {text}")}).to_string())
    }
}

fn rows(n: usize) -> String {
    (0..n)
        .map(|i| {
            let text = if i % 7 == 0 {
                format!("paper {i}")
            } else {
                format!("doc {i}")
            };
            format!("{}\n", json!({"id": i, "text": text}))
        })
        .collect()
}

fn batch(input: &Path, output: &Path, mock: &Mock, extra: &[&str]) -> Command {
    let mut cmd = packc();
    cmd.arg("batch")
        .arg(ex2())
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(output)
        .args(["--provider", "openai", "--model", "m", "--base-url"])
        .arg(mock.base_url())
        .args(["--quiet"])
        .args(extra);
    cmd
}

/// A fresh folder for one test, a mock answering every request with [`answer`], and
/// the path of the rows file (`rows.jsonl`, not written yet) in that folder.
fn answered(test: &str) -> (PathBuf, Mock, PathBuf) {
    let dir = scratch(test);
    let input = dir.join("rows.jsonl");
    (dir, Mock::start(|_, body| answer(body)), input)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A line without its wall time, which differs from run to run.
fn stable(mut line: Value) -> Value {
    line.as_object_mut().unwrap().remove("wall_ms");
    line
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the journal says was answered: rows done (every call of theirs), and the calls
/// answered so far of the rows in flight, as mock keys.
fn journaled(journal: &Path, texts: &[String]) -> (HashSet<String>, HashSet<(String, String)>) {
    let db = rusqlite::Connection::open(journal).unwrap();
    let mut done = HashSet::new();
    let mut answered = HashSet::new();
    let mut stmt = db.prepare("SELECT idx, state, answered FROM rows").unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let idx: i64 = r.get(0).unwrap();
        let state: i64 = r.get(1).unwrap();
        let text = texts[idx as usize].clone();
        if state > 0 {
            done.insert(text);
        } else {
            let list: String = r.get(2).unwrap();
            for p in serde_json::from_str::<Vec<String>>(&list).unwrap() {
                answered.insert((text.clone(), p));
            }
        }
    }
    (done, answered)
}

#[test]
fn a_batch_killed_five_times_ends_as_an_uninterrupted_one() {
    let dir = scratch("kill");
    let input = dir.join("rows.jsonl");
    std::fs::write(&input, rows(1000)).unwrap();
    let texts: Vec<String> = (0..1000)
        .map(|i| {
            if i % 7 == 0 {
                format!("paper {i}")
            } else {
                format!("doc {i}")
            }
        })
        .collect();
    let slow = |_: usize, body: &Value| answer(body).after(Duration::from_millis(20));
    let flags = ["--concurrency", "8"];

    let reference = Mock::start(slow);
    let expected = dir.join("expected.jsonl");
    ok(&batch(&input, &expected, &reference, &flags)
        .output()
        .unwrap());
    let expected: Vec<Value> = lines(&expected).into_iter().map(stable).collect();
    assert_eq!(expected.len(), 1000);
    let ids: Vec<Value> = expected.iter().map(|l| l["id"].clone()).collect();
    assert_eq!(ids, (0..1000).map(|i| json!(i)).collect::<Vec<_>>());
    assert!(expected
        .iter()
        .all(|l| l["calls"] == 2 && l["tokens"] == 30));
    assert_eq!(reference.seen().len(), 2000);

    let mock = Mock::start(slow);
    let output = dir.join("out.jsonl");
    let journal = dir.join("out.jsonl.journal.sqlite");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("seed {seed}");
    let mut rng = seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut done, mut answered) = (HashSet::new(), HashSet::new());
    let mut mid_run = 0;
    for kill in 0..5 {
        let mut child = batch(&input, &output, &mock, &flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let asked_before = mock.seen().len();
        std::thread::sleep(Duration::from_millis(500 + next() % 1000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let seen = mock.seen();
        // No call this run asked was answered in the journal before it started.
        for s in &seen[asked_before..] {
            let (text, prompt) = key(&s.body);
            assert!(
                !done.contains(&text),
                "kill {kill}: row `{text}` was done, yet asked again"
            );
            assert!(
                !answered.contains(&(text.clone(), prompt.clone())),
                "kill {kill}: `{prompt}` of `{text}` was answered, yet asked again"
            );
        }
        (done, answered) = journaled(&journal, &texts);
        eprintln!(
            "kill {kill}: {} requests, {} rows done, {} calls of rows in flight answered",
            seen.len(),
            done.len(),
            answered.len()
        );
        mid_run += answered.len();
    }
    assert!(
        done.len() < 1000,
        "the kills came after the end; nothing was tested"
    );
    assert!(
        mid_run > 0,
        "no kill left a row with an answered call in flight"
    );
    let asked_before = mock.seen().len();
    ok(&batch(&input, &output, &mock, &flags).output().unwrap());
    for s in &mock.seen()[asked_before..] {
        let (text, prompt) = key(&s.body);
        assert!(
            !done.contains(&text),
            "row `{text}` was done, yet asked again"
        );
        assert!(!answered.contains(&(text.clone(), prompt)));
    }
    let got: Vec<Value> = lines(&output).into_iter().map(stable).collect();
    assert_eq!(got.len(), 1000);
    assert!(
        got == expected,
        "the output differs from the uninterrupted run's"
    );
    // Asked twice: only the calls in flight at a kill (8) and those answered since the
    // journal's last commit (50 ms: at 8 calls per 20 ms, 20 of them).
    let total = mock.seen().len();
    assert!((2000..=2000 + 5 * 28).contains(&total), "{total} requests");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rate_limited_model_still_completes_every_row_under_rpm() {
    let dir = scratch("429");
    let input = dir.join("rows.jsonl");
    std::fs::write(&input, rows(60)).unwrap();
    let mock = Mock::start(|n, body| {
        if n % 5 == 4 {
            MockReply::status(429, &json!({"error": {"message": "slow down"}}).to_string())
                .with_header("retry-after", "0.2")
        } else {
            answer(body)
        }
    });
    let output = dir.join("out.jsonl");
    let args: Vec<std::ffi::OsString> =
        batch(&input, &output, &mock, &["--rpm", "1800", "--retries", "1"])
            .get_args()
            .filter(|a| *a != "--quiet")
            .map(ToOwned::to_owned)
            .collect();
    let out = packc().args(args).output().unwrap();
    ok(&out);
    let got = lines(&output);
    assert_eq!(got.len(), 60);
    assert!(got.iter().all(|l| l.get("output").is_some()), "{got:?}");
    let seen = mock.seen();
    let limited = seen.iter().filter(|s| s.status == 429).count();
    assert!(limited >= 20, "{limited} 429s");
    // The summary counts them.
    assert_contains(
        stderr(&out),
        &format!("; 120 calls, 1800 tokens ({limited} × 429, 0 request(s) retried);"),
    );
    assert_eq!(seen.len() - limited, 120);
    // 1800 a minute is 30 a second: no second holds more than 30 requests.
    for (i, s) in seen.iter().enumerate() {
        let window = seen[i..]
            .iter()
            .take_while(|t| t.at < s.at + Duration::from_secs(1))
            .count();
        assert!(
            window <= 30,
            "{window} requests in the second from {:?}",
            s.at
        );
    }
    let span = (seen.last().unwrap().at - seen[0].at).as_secs_f64();
    assert!(
        seen.len() as f64 / span <= 30.5,
        "{} requests in {span} s",
        seen.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_rows_fail_alone_with_a_clear_error() {
    let (dir, mock, input) = answered("malformed");
    std::fs::write(
        &input,
        "{\"id\": \"a\", \"text\": \"doc a\"}\n{not json\n{\"id\": \"b\", \"title\": \"no text\"}\n\"just a string\"\n{\"text\": \"doc e\"}\n",
    )
    .unwrap();
    let output = dir.join("out.jsonl");
    ok(&batch(&input, &output, &mock, &[]).output().unwrap());
    let got = lines(&output);
    assert_eq!(got.len(), 5);
    assert_eq!(
        got[0]["output"]["summary"],
        "general_doc_extractor read doc a"
    );
    assert_eq!(got[1]["id"], 2);
    assert_eq!(got[1]["error"]["kind"], "invalid_row");
    assert_eq!(got[1]["error"]["where"], "line 2");
    assert!(got[1]["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("the line is not JSON"));
    assert_eq!(got[2]["id"], "b");
    assert_eq!(got[2]["error"]["kind"], "invalid_input");
    assert!(got[2]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("\"text\" is a required property"));
    assert_eq!(got[3]["error"]["kind"], "invalid_input");
    assert_eq!(got[3]["error"]["where"], "/");
    assert_eq!(got[4]["id"], 5);
    assert!(got[4]["output"].is_object());
    assert_eq!(
        mock.seen().len(),
        4,
        "only the two good rows are asked about"
    );

    let csv = dir.join("rows.csv");
    std::fs::write(&csv, "id,text\nx,doc x\ny,doc y,extra\nz,\"doc, z\"\n").unwrap();
    let output = dir.join("csv.jsonl");
    ok(&batch(&csv, &output, &mock, &[]).output().unwrap());
    let got = lines(&output);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0]["id"], "x");
    // The second record, on line 3: its id is its record number, its `where` its line.
    assert_eq!(got[1]["id"], 2);
    assert_eq!(got[1]["error"]["kind"], "invalid_row");
    assert_eq!(got[1]["error"]["where"], "line 3");
    assert_eq!(
        got[2]["output"]["summary"],
        "general_doc_extractor read doc, z"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pack whose one composition runs the prompts `summarize` and `tag` as the two
/// branches `s` and `t` of a parallel step.
const PARALLEL_PACK: &str = r#"id: par
name: Par
version: 1.0.0
template_engine: {version: v1, syntax: "{{variable}}"}
prompts:
  summarize: {id: summarize, name: S, version: 1.0.0, system_template: "Summarize: {{input}}"}
  tag: {id: tag, name: T, version: 1.0.0, system_template: "Tag: {{input}}"}
workflow:
  version: 1
  entry: main
  states:
    main: {orchestration: composition, composition: flow, terminal: true}
compositions:
  flow:
    version: 1
    steps:
      - id: fan
        kind: parallel
        branches:
          - {id: s, kind: prompt, prompt_task: summarize, input: "${input.text}"}
          - {id: t, kind: prompt, prompt_task: tag, input: "${input.text}"}
        reduce: {strategy: barrier, into: both}
"#;

#[test]
fn a_failed_parallel_branch_is_where_the_row_failed() {
    let dir = scratch("parallel-where");
    let pack = dir.join("par.pack.yaml");
    std::fs::write(&pack, PARALLEL_PACK).unwrap();
    let input = dir.join("rows.jsonl");
    std::fs::write(
        &input,
        "{\"id\": \"s-fails\", \"text\": \"fail summarize\"}\n{\"id\": \"t-fails\", \"text\": \"fail tag\"}\n",
    )
    .unwrap();
    // The model fails the calls whose prompt the row's text names.
    let mock = Mock::start(|_, body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let text = body["messages"][1]["content"].as_str().unwrap_or_default();
        let prompt = if system.starts_with("Summarize") {
            "summarize"
        } else {
            "tag"
        };
        if text == format!("fail {prompt}") {
            MockReply::status(500, "boom")
        } else {
            MockReply::text("\"ok\"")
        }
    });
    let output = dir.join("out.jsonl");
    let out = packc()
        .arg("batch")
        .arg(&pack)
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&output)
        .args(["--provider", "openai", "--model", "m", "--base-url"])
        .arg(mock.base_url())
        .args(["--quiet"])
        .output()
        .unwrap();
    // Both rows fail: that is an exit code of 1, the rows' lines written.
    assert_code(&out, 1);
    let got = lines(&output);
    assert_eq!(got.len(), 2, "{got:?}");
    for (line, step) in got.iter().zip(["step s", "step t"]) {
        assert_eq!(line["error"]["kind"], "host_error", "{line}");
        assert_eq!(line["error"]["where"], step, "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_files_are_refused_before_any_call() {
    let (dir, mock, input) = answered("refused");
    std::fs::write(&input, rows(3)).unwrap();

    let out = batch(&dir.join("missing.jsonl"), &dir.join("o.jsonl"), &mock, &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_contains(&err, "missing.jsonl: cannot read it");

    // A folder that cannot be made (a file is in the way) is refused.
    let out = batch(&input, &input.join("o.jsonl"), &mock, &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_contains(&err, "--output");

    // A journal of another input is refused; --fresh starts over.
    let output = dir.join("o.jsonl");
    ok(&batch(&input, &output, &mock, &[]).output().unwrap());
    let asked = mock.seen().len();
    std::fs::write(&input, rows(4)).unwrap();
    let out = batch(&input, &output, &mock, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_contains(&err, "was written for another input");
    assert_contains(&err, "--fresh");
    assert_eq!(mock.seen().len(), asked, "no call before the refusal");
    ok(&batch(&input, &output, &mock, &["--fresh"])
        .output()
        .unwrap());
    assert_eq!(lines(&output).len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_summary_counts_rows_failures_by_kind_and_latency() {
    let (dir, mock, input) = answered("summary");
    std::fs::write(&input, format!("{}{{oops\n{{\"x\": 1}}\n", rows(3))).unwrap();
    let output = dir.join("o.jsonl");
    let cmd = batch(&input, &output, &mock, &[]);
    let args: Vec<_> = cmd
        .get_args()
        .filter(|a| *a != "--quiet")
        .map(ToOwned::to_owned)
        .collect();
    let out = packc().args(args).output().unwrap();
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("5 row(s) in ")
            && err.contains(": 5 ran, 2 failed (invalid_input 1, invalid_row 1)"),
        "{err}"
    );
    assert_contains(&err, "; 6 calls, 90 tokens; row latency p50 ");
    assert_contains(&err, " ms, p99 ");
    // Those rows fail again, whatever is retried.
    assert!(!err.contains("--retry-failed"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--retry-failed` runs again the rows that failed (a model that was down) and leaves the
/// output as an uninterrupted healthy batch writes it.
#[test]
fn retry_failed_runs_the_failed_rows_again() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = scratch("retry-failed");
    let input = dir.join("rows.jsonl");
    std::fs::write(&input, rows(12)).unwrap();
    let down = Arc::new(AtomicBool::new(true));
    let mock = {
        let down = down.clone();
        Mock::start(move |_, body| {
            let text = body["messages"][1]["content"].as_str().unwrap_or_default();
            if down.load(Ordering::SeqCst) && text.ends_with('5') {
                MockReply::status(400, &json!({"error": {"message": "down"}}).to_string())
            } else {
                answer(body)
            }
        })
    };
    let output = dir.join("o.jsonl");
    let loud = |extra: &[&str]| -> Vec<std::ffi::OsString> {
        batch(&input, &output, &mock, extra)
            .get_args()
            .filter(|a| *a != "--quiet")
            .map(ToOwned::to_owned)
            .collect()
    };
    let out = packc().args(loud(&[])).output().unwrap();
    ok(&out);
    assert_contains(
        String::from_utf8_lossy(&out.stderr),
        "; --retry-failed runs the failed rows again",
    );
    let failed: Vec<Value> = lines(&output)
        .into_iter()
        .filter(|l| l.get("error").is_some())
        .map(|l| l["id"].clone())
        .collect();
    assert_eq!(failed, [json!(5)]);

    let out = batch(&input, &output, &mock, &["--retry-failed", "--fresh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_contains(String::from_utf8_lossy(&out.stderr), "--fresh");

    down.store(false, Ordering::SeqCst);
    let out = packc().args(loud(&["--retry-failed"])).output().unwrap();
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_contains(&err, "retrying 1 row(s) that failed earlier");
    assert_contains(&err, ": 1 ran, 0 failed");
    let retried: Vec<Value> = lines(&output).into_iter().map(stable).collect();

    let clean = dir.join("clean.jsonl");
    ok(&batch(&input, &clean, &mock, &[]).output().unwrap());
    let expected: Vec<Value> = lines(&clean).into_iter().map(stable).collect();
    assert_eq!(retried, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A model server that refuses every request stops the batch after 100 host errors in
/// a row (exit 1), not after failing every row; once it answers, `--retry-failed` runs
/// the failed rows and the rest.
#[test]
fn a_dead_server_stops_the_batch_after_host_errors_in_a_row() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = scratch("in-a-row");
    let input = dir.join("rows.jsonl");
    std::fs::write(&input, rows(150)).unwrap();
    let down = Arc::new(AtomicBool::new(true));
    let mock = {
        let down = down.clone();
        Mock::start(move |_, body| {
            if down.load(Ordering::SeqCst) {
                MockReply::status(401, &json!({"error": {"message": "bad key"}}).to_string())
            } else {
                answer(body)
            }
        })
    };
    let output = dir.join("o.jsonl");
    let out = batch(&input, &output, &mock, &["--rows-in-flight", "1"])
        .output()
        .unwrap();
    assert_code(&out, 1);
    let err = stderr(&out);
    assert_contains(
        &err,
        "stopped after 100 rows in a row failed with host_error (--max-failures-in-a-row), \
         the last with: model call `doc_classifier` failed: ",
    );
    assert_contains(&err, "answered 401 (check the API key): bad key");
    assert_contains(
        &err,
        "then run the same command with --retry-failed to run the failed rows again and go \
         on with the rows not started (about 50)",
    );
    assert_eq!(lines(&output).len(), 100);
    // Run again as it was: the 50 rows not started run (and fail), and what failed
    // earlier is said.
    let again = batch(&input, &output, &mock, &["--rows-in-flight", "1"])
        .get_args()
        .filter(|a| *a != "--quiet")
        .map(ToOwned::to_owned)
        .collect::<Vec<_>>();
    let out = packc().args(&again).output().unwrap();
    assert_code(&out, 1);
    let err = stderr(&out);
    assert_contains(
        &err,
        "o.jsonl.journal.sqlite: 100 row(s) done earlier (100 of them failed: --retry-failed runs them again)",
    );
    assert_contains(&err, ", 100 done earlier (100 of them failed);");
    assert_contains(
        &err,
        "error: every row failed (host_error 50); nothing is lost: fix the cause, then run \
         the same command with --retry-failed",
    );
    assert_eq!(lines(&output).len(), 150);

    down.store(false, Ordering::SeqCst);
    let out = batch(&input, &output, &mock, &["--retry-failed"])
        .output()
        .unwrap();
    ok(&out);
    let done = lines(&output);
    assert_eq!(done.len(), 150);
    assert!(done.iter().all(|l| l.get("output").is_some()));
    // `0` turns the stop off: every row runs, and fails.
    down.store(true, Ordering::SeqCst);
    let off = dir.join("off.jsonl");
    let out = batch(&input, &off, &mock, &["--max-failures-in-a-row", "0"])
        .output()
        .unwrap();
    assert_code(&out, 1);
    assert_contains(stderr(&out), "error: every row failed (host_error 150)");
    assert!(lines(&off).iter().all(|l| l.get("error").is_some()));
    assert_eq!(lines(&off).len(), 150);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A limit of 0 (nothing would run, or it would read as no limit) is a usage error,
/// before anything is read or written.
#[test]
fn zero_limits_are_usage_errors() {
    let dir = scratch("zero-limits");
    let out_file = dir.join("out.jsonl");
    for flag in [
        "--concurrency",
        "--tool-concurrency",
        "--max-failures",
        "--rpm",
        "--tpm",
        "--threads",
        "--rows-in-flight",
    ] {
        let out = packc_output!(
            "batch",
            repo().join("examples/rfc0010-ex2.pack.yaml"),
            "--input",
            "/dev/null",
            "--output",
            &out_file,
            "--model",
            "m",
            flag,
            "0"
        );
        assert_code(&out, 2);
        assert_contains(stderr(&out), &format!("invalid value '0' for '{flag}"));
        assert!(!out_file.exists(), "{flag}");
    }
}

/// What the engine refuses is refused before the output and its journal exist, so the
/// next command is not blocked by them: more threads than it starts, and a pack whose
/// model calls have no model to go to.
#[test]
fn a_refused_batch_leaves_no_output_behind() {
    let dir = scratch("refused-clean");
    let input = dir.join("rows.jsonl");
    std::fs::write(&input, rows(2)).unwrap();
    let out_file = dir.join("out.jsonl");
    let journal = dir.join("out.jsonl.journal.sqlite");
    let ex2 = repo().join("examples/rfc0010-ex2.pack.yaml");
    let out = packc_output!(
        "batch",
        &ex2,
        "--input",
        &input,
        "--output",
        &out_file,
        "--threads",
        "1000"
    );
    assert_code(&out, 2);
    assert_contains(stderr(&out), "must be at most 256");
    // No --provider: every row would fail on its first model call.
    let out = packc_output!("batch", &ex2, "--input", &input, "--output", &out_file);
    assert_code(&out, 2);
    assert_contains(
        stderr(&out),
        "step `classify` of composition `analyze_document` calls the model, and no model is bound: pass --provider openai --model NAME",
    );
    assert!(!out_file.exists() && !journal.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An input with no rows is no error, but it is said, under `--quiet` too: a path to
/// the wrong file, or a file not written yet, should not pass for a batch that ran.
#[test]
fn an_input_without_rows_is_warned_about() {
    let (dir, mock, input) = answered("no-rows");
    std::fs::write(&input, "\n\n").unwrap();
    let out = batch(&input, &dir.join("o.jsonl"), &mock, &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rows.jsonl holds no rows"), "{err}");
    assert!(mock.seen().is_empty());
}

/// Two rows with one id make two output lines no reader can tell apart: said at the
/// end, under `--quiet` too, with the first such row. Rows without an `id` are numbered
/// by line and never clash.
#[test]
fn rows_sharing_an_id_are_warned_about() {
    let (dir, mock, input) = answered("repeated-ids");
    std::fs::write(
        &input,
        "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": \"y\"}\n{\"text\": \"z\"}\n\
         {\"id\": \"a\", \"text\": \"w\"}\n{\"id\": \"a\", \"text\": \"v\"}\n",
    )
    .unwrap();
    let out = batch(&input, &dir.join("o.jsonl"), &mock, &[])
        .output()
        .unwrap();
    ok(&out);
    assert_contains(
        stderr(&out),
        "warning: 2 row(s) have the id of an earlier row (the first: row 4, id \"a\")",
    );
    std::fs::write(&input, rows(5)).unwrap();
    let out = batch(&input, &dir.join("p.jsonl"), &mock, &[])
        .output()
        .unwrap();
    ok(&out);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}
