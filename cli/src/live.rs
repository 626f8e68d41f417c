//! `packc run --provider ... / --tools ...`: a run against a real model and real tools,
//! with a status line on a terminal, Ctrl-C handling and `--record`.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ir_spec::Module;
use packc_host::live::redact::shown_url;
use packc_host::live::transport::timeout_secs;
use packc_host::live::{
    callable_tools, is_loopback, provider_faults, url_host, Ended, LiveConfig, LiveHost,
    ModelEndpoint, Observer, Stats, ToolBindings, TransportConfig,
};
use packc_host::record::{to_case, CaseSpec};
use packc_vm::driver::ScriptItem;
use packc_vm::{Answer, CallId, CallView, Program, Run, RunOptions, Target};
use serde_json::Value;

use crate::inputs::{read_input, read_vars, LiveArgs, RunArgs};
use packc_compiler::render::escape_control;
use packc_host::calls::AnsweredCall;

/// Runs `module` live. Exit codes: 0 done, 1 a run-time error, 130 interrupted.
pub fn run(args: &RunArgs, module: Module) -> Result<ExitCode> {
    if args.record.is_some() && crate::inspect::is_artifact(&args.pack)? {
        bail!(
            "--record writes a case that replays from the pack's source; run the pack file, not the artifact {}",
            args.pack.display()
        );
    }
    // Everything about the record file is checked before any call is made: a live run
    // is not lost to a missing folder, and never overwrites the pack or a file unasked.
    let record_pack_file = match &args.record {
        Some(out) => {
            crate::files::check_target(out, &args.read_files(), "--record")?;
            if !args.force && std::fs::symlink_metadata(out).is_ok() {
                bail!(
                    "--record {} exists; pass --force to overwrite it",
                    out.display()
                );
            }
            Some(relative_to(
                &args.pack,
                out.parent().unwrap_or(Path::new(".")),
            )?)
        }
        None => None,
    };
    let config = match config(&args.live, &module, args.quiet)? {
        Ok(config) => config,
        Err(code) => return Ok(code),
    };
    let host = LiveHost::new(LiveConfig {
        concurrency: args.concurrency.max(1),
        record: args.record.is_some(),
        ..config
    });
    let cancel = host.cancel_flag();
    // The first Ctrl-C stops the run where it is; a second one exits at once.
    let _ = ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });

    let input = match read_input(args)? {
        Some(input) => input,
        None => {
            if !args.quiet {
                eprintln!("{}", crate::inputs::NO_INPUT);
            }
            Value::Null
        }
    };
    let script = vec![ScriptItem::Turn(input)];
    let variables: serde_json::Map<String, Value> = read_vars(args, &module)?.into_iter().collect();
    let target_text = args.target.clone().unwrap_or_else(|| "workflow".into());
    // Before any request: a paid model never sees an input its composition refuses.
    crate::inputs::check_turns(args, &target_text, &script)?;
    let program = Arc::new(Program::new(module)?);
    let target = Target::parse(program.module(), &target_text)?;
    let mut run = Run::new(
        program.clone(),
        target,
        RunOptions {
            host_variables: variables.clone(),
            max_host_calls: Some(args.live.max_host_calls),
            // The JSON result lists the calls.
            record_calls: args.format == crate::Format::Json,
            ..RunOptions::default()
        },
    )?;
    // On a terminal: a status line and a closing summary. Otherwise (or with --quiet)
    // only the result, warnings and errors.
    let chatty = !args.quiet && std::io::stderr().is_terminal();
    // `--trace` on a terminal lists each call with its input and answer, as a scripted
    // run does; `--format json` lists them all.
    let call_lines = args.trace && std::io::stderr().is_terminal();
    let mut status = Status::new(chatty, args.format == crate::Format::Json || call_lines);
    let result = host.drive(&mut run, &script, &mut status);
    status.clear();

    if args.trace {
        crate::result::print_trace(&run);
        if call_lines {
            for call in &status.answered {
                eprintln!("{}", crate::result::call_line(&call.to_json(), 100));
            }
        }
    }
    let stats = result.stats;
    if args.format == crate::Format::Json && !matches!(result.ended, Ended::Interrupted) {
        let ended = match &result.ended {
            Ended::Done(o) => Ok((&o.output, o.state.as_deref())),
            Ended::Failed(e) => Err(e),
            Ended::Interrupted => unreachable!("handled below"),
        };
        let answered = std::mem::take(&mut status.answered);
        let calls = packc_host::calls::calls_json(&run.calls(), answered);
        let value = crate::result::to_json(&run, Some(ended), None, calls, stats.tokens);
        crate::out::json(&value);
    }
    let code = match &result.ended {
        Ended::Done(_) if args.format == crate::Format::Json => ExitCode::SUCCESS,
        Ended::Done(outcome) => {
            crate::out::json(&outcome.output);
            crate::result::print_reply(outcome, args.quiet);
            ExitCode::SUCCESS
        }
        Ended::Failed(e) => {
            eprintln!("{}", crate::result::error_line(e));
            ExitCode::from(1)
        }
        Ended::Interrupted => {
            eprintln!(
                "interrupted {} after {} ({} still in flight)",
                escape_control(&whereabouts(&run)),
                calls_text(&stats),
                stats.in_flight
            );
            ExitCode::from(130)
        }
    };
    if chatty && !matches!(result.ended, Ended::Interrupted) {
        eprintln!(
            "{}{}",
            calls_text(&stats),
            if stats.tokens > 0 {
                format!(", {} tokens", stats.tokens)
            } else {
                String::new()
            }
        );
    }
    if let Some(out) = &args.record {
        let live = match &result.ended {
            Ended::Done(o) => Ok(&o.output),
            Ended::Failed(e) => Err(e.kind.as_str()),
            Ended::Interrupted => {
                eprintln!("note: the run was interrupted: nothing recorded");
                return Ok(code);
            }
        };
        let spec = CaseSpec {
            about: format!(
                "a live run of {} recorded by packc run --record",
                args.pack.display()
            ),
            pack_file: record_pack_file.unwrap_or_default(),
            target: &target_text,
            script: &script,
            variables: &variables,
        };
        let (case, agrees) =
            to_case(&program, &result.recording, &spec, live).map_err(anyhow::Error::msg)?;
        let text = format!(
            "# Recorded by `packc run --record`; replay it with `packc test {}{}`.\n{}",
            allow_for(&args.pack, out),
            escape_control(&crate::shell::path(out)),
            packc_host::yaml::to_yaml(&case)
        );
        crate::files::write_atomically(out, text.as_bytes(), args.force)?;
        if !agrees {
            eprintln!(
                "warning: replaying the recording does not give the live result (a call was answered twice alike, or the run read the clock); check {}",
                out.display()
            );
        } else if chatty {
            eprintln!("recorded the run to {}", out.display());
        }
    }
    Ok(code)
}

/// `--allow-path DIR ` when the recorded case at `case` will need it to read `pack`: a
/// case reads its `pack_file` from its own folder, the folder above it or the current
/// folder, and the pack lies in none of the first two.
fn allow_for(pack: &Path, case: &Path) -> String {
    let real = |p: &Path| std::fs::canonicalize(crate::files::folder_of(p)).ok();
    let (Some(pack_dir), Some(case_dir)) = (real(pack), real(case)) else {
        return String::new();
    };
    let near = std::iter::once(case_dir.as_path())
        .chain(case_dir.parent())
        .any(|d| pack_dir.starts_with(d));
    if near {
        return String::new();
    }
    format!(
        "--allow-path {} ",
        escape_control(&crate::shell::path(&pack_dir))
    )
}

/// The live host's configuration from the live flags, checked before any call: the
/// model endpoint and its key, the provider bindings (RFC 0017 faults refuse the run with
/// exit 2, printed), the tool bindings, host validators and extension kinds the pack
/// needs. Warnings go to stderr (unless `quiet`, for the optional ones).
pub(crate) fn config(
    live: &LiveArgs,
    module: &Module,
    quiet: bool,
) -> Result<Result<LiveConfig, ExitCode>> {
    let timeout = timeout_secs(live.timeout, "--timeout").map_err(anyhow::Error::msg)?;
    let model = match live.provider {
        None => None,
        Some(crate::inputs::Provider::Openai) => Some(endpoint(live, quiet)?),
    };
    let mut providers = std::collections::BTreeMap::new();
    for b in &live.bind_provider {
        let api_key = match &b.key_env {
            Some(var) => Some(
                std::env::var(var)
                    .ok()
                    .filter(|k| !k.is_empty())
                    .with_context(|| {
                        format!(
                            "{var} is not set: export the API key for provider `{}` there",
                            b.key
                        )
                    })?,
            ),
            None => None,
        };
        let endpoint = ModelEndpoint {
            base_url: b.base_url.clone(),
            model: b.model.clone(),
            api_key,
        };
        if providers.insert(b.key.clone(), endpoint).is_some() {
            bail!("--bind-provider binds `{}` twice", b.key);
        }
        // A key the pack does not declare routes no call: most likely a misspelling.
        let declared = &module.spec.providers;
        if b.key != "default" && !declared.iter().any(|p| p.key == b.key) {
            let keys = declared
                .iter()
                .map(|p| p.key.as_str())
                .filter(|k| *k != "default");
            let hint = match ir_spec::suggest::suggest(&b.key, keys) {
                Some(near) => format!(" (did you mean `{near}`?)"),
                None => String::new(),
            };
            eprintln!(
                "{}",
                escape_control(&format!(
                    "warning: --bind-provider `{}` names no provider of the pack's `requires.providers`{hint}: no call goes there",
                    b.key
                ))
            );
        }
    }
    // `--provider` answers the calls of the providers no binding takes: with `default`
    // and every declared key bound, none, and its `--model` would be silently unused.
    let all_bound = providers.contains_key("default")
        && module
            .spec
            .providers
            .iter()
            .all(|p| providers.contains_key(&p.key));
    if all_bound && live.provider.is_some() {
        eprintln!(
            "warning: every provider of the pack, `default` included, is bound with --bind-provider: no call goes to --provider's model or --base-url"
        );
    }
    // RFC 0017 rules 3-4: refuse, before the first call, a pack with a call site whose
    // provider is unbound; list every fault.
    let mut check = provider_faults(module, |key| providers.contains_key(key));
    // Without a primary model every call routed to `default` would fail: refused too.
    if model.is_none() && !providers.contains_key("default") {
        if let Some(site) = packc_host::live::default_model_site(module) {
            check.faults.insert(
                0,
                format!(
                    "{site} calls the model, and no model is bound: pass --provider openai --model NAME (or --bind-provider default=URL,model=NAME)"
                ),
            );
        }
    }
    if !check.faults.is_empty() {
        for f in &check.faults {
            eprintln!("error[unbound_provider]: {}", escape_control(f));
        }
        eprintln!(
            "the run is refused before any request: {} provider fault(s)",
            check.faults.len()
        );
        return Ok(Err(ExitCode::from(2)));
    }
    if !quiet {
        for w in &check.warnings {
            eprintln!("warning: {}", escape_control(w));
        }
    }
    let tools = match &live.tools {
        Some(path) => ToolBindings::read(path).map_err(anyhow::Error::msg)?,
        None => ToolBindings::default(),
    };
    // Bindings are checked before the first call: a command that is not there or an
    // HTTP URL that does not parse stops the run now, not on the first call.
    let report = tools.check(module);
    for w in &report.warnings {
        eprintln!("warning: {}", escape_control(w));
    }
    if !report.errors.is_empty() {
        let file = live.tools.as_deref().unwrap_or(Path::new("--tools"));
        bail!("{}: {}", file.display(), report.errors.join("; "));
    }
    let unbound: Vec<String> = callable_tools(module)
        .into_iter()
        .filter(|k| !tools.tools.contains_key(k))
        .collect();
    if !unbound.is_empty() && !quiet {
        eprintln!(
            "warning: the pack may call tools that are not bound: {} (bind them with --tools FILE; a call to one fails as a host_error)",
            escape_control(&unbound.join(", "))
        );
    }
    let unbound_guards: Vec<String> = packc_host::live::host_guard_types(module)
        .into_iter()
        .filter(|t| !tools.guards.contains_key(t))
        .collect();
    let unbound_extensions: Vec<String> = packc_host::live::extension_kinds(module)
        .into_iter()
        .filter(|k| !tools.extensions.contains_key(k))
        .collect();
    let mut faults = Vec::new();
    if !unbound_guards.is_empty() {
        faults.push(packc_host::live::unbound_guards_message(&unbound_guards));
    }
    if !unbound_extensions.is_empty() {
        faults.push(packc_host::live::unbound_extensions_message(
            &unbound_extensions,
        ));
    }
    if !faults.is_empty() {
        bail!(faults.join("\n"));
    }
    Ok(Ok(LiveConfig {
        model,
        providers,
        tools,
        transport: TransportConfig {
            timeout,
            retries: live.retries,
            ..TransportConfig::default()
        },
        ..LiveConfig::default()
    }))
}

/// The model endpoint, and where its key comes from. The key in `OPENAI_API_KEY` goes to
/// api.openai.com only; another host gets a key only from a variable named with
/// `--api-key-env`. A key sent over plain HTTP to another machine is warned about, even
/// under `--quiet`.
fn endpoint(live: &LiveArgs, quiet: bool) -> Result<ModelEndpoint> {
    endpoint_of(
        live.base_url.clone(),
        live.model.clone(),
        live.api_key_env.as_deref(),
        quiet,
    )
}

/// [`endpoint`] from its parts (also for `packc resume`).
pub(crate) fn endpoint_of(
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<&str>,
    quiet: bool,
) -> Result<ModelEndpoint> {
    let base_url = base_url.unwrap_or_else(|| ModelEndpoint::OPENAI.to_owned());
    let shown = shown_url(&base_url);
    let Some(host) = url_host(&base_url) else {
        bail!("--base-url {shown} is not a URL with a host (e.g. http://127.0.0.1:8080/v1)");
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        bail!("--base-url {shown} is neither http:// nor https://");
    }
    if let Some(base) = ModelEndpoint::base_of(&base_url) {
        bail!(
            "--base-url {shown} ends with /chat/completions, which packc adds to it: give --base-url {}",
            shown_url(base)
        );
    }
    let read = |var: &str| std::env::var(var).ok().filter(|k| !k.is_empty());
    const DEFAULT_VAR: &str = "OPENAI_API_KEY";
    let api_key = match api_key_env {
        Some(var) => Some(read(var).with_context(|| {
            format!("{var} is not set: export the API key there (or name another variable with --api-key-env)")
        })?),
        None if host.eq_ignore_ascii_case(ModelEndpoint::OPENAI_HOST) => {
            Some(read(DEFAULT_VAR).with_context(|| {
                format!("{DEFAULT_VAR} is not set: export the API key there (or name another variable with --api-key-env)")
            })?)
        }
        None => {
            if read(DEFAULT_VAR).is_some() && !quiet {
                eprintln!(
                    "note: {DEFAULT_VAR} is not sent to {host}, only to {}; pass --api-key-env {DEFAULT_VAR} to send it there",
                    ModelEndpoint::OPENAI_HOST
                );
            }
            None
        }
    };
    if api_key.is_some() && base_url.starts_with("http://") && !is_loopback(host) {
        eprintln!(
            "warning: the API key is sent over plain HTTP to {host}, readable by anyone on the way; use https://"
        );
    }
    Ok(ModelEndpoint {
        base_url,
        model: model.unwrap_or_default(),
        api_key,
    })
}

/// A live host for a run driven one call at a time (`packc resume`, `--save`,
/// `--interactive`): the model when `provider`, the tool bindings of `tools`; `quiet`:
/// no notes.
pub(crate) fn host_for(
    provider: bool,
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<&str>,
    tools: Option<&Path>,
    timeout: f64,
    quiet: bool,
) -> Result<LiveHost> {
    let timeout = timeout_secs(timeout, "--timeout").map_err(anyhow::Error::msg)?;
    let model = match provider {
        true => Some(endpoint_of(base_url, model, api_key_env, quiet)?),
        false => None,
    };
    let tools = match tools {
        Some(path) => ToolBindings::read(path).map_err(anyhow::Error::msg)?,
        None => ToolBindings::default(),
    };
    Ok(LiveHost::new(LiveConfig {
        model,
        tools,
        transport: TransportConfig {
            timeout,
            ..TransportConfig::default()
        },
        ..LiveConfig::default()
    }))
}

/// `path` relative to `dir`, with `/` separators (for `pack_file`). A path that is not
/// UTF-8 cannot be written in a case file, and is refused.
fn relative_to(path: &Path, dir: &Path) -> Result<String> {
    let abs = |p: &Path| -> Result<PathBuf> {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        std::fs::canonicalize(p).with_context(|| format!("cannot resolve {}", p.display()))
    };
    let (path, dir) = (abs(path)?, abs(dir)?);
    let common = path
        .components()
        .zip(dir.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = dir.components().skip(common).map(|_| "..".into()).collect();
    for c in path.components().skip(common) {
        let Some(part) = c.as_os_str().to_str() else {
            bail!(
                "--record: the pack's path {} is not UTF-8, so a case file cannot name it; rename the pack",
                path.display()
            );
        };
        parts.push(part.to_owned());
    }
    Ok(parts.join("/"))
}

fn calls_text(stats: &Stats) -> String {
    let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let failed = if stats.tool_failures > 0 {
        format!(" ({} failed)", stats.tool_failures)
    } else {
        String::new()
    };
    format!(
        "{}, {}{failed}",
        plural(stats.model_calls, "model call"),
        plural(stats.tool_calls, "tool call")
    )
}

/// Where the run is, from its trace: "in state `s`, step `x`".
pub(crate) fn whereabouts(run: &Run) -> String {
    let lines = run.trace_lines();
    let state = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("enter "))
        .map(|s| format!("in state `{s}`"));
    let step = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("step "))
        .map(|s| format!("at step `{s}`"));
    match (state, step) {
        (Some(a), Some(b)) => format!("{a}, {b},"),
        (Some(a), None) | (None, Some(a)) => format!("{a},"),
        (None, None) => "before any step".to_owned(),
    }
}

/// The live status line on stderr (a terminal only), and the calls with their answers
/// for the JSON result.
struct Status {
    on: bool,
    shown: bool,
    last: Option<Instant>,
    frame: usize,
    /// Whether the calls are kept (`--format json`, or `--trace` on a terminal).
    keep_calls: bool,
    /// The records of the calls out, not answered yet.
    out: HashMap<CallId, Value>,
    /// The calls answered, in the order answered.
    answered: Vec<AnsweredCall>,
}

impl Status {
    fn new(on: bool, keep_calls: bool) -> Status {
        Status {
            on,
            shown: false,
            last: None,
            frame: 0,
            keep_calls,
            out: HashMap::new(),
            answered: Vec::new(),
        }
    }

    fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.shown = false;
        }
    }
}

impl Observer for Status {
    /// Every tool failure is a warning line as it happens, on a terminal or not: a run
    /// that ends normally must not hide a tool that never worked. The error quotes the
    /// tool's stderr, escaped.
    fn tool_failed(&mut self, _key: &str, error: &str) {
        self.clear();
        eprintln!("warning: {}", escape_control(error));
    }

    /// Likewise a host validator that gave no verdict: the run failed closed, so its
    /// output may be a validator's message although nothing judged the answer.
    fn guard_failed(&mut self, failure: &packc_host::live::GuardFailure) {
        self.clear();
        eprintln!("warning: {}", escape_control(&failure.to_string()));
    }

    fn call_sent(&mut self, call: &CallView<'_>) {
        if self.keep_calls {
            self.out.insert(call.id(), call.record().to_json());
        }
    }

    fn call_answered(&mut self, id: CallId, answer: &Answer) {
        if let Some(record) = self.out.remove(&id) {
            self.answered.push(AnsweredCall {
                id,
                record,
                answer: packc_host::calls::answer_json(answer),
            });
        }
    }

    fn update(&mut self, run: &Run, stats: &Stats) {
        if !self.on
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(80))
        {
            return;
        }
        self.last = Some(Instant::now());
        const SPIN: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        self.frame = (self.frame + 1) % SPIN.len();
        let mut line = format!(
            "{} {} {}",
            SPIN[self.frame],
            whereabouts(run).trim_end_matches(','),
            calls_text(stats)
        );
        if stats.in_flight > 0 {
            line.push_str(&format!(" ({} in flight)", stats.in_flight));
        }
        if stats.tokens > 0 {
            line.push_str(&format!(", {} tokens", stats.tokens));
        }
        eprint!("\r\x1b[2K{}", escape_control(&line));
        let _ = std::io::stderr().flush();
        self.shown = true;
    }
}
