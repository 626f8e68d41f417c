//! `packc run --provider ... / --tools ...`: a run against a real model and real tools,
//! with a status line on a terminal, Ctrl-C handling and `--record`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ir_spec::Module;
use packc_host::live::{
    callable_tools, provider_faults, Ended, LiveConfig, LiveHost, ModelEndpoint, Observer, Stats,
    ToolBindings, TransportConfig,
};
use packc_host::record::{to_case, CaseSpec};
use packc_vm::driver::ScriptItem;
use packc_vm::{Program, Run, RunOptions, Target};
use serde_json::Value;

use crate::run::{read_input, read_vars, RunArgs};

/// Runs `module` live. Exit codes: 0 done, 1 a run-time error, 130 interrupted.
pub fn run(args: &RunArgs, module: Module) -> Result<ExitCode> {
    if args.record.is_some() && crate::inspect::is_artifact(&args.pack)? {
        bail!(
            "--record writes a case that replays from the pack's source; run the pack file, not the artifact {}",
            args.pack.display()
        );
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds");
    }
    let model = match args.provider {
        None => None,
        Some(crate::run::Provider::Openai) => Some(endpoint(args)?),
    };
    let mut providers = std::collections::BTreeMap::new();
    for b in &args.bind_provider {
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
    }
    // RFC 0017 rules 3-4: refuse, before the first call, a pack with a call site whose
    // provider is unbound; list every fault.
    let check = provider_faults(&module, |key| providers.contains_key(key));
    if !check.faults.is_empty() {
        for f in &check.faults {
            eprintln!("error[unbound_provider]: {f}");
        }
        eprintln!(
            "the run is refused before any request: {} provider fault(s)",
            check.faults.len()
        );
        return Ok(ExitCode::from(2));
    }
    if !args.quiet {
        for w in &check.warnings {
            eprintln!("warning: {w}");
        }
    }
    let tools = match &args.tools {
        Some(path) => ToolBindings::read(path).map_err(anyhow::Error::msg)?,
        None => ToolBindings::default(),
    };
    let unbound: Vec<String> = callable_tools(&module)
        .into_iter()
        .filter(|k| !tools.tools.contains_key(k))
        .collect();
    if !unbound.is_empty() && !args.quiet {
        eprintln!(
            "warning: the pack may call tools that are not bound: {} (bind them with --tools FILE; a call to one fails as a host_error)",
            unbound.join(", ")
        );
    }
    let unbound_guards: Vec<String> = packc_host::live::host_guard_types(&module)
        .into_iter()
        .filter(|t| !tools.guards.contains_key(t))
        .collect();
    let unbound_extensions: Vec<String> = packc_host::live::extension_kinds(&module)
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
    let host = LiveHost::new(LiveConfig {
        model,
        providers,
        tools,
        transport: TransportConfig {
            timeout: Duration::from_secs_f64(args.timeout),
            retries: args.retries,
            ..TransportConfig::default()
        },
        concurrency: args.concurrency.max(1),
        record: args.record.is_some(),
        ..LiveConfig::default()
    });
    let cancel = host.cancel_flag();
    // The first Ctrl-C stops the run where it is; a second one exits at once.
    let _ = ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });

    let input = read_input(args)?.unwrap_or(Value::Null);
    let script = vec![ScriptItem::Turn(input)];
    let variables: serde_json::Map<String, Value> = read_vars(args)?.into_iter().collect();
    let target_text = args.target.clone().unwrap_or_else(|| "workflow".into());
    let program = Arc::new(Program::new(module)?);
    let target = Target::parse(program.module(), &target_text)?;
    let mut run = Run::new(
        program.clone(),
        target,
        RunOptions {
            host_variables: variables.clone(),
            ..RunOptions::default()
        },
    )?;
    // On a terminal: a status line and a closing summary. Otherwise (or with --quiet)
    // only the result, warnings and errors.
    let chatty = !args.quiet && std::io::stderr().is_terminal();
    let mut status = Status::new(chatty);
    let result = host.drive(&mut run, &script, &mut status);
    status.clear();

    if args.trace {
        for line in run.trace_lines() {
            eprintln!("{line}");
        }
    }
    let stats = result.stats;
    let code = match &result.ended {
        Ended::Done(outcome) => {
            println!("{}", serde_json::to_string_pretty(&outcome.output)?);
            crate::run::print_reply(outcome, args.quiet);
            ExitCode::SUCCESS
        }
        Ended::Failed(e) => {
            eprintln!("error[{}]: {}", e.kind.as_str(), e.message);
            ExitCode::from(1)
        }
        Ended::Interrupted => {
            eprintln!(
                "interrupted {} after {} ({} still in flight)",
                whereabouts(&run),
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
            Ended::Interrupted => bail!("the run was interrupted: nothing recorded"),
        };
        let spec = CaseSpec {
            about: format!(
                "a live run of {} recorded by packc run --record",
                args.pack.display()
            ),
            pack_file: relative_to(&args.pack, out.parent().unwrap_or(Path::new(".")))?,
            target: &target_text,
            script: &script,
            variables: &variables,
        };
        let (case, agrees) =
            to_case(&program, &result.recording, &spec, live).map_err(anyhow::Error::msg)?;
        let text = format!(
            "# Recorded by `packc run --record`; replay it with `packc test {}`.\n{}",
            out.display(),
            packc_host::yaml::to_yaml(&case)
        );
        std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
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

fn endpoint(args: &RunArgs) -> Result<ModelEndpoint> {
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| ModelEndpoint::OPENAI.to_owned());
    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    let needs_key = base_url.contains("api.openai.com") || args.api_key_env != "OPENAI_API_KEY";
    if api_key.is_none() && needs_key {
        bail!(
            "{} is not set: export the API key there (or name another variable with --api-key-env)",
            args.api_key_env
        );
    }
    Ok(ModelEndpoint {
        base_url,
        model: args.model.clone().unwrap_or_default(),
        api_key,
    })
}

/// `path` relative to `dir`, with `/` separators (for `pack_file`).
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
    parts.extend(
        path.components()
            .skip(common)
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    Ok(parts.join("/"))
}

fn calls_text(stats: &Stats) -> String {
    let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}",
        plural(stats.model_calls, "model call"),
        plural(stats.tool_calls, "tool call")
    )
}

/// Where the run is, from its trace: "in state `s`, step `x`".
fn whereabouts(run: &Run) -> String {
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

/// The live status line on stderr (a terminal only).
struct Status {
    on: bool,
    shown: bool,
    last: Option<Instant>,
    frame: usize,
}

impl Status {
    fn new(on: bool) -> Status {
        Status {
            on,
            shown: false,
            last: None,
            frame: 0,
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
        eprint!("\r\x1b[2K{line}");
        let _ = std::io::stderr().flush();
        self.shown = true;
    }
}
