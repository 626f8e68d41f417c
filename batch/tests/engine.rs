//! The engine against a loopback mock model: RFC 0010 example 2 over blocks of rows.

use std::path::Path;
use std::sync::Arc;

use packc_batch::mock::{Mock, MockReply};
use packc_batch::{BatchOptions, Engine, Identity, Input, InputFormat, Journal, Resume, Sink};
use packc_host::live::{LiveConfig, ModelEndpoint};
use packc_vm::{Program, Target};
use serde_json::{json, Value};

fn ex2() -> Arc<Program> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let path = dir.join("rfc0010-ex2.pack.yaml");
    let options = packc_compiler::Options {
        base_dir: Some(dir),
        ..Default::default()
    };
    let bytes = std::fs::read(&path).unwrap();
    let checked = packc_compiler::check_file_bytes(&path, &bytes, &options);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    Arc::new(Program::new(packc_compiler::lower(&checked, &options).unwrap()).unwrap())
}

/// The mock's answer to an ex2 request: the classifier says "general" (or
/// "research_paper" for a text that starts with "paper"), the extractor summarises.
fn answer(body: &Value) -> MockReply {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    let text = body["messages"][1]["content"].as_str().unwrap_or_default();
    if system.starts_with("Classify") {
        let kind = if text.starts_with("paper") {
            "research_paper"
        } else {
            "general"
        };
        MockReply::text(&json!({"type": kind, "confidence": 0.9}).to_string())
    } else {
        MockReply::text(&json!({"summary": format!("about {text}")}).to_string())
    }
}

fn live(mock: &Mock) -> LiveConfig {
    LiveConfig {
        model: Some(ModelEndpoint {
            base_url: mock.base_url(),
            model: "m".into(),
            api_key: None,
        }),
        ..LiveConfig::default()
    }
}

fn schema() -> Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/schemas/document.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_block_of_rows_gives_one_result_each_in_order() {
    let mock = Mock::start(|_, body| answer(body));
    let program = ex2();
    let target = Target::parse(program.module(), "workflow").unwrap();
    let options = BatchOptions {
        concurrency: 8,
        input_schema: Some(schema()),
        ..BatchOptions::default()
    };
    let engine = Engine::new(program, target, live(&mock), options).unwrap();
    let mut rows: Vec<Value> = (0..40)
        .map(|i| json!({"id": format!("r{i}"), "text": format!("doc {i}")}))
        .collect();
    rows[3] = json!({"id": "bad", "title": "no text"});
    rows[5] = json!({"text": "paper five"});
    let results = engine.run_values(rows).unwrap();
    assert_eq!(results.len(), 40);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        match i {
            3 => {
                let e = r.outcome.as_ref().unwrap_err();
                assert_eq!(
                    (e.kind.as_str(), e.at.as_deref()),
                    ("invalid_input", Some("/"))
                );
                assert!(
                    e.message.contains("\"text\" is a required property"),
                    "{}",
                    e.message
                );
                assert_eq!((r.id.clone(), r.calls), (json!("bad"), 0));
            }
            5 => {
                assert_eq!(r.id, json!(6), "no id member: the position from 1");
                assert_eq!(r.outcome, Ok(json!({"summary": "about paper five"})));
            }
            _ => {
                assert_eq!(r.id, json!(format!("r{i}")));
                assert_eq!(r.outcome, Ok(json!({"summary": format!("about doc {i}")})));
                assert_eq!((r.calls, r.tokens), (2, 30));
            }
        }
    }
    // Two requests per good row, none for the row that failed its schema.
    assert_eq!(mock.seen().len(), 39 * 2);
    let line: Value = serde_json::from_str(&results[3].line()).unwrap();
    assert_eq!(line["error"]["kind"], "invalid_input");
    assert_eq!(line["calls"], 0);
}

#[test]
fn a_failed_call_fails_its_row_only() {
    let mock = Mock::start(|_, body| {
        let text = body["messages"][1]["content"].as_str().unwrap_or_default();
        if text == "doc 2" {
            MockReply::status(
                400,
                &json!({"error": {"message": "bad request"}}).to_string(),
            )
        } else {
            answer(body)
        }
    });
    let program = ex2();
    let target = Target::parse(program.module(), "workflow").unwrap();
    let engine = Engine::new(program, target, live(&mock), BatchOptions::default()).unwrap();
    let rows = (0..4)
        .map(|i| json!({"text": format!("doc {i}")}))
        .collect();
    let results = engine.run_values(rows).unwrap();
    let e = results[2].outcome.as_ref().unwrap_err();
    assert_eq!(e.kind, "host_error");
    assert!(
        e.message.contains("answered 400: bad request"),
        "{}",
        e.message
    );
    assert_eq!(e.at.as_deref(), Some("step classify"));
    assert!(results
        .iter()
        .enumerate()
        .all(|(i, r)| i == 2 || r.outcome.is_ok()));
}

#[test]
fn a_journal_skips_finished_rows_and_refuses_another_input() {
    let mock = Mock::start(|_, body| answer(body));
    let program = ex2();
    let target = Target::parse(program.module(), "workflow").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("out.jsonl");
    let text: String = (0..20)
        .map(|i| format!("{{\"text\": \"doc {i}\"}}\n"))
        .collect();
    let input = Input::from_bytes(text.clone().into_bytes(), InputFormat::Jsonl);
    let identity = Identity {
        module: program.fingerprint(),
        target: "workflow".into(),
        input_sha256: input.sha256.clone(),
        ordered: true,
        model: "m".into(),
    };
    let engine = Engine::new(program, target, live(&mock), BatchOptions::default()).unwrap();
    let mut journal = Journal::open(&out, &identity, true).unwrap();
    let summary = engine.run(input.rows, &mut journal).unwrap();
    assert_eq!((summary.rows, summary.ran, summary.failed()), (20, 20, 0));
    drop(journal);
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<Value> = lines.iter().map(|l| l["id"].clone()).collect();
    assert_eq!(ids, (1..=20).map(|i| json!(i)).collect::<Vec<_>>());

    // Again: every row is skipped, nothing is asked, the output stays as it was.
    let asked = mock.seen().len();
    let mut again = Journal::open(&out, &identity, false).unwrap();
    assert_eq!(again.resume(0), Resume::Skip);
    let input = Input::from_bytes(text.clone().into_bytes(), InputFormat::Jsonl);
    let summary = engine.run(input.rows, &mut again).unwrap();
    assert_eq!((summary.skipped, summary.ran), (20, 0));
    assert_eq!(mock.seen().len(), asked);
    drop(again);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 20);

    let other = Identity {
        input_sha256: "0".repeat(64),
        ..identity.clone()
    };
    let e = Journal::open(&out, &other, false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("was written for another input"), "{e}");
    assert!(e.contains("--fresh"), "{e}");
    let e = Journal::open(
        &out,
        &Identity {
            target: "composition:analyze_document".into(),
            ..identity.clone()
        },
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("target `workflow`"), "{e}");
    let e = Journal::open(
        &out,
        &Identity {
            model: "another".into(),
            ..identity.clone()
        },
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("model `m`, not `another`"), "{e}");
}

#[test]
fn more_threads_than_the_engine_starts_are_refused_before_any_start() {
    let mock = Mock::start(|_, body| answer(body));
    let program = ex2();
    let target = Target::parse(program.module(), "workflow").unwrap();
    let options = BatchOptions {
        threads: packc_batch::MAX_THREADS + 1,
        ..BatchOptions::default()
    };
    let Err(e) = Engine::new(program.clone(), target, live(&mock), options) else {
        panic!(
            "an engine of {} threads was started",
            packc_batch::MAX_THREADS + 1
        );
    };
    assert!(e.to_string().contains("threads is 257"), "{e}");
    let options = BatchOptions {
        threads: packc_batch::MAX_THREADS,
        ..BatchOptions::default()
    };
    assert!(Engine::new(program, target, live(&mock), options).is_ok());
}

#[test]
fn a_rate_limit_of_zero_is_refused_rather_than_read_as_none() {
    let mock = Mock::start(|_, body| answer(body));
    let program = ex2();
    let target = Target::parse(program.module(), "workflow").unwrap();
    for options in [
        BatchOptions {
            rpm: Some(0),
            ..BatchOptions::default()
        },
        BatchOptions {
            tpm: Some(0),
            ..BatchOptions::default()
        },
    ] {
        let Err(e) = Engine::new(program.clone(), target, live(&mock), options) else {
            panic!("a rate limit of 0 was taken");
        };
        assert!(e.to_string().contains("must be at least 1"), "{e}");
    }
}

/// A journaled batch of example 2 over the rows `doc 0`, `doc 1`, … against a mock: the
/// engine, the journal's identity (output in input order or not) and its output file in a
/// folder of its own.
struct Journaled {
    engine: Engine,
    text: String,
    identity: Identity,
    out: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Journaled {
    fn new(mock: &Mock, rows: usize, ordered: bool) -> Journaled {
        let program = ex2();
        let target = Target::parse(program.module(), "workflow").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..rows)
            .map(|i| format!("{{\"text\": \"doc {i}\"}}\n"))
            .collect();
        let identity = Identity {
            module: program.fingerprint(),
            target: "workflow".into(),
            input_sha256: Input::from_bytes(text.clone().into_bytes(), InputFormat::Jsonl).sha256,
            ordered,
            model: "m".into(),
        };
        Journaled {
            engine: Engine::new(program, target, live(mock), BatchOptions::default()).unwrap(),
            text,
            identity,
            out: dir.path().join("out.jsonl"),
            _dir: dir,
        }
    }

    /// The rows, read again.
    fn input(&self) -> Input {
        Input::from_bytes(self.text.clone().into_bytes(), InputFormat::Jsonl)
    }

    fn open(&self, fresh: bool) -> Result<Journal, packc_batch::BatchError> {
        Journal::open(&self.out, &self.identity, fresh)
    }
}

/// The failed rows of a journal run again after `retry_failed`, each new line in its
/// place (ordered) or after the kept ones (unordered); the kept lines are not asked again
/// and come back byte for byte.
#[test]
fn retry_failed_runs_the_failed_rows_again_and_rewrites_the_output() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for ordered in [true, false] {
        let healthy = Arc::new(AtomicBool::new(false));
        let mock = {
            let healthy = healthy.clone();
            Mock::start(move |_, body| {
                let text = body["messages"][1]["content"].as_str().unwrap_or_default();
                if !healthy.load(Ordering::SeqCst) && (text == "doc 2" || text == "doc 5") {
                    MockReply::status(400, &json!({"error": {"message": "down"}}).to_string())
                } else {
                    answer(body)
                }
            })
        };
        let batch = Journaled::new(&mock, 8, ordered);
        let (engine, out, input) = (&batch.engine, &batch.out, || batch.input());
        let lines = || -> Vec<String> {
            let text = std::fs::read_to_string(out).unwrap();
            text.lines().map(str::to_owned).collect()
        };
        let by_id = |lines: &[String]| -> Vec<(i64, bool)> {
            let mut rows: Vec<(i64, bool)> = lines
                .iter()
                .map(|l| {
                    let v: Value = serde_json::from_str(l).unwrap();
                    (v["id"].as_i64().unwrap(), v.get("error").is_some())
                })
                .collect();
            rows.sort();
            rows
        };

        let mut journal = batch.open(true).unwrap();
        let summary = engine.run(input().rows, &mut journal).unwrap();
        assert_eq!((summary.ran, summary.failed()), (8, 2));
        drop(journal);
        let first = lines();
        let failed: Vec<i64> = by_id(&first)
            .into_iter()
            .filter_map(|(id, failed)| failed.then_some(id))
            .collect();
        assert_eq!(failed, [3, 6], "ordered: {ordered}");

        // Nothing is retried while the same rows are asked for again; a journal with no
        // failed row is left as it is.
        healthy.store(true, Ordering::SeqCst);
        let asked = mock.seen().len();
        let mut journal = batch.open(false).unwrap();
        assert_eq!(journal.retry_failed().unwrap(), 2);
        let summary = engine.run(input().rows, &mut journal).unwrap();
        assert_eq!((summary.ran, summary.skipped, summary.failed()), (2, 6, 0));
        drop(journal);
        // Two rows of two model calls each.
        assert_eq!(mock.seen().len(), asked + 4);
        let second = lines();
        assert_eq!(
            by_id(&second),
            (1..=8).map(|id| (id, false)).collect::<Vec<_>>()
        );
        let kept: Vec<&String> = first.iter().filter(|l| !l.contains("\"error\"")).collect();
        if ordered {
            let ids: Vec<i64> = second
                .iter()
                .map(|l| {
                    serde_json::from_str::<Value>(l).unwrap()["id"]
                        .as_i64()
                        .unwrap()
                })
                .collect();
            assert_eq!(ids, (1..=8).collect::<Vec<_>>());
        } else {
            // The kept lines first, in input order, then the retried rows as they finished.
            let mut kept_in_order = kept.clone();
            kept_in_order.sort_by_key(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_i64());
            assert_eq!(second[..6].iter().collect::<Vec<_>>(), kept_in_order);
        }
        for line in &kept {
            assert!(second.contains(line), "{line} is kept as it was");
        }

        let mut journal = batch.open(false).unwrap();
        assert_eq!(journal.retry_failed().unwrap(), 0);
        let summary = engine.run(input().rows, &mut journal).unwrap();
        assert_eq!((summary.ran, summary.skipped), (0, 8));
        drop(journal);
        assert_eq!(lines(), second);
    }
}

/// One batch at a time on an output: a second journal on it is refused while the first is
/// open, `--fresh` included, and taken once it is closed. An output deleted by hand is
/// rewritten from the journal, which holds every finished line.
#[test]
fn a_journal_is_held_by_one_batch_and_rebuilds_a_lost_output() {
    let mock = Mock::start(|_, body| answer(body));
    let batch = Journaled::new(&mock, 6, true);
    let (engine, out, input) = (&batch.engine, &batch.out, || batch.input());
    let mut first = batch.open(false).unwrap();
    for fresh in [false, true] {
        let e = batch.open(fresh).err().unwrap().to_string();
        assert!(e.contains("another packc batch is writing"), "{e}");
    }
    // The same output named through a symbolic link has the same journal, so it is
    // refused too.
    #[cfg(unix)]
    {
        let link = out.with_file_name("link.jsonl");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(out, &link).unwrap();
        let e = Journal::open(&link, &batch.identity, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("another packc batch is writing"), "{e}");
        std::fs::remove_file(&link).unwrap();
    }
    engine.run(input().rows, &mut first).unwrap();
    drop(first);
    let written = std::fs::read_to_string(out).unwrap();
    assert_eq!(written.lines().count(), 6);

    // Text past what the journal records is cut off, and the journal says how much.
    std::fs::write(out, format!("{written}{{\"id\":\"junk\"}}\n")).unwrap();
    let again = batch.open(false).unwrap();
    assert_eq!(again.cut(), 14);
    assert!(!again.rebuilt());
    drop(again);
    assert_eq!(std::fs::read_to_string(out).unwrap(), written);

    for cut in [0, written.len() / 2] {
        std::fs::write(out, &written[..cut]).unwrap();
        let mut again = batch.open(false).unwrap();
        assert!(again.rebuilt());
        let asked = mock.seen().len();
        let summary = engine.run(input().rows, &mut again).unwrap();
        assert_eq!((summary.ran, summary.skipped), (0, 6));
        assert_eq!(mock.seen().len(), asked);
        drop(again);
        assert_eq!(std::fs::read_to_string(out).unwrap(), written);
    }
    let again = batch.open(false).unwrap();
    assert!(!again.rebuilt());
}

/// Rows run one at a time through `engine.run`; what they gave and how the batch ended.
fn one_at_a_time(
    mock: &Mock,
    rows: Vec<Value>,
    in_a_row: Option<u64>,
) -> (Vec<packc_batch::RowResult>, packc_batch::Summary) {
    let program = ex2();
    let target = Target::parse(program.module(), "workflow").unwrap();
    let options = BatchOptions {
        concurrency: 1,
        rows_in_flight: 1,
        max_failures_in_a_row: in_a_row,
        input_schema: Some(schema()),
        ..BatchOptions::default()
    };
    let engine = Engine::new(program, target, live(mock), options).unwrap();
    let rows = rows
        .into_iter()
        .enumerate()
        .map(|(i, v)| packc_batch::Row::new(i as u64, i as u64 + 1, v));
    let mut sink = packc_batch::Collect::default();
    let summary = engine.run(rows, &mut sink).unwrap();
    (sink.0, summary)
}

/// A model server that refuses every request stops the batch after the given number of
/// host errors in a row, rather than failing every row of the input; rows that fail for
/// their own sake neither count nor break the run of host errors.
#[test]
fn host_errors_in_a_row_stop_the_batch() {
    let refused = Mock::start(|_, _| {
        MockReply::status(401, &json!({"error": {"message": "bad key"}}).to_string())
    });
    let mut rows: Vec<Value> = (0..50)
        .map(|i| json!({"text": format!("doc {i}")}))
        .collect();
    rows[2] = json!({"title": "no text"});
    let (results, summary) = one_at_a_time(&refused, rows.clone(), Some(5));
    // Five host errors and the invalid row between them.
    assert_eq!(results.len(), 6);
    assert_eq!(summary.failures.get("invalid_input"), Some(&1));
    assert_eq!(summary.failures.get("host_error"), Some(&5));
    match &summary.stopped {
        Some(packc_batch::Stop::FailedInARow { rows, last }) => {
            assert_eq!(*rows, 5);
            assert!(
                last.ends_with("answered 401 (check the API key): bad key"),
                "{last}"
            );
        }
        other => panic!("{other:?}"),
    }
    let text = summary.stopped.as_ref().unwrap().to_string();
    assert!(
        text.starts_with("stopped after 5 rows in a row failed with host_error"),
        "{text}"
    );
    // Without the limit every row runs, and fails.
    let (results, summary) = one_at_a_time(&refused, rows, None);
    assert_eq!((results.len(), summary.stopped), (50, None));
}

/// A row that finishes starts the count again: a server failing every other row does
/// not stop the batch.
#[test]
fn a_finished_row_starts_the_count_of_host_errors_again() {
    let flaky = Mock::start(|_, body| {
        let text = body["messages"][1]["content"].as_str().unwrap_or_default();
        let n: u32 = text.trim_start_matches("doc ").parse().unwrap_or(0);
        if n % 2 == 1 {
            MockReply::status(400, &json!({"error": {"message": "odd"}}).to_string())
        } else {
            answer(body)
        }
    });
    let rows: Vec<Value> = (0..20)
        .map(|i| json!({"text": format!("doc {i}")}))
        .collect();
    let (results, summary) = one_at_a_time(&flaky, rows, Some(2));
    assert_eq!(results.len(), 20);
    assert_eq!(summary.stopped, None);
    assert_eq!(summary.failures.get("host_error"), Some(&10));
}
