//! What `packc run` and `packc resume` read: the arguments of `packc run`, the module to
//! run (compiled from a pack or loaded from a `.ppk`), host scripts and JSON values given
//! on the command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use ir_spec::Module;
use packc_host::RunSpec;
use serde_json::Value;

/// Compile a pack (or load a built `.ppk`) and run it, printing the output as JSON.
///
/// Model and tool answers come from a real model (`--provider openai`: any
/// OpenAI-compatible Chat Completions server) and tool bindings (`--tools`), or from a
/// host script (`--host`) shaped like a case's `run` member. With neither, every call
/// fails with `host_error`.
///
/// Examples:
///   packc run pack.yaml --input '{"text": "hi"}' --host answers.yaml --trace
///   packc run pack.ppk --input '{"text": "hi"}' --host answers.yaml
///   packc run pack.yaml --target composition:analyze --input @doc.json --host h.yaml
///   packc run pack.ppk --provider openai --model gpt-4o-mini --input '{"text": "hi"}'
///   packc run pack.yaml --provider openai --model local --base-url http://127.0.0.1:8080/v1 \
///       --tools tools.yaml --record run.case.yaml
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    /// The pack file, or an artifact built by `packc build` (recognised by its magic bytes).
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// The input of the one turn, as JSON, or `@file` to read it from a file; it replaces
    /// the host script's turns (`script`, `input`).
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// A host script: a YAML/JSON file shaped like a case's `run` member (`script`,
    /// `input`, `host.prompts`, `host.tools`, `host.guards`, `host.extensions`,
    /// `host.clock`, `host.variables`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["provider", "tools", "bind_provider"])]
    pub host: Option<PathBuf>,
    /// What to run: `workflow`, `agent:<member>` or `composition:<name>`.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// Print the trace lines to stderr.
    #[arg(long)]
    pub trace: bool,
    /// The model, the tools and how calls are made (shared with `packc batch`).
    #[command(flatten)]
    pub live: LiveArgs,
    /// Write the live run as a case file that `packc test` replays offline.
    #[arg(long, value_name = "FILE", conflicts_with = "host")]
    pub record: Option<PathBuf>,
    /// Overwrite the `--record` file if it exists.
    #[arg(long, requires = "record")]
    pub force: bool,
    /// The most calls in flight at once (a parallel step's branches go out together).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = at_least_one)]
    pub concurrency: usize,
    /// A host variable for `{{name}}` placeholders the pack does not declare
    /// (repeatable): `--var NAME=VALUE`.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Let the pack read files (schema files) from this folder too (repeatable). By
    /// default a pack reads only from its own folder and below.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// Print only the result: no status line, no notes.
    #[arg(long, short)]
    pub quiet: bool,
    /// When the run stops waiting for the caller (the next turn, or an event such as an
    /// approval), save it to FILE instead of finishing it; `packc resume FILE --turn
    /// JSON | --event NAME` continues it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["interactive", "record"])]
    pub save: Option<PathBuf>,
    /// Read the turns from the terminal, one line each (a JSON object or array as such,
    /// other text as a string); `/event NAME` sends an event, `/quit` or end of input
    /// finishes the run. The output and where the run stopped are shown after each turn.
    #[arg(long, conflicts_with_all = ["input", "record"])]
    pub interactive: bool,
    /// `human` (the default) prints the output alone, as JSON; `json` prints the whole
    /// result as one JSON object (status, why it stopped, output, reply, state, error, trace,
    /// every call with its input and answer and every built-in validator firing, as a
    /// case's `expect.calls` lists them, tokens).
    #[arg(
        long,
        value_enum,
        default_value_t = crate::Format::Human,
        conflicts_with = "interactive",
        hide_possible_values = true
    )]
    pub format: crate::Format,
    /// Read the pack at this spec level instead of the one its `$schema` claims
    /// (1.5, 1.5.1, 1.8 or 1.9; a version such as 1.7 names its level, and `latest` is 1.9).
    #[arg(long, value_name = "LEVEL", value_parser = crate::check::parse_spec_level)]
    pub spec_level: Option<ir_spec::SpecLevel>,
    /// The environment the run is in: a pack whose governance lists
    /// `approved_environments` without NAME is refused before any call (RFC 0013).
    #[arg(long, value_name = "NAME")]
    pub environment: Option<String>,
}

/// The `input_schema` of the composition `target` runs (`composition:<name>`, or a
/// workflow whose entry state runs a composition), read from the pack's folder, with
/// the composition's name. An artifact does not carry it: `None` then, said once unless
/// `quiet` (`unchecked` says what goes unchecked: "the rows are").
pub fn target_input_schema(
    pack: &Path,
    allow_paths: &[PathBuf],
    target: &str,
    quiet: bool,
    unchecked: &str,
) -> Result<Option<(String, Value)>> {
    if crate::inspect::is_artifact(pack)? {
        if !quiet {
            eprintln!(
                "note: an artifact does not carry its compositions' input_schema; {unchecked} not checked against it (give the pack file to check them)"
            );
        }
        return Ok(None);
    }
    let limits = packc_compiler::load::Limits::default();
    let bytes = packc_compiler::paths::read_regular(pack, limits.max_source_bytes as u64)
        .with_context(|| format!("cannot read {}", pack.display()))?;
    let Ok(doc) = packc_compiler::load::load_bytes(&bytes, &limits) else {
        return Ok(None);
    };
    let doc = doc.into_value();
    let composition = match target.split_once(':') {
        Some(("composition", name)) => Some(name.to_owned()),
        None if target == "workflow" => {
            let wf = &doc["workflow"];
            let entry = &wf["states"][wf["entry"].as_str().unwrap_or_default()];
            (entry["orchestration"] == "composition")
                .then(|| entry["composition"].as_str().map(str::to_owned))
                .flatten()
        }
        _ => None,
    };
    let Some(composition) = composition else {
        return Ok(None);
    };
    let Some(name) = doc["compositions"][&composition]["input_schema"].as_str() else {
        return Ok(None);
    };
    let allow = crate::check::allowed_folders(allow_paths)?;
    let folders = packc_compiler::paths::Folders {
        base: crate::files::folder_of(pack).to_path_buf(),
        allow,
    };
    match packc_compiler::schema_files::read(&folders, name) {
        Ok(schema) => Ok(Some((composition, schema))),
        Err(e) => {
            let line = format!(
                "warning: the input_schema `{name}` of composition `{composition}` cannot be used ({e}); {unchecked} not checked against it"
            );
            eprintln!("{}", packc_compiler::render::escape_control(&line));
            Ok(None)
        }
    }
}

/// A count of things at once that must be at least one (`--concurrency`,
/// `--tool-concurrency`): 0 would run nothing.
pub fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl RunArgs {
    /// The files the run reads (the pack, the host script, the tool bindings), which no
    /// file it writes may replace.
    pub fn read_files(&self) -> Vec<&std::path::Path> {
        [
            Some(&self.pack),
            self.host.as_ref(),
            self.live.tools.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect()
    }
}

/// The flags of a live run: the model API, provider bindings, tool bindings, timeouts,
/// retries and the call cap (`packc run`, `packc batch`).
#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// Run against a real model: the OpenAI-compatible Chat Completions API (OpenAI,
    /// llama.cpp server, vLLM, Ollama, LM Studio...).
    #[arg(long, value_enum, requires = "model")]
    pub provider: Option<Provider>,
    /// The model name sent with every request (with --provider).
    #[arg(long, value_name = "NAME", requires = "provider", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub model: Option<String>,
    /// The API base URL (by default `https://api.openai.com/v1`); requests go to
    /// `<URL>/chat/completions`. For a local server, e.g. `http://127.0.0.1:8080/v1`.
    /// With --provider.
    #[arg(long, value_name = "URL", requires = "provider")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (never printed). Without it, the
    /// key in OPENAI_API_KEY is sent to api.openai.com only; naming a variable (even
    /// OPENAI_API_KEY) sends its key to --base-url, whatever the host. With --provider.
    #[arg(long, value_name = "VAR", requires = "provider")]
    pub api_key_env: Option<String>,
    /// Bind the pack's tools to commands or HTTP endpoints: a YAML/JSON file
    ///
    ///   tools:
    ///     lookup_order:                     # a key of the pack's `tools` (or an agent member)
    ///       command: [python3, tools/lookup_order.py]   # relative to this file's folder
    ///       timeout_sec: 10                 # default 60, at most 86400
    ///       env: ["DATABASE_URL"]         # passed through; or {NAME: value}
    ///     web_search:
    ///       http: http://127.0.0.1:8080/search          # JSON POST of the arguments
    ///       headers: {x-team: docs}
    ///
    /// A command reads the arguments as JSON on stdin and prints its JSON result on
    /// stdout; a non-zero exit, output that is not JSON or a run past `timeout_sec` is a
    /// tool error (its stderr's end is shown). A command starts with a clean environment
    /// (PATH, HOME, LANG, TMPDIR and what `env:` lists). An endpoint answers a 2xx with a
    /// JSON body.
    #[arg(long, value_name = "FILE", verbatim_doc_comment)]
    pub tools: Option<PathBuf>,
    /// The longest one model or HTTP call may take, in seconds (at most 86400).
    #[arg(long, value_name = "SECS", default_value_t = 120.0, value_parser = parse_timeout)]
    pub timeout: f64,
    /// The most model and tool calls the run may make; the call past it fails the run
    /// with `limit_exceeded`.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_HOST_CALLS)]
    pub max_host_calls: u64,
    /// How many times a model call is retried after a 429, a 5xx or a timeout.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,
    /// Bind a provider key of the pack's `requires.providers` to a server (repeatable):
    /// `--bind-provider KEY=URL,model=NAME[,key-env=VAR]`. Calls routed to KEY (RFC 0017)
    /// go there; `default` falls back to `--provider openai --model NAME [--base-url]`.
    #[arg(long = "bind-provider", value_name = "KEY=URL,model=NAME", value_parser = parse_binding)]
    pub bind_provider: Vec<ProviderBinding>,
}

/// Said when nothing gives the run its input (no `--input`, no turns in the host
/// script): it runs with `null`, which a live run sends to the model as the text "null".
pub(crate) const NO_INPUT: &str =
    "note: no --input given: the run's input is null (give --input JSON)";

/// The default of `--max-host-calls` for `packc run` and `packc test`: far above what a
/// pack needs, far below what a runaway `retry` or tool loop would spend.
pub const DEFAULT_MAX_HOST_CALLS: u64 = 10_000;

/// `--timeout`: a positive number of seconds, at most a day.
pub(crate) fn parse_timeout(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    packc_host::live::transport::timeout_secs(secs, "the timeout").map_err(|e| e.to_string())?;
    Ok(secs)
}

/// One `--bind-provider KEY=URL,model=NAME[,key-env=VAR]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderBinding {
    /// The provider key.
    pub key: String,
    /// The API base URL.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The environment variable holding the API key, if any.
    pub key_env: Option<String>,
}

/// Parses `KEY=URL,model=NAME[,key-env=VAR]`.
pub fn parse_binding(text: &str) -> Result<ProviderBinding, String> {
    let mut parts = text.split(',');
    let first = parts.next().unwrap_or_default();
    let (key, url) = first
        .split_once('=')
        .filter(|(k, u)| !k.is_empty() && !u.is_empty())
        .ok_or_else(|| format!("`{text}`: expected KEY=URL,model=NAME[,key-env=VAR]"))?;
    let mut binding = ProviderBinding {
        key: key.trim().to_owned(),
        base_url: url.trim().to_owned(),
        model: String::new(),
        key_env: None,
    };
    for part in parts {
        match part.split_once('=') {
            Some(("model", v)) => binding.model = v.trim().to_owned(),
            Some(("key-env", v)) => binding.key_env = Some(v.trim().to_owned()),
            _ => {
                return Err(format!(
                    "`{part}` in `{text}`: expected model=NAME or key-env=VAR"
                ))
            }
        }
    }
    if binding.model.is_empty() {
        return Err(format!("`{text}`: name the model with `,model=NAME`"));
    }
    Ok(binding)
}

/// A model API `packc run` can call.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// The OpenAI-compatible Chat Completions API.
    Openai,
}

/// The `--input` value, if given: JSON, or `@file` holding JSON.
pub(crate) fn read_input(args: &RunArgs) -> Result<Option<Value>> {
    args.input
        .as_deref()
        .map(|input| parse_input("--input", input))
        .transpose()
}

/// A JSON value given on the command line after `flag`, or `@file` holding one, read
/// as strictly as a pack ([`packc_host::json_arg`]). Text that does not start like JSON gets
/// the advice to quote it as a string; JSON that does not parse, its error and place.
/// An integer too large for 64 bits is read as the nearest double, with a warning.
pub(crate) fn parse_input(flag: &str, input: &str) -> Result<Value> {
    let parsed = match input.strip_prefix('@') {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("{flag} @{file}: cannot read {file}"))?;
            packc_host::json_arg::parse(&text).map_err(|e| match e.classify() {
                serde_json::error::Category::Data => anyhow::anyhow!("{flag} @{file}: {e}"),
                _ => anyhow::anyhow!("{flag} @{file}: {file} is not JSON: {e}"),
            })?
        }
        None => packc_host::json_arg::parse(input).map_err(|e| {
            if e.classify() == serde_json::error::Category::Data {
                anyhow::anyhow!("{flag}: {e}")
            } else if packc_host::json_arg::looks_like_json(input) {
                anyhow::anyhow!("{flag} is not valid JSON: {e}")
            } else {
                let string = Value::String(input.to_owned()).to_string();
                anyhow::anyhow!(
                    "{flag} is not JSON ({e}): a string is quoted in JSON, so write `{flag} {}` for the text, or `{flag} @file.json` to read the input from a file",
                    crate::shell::quote(&string)
                )
            }
        })?,
    };
    if let Some(integer) = &parsed.rounded {
        let line = format!(
            "warning: {flag}: the integer {integer} does not fit in 64 bits; it is read as the nearest double, as in a pack"
        );
        eprintln!("{}", packc_compiler::render::escape_control(&line));
    }
    Ok(parsed.value)
}

/// The `--var NAME=VALUE` host variables (the value a string).
pub(crate) fn read_vars(args: &RunArgs, module: &Module) -> Result<Vec<(String, Value)>> {
    let vars: Vec<(String, Value)> = args
        .vars
        .iter()
        .map(|v| match v.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), Value::String(v.to_owned()))),
            _ => bail!("--var {v}: expected NAME=VALUE"),
        })
        .collect::<Result<_>>()?;
    for (name, _) in &vars {
        if let Some(why) = unused_var(module, name) {
            eprintln!("warning: --var {name}: {why}");
        }
    }
    Ok(vars)
}

/// Why a host variable `name` would fill no placeholder of `module`: a prompt declares
/// it (so it is read from the input object), or no template names it; `None` when some
/// prompt's template has an undeclared `{{name}}`.
fn unused_var(module: &Module, name: &str) -> Option<String> {
    use ir_spec::{Segment, VarRoot};
    if matches!(name, "input" | "artifacts") {
        return Some(format!(
            "`{{{{{name}}}}}` always reads the run's {name}, never a host variable; it has no effect"
        ));
    }
    let fills = module.prompts.iter().any(|p| {
        p.system.iter().any(|s| {
            matches!(s, Segment::Var(v) if matches!(&v.root, VarRoot::Undeclared(n) if n == name))
        })
    });
    if fills {
        return None;
    }
    let declaring = module
        .prompts
        .iter()
        .find(|p| p.variables.iter().any(|v| v.name == name));
    Some(match declaring {
        Some(p) => format!(
            "prompt `{}` declares `{name}`, so it is read from the input object's member `{name}` (e.g. --input '{{\"{name}\": ...}}'), not from --var",
            module.str(p.key)
        ),
        None => format!("no prompt's template has a `{{{{{name}}}}}` it would fill; it has no effect"),
    })
}

/// Which of a pack's diagnostics [`load_module`] prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Errors, warnings and notes.
    All,
    /// Errors and warnings (`--quiet` leaves the notes out).
    NoNotes,
    /// None: the pack's path came from a file someone else may have written (a save
    /// file), so its text is not echoed; the caller says what failed.
    Nothing,
}

impl Shown {
    /// `--quiet` leaves the notes out.
    pub(crate) fn quiet(quiet: bool) -> Shown {
        if quiet {
            Shown::NoNotes
        } else {
            Shown::All
        }
    }
}

/// The module to run: decoded and verified from a `.ppk` artifact, or compiled from pack
/// source, reading the files it names from its folder and the `allow` folders
/// (`--allow-path`) at `spec_level` when given (else at the level its `$schema` claims;
/// an artifact keeps the level it was built at). Diagnostics are printed to stderr as
/// `shown` says; `Err(code)` when the source has errors.
pub(crate) fn load_module(
    path: &Path,
    allow: &[PathBuf],
    spec_level: Option<ir_spec::SpecLevel>,
    shown: Shown,
) -> Result<Result<Module, ExitCode>> {
    let allow = crate::check::allowed_folders(allow)?;
    if crate::inspect::is_artifact(path)? {
        return Ok(Ok(crate::inspect::read_artifact(path)?.1.module));
    }
    let limits = packc_compiler::load::Limits::default();
    let options = crate::check::options_for(path, &limits, &allow, spec_level);
    // Checked and lowered from one document: a JSON pack is parsed once.
    let (checked, bytes, module) = crate::check::with_pack(path, &options, |bytes| {
        Ok(packc_compiler::module_file_bytes(path, bytes, &options)?)
    })?;
    // Warnings are printed as `cargo run` prints them: a run of a pack with a mistake the
    // checker found (a misspelled tool name) must not look clean.
    if shown == Shown::Nothing {
        return Ok(match module {
            Some(module) if !checked.has_errors() => Ok(module),
            _ => Err(ExitCode::from(1)),
        });
    }
    let quiet = shown == Shown::NoNotes;
    if !checked.diagnostics.is_empty() {
        let text = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        let src = packc_compiler::render::RenderSource::of_checked(&name, &text, &checked);
        let color = crate::ColorChoice::Auto.for_stderr();
        // `--quiet` leaves the notes out (the version notes, the template notes); errors
        // and warnings are always shown.
        let shown: Vec<_> = checked
            .diagnostics
            .iter()
            .filter(|d| !(quiet && d.severity == packc_compiler::Severity::Note))
            .cloned()
            .collect();
        crate::check::print_diagnostics(
            &src,
            &shown,
            crate::Format::Human,
            color,
            crate::check::DEFAULT_MAX_DIAGNOSTICS,
        )?;
        if checked.has_errors() {
            return Ok(Err(ExitCode::from(1)));
        }
    }
    match module {
        Some(module) => {
            // A run's error points into the source.
            crate::result::remember_source(
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            );
            Ok(Ok(module))
        }
        // A pack with errors returned above; one without a document has errors.
        None => Ok(Err(ExitCode::from(1))),
    }
}

/// Reads a host script: a case's `run` member on its own, checked as strictly as a case.
pub(crate) fn host_spec(path: &Path, module: Option<&ir_spec::Module>) -> Result<RunSpec> {
    host_script(path, module).map(|(spec, _)| spec)
}

/// [`host_spec`], and whether the script gives the run's turns itself (`script` or
/// `input`). With `module`, every answer queue must be keyed by a name of the pack.
pub(crate) fn host_script(
    path: &Path,
    module: Option<&ir_spec::Module>,
) -> Result<(RunSpec, bool)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let spec = match module {
        Some(module) => RunSpec::parse_for(&text, module),
        None => RunSpec::parse_with_turns(&text),
    };
    spec.map_err(|problems| {
        anyhow::Error::msg(
            packc_host::CaseError {
                path: path.display().to_string(),
                problems,
            }
            .to_string(),
        )
    })
}

/// Checks the turns of `script` against the `input_schema` of the composition
/// `target_text` runs, as `packc batch` checks its rows, before any call of a scripted or
/// a live run; an artifact does not carry it (not said on every run).
pub(crate) fn check_turns(
    args: &RunArgs,
    target_text: &str,
    script: &[packc_vm::driver::ScriptItem],
) -> Result<()> {
    if let Some((composition, schema)) = target_input_schema(
        &args.pack,
        &args.allow_paths,
        target_text,
        true,
        "the input is",
    )? {
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            anyhow::anyhow!("the input_schema of composition `{composition}` cannot be used: {e}")
        })?;
        for (i, item) in script.iter().enumerate() {
            let packc_vm::driver::ScriptItem::Turn(value) = item else {
                continue;
            };
            if let Some(e) = validator.iter_errors(value).next() {
                let path = e.instance_path().as_str();
                let path = if path.is_empty() { "/" } else { path };
                let which = if script.len() == 1 {
                    "the input".to_owned()
                } else {
                    format!("the input of turn {}", i + 1)
                };
                bail!(
                    "{which} does not match the input_schema of composition `{composition}` at `{path}`: {e}"
                );
            }
        }
    }
    Ok(())
}
