//! `packc run`: compile a pack (or load a built `.ppk`) and run it with a scripted host,
//! printing the output.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use ir_spec::Module;
use packc_host::{RunSpec, ScriptedHost};
use packc_vm::driver::ScriptItem;
use packc_vm::{Input, Program, Run, RunOptions, Target};

use crate::hitl::{self, Stop};
use crate::inputs::{host_script, load_module, read_input, read_vars, RunArgs};
use crate::result::{error_line, print_reply, print_trace, why};
use packc_compiler::render::escape_control;
use serde_json::Value;

/// Compile (or load) and run; print the output as JSON. Exit 1 on compile or run-time
/// errors, 2 on an unreadable artifact.
pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let module = match load_module(
        &args.pack,
        &args.allow_paths,
        args.spec_level,
        crate::inputs::Shown::quiet(args.quiet),
    )? {
        Ok(module) => module,
        Err(code) => return Ok(code),
    };
    // A run of one agent member answers to that member's governance too.
    let member = match args.target.as_deref().map(|t| Target::parse(&module, t)) {
        Some(Ok(Target::Agent(a))) => Some(a),
        _ => None,
    };
    let admitted = match member {
        Some(a) => {
            packc_host::governance::member_admission(&module, a, args.environment.as_deref())
        }
        None => packc_host::governance::admission(&module, args.environment.as_deref()),
    };
    if let Err(refusal) = admitted {
        eprintln!("error: {}", escape_control(&refusal.to_string()));
        return Ok(ExitCode::from(2));
    }
    let live = args.host.is_none()
        && (args.live.provider.is_some()
            || args.live.tools.is_some()
            || !args.live.bind_provider.is_empty());
    if let Some(save) = &args.save {
        // Before any call: a live run is not spent only to find it cannot be saved.
        crate::files::check_target(save, &args.read_files(), "--save")?;
        crate::hitl::check_save_target(save)?;
    }
    if args.save.is_some() || args.interactive {
        return run_to_caller(args, module, live);
    }
    if live {
        return crate::live::run(args, module);
    }
    let (spec, _, mut run) = prepare(args, module, Some(args.live.max_host_calls))?;
    let mut scripted = ScriptedHost::new(&spec);
    let mut host = packc_host::calls::Recorder {
        inner: &mut scripted,
        calls: Vec::new(),
    };
    let mut waiting = None;
    let result = match hitl::drive(&mut run, &mut host, Input::Start, &spec.script, true) {
        Ok(Stop::Caller) => {
            let why = why(&run);
            if why.starts_with("waiting for an event") {
                waiting = Some(why);
            }
            hitl::drive(&mut run, &mut host, Input::Finish, &[], false)
        }
        other => other,
    };
    if args.trace {
        print_trace(&run);
        // On a terminal the calls follow, each with its input and answer, shortened.
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            for call in &host.calls {
                eprintln!("{}", crate::result::call_line(&call.to_json(), 100));
            }
        }
    }
    if args.format == crate::Format::Json {
        let ended = match &result {
            Ok(Stop::Done(o)) => Ok((&o.output, o.state.as_deref())),
            Err(e) => Err(e),
            Ok(Stop::Caller) => unreachable!("a run driven without pausing finishes"),
        };
        let calls = packc_host::calls::calls_json(&run.calls(), host.calls);
        let value = crate::result::to_json(&run, Some(ended), waiting, calls, 0);
        crate::out::json(&value);
        return Ok(match result {
            Ok(_) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(1),
        });
    }
    match result {
        Ok(Stop::Done(outcome)) => {
            crate::out::json(&outcome.output);
            if let Some(why) = waiting {
                eprintln!(
                    "note: the run stopped {}; run it with --save FILE, then `packc resume FILE --event NAME`",
                    escape_control(&why)
                );
            }
            print_reply(&outcome, args.quiet);
            Ok(ExitCode::SUCCESS)
        }
        Ok(Stop::Caller) => unreachable!("a run driven without pausing finishes"),
        Err(e) => {
            eprintln!("{}", error_line(&e));
            if let Some(place) = crate::result::place_line(&run) {
                eprintln!("{place}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// The scripted host's spec (`--host`, with `--input` and `--var` over it, and one null
/// turn when nothing gives one), the target's text (`--target`, else the spec's, else
/// `workflow`) and the run of it over `module`, with at most `max_host_calls` host calls.
fn prepare(
    args: &RunArgs,
    module: Module,
    max_host_calls: Option<u64>,
) -> Result<(RunSpec, String, Run)> {
    let (mut spec, mut turns) = match &args.host {
        Some(path) => host_script(path, Some(&module))?,
        None => (RunSpec::default(), false),
    };
    if let Some(value) = read_input(args)? {
        spec.script = vec![ScriptItem::Turn(value)];
        turns = true;
    }
    for (k, v) in read_vars(args, &module)? {
        spec.variables.insert(k, v);
    }
    // `--interactive` reads the turns from the terminal.
    if !turns && !args.quiet && !args.interactive {
        eprintln!("{}", crate::inputs::NO_INPUT);
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
    crate::inputs::check_turns(args, &target_text, &spec.script)?;
    let program = Arc::new(Program::new(module)?);
    let target = Target::parse(program.module(), &target_text)?;
    let run = Run::new(
        program,
        target,
        RunOptions {
            host_variables: spec.variables.clone(),
            max_host_calls,
            // The JSON result lists the calls.
            record_calls: args.format == crate::Format::Json,
            ..RunOptions::default()
        },
    )?;
    Ok((spec, target_text, run))
}

/// `--save` / `--interactive`: the run goes as far as its script (or the terminal) takes
/// it and stops when it waits for the caller, one call at a time.
fn run_to_caller(args: &RunArgs, module: Module, live: bool) -> Result<ExitCode> {
    let (spec, target_text, mut run) = prepare(args, module, None)?;
    let mut host = if live {
        let host = crate::live::host_for(
            args.live.provider.is_some(),
            args.live.base_url.clone(),
            args.live.model.clone(),
            args.live.api_key_env.as_deref(),
            args.live.tools.as_deref(),
            args.live.timeout,
            args.quiet,
        )?;
        hitl::CallerHost::Live(hitl::Blocking::new(host))
    } else {
        hitl::CallerHost::Scripted(ScriptedHost::new(&spec))
    };
    let printed = hitl::Printed {
        format: args.format,
        quiet: args.quiet,
        trace: args.trace,
        output_shown: false,
    };
    if args.interactive {
        let stdin = std::io::stdin();
        return hitl::interactive(&mut run, &mut host, &mut stdin.lock(), printed);
    }
    let mut recorder = packc_host::calls::Recorder {
        inner: &mut host,
        calls: Vec::new(),
    };
    let stop = hitl::drive(&mut run, &mut recorder, Input::Start, &spec.script, true);
    let answered = recorder.calls;
    if host.interrupted() {
        return Ok(hitl::CallerHost::stop_interrupted(&run, "(nothing saved)"));
    }
    let calls = hitl::Calls {
        answered,
        before: 0,
        tokens: host.tokens(),
        script_used: match &host {
            hitl::CallerHost::Scripted(script) => script.used(),
            hitl::CallerHost::Live(_) => Default::default(),
        },
    };
    let save = args
        .save
        .as_deref()
        .map(|f| (f, args.pack.as_path(), target_text.as_str()));
    hitl::finish(&mut run, stop, save, printed, calls)
}
