//! `packc run`: compile a pack (or load a built `.ppk`) and run it with a scripted host,
//! printing the output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use ir_spec::Module;
use packc_compiler::Options;
use packc_host::{Case, RunSpec, ScriptedHost};
use packc_vm::driver::{drive, ScriptItem};
use packc_vm::{Program, Run, RunOptions, Target};
use serde_json::Value;

/// Arguments of `packc run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pack file, or an artifact built by `packc build` (recognised by its magic bytes).
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// The input of the one turn, as JSON, or `@file` to read it from a file.
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// A host script: a YAML/JSON file shaped like a case's `run` member (`script`,
    /// `input`, `host.prompts`, `host.tools`, `host.clock`, `host.variables`).
    #[arg(long, value_name = "FILE")]
    pub host: Option<PathBuf>,
    /// What to run: `workflow`, `agent:<member>` or `composition:<name>`.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// Print the trace lines to stderr.
    #[arg(long)]
    pub trace: bool,
    /// Run against a real model: the OpenAI-compatible Chat Completions API (OpenAI,
    /// llama.cpp server, vLLM, Ollama, LM Studio...).
    #[arg(long, value_enum, conflicts_with = "host", requires = "model")]
    pub provider: Option<Provider>,
    /// The model name sent with every request.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The API base URL [default: https://api.openai.com/v1]; requests go to
    /// `<URL>/chat/completions`. For a local server, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (never printed). Optional for a
    /// local server.
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// Bind the pack's tools to commands or HTTP endpoints (see `packc_host::live::tools`).
    #[arg(long, value_name = "FILE", conflicts_with = "host")]
    pub tools: Option<PathBuf>,
    /// Write the live run as a case file that `packc test` replays offline.
    #[arg(long, value_name = "FILE", conflicts_with = "host")]
    pub record: Option<PathBuf>,
    /// The longest one model or HTTP call may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub timeout: f64,
    /// How many times a model call is retried after a 429, a 5xx or a timeout.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,
    /// The most calls in flight at once (a parallel step's branches go out together).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub concurrency: usize,
    /// A host variable for `{{name}}` placeholders the pack does not declare
    /// (repeatable): `--var NAME=VALUE`.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Print only the result: no status line, no notes.
    #[arg(long, short)]
    pub quiet: bool,
    /// Bind a provider key of the pack's `requires.providers` to a server (repeatable):
    /// `--bind-provider KEY=URL,model=NAME[,key-env=VAR]`. Calls routed to KEY (RFC 0017)
    /// go there; `default` falls back to `--provider openai --model NAME [--base-url]`.
    #[arg(long = "bind-provider", value_name = "KEY=URL,model=NAME", value_parser = parse_binding, conflicts_with = "host")]
    pub bind_provider: Vec<ProviderBinding>,
    /// Read the pack at this spec level instead of the one its `$schema` claims
    /// (1.5, 1.5.1, 1.8 or 1.9).
    #[arg(long, value_name = "LEVEL", value_parser = crate::check::parse_spec_level)]
    pub spec_level: Option<ir_spec::SpecLevel>,
    /// The environment the run is in: a pack whose governance lists
    /// `approved_environments` without NAME is refused before any call (RFC 0013).
    #[arg(long, value_name = "NAME")]
    pub environment: Option<String>,
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

/// Compile (or load) and run; print the output as JSON. Exit 1 on compile or run-time
/// errors, 2 on an unreadable artifact.
pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let module = match load_module_at(&args.pack, args.spec_level)? {
        Ok(module) => module,
        Err(code) => return Ok(code),
    };
    if let Err(refusal) = packc_host::governance::admission(&module, args.environment.as_deref()) {
        eprintln!("error: {refusal}");
        return Ok(ExitCode::from(2));
    }
    let live = args.provider.is_some() || args.tools.is_some() || !args.bind_provider.is_empty();
    if args.host.is_none() && live {
        return crate::live::run(args, module);
    }
    let mut spec = match &args.host {
        Some(path) => host_spec(path)?,
        None => RunSpec::default(),
    };
    if let Some(value) = read_input(args)? {
        spec.script = vec![ScriptItem::Turn(value)];
    }
    for (k, v) in read_vars(args)? {
        spec.variables.insert(k, v);
    }
    if spec.script.is_empty() {
        spec.script = vec![ScriptItem::Turn(Value::Null)];
    }
    let target_text = args.target.clone().unwrap_or_else(|| {
        if spec.target.is_empty() {
            "workflow".into()
        } else {
            spec.target.clone()
        }
    });
    let program = Arc::new(Program::new(module)?);
    let target = Target::parse(program.module(), &target_text)?;
    let mut run = Run::new(
        program,
        target,
        RunOptions {
            host_variables: spec.variables.clone(),
            max_host_calls: None,
            record_calls: false,
            ..RunOptions::default()
        },
    )?;
    let mut host = ScriptedHost::new(&spec);
    let result = drive(&mut run, &mut host, &spec.script);
    if args.trace {
        for line in run.trace_lines() {
            eprintln!("{line}");
        }
    }
    match result {
        Ok(outcome) => {
            println!("{}", serde_json::to_string_pretty(&outcome.output)?);
            print_reply(&outcome, args.quiet);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error[{}]: {}", e.kind.as_str(), e.message);
            Ok(ExitCode::from(1))
        }
    }
}

/// The last turn's reply (RFC 0014 reply assembly), on stderr, when it says more than the
/// output: several states contributed text, or the output is not that text.
pub(crate) fn print_reply(outcome: &packc_vm::OwnedOutcome, quiet: bool) {
    if quiet || outcome.reply.is_empty() || outcome.output.as_str() == Some(&outcome.reply) {
        return;
    }
    eprintln!("reply:");
    for line in outcome.reply.lines() {
        eprintln!("  {line}");
    }
}

/// The `--input` value, if given: JSON, or `@file` holding JSON.
pub(crate) fn read_input(args: &RunArgs) -> Result<Option<Value>> {
    let Some(input) = &args.input else {
        return Ok(None);
    };
    let text = match input.strip_prefix('@') {
        Some(file) => {
            std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?
        }
        None => input.clone(),
    };
    Ok(Some(
        serde_json::from_str(&text).context("--input is not JSON")?,
    ))
}

/// The `--var NAME=VALUE` host variables (the value a string).
pub(crate) fn read_vars(args: &RunArgs) -> Result<Vec<(String, Value)>> {
    args.vars
        .iter()
        .map(|v| match v.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), Value::String(v.to_owned()))),
            _ => bail!("--var {v}: expected NAME=VALUE"),
        })
        .collect()
}

/// The module to run: decoded and verified from a `.ppk` artifact, or compiled from pack
/// source. `Err(code)` when the source has errors (they are printed).
pub(crate) fn load_module(path: &Path) -> Result<Result<Module, ExitCode>> {
    load_module_at(path, None)
}

/// [`load_module`], reading a pack source at `spec_level` when given. Notes (e.g.
/// `no_spec_version`) are printed; an artifact keeps the level it was built at.
pub(crate) fn load_module_at(
    path: &Path,
    spec_level: Option<ir_spec::SpecLevel>,
) -> Result<Result<Module, ExitCode>> {
    if crate::inspect::is_artifact(path)? {
        return Ok(Ok(crate::inspect::read_artifact(path)?.1.module));
    }
    let limits = packc_compiler::load::Limits::default();
    let (checked, bytes) = crate::check::check_file_at(path, &limits, spec_level)?;
    let notes: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == packc_compiler::diag::Severity::Note)
        .cloned()
        .collect();
    if !checked.has_errors() && !notes.is_empty() {
        let text = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        let src = packc_compiler::render::RenderSource {
            name: &name,
            text: &text,
            spans: checked.loaded.as_ref().map(|l| &l.spans),
        };
        let color = crate::ColorChoice::Auto.for_stderr();
        let only_notes = packc_compiler::Checked {
            loaded: None,
            diagnostics: notes,
        };
        crate::check::print_diagnostics(&src, &only_notes, crate::Format::Human, color)?;
    }
    if checked.has_errors() {
        let text = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        let src = packc_compiler::render::RenderSource {
            name: &name,
            text: &text,
            spans: checked.loaded.as_ref().map(|l| &l.spans),
        };
        let color = crate::ColorChoice::Auto.for_stderr();
        crate::check::print_diagnostics(&src, &checked, crate::Format::Human, color)?;
        return Ok(Err(ExitCode::from(1)));
    }
    let options = Options {
        base_dir: Some(path.parent().map(Path::to_path_buf).unwrap_or_default()),
        spec_level,
        ..Options::default()
    };
    Ok(Ok(packc_compiler::lower(&checked, &options)?))
}

/// Reads a host script: a case's `run` member on its own.
fn host_spec(path: &Path) -> Result<RunSpec> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let wrapped = format!(
        "about: host script\npack: {{}}\nexpect: {{}}\nrun:\n{}",
        indent(&text)
    );
    let case = Case::parse(&wrapped, Path::new(".")).map_err(anyhow::Error::msg)?;
    match case.run {
        Some(spec) => Ok(spec),
        None => bail!("{}: not a host script", path.display()),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
