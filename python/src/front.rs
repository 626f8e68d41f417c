//! The front end: `check`, `compile`, `Diagnostic` and `Artifact`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use packc_compiler::diag::{DiagKind, Diagnostic as Diag};
use packc_compiler::render::{self, RenderSource};
use packc_compiler::{check_bytes, Checked, Options};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};

use crate::errors;

/// Registers the front end's classes and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Diagnostic>()?;
    m.add_class::<Artifact>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    Ok(())
}

/// One compiler finding, located in the source.
///
/// `kind` is the stable name of the conformance suite (`duplicate_step_id`, …),
/// `severity` `"error"`, `"warning"` or `"note"`, `pointer` the JSON pointer of the node blamed,
/// `line` and `column` 1-based (`None` when the finding points nowhere in particular).
#[pyclass(frozen, eq, hash, module = "packc", get_all)]
#[derive(PartialEq, Eq, Hash)]
pub struct Diagnostic {
    kind: String,
    severity: String,
    message: String,
    file: String,
    line: Option<usize>,
    column: Option<usize>,
    pointer: Option<String>,
    help: Option<String>,
}

/// A [`Diagnostic`]'s constructor arguments, in order.
type DiagnosticFields = (
    String,
    String,
    String,
    String,
    Option<usize>,
    Option<usize>,
    Option<String>,
    Option<String>,
);

#[pymethods]
impl Diagnostic {
    /// A finding as `check` reports it; built by `check` and `compile`, and by `pickle`.
    #[new]
    #[pyo3(signature = (kind, severity, message, file, line=None, column=None, pointer=None, help=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kind: String,
        severity: String,
        message: String,
        file: String,
        line: Option<usize>,
        column: Option<usize>,
        pointer: Option<String>,
        help: Option<String>,
    ) -> Diagnostic {
        Diagnostic {
            kind,
            severity,
            message,
            file,
            line,
            column,
            pointer,
            help,
        }
    }

    /// Pickled as its fields (a process pool or Ray sends a `CompileError` back whole).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, DiagnosticFields) {
        let d = slf.get();
        let fields = (
            d.kind.clone(),
            d.severity.clone(),
            d.message.clone(),
            d.file.clone(),
            d.line,
            d.column,
            d.pointer.clone(),
            d.help.clone(),
        );
        (slf.get_type(), fields)
    }

    fn __repr__(&self) -> String {
        let at = match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            _ => self.file.clone(),
        };
        format!(
            "<Diagnostic {} {} at {at}: {}>",
            self.severity, self.kind, self.message
        )
    }

    fn __str__(&self) -> String {
        let at = match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            _ => self.file.clone(),
        };
        format!("{at}: {}[{}]: {}", self.severity, self.kind, self.message)
    }
}

/// A pack source: its display name, bytes, the file it was read from, and how to read it.
struct Source {
    name: String,
    bytes: Vec<u8>,
    /// The file, when it came from one: its name says how `packc` reads it, and its
    /// folder is where its schema files are read from.
    path: Option<PathBuf>,
    /// `format=`, or `None` to read by the file's name, as `packc` reads a file (`*.json`
    /// is strict JSON; text is YAML 1.2).
    format: Option<Format>,
    /// Where the pack's `output_schema` files are read from: `base_dir=`, else the file's
    /// folder; `None` (text without `base_dir=`): they are not looked up.
    base: Option<PathBuf>,
}

/// How `format=` says to read a source.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `"json"`: strict JSON.
    Json,
    /// `"yaml"`: YAML 1.2.
    Yaml,
}

/// Reads the source `check` and `compile` were given (a path, or `text=`).
fn source(
    path: Option<PathBuf>,
    text: Option<String>,
    format: Option<&str>,
    base_dir: Option<PathBuf>,
) -> PyResult<Source> {
    let format = match format {
        None => None,
        Some("yaml") => Some(Format::Yaml),
        Some("json") => Some(Format::Json),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "format={other:?}: expected \"yaml\" or \"json\""
            )))
        }
    };
    match (path, text) {
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "give either a path or text=..., not both",
        )),
        (None, None) => Err(PyValueError::new_err("give a path or text=...")),
        (Some(path), None) => {
            let bytes = std::fs::read(&path).map_err(|e| crate::errors::os_error(&e, &path))?;
            let base =
                base_dir.or_else(|| Some(path.parent().map(Path::to_path_buf).unwrap_or_default()));
            Ok(Source {
                name: path.display().to_string(),
                bytes,
                path: Some(path),
                format,
                base,
            })
        }
        (None, Some(text)) => Ok(Source {
            name: "<text>".into(),
            bytes: text.into_bytes(),
            path: None,
            format,
            base: base_dir,
        }),
    }
}

/// `spec_level`: `None` reads the pack's `$schema` claim; otherwise a level (`"1.5"`,
/// `"1.5.1"`, `"1.8"`, `"1.9"`, or a version such as `"v1.7"` that names its level)
/// overriding the claim, as `packc check --spec-level`.
fn spec_level(level: Option<&str>) -> PyResult<Option<ir_spec::SpecLevel>> {
    level
        .map(|text| {
            ir_spec::SpecLevel::parse(text.strip_prefix('v').unwrap_or(text)).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "spec_level={text:?} is not a spec level: use \"1.5\", \"1.5.1\", \"1.8\" or \"1.9\""
                ))
            })
        })
        .transpose()
}

fn options(src: &Source, spec_level: Option<ir_spec::SpecLevel>) -> Options {
    Options {
        base_dir: src.base.clone(),
        spec_level,
        ..Options::default()
    }
}

/// Checks a source as `packc check` reads a file (see [`Source::format`]).
fn check_source(src: &Source, level: Option<ir_spec::SpecLevel>) -> Checked {
    if let Some(refused) = json_refusal(src) {
        return refused;
    }
    let options = options(src, level);
    match read_by_name(src) {
        Some(path) => packc_compiler::check_file_bytes(path, &src.bytes, &options),
        None => check_bytes(&src.bytes, &options),
    }
}

/// Checks and lowers a source as `packc build` reads a file: a JSON pack is parsed once.
fn build_source(src: &Source, level: Option<ir_spec::SpecLevel>) -> Built {
    if let Some(refused) = json_refusal(src) {
        return Ok((refused, None));
    }
    let options = options(src, level);
    match read_by_name(src) {
        Some(path) => packc_compiler::build_file_bytes(path, &src.bytes, &options),
        None => packc_compiler::build_artifact(&src.bytes, &options),
    }
}

/// The file whose name says how to read the source: its path, when `format=` was left
/// out.
fn read_by_name(src: &Source) -> Option<&Path> {
    src.path.as_deref().filter(|_| src.format.is_none())
}

/// What [`build_source`] gives: the check, and the artifact when it found no error.
type Built = Result<(Checked, Option<ir_spec::Artifact>), packc_compiler::lower::LowerError>;

/// With `format="json"`, the located `parse_error` of a source that is not strict JSON.
fn json_refusal(src: &Source) -> Option<Checked> {
    if src.format != Some(Format::Json) {
        return None;
    }
    let e = serde_json::from_slice::<serde_json::Value>(&src.bytes).err()?;
    let offset = offset_of(&src.bytes, e.line(), e.column());
    let d = Diag::new(DiagKind::ParseError, format!("not valid JSON: {e}"))
        .at_span(offset..offset)
        .help("format=\"json\" takes strict JSON; leave it out to read YAML 1.2");
    Some(Checked {
        loaded: None,
        diagnostics: vec![d],
    })
}

/// The byte offset of a 1-based line and column.
fn offset_of(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match bytes[start..].iter().position(|b| *b == b'\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(bytes.len())
}

/// The diagnostics of a checked source as `Diagnostic` objects.
fn diagnostics(py: Python<'_>, src: &Source, checked: &Checked) -> PyResult<Vec<Py<Diagnostic>>> {
    let text = String::from_utf8_lossy(&src.bytes);
    let rs = RenderSource {
        name: &src.name,
        text: &text,
        spans: checked.loaded.as_ref().map(|l| &l.spans),
    };
    rs.in_source_order(&checked.diagnostics)
        .into_iter()
        .map(|d| {
            let pos = rs.position(d);
            Py::new(
                py,
                Diagnostic {
                    kind: d.kind.as_str().to_owned(),
                    severity: d.severity.as_str().to_owned(),
                    message: d.message.clone(),
                    file: src.name.clone(),
                    line: pos.map(|p| p.0),
                    column: pos.map(|p| p.1),
                    pointer: d.pointer().map(str::to_owned),
                    help: d.help.clone(),
                },
            )
        })
        .collect()
}

/// The report `packc check` prints, without colour.
fn report(src: &Source, checked: &Checked) -> String {
    let text = String::from_utf8_lossy(&src.bytes);
    let rs = RenderSource {
        name: &src.name,
        text: &text,
        spans: checked.loaded.as_ref().map(|l| &l.spans),
    };
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = render::human(&rs, &checked.diagnostics, false, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// check(path=None, *, text=None, format=None, spec_level=None, base_dir=None) -> list[Diagnostic]
///
/// Parses and checks a pack (a file, or `text=` in memory) and returns every error and
/// warning in source order. `format="json"` requires strict JSON and `format="yaml"`
/// reads YAML 1.2; left out, a file is read as `packc check` reads it (a `*.json` file is
/// strict JSON, any other YAML 1.2, of which JSON is a subset) and text as YAML 1.2. An
/// unreadable file raises `OSError` (`FileNotFoundError` for a missing one), as `open()`
/// does. The files a pack names (`output_schema`) are read from `base_dir=`, by default
/// the pack file's folder; for `text=` they are looked up only when `base_dir=` is given.
#[pyfunction]
#[pyo3(signature = (path=None, *, text=None, format=None, spec_level=None, base_dir=None))]
fn check(
    py: Python<'_>,
    path: Option<PathBuf>,
    text: Option<String>,
    format: Option<&str>,
    spec_level: Option<&str>,
    base_dir: Option<PathBuf>,
) -> PyResult<Vec<Py<Diagnostic>>> {
    let level = self::spec_level(spec_level)?;
    let src = source(path, text, format, base_dir)?;
    let checked = py.detach(|| check_source(&src, level));
    diagnostics(py, &src, &checked)
}

/// compile(path=None, *, text=None, format=None, spec_level=None, base_dir=None) -> Artifact
///
/// Checks and lowers a pack into an `Artifact`, reading it as `check` does (a JSON pack is
/// parsed once, checked and lowered from one document). A pack with errors raises
/// `packc.CompileError`, whose `diagnostics` lists them and whose `str()` is the
/// rendered report. Each warning of a pack that compiles is a `UserWarning`
/// (`file:line:column: warning[kind]: message`), as `packc build` prints it.
#[pyfunction]
#[pyo3(signature = (path=None, *, text=None, format=None, spec_level=None, base_dir=None))]
fn compile(
    py: Python<'_>,
    path: Option<PathBuf>,
    text: Option<String>,
    format: Option<&str>,
    spec_level: Option<&str>,
    base_dir: Option<PathBuf>,
) -> PyResult<Artifact> {
    let level = self::spec_level(spec_level)?;
    let src = source(path, text, format, base_dir)?;
    let built = py.detach(|| build_source(&src, level));
    match built {
        Ok((checked, None)) => {
            let diags = diagnostics(py, &src, &checked)?
                .into_iter()
                .map(|d| d.into_any())
                .collect();
            Err(errors::compile_error(py, report(&src, &checked), diags))
        }
        Err(e) => Err(errors::compile_error(
            py,
            format!(
                "{}: the pack checked clean but could not be lowered: {e}",
                src.name
            ),
            Vec::new(),
        )),
        Ok((checked, Some(artifact))) => {
            warn_of(py, &src, &checked)?;
            if src.base.is_none() {
                warn_unread_schemas(py, &artifact.module)?;
            }
            Ok(Artifact {
                inner: Arc::new(artifact),
                minor: ir_spec::container::FORMAT_MINOR,
            })
        }
    }
}

/// A `UserWarning` for each warning of a pack that compiled (as `packc build` prints
/// them): `file:line:column: warning[kind]: message`, and its help.
fn warn_of(py: Python<'_>, src: &Source, checked: &Checked) -> PyResult<()> {
    for d in diagnostics(py, src, checked)? {
        let d = d.borrow(py);
        if d.severity != "warning" {
            continue;
        }
        let at = match (d.line, d.column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", d.file),
            _ => d.file.clone(),
        };
        let help = d
            .help
            .as_deref()
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        let message = format!("{at}: warning[{}]: {}{help}", d.kind, d.message);
        errors::user_warning(py, &message)?;
    }
    Ok(())
}

/// A `UserWarning` naming the `output_schema` files of a pack compiled from `text=`
/// without `base_dir=`: they are not read, so the artifact embeds none of them (the steps
/// still parse JSON answers, `compositions.md` 2.25, but a live model is sent no schema).
fn warn_unread_schemas(py: Python<'_>, module: &ir_spec::Module) -> PyResult<()> {
    let mut names: Vec<&str> = module
        .compositions
        .iter()
        .flat_map(|c| &c.steps)
        .filter_map(|step| match &step.kind {
            ir_spec::StepKind::Prompt { output_schema, .. }
            | ir_spec::StepKind::Agent { output_schema, .. } => output_schema.as_ref(),
            _ => None,
        })
        .filter(|s| s.schema.is_none())
        .map(|s| s.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let message = format!(
        "compile(text=...): the schema file(s) {list} the pack names were not read, so the \
         artifact embeds no schema for them; pass base_dir= (the folder they are relative to) \
         to read them, or compile the pack file"
    );
    errors::user_warning(py, &message)
}

/// A compiled pack: the lowered module with its provenance, what a `.ppk` file holds.
///
/// `to_bytes()` is the `.ppk` file (same pack, same bytes); `Artifact.from_bytes(b)`
/// verifies one (a damaged or foreign file raises `packc.ArtifactError`);
/// `inspect()` describes it as plain dicts.
#[pyclass(frozen, module = "packc")]
pub struct Artifact {
    pub(crate) inner: Arc<ir_spec::Artifact>,
    /// The container's minor format version (this packc writes
    /// `ir_spec::container::FORMAT_MINOR`).
    minor: u16,
}

#[pymethods]
impl Artifact {
    /// The `.ppk` bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| self.inner.encode());
        PyBytes::new(py, &bytes)
    }

    /// Pickled as its `.ppk` bytes, verified again by `from_bytes` when unpickled.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        Ok((from_bytes, (slf.get().to_bytes(slf.py()),)))
    }

    /// Decodes and verifies `.ppk` bytes (magic, version, checksum, every table index);
    /// anything wrong raises `packc.ArtifactError`.
    #[staticmethod]
    #[pyo3(signature = (data, *, max_bytes=None))]
    fn from_bytes(
        py: Python<'_>,
        data: &[u8],
        #[pyo3(from_py_with = crate::args::max_bytes)] max_bytes: Option<usize>,
    ) -> PyResult<Artifact> {
        let max = max_bytes.unwrap_or(ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES);
        let data = data.to_vec();
        let decoded = py.detach(move || {
            let a = ir_spec::Artifact::decode(&data, max)?;
            // `decode` read the container already, so this cannot fail.
            let minor = ir_spec::container::Container::decode(&data, max).map_or(0, |c| c.minor);
            Ok::<_, ir_spec::ArtifactError>((a, minor))
        });
        match decoded {
            Ok((a, minor)) => Ok(Artifact {
                inner: Arc::new(a),
                minor,
            }),
            Err(e) => Err(errors::artifact_error(
                py,
                format!("not a valid .ppk artifact: {e}"),
            )),
        }
    }

    /// The header, the run targets and the static call bounds, as plain dicts:
    /// `{"format", "compiler", "source_sha256", "module", "targets", "prompts",
    /// "validators", "tools", "bounds", "governance", "agent_governance"}`. `validators`
    /// maps each prompt that has any to their types as written, in the order they run. A
    /// bound is `{"model": n, "tool": n}`, with `None` for unbounded. `governance` is the
    /// pack's `metadata.governance` as written (`None` without one, or below level
    /// 1.5.1), `agent_governance` each agent member's that has one.
    fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let a = &*self.inner;
        let m = &a.module;
        let out = PyDict::new(py);
        out.set_item(
            "format",
            format!("{}.{}", ir_spec::container::FORMAT_MAJOR, self.minor),
        )?;
        out.set_item("compiler", &a.compiler)?;
        out.set_item("source_sha256", hex(&a.source_hash))?;
        out.set_item("module", &m.id)?;
        let mut targets = Vec::new();
        if m.workflow.is_some() {
            targets.push("workflow".to_owned());
        }
        targets.extend(m.agents.iter().map(|x| format!("agent:{}", m.str(x.key))));
        targets.extend(
            m.compositions
                .iter()
                .map(|c| format!("composition:{}", m.str(c.key))),
        );
        out.set_item("targets", targets)?;
        let prompts: Vec<&str> = m.prompts.iter().map(|p| m.str(p.key)).collect();
        out.set_item("prompts", prompts)?;
        let validators = PyDict::new(py);
        for p in m.prompts.iter().filter(|p| !p.guards.is_empty()) {
            let types: Vec<&str> = p.guards.iter().map(|g| g.name.as_str()).collect();
            validators.set_item(m.str(p.key), types)?;
        }
        out.set_item("validators", validators)?;
        let tools: Vec<&str> = m.tools.iter().map(|t| m.str(t.key)).collect();
        out.set_item("tools", tools)?;
        let b = ir_spec::bounds::module(m);
        let bounds = PyDict::new(py);
        let comps = PyDict::new(py);
        for (c, calls) in m.compositions.iter().zip(&b.compositions) {
            comps.set_item(m.str(c.key), calls_dict(py, calls)?)?;
        }
        bounds.set_item("compositions", comps)?;
        let states = PyDict::new(py);
        if let Some(wf) = &m.workflow {
            for (s, calls) in wf.states.iter().zip(&b.states) {
                states.set_item(m.str(s.key), calls_dict(py, calls)?)?;
            }
        }
        bounds.set_item("states", states)?;
        match &b.workflow_turn {
            Some(turn) => {
                let t = calls_dict(py, &turn.calls)?;
                t.set_item("executions", bound(turn.executions))?;
                bounds.set_item("workflow_turn", t)?;
            }
            None => bounds.set_item("workflow_turn", py.None())?,
        }
        out.set_item("bounds", bounds)?;
        let governance = match &m.spec.governance {
            Some(g) => crate::convert::to_py(py, g)?,
            None => py.None().into_bound(py),
        };
        out.set_item("governance", governance)?;
        let members = PyDict::new(py);
        for (i, agent) in m.agents.iter().enumerate() {
            if let Some(g) = m.spec.agent_governance(ir_spec::AgentId(i as u32)) {
                members.set_item(m.str(agent.key), crate::convert::to_py(py, g)?)?;
            }
        }
        out.set_item("agent_governance", members)?;
        Ok(out)
    }

    /// The module id.
    #[getter]
    fn module_id(&self) -> String {
        self.inner.module.id.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "<Artifact {} ({})>",
            self.inner.module.id, self.inner.compiler
        )
    }
}

fn bound(b: ir_spec::bounds::Bound) -> Option<u64> {
    match b {
        ir_spec::bounds::Bound::Finite(n) => Some(n),
        ir_spec::bounds::Bound::Unbounded => None,
    }
}

fn calls_dict<'py>(py: Python<'py>, c: &ir_spec::bounds::Calls) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("model", bound(c.model))?;
    d.set_item("tool", bound(c.tool))?;
    Ok(d)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
