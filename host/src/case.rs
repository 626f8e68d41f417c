//! The case-file model.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use packc_compiler::load::{self, Limits, Loaded};
use packc_vm::driver::ScriptItem;
use serde_json::{Map, Value};

/// A case file that cannot be read or does not have the case shape.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct CaseError {
    /// The case file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Where the pack of a case comes from.
#[derive(Debug)]
pub enum PackSource {
    /// `pack:` inline; the document keeps its spans (pointers under `/pack` rebased).
    Inline(Loaded),
    /// `pack_file:` resolved against the case file's folder.
    File(PathBuf),
}

/// One `*.case.yaml`.
#[derive(Debug)]
pub struct Case {
    /// `about`.
    pub about: String,
    /// `pack` / `pack_file`.
    pub pack: PackSource,
    /// `run`; `None` for a compile-only case.
    pub run: Option<RunSpec>,
    /// `expect`.
    pub expect: Expect,
}

/// A case's `run`.
#[derive(Debug, Clone, Default)]
pub struct RunSpec {
    /// `target` (default `workflow`).
    pub target: String,
    /// `script`, or `[turn: input]` for `input`, or one `null` turn for neither.
    pub script: Vec<ScriptItem>,
    /// `host.prompts`: answers keyed by `prompt_task`.
    pub prompts: BTreeMap<String, VecDeque<Value>>,
    /// `host.tools`: answers keyed by tool key.
    pub tools: BTreeMap<String, VecDeque<Value>>,
    /// `host.guards`: host validators' answers (`{output: {pass: bool}}`) keyed by
    /// validator type.
    pub guards: BTreeMap<String, VecDeque<Value>>,
    /// `host.extensions`: extension steps' answers keyed by step kind (`vendor.name`).
    pub extensions: BTreeMap<String, VecDeque<Value>>,
    /// `host.clock` (default `[0]`).
    pub clock: Vec<u64>,
    /// `host.variables`.
    pub variables: Map<String, Value>,
}

/// A case's `expect`.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// `compile_error`.
    pub compile_error: Option<String>,
    /// `at`.
    pub at: Option<String>,
    /// `warnings`; `None` = not compared.
    pub warnings: Option<BTreeSet<String>>,
    /// `notes`; `None` = not compared. Notes never count as warnings.
    pub notes: Option<BTreeSet<String>>,
    /// `error`: a runtime error kind.
    pub error: Option<String>,
    /// `output` (`Some(Value::Null)` for an explicit `output: null`).
    pub output: Option<Value>,
    /// `state`.
    pub state: Option<String>,
    /// `reply`: the last turn's reply (RFC 0014 reply assembly); `None` = not compared.
    pub reply: Option<String>,
    /// `calls`.
    pub calls: Option<Vec<Value>>,
    /// `trace`.
    pub trace: Option<Vec<String>>,
}

impl Case {
    /// Reads and parses a case file.
    pub fn read(path: &Path) -> Result<Case, CaseError> {
        let err = |message: String| CaseError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        Case::parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(err)
    }

    /// Parses a case from its text; `dir` is the folder `pack_file` is relative to.
    pub fn parse(text: &str, dir: &Path) -> Result<Case, String> {
        let loaded = load::load_str(text, &Limits::default()).map_err(|d| d.message)?;
        let v = &loaded.value;
        let about = v
            .get("about")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let pack = if let Some(file) = v.get("pack_file").and_then(Value::as_str) {
            PackSource::File(dir.join(file))
        } else {
            let pack = v
                .get("pack")
                .ok_or("case has neither `pack` nor `pack_file`")?;
            PackSource::Inline(loaded.spans.subtree("/pack", pack.clone()))
        };
        let run = v.get("run").map(parse_run).transpose()?;
        let e = v.get("expect").ok_or("case has no `expect`")?;
        let string = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        let expect = Expect {
            compile_error: string("compile_error"),
            at: string("at"),
            warnings: e.get("warnings").and_then(Value::as_array).map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
            notes: e.get("notes").and_then(Value::as_array).map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
            error: string("error"),
            output: e.get("output").cloned(),
            state: string("state"),
            reply: string("reply"),
            calls: e.get("calls").and_then(Value::as_array).cloned(),
            trace: e.get("trace").and_then(Value::as_array).map(|t| {
                t.iter()
                    .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_owned))
                    .collect()
            }),
        };
        Ok(Case {
            about,
            pack,
            run,
            expect,
        })
    }
}

fn parse_run(run: &Value) -> Result<RunSpec, String> {
    let target = run
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or("workflow")
        .to_owned();
    let script = match (run.get("script"), run.get("input")) {
        (Some(s), _) => s
            .as_array()
            .ok_or("`run.script` is not a list")?
            .iter()
            .map(|item| {
                if let Some(t) = item.get("turn") {
                    Ok(ScriptItem::Turn(t.clone()))
                } else if let Some(e) = item.get("event").and_then(Value::as_str) {
                    Ok(ScriptItem::Event(e.to_owned()))
                } else {
                    Err(format!("script item {item} is neither `turn` nor `event`"))
                }
            })
            .collect::<Result<_, _>>()?,
        (None, Some(input)) => vec![ScriptItem::Turn(input.clone())],
        (None, None) => vec![ScriptItem::Turn(Value::Null)],
    };
    let host = run.get("host");
    let queues = |k: &str| -> BTreeMap<String, VecDeque<Value>> {
        host.and_then(|h| h.get(k))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(name, answers)| {
                        let q = answers.as_array().cloned().unwrap_or_default();
                        (name.clone(), q.into())
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let clock = host
        .and_then(|h| h.get("clock"))
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    Ok(RunSpec {
        target,
        script,
        prompts: queues("prompts"),
        tools: queues("tools"),
        guards: queues("guards"),
        extensions: queues("extensions"),
        clock,
        variables: host
            .and_then(|h| h.get("variables"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    })
}
