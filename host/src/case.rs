//! The case-file model.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use packc_compiler::load::{self, Limits, Loaded};
use packc_compiler::render::RenderSource;
use packc_vm::driver::ScriptItem;
use serde_json::{Map, Value};

pub use crate::case_format::Problem;
use crate::case_format::{self, Section};

/// A case file that cannot be read or does not have the case shape.
#[derive(Debug, thiserror::Error)]
pub struct CaseError {
    /// The case file.
    pub path: String,
    /// What is wrong, each at its place; at least one.
    pub problems: Vec<Problem>,
}

impl std::fmt::Display for CaseError {
    /// One line per problem: `path:line:column: message` (`path: message` when it has
    /// no place).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match p.line {
                0 => write!(f, "{}: {}", self.path, p.message)?,
                line => write!(f, "{}:{line}:{}: {}", self.path, p.column, p.message)?,
            }
        }
        Ok(())
    }
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
    /// The case file's folder. A `pack_file` (a `.yaml`, `.yml` or `.json` file) is read
    /// only from it, the folder above it, the current folder, or a folder the runner allows (`RunCaseOptions::allow_paths`, `packc test
    /// --allow-path`): a case written by someone else cannot show the reader a file
    /// elsewhere (`/etc/passwd`, `~/.ssh/id_ed25519`) through a diagnostic of its text.
    pub dir: PathBuf,
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
        let err = |problems: Vec<Problem>| CaseError {
            path: path.display().to_string(),
            problems,
        };
        let whole = |message: String| {
            err(vec![Problem {
                line: 0,
                column: 0,
                message,
            }])
        };
        // A case holds a pack and its script: four times the largest pack is room enough.
        let limit = 4 * packc_compiler::load::Limits::default().max_source_bytes as u64;
        let bytes =
            packc_compiler::paths::read_regular(path, limit).map_err(|e| whole(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            whole(format!(
                "not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Case::parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(err)
    }

    /// Parses a case from its text; `dir` is the folder `pack_file` is relative to. Every
    /// member is checked against the case format first (`Err`: each problem located).
    pub fn parse(text: &str, dir: &Path) -> Result<Case, Vec<Problem>> {
        let loaded = load_checked(text, Section::Case)?;
        let v = loaded.value();
        let string = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let pack = match string(v, "pack_file") {
            Some(file) => PackSource::File(dir.join(file)),
            None => PackSource::Inline(loaded.spans.subtree("/pack", v["pack"].clone())),
        };
        let e = &v["expect"];
        let strings = |k: &str| -> Option<Vec<String>> {
            e.get(k).and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
        };
        let expect = Expect {
            compile_error: string(e, "compile_error"),
            at: string(e, "at"),
            warnings: strings("warnings").map(|w| w.into_iter().collect()),
            notes: strings("notes").map(|w| w.into_iter().collect()),
            error: string(e, "error"),
            output: e.get("output").cloned(),
            state: string(e, "state"),
            reply: string(e, "reply"),
            calls: e.get("calls").and_then(Value::as_array).cloned(),
            trace: strings("trace"),
        };
        Ok(Case {
            about: string(v, "about").unwrap_or_default(),
            pack,
            dir: dir.to_path_buf(),
            run: v.get("run").map(read_run),
            expect,
        })
    }
}

impl RunSpec {
    /// Parses a host script (`packc run --host`): a case's `run` member on its own,
    /// checked against the case format as a case's `run` is.
    pub fn parse(text: &str) -> Result<RunSpec, Vec<Problem>> {
        Self::parse_with_turns(text).map(|(spec, _)| spec)
    }

    /// [`RunSpec::parse`], and whether the script gives the caller's turns itself
    /// (`script` or `input`); without either, its `script` is one `null` turn.
    pub fn parse_with_turns(text: &str) -> Result<(RunSpec, bool), Vec<Problem>> {
        read_script(text).map(|(_, spec, turns)| (spec, turns))
    }

    /// [`RunSpec::parse_with_turns`] for a run of `module`: also every answer queue must
    /// be keyed by a name a call of the pack uses ([`crate::queues::unknown_queues`]), or
    /// it is a problem located at its key.
    pub fn parse_for(
        text: &str,
        module: &ir_spec::Module,
    ) -> Result<(RunSpec, bool), Vec<Problem>> {
        let (loaded, spec, turns) = read_script(text)?;
        let mut problems: Vec<Problem> = crate::queues::unknown_queues(&spec, module)
            .into_iter()
            .map(|q| {
                let ptr = format!("/host/{}/{}", q.section, case_format::escape(&q.name));
                case_format::problem_at(text, &loaded.spans, &ptr, q.message)
            })
            .collect();
        problems.sort_by_key(|p| (p.line, p.column));
        if problems.is_empty() {
            Ok((spec, turns))
        } else {
            Err(problems)
        }
    }
}

/// A host script's document, its spec, and whether it gives the caller's turns itself
/// (`script` or `input`).
fn read_script(text: &str) -> Result<(Loaded, RunSpec, bool), Vec<Problem>> {
    let loaded = load_checked(text, Section::Run)?;
    let run = loaded.value();
    let turns = run.get("script").is_some() || run.get("input").is_some();
    let spec = read_run(run);
    Ok((loaded, spec, turns))
}

/// Loads `text` and checks it has the shape of `root`.
fn load_checked(text: &str, root: Section) -> Result<Loaded, Vec<Problem>> {
    let loaded = load::load_str(text, &Limits::default()).map_err(|d| {
        let src = RenderSource {
            name: "",
            text,
            spans: None,
        };
        let (line, column) = src.position(&d).unwrap_or((1, 1));
        let help = d.help.map(|h| format!(" ({h})")).unwrap_or_default();
        vec![Problem {
            line,
            column,
            message: format!("{}{help}", d.message),
        }]
    })?;
    if root == Section::Case && looks_like_a_pack(loaded.value()) {
        return Err(vec![Problem {
            line: 1,
            column: 1,
            message: "this is a pack, not a case: a case file names its pack with \
                      `pack_file: PATH` (relative to the case file) or holds it under `pack:`, \
                      and says what to expect under `expect:` (docs/authoring.md §5 lists \
                      the case format's members)"
                .into(),
        }]);
    }
    let problems = case_format::check(text, loaded.value(), &loaded.spans, root);
    if problems.is_empty() {
        Ok(loaded)
    } else {
        Err(problems)
    }
}

/// A document with a pack's own members (`prompts`, `workflow`, `compositions`) and none
/// of a case's (`pack`, `pack_file`, `expect`): a pack handed to `packc test`.
fn looks_like_a_pack(v: &Value) -> bool {
    let has = |k: &str| v.get(k).is_some();
    (has("prompts") || has("workflow") || has("compositions"))
        && !(has("pack") || has("pack_file") || has("expect"))
}

/// Reads a `run` member whose shape was checked.
fn read_run(run: &Value) -> RunSpec {
    let target = run
        .get("target")
        .and_then(Value::as_str)
        .unwrap_or("workflow")
        .to_owned();
    let script = match (run.get("script"), run.get("input")) {
        (Some(s), _) => s
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| match (item.get("turn"), item.get("event")) {
                (Some(t), _) => Some(ScriptItem::Turn(t.clone())),
                (None, Some(Value::String(e))) => Some(ScriptItem::Event(e.clone())),
                _ => None,
            })
            .collect(),
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
    RunSpec {
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
    }
}
