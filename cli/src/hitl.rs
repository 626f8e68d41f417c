//! Human in the loop from the command line: a run that stops waiting for the caller (a
//! turn, or an event such as an approval) is saved with `packc run --save FILE` and
//! continued with `packc resume FILE --turn JSON | --event NAME`; `packc run
//! --interactive` reads the turns from the terminal instead.
//!
//! A save file is a few header lines, a blank line, then the VM snapshot
//! (`packc_vm::snapshot`):
//!
//! ```text
//! packc-run-save 1
//! pack: /abs/path/review.pack.yaml
//! target: workflow
//! module: 5f0c8e1a2b3c4d5e
//! answered: {"prompt draft":1}
//! <blank line>
//! <snapshot bytes>
//! ```
//!
//! `module` is the fingerprint of the compiled module the run belongs to: resuming with
//! a pack that compiles to anything else is refused before the snapshot is read.
//! `answered` (present when a host script answered calls) counts the script's answers
//! used so far, by queue: `packc resume --host` with the same script goes on after
//! them, so one script serves the whole session.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use packc_host::live::{Job, LiveHost};
use packc_vm::driver::{drive_from, Host, ScriptItem};
use packc_vm::{CallView, Input, OwnedOutcome, Program, Run, RunError, RunOptions};

use crate::result::{error_line, print_trace, print_trace_from, why};
use packc_compiler::render::escape_control;
use packc_host::calls::AnsweredCall;
use serde_json::Value;

const HEADER: &str = "packc-run-save 1";

/// Refuses a `--save` file that exists but is not a save file (a pack, a host script):
/// saving replaces it.
pub fn check_save_target(path: &Path) -> Result<()> {
    crate::files::check_replaceable(path, HEADER.as_bytes(), "--save", "a packc save file")
}

/// Where a run stopped.
pub enum Stop {
    /// It ended with this outcome.
    Done(OwnedOutcome),
    /// It waits for the caller: a turn, or an event.
    Caller,
}

/// Drives `run` with `host` through `script`: the VM's drive loop
/// ([`drive_from`]), started (or continued) with `first`. When the script is used up
/// and the run asks for the caller: with `pause`, returns [`Stop::Caller`] (the caller
/// stops the loop, so that a person can answer later); without, finishes the run.
pub fn drive(
    run: &mut Run,
    host: &mut dyn Host,
    first: Input,
    script: &[ScriptItem],
    pause: bool,
) -> Result<Stop, RunError> {
    /// The script is used up and the run waits for the caller.
    struct Paused;
    let mut script = script.iter();
    let caller = |_: &mut _| match script.next() {
        None if pause => Err(Paused),
        item => Ok(ScriptItem::input(item)),
    };
    match drive_from(run, host, first, caller, |_, _, _, _| Ok(())) {
        Ok(Ok(())) => match run.outcome() {
            Some(o) => Ok(Stop::Done(o.into_owned())),
            None => Err(RunError::new(
                packc_vm::ErrorKind::Internal,
                "the run is done without an outcome",
            )),
        },
        Ok(Err(e)) => Err(e),
        Err(Paused) => Ok(Stop::Caller),
    }
}

/// A run saved between two turns.
pub struct Saved {
    /// The pack or artifact the run was started from.
    pub pack: PathBuf,
    /// The run's target.
    pub target: String,
    /// The fingerprint of its module.
    pub module: u64,
    /// The VM snapshot.
    pub snapshot: Vec<u8>,
    /// The host script's answers the run has used, by queue (`prompt NAME`, ...;
    /// [`ScriptedHost::used`](packc_host::ScriptedHost::used)): a resume with a script
    /// goes on after them. Written only when some were used.
    pub answered: BTreeMap<String, u64>,
}

impl Saved {
    /// Writes the save file.
    pub fn write(&self, path: &Path) -> Result<()> {
        let pack = std::path::absolute(&self.pack).unwrap_or_else(|_| self.pack.clone());
        let mut head = format!(
            "{HEADER}\npack: {}\ntarget: {}\nmodule: {:016x}\n",
            pack.display(),
            self.target,
            self.module
        );
        if !self.answered.is_empty() {
            let used = serde_json::to_string(&self.answered).unwrap_or_default();
            head.push_str(&format!("answered: {used}\n"));
        }
        head.push('\n');
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.snapshot);
        crate::files::write_atomically(path, &bytes, true)
    }

    /// Reads a save file.
    pub fn read(path: &Path) -> Result<Saved> {
        // The snapshot's own bound, and room for the header lines.
        let limit = RunOptions::default().max_snapshot_bytes as u64 + 64 * 1024;
        let bytes = packc_compiler::paths::read_regular(path, limit)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let bad = || anyhow::anyhow!("{}: not a run saved by `packc run --save`", path.display());
        let end = bytes
            .windows(2)
            .position(|w| w == b"\n\n")
            .ok_or_else(bad)?;
        let head = std::str::from_utf8(&bytes[..end]).map_err(|_| bad())?;
        let mut lines = head.lines();
        if lines.next() != Some(HEADER) {
            return Err(bad());
        }
        let (mut pack, mut target, mut module) = (None, None, None);
        let mut answered = BTreeMap::new();
        for line in lines {
            match line.split_once(": ") {
                Some(("pack", v)) => pack = Some(PathBuf::from(v)),
                Some(("target", v)) => target = Some(v.to_owned()),
                Some(("module", v)) => module = u64::from_str_radix(v, 16).ok(),
                Some(("answered", v)) => answered = serde_json::from_str(v).map_err(|_| bad())?,
                _ => return Err(bad()),
            }
        }
        match (pack, target, module) {
            (Some(pack), Some(target), Some(module)) => Ok(Saved {
                pack,
                target,
                module,
                snapshot: bytes[end + 2..].to_vec(),
                answered,
            }),
            _ => Err(bad()),
        }
    }
}

/// Continue a run saved by `packc run --save` with one turn or event.
///
/// The run goes on until it is done or waits for the caller again (then the file is
/// rewritten); the output and why it stopped are printed. The pack must compile to the
/// module the run was saved from.
///
/// Examples:
///   packc run review.pack.yaml --input '"draft it"' --host h.yaml --save run.snap
///   packc resume run.snap --event Approve --host h.yaml
///   packc resume run.snap --turn '{"text": "one more change"}' --provider openai --model gpt-4o-mini
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ResumeArgs {
    /// The file `packc run --save` wrote; rewritten when the run stops waiting again.
    #[arg(value_name = "SAVED")]
    pub saved: PathBuf,
    /// The next turn's input, as JSON (`'"yes"'`, `'{"text": "yes"}'`) or `@file`.
    #[arg(long, value_name = "JSON", conflicts_with = "event")]
    pub turn: Option<String>,
    /// The event to send (an approval: `--event Approve`).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// The pack (or `.ppk`) the run was started from, when it has moved; it must compile
    /// to the same module.
    #[arg(long, value_name = "PACK")]
    pub pack: Option<PathBuf>,
    /// Let the pack read files (schema files) from this folder too (as `packc run
    /// --allow-path`).
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// Read the pack at this spec level instead of the one its `$schema` claims (as
    /// `packc run --spec-level`).
    #[arg(long, value_name = "LEVEL", value_parser = crate::check::parse_spec_level)]
    pub spec_level: Option<ir_spec::SpecLevel>,
    /// Answer the calls from a host script (as `packc run --host`).
    #[arg(long, value_name = "FILE", conflicts_with = "provider")]
    pub host: Option<PathBuf>,
    /// Answer model calls with a real model (as `packc run --provider`).
    #[arg(long, value_enum, requires = "model")]
    pub provider: Option<crate::inputs::Provider>,
    /// The model name (as `packc run --model`).
    #[arg(long, value_name = "NAME", requires = "provider", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub model: Option<String>,
    /// The API base URL (as `packc run --base-url`).
    #[arg(long, value_name = "URL", requires = "provider")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (as `packc run --api-key-env`).
    #[arg(long, value_name = "VAR", requires = "provider")]
    pub api_key_env: Option<String>,
    /// Tool bindings (as `packc run --tools`).
    #[arg(long, value_name = "FILE", conflicts_with = "host")]
    pub tools: Option<PathBuf>,
    /// The longest one model or HTTP call may take, in seconds (at most 86400).
    #[arg(long, value_name = "SECS", default_value_t = 120.0, value_parser = crate::inputs::parse_timeout)]
    pub timeout: f64,
    /// The most model and tool calls the run may make, counting those made before it
    /// was saved; the call past it fails the run with `limit_exceeded`.
    #[arg(long, value_name = "N", default_value_t = crate::inputs::DEFAULT_MAX_HOST_CALLS)]
    pub max_host_calls: u64,
    /// Print the trace lines of the whole run to stderr.
    #[arg(long)]
    pub trace: bool,
    /// Print only the result: no notes, no line saying where the run stopped.
    #[arg(long, short)]
    pub quiet: bool,
    /// `human` (the default) prints the output alone, as JSON; `json` prints the whole
    /// result as one JSON object, as `packc run --format json` does (its `calls` are
    /// those made since the run was saved).
    #[arg(
        long,
        value_enum,
        default_value_t = crate::Format::Human,
        hide_possible_values = true
    )]
    pub format: crate::Format,
}

/// `offer` (how to send an event) when the run's state takes caller events now, else
/// nothing: elsewhere an event is `invalid_event` (a state the model drives) or
/// `terminal_state` (`workflow.md` §7).
fn or_event<'a>(run: &Run, offer: &'a str) -> &'a str {
    if run.caller_events().is_empty() {
        ""
    } else {
        offer
    }
}

/// Continues a saved run with one turn or event, then as far as it goes.
pub fn resume(args: &ResumeArgs) -> Result<ExitCode> {
    let saved = Saved::read(&args.saved)?;
    let pack = args.pack.clone().unwrap_or_else(|| saved.pack.clone());
    // A save file may come from someone else: the pack it names is compiled without
    // printing its diagnostics (they quote its text), and only a regular file of at most
    // a pack's size is read. A pack named on the command line is the user's own.
    let from_save = args.pack.is_none();
    let shown = if from_save {
        crate::inputs::Shown::Nothing
    } else {
        crate::inputs::Shown::quiet(args.quiet)
    };
    let module = match crate::inputs::load_module(&pack, &args.allow_paths, args.spec_level, shown)
    {
        Ok(Ok(m)) => m,
        Ok(Err(code)) if !from_save => return Ok(code),
        Ok(Err(_)) => bail!(
            "{} was saved from the pack {}, which does not compile now: check it with `packc check {}`, or name the pack the run started from with --pack",
            args.saved.display(),
            pack.display(),
            crate::shell::path(&pack)
        ),
        Err(e) if from_save => bail!(
            "{} was saved from the pack {}, which cannot be read now ({}); if it moved, name it with --pack",
            args.saved.display(),
            pack.display(),
            e.root_cause()
        ),
        Err(e) => return Err(e),
    };
    let fingerprint = packc_vm::snapshot::fingerprint(&module);
    if fingerprint != saved.module {
        bail!(
            "{} was saved from another artifact (module {:016x}); {} compiles to module {fingerprint:016x}: resume with the pack the run started from (--pack)",
            args.saved.display(),
            saved.module,
            pack.display()
        );
    }
    let program = Arc::new(Program::new(module)?);
    let printed = Printed {
        format: args.format,
        quiet: args.quiet,
        trace: args.trace,
        output_shown: false,
    };
    let options = RunOptions {
        max_host_calls: Some(args.max_host_calls),
        // The JSON result lists the calls.
        record_calls: printed.format == crate::Format::Json,
        ..RunOptions::default()
    };
    let mut run = Run::restore_with(program, &saved.snapshot, &options)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.saved.display()))?;
    let first = match (&args.turn, &args.event) {
        (Some(turn), _) => Input::Turn(crate::inputs::parse_input("--turn", turn)?),
        (None, Some(event)) => Input::Event(event.clone()),
        (None, None) => bail!(
            "give --turn JSON{}: the saved run is {}",
            or_event(&run, " or --event NAME"),
            why(&run)
        ),
    };
    // The call log of a run saved with one holds the calls made before; only those
    // made now have their answers here.
    let before = run.calls().len();
    let program = run.program().clone();
    let mut host = resume_host(args, program.module())?;
    // A host script goes on after the answers the run used before it was saved.
    if let CallerHost::Scripted(script) = &mut host {
        script.skip(&saved.answered);
    }
    let mut recorder = packc_host::calls::Recorder {
        inner: &mut host,
        calls: Vec::new(),
    };
    let stop = drive(&mut run, &mut recorder, first, &[], true);
    let answered = recorder.calls;
    if host.interrupted() {
        let unchanged = format!("({} is unchanged)", args.saved.display());
        return Ok(CallerHost::stop_interrupted(&run, &unchanged));
    }
    let calls = Calls {
        answered,
        before,
        tokens: host.tokens(),
        script_used: match &host {
            CallerHost::Scripted(script) => script.used(),
            CallerHost::Live(_) => saved.answered.clone(),
        },
    };
    finish(
        &mut run,
        stop,
        Some((&args.saved, &pack, &saved.target)),
        printed,
        calls,
    )
}

fn resume_host(args: &ResumeArgs, module: &ir_spec::Module) -> Result<CallerHost> {
    if args.provider.is_some() || args.tools.is_some() {
        let host = crate::live::host_for(
            args.provider.is_some(),
            args.base_url.clone(),
            args.model.clone(),
            args.api_key_env.as_deref(),
            args.tools.as_deref(),
            args.timeout,
            args.quiet,
        )?;
        return Ok(CallerHost::Live(Blocking::new(host)));
    }
    let spec = match &args.host {
        Some(path) => crate::inputs::host_spec(path, Some(module))?,
        None => packc_host::RunSpec::default(),
    };
    Ok(CallerHost::Scripted(packc_host::ScriptedHost::new(&spec)))
}

/// The host of a run driven one call at a time (`packc resume`, `packc run --save` and
/// `--interactive`): the live host, or a host script.
pub enum CallerHost {
    /// The live host.
    Live(Blocking),
    /// A host script.
    Scripted(packc_host::ScriptedHost),
}

impl CallerHost {
    /// The tokens used, as the model API reported them (0 for a host script).
    pub fn tokens(&self) -> u64 {
        match self {
            CallerHost::Live(b) => b.tokens,
            CallerHost::Scripted(_) => 0,
        }
    }

    /// Whether Ctrl-C stopped the live host's calls: the run is not what it would have
    /// been, so it is neither saved nor reported as ended.
    pub fn interrupted(&self) -> bool {
        match self {
            CallerHost::Live(b) => b.cancelled(),
            CallerHost::Scripted(_) => false,
        }
    }

    /// Says where the run was when Ctrl-C stopped it, and that nothing was saved
    /// (`saved`: what is left as it was); exit code 130.
    pub fn stop_interrupted(run: &Run, saved: &str) -> ExitCode {
        eprintln!(
            "interrupted {} {saved}",
            escape_control(crate::live::whereabouts(run).trim_end_matches(','))
        );
        ExitCode::from(130)
    }

    fn host(&mut self) -> &mut dyn Host {
        match self {
            CallerHost::Live(b) => b,
            CallerHost::Scripted(s) => s,
        }
    }
}

impl Host for CallerHost {
    fn call(&mut self, call: &CallView<'_>) -> packc_vm::Answer {
        self.host().call(call)
    }

    fn clock(&mut self) -> u64 {
        self.host().clock()
    }

    fn pick(&mut self, outstanding: &[CallView<'_>]) -> usize {
        self.host().pick(outstanding)
    }
}

/// The live host answering one call at a time on this thread (a resumed or interactive
/// run waits for each answer anyway).
pub struct Blocking {
    /// The host.
    pub host: LiveHost,
    /// When the run started, for the clock.
    pub started: Instant,
    /// The tokens used so far, as the model API reported them.
    pub tokens: u64,
    /// Whether a call is being answered now (what Ctrl-C stops).
    busy: Arc<AtomicBool>,
    /// The host's cancel flag, set by Ctrl-C.
    cancel: Arc<AtomicBool>,
}

impl Blocking {
    /// `host`, its clock starting now. Ctrl-C (or SIGTERM) during a call sets the host's
    /// cancel flag, which stops that call (a running tool's whole process group
    /// included) and the run after it ([`CallerHost::interrupted`]); between calls (at
    /// the `--interactive` prompt), or a second time, it ends the process with 130.
    pub fn new(host: LiveHost) -> Blocking {
        let busy = Arc::new(AtomicBool::new(false));
        let cancel = host.cancel_flag();
        let (flag, in_call) = (cancel.clone(), busy.clone());
        let _ = ctrlc::set_handler(move || {
            if flag.swap(true, Ordering::SeqCst) || !in_call.load(Ordering::SeqCst) {
                eprintln!();
                std::process::exit(130);
            }
        });
        Blocking {
            host,
            started: Instant::now(),
            tokens: 0,
            busy,
            cancel,
        }
    }

    /// Whether Ctrl-C has set the cancel flag.
    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Carries out `job` on a thread of its own, waiting for it until the cancel flag is
    /// set (Ctrl-C): a request in flight is then left to the thread, which the process
    /// outlives no longer than it takes to report where the run stopped; a tool command
    /// stops itself, its process group killed.
    fn answer_interruptibly(&self, job: Job) -> (packc_vm::Answer, u64) {
        let host = self.host.clone();
        let interrupted = || (packc_vm::Answer::Error("interrupted".into()), 0);
        if self.cancelled() {
            return interrupted();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(host.answer(&job));
        });
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(answered) => return answered,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.cancelled() {
                        return interrupted();
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let failed = "the call failed: the thread carrying it out stopped";
                    return (packc_vm::Answer::Error(failed.into()), 0);
                }
            }
        }
    }
}

impl Host for Blocking {
    fn call(&mut self, call: &CallView<'_>) -> packc_vm::Answer {
        self.busy.store(true, Ordering::SeqCst);
        let (answer, tokens) = self.answer_interruptibly(Job::of(call));
        self.busy.store(false, Ordering::SeqCst);
        if self.cancelled() {
            // The run stops here; where is said once, by the command.
            return answer;
        }
        self.tokens = self.tokens.saturating_add(tokens);
        // The error quotes the tool's stderr, the failure a validator's answer.
        if let (Some(key), packc_vm::Answer::Error(e)) = (call.tool(), &answer) {
            let line = format!("warning: tool `{key}` failed: {e}");
            eprintln!("{}", escape_control(&line));
        }
        if let Some(failure) = self.host.guard_failure(call, &answer) {
            eprintln!("warning: {}", escape_control(&failure.to_string()));
        }
        answer
    }

    fn clock(&mut self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// How the end of a run driven one call at a time is printed, as `packc run` prints it.
#[derive(Clone, Copy, Debug)]
pub struct Printed {
    /// `human`: the output alone; `json`: the whole result ([`crate::result`]).
    pub format: crate::Format,
    /// Leave out the line saying where the run stopped.
    pub quiet: bool,
    /// Print the trace lines to stderr.
    pub trace: bool,
    /// In the human format, the output was already printed (an interactive session's
    /// last turn, ended with `/quit`): do not print it again.
    pub output_shown: bool,
}

/// What the JSON result needs besides the run: the calls answered now, how many calls
/// the run's log held before them (a resumed run's), and the tokens used.
#[derive(Default)]
pub struct Calls {
    /// The calls answered, in the order answered.
    pub answered: Vec<AnsweredCall>,
    /// The calls logged before (made before the run was saved).
    pub before: usize,
    /// The tokens used, as the model API reported them.
    pub tokens: u64,
    /// The host script's answers used so far, over saves ([`Saved::answered`]).
    pub script_used: BTreeMap<String, u64>,
}

/// Prints where the run stopped and its output (or, `--format json`, the whole result);
/// saves it to `save` (the file, the pack path and the target) when it waits for the
/// caller. Exit 0 done or waiting, 1 failed.
pub fn finish(
    run: &mut Run,
    stop: Result<Stop, RunError>,
    save: Option<(&Path, &Path, &str)>,
    printed: Printed,
    calls: Calls,
) -> Result<ExitCode> {
    if printed.trace {
        print_trace(run);
    }
    if let (Ok(Stop::Caller), Some((file, pack, target))) = (&stop, save) {
        Saved {
            pack: pack.to_path_buf(),
            target: target.to_owned(),
            module: packc_vm::snapshot::fingerprint(run.program().module()),
            snapshot: run.snapshot(),
            answered: calls.script_used.clone(),
        }
        .write(file)?;
    }
    let code = match &stop {
        Err(_) => ExitCode::from(1),
        Ok(_) => ExitCode::SUCCESS,
    };
    if printed.format == crate::Format::Json {
        let ended = match &stop {
            Ok(Stop::Done(o)) => Some(Ok((&o.output, o.state.as_deref()))),
            Ok(Stop::Caller) => None,
            Err(e) => Some(Err(e)),
        };
        let log = run.calls();
        let log = log.get(calls.before..).unwrap_or_default();
        let list = packc_host::calls::calls_json(log, calls.answered);
        let value = crate::result::to_json(run, ended, None, list, calls.tokens);
        crate::out::json(&value);
    }
    let human = printed.format == crate::Format::Human;
    match stop {
        Ok(Stop::Done(outcome)) => {
            if human && !printed.output_shown {
                crate::out::json(&outcome.output);
            }
            if !printed.quiet {
                eprintln!("stopped: done");
            }
        }
        Ok(Stop::Caller) => {
            if let Some(idle) = run.idle().filter(|_| human) {
                crate::out::json(idle.output);
            }
            let why = escape_control(&why(run)).into_owned();
            match save {
                _ if printed.quiet => {}
                Some((file, _, _)) => {
                    let or_event = or_event(run, " or `--event NAME`");
                    let word = escape_control(&crate::shell::path(file)).into_owned();
                    let file = escape_control(&file.display().to_string()).into_owned();
                    eprintln!(
                        "stopped: {why}; saved to {file} (continue with `packc resume {word} --turn JSON`{or_event})"
                    );
                }
                None => eprintln!("stopped: {why}"),
            }
        }
        Err(e) => {
            if human {
                eprintln!("{}", error_line(&e));
                if let Some(place) = crate::result::place_line(run) {
                    eprintln!("{place}");
                }
            }
        }
    }
    Ok(code)
}

/// `packc run --interactive`: the run's turns come from `input`, one line each (a JSON
/// object or array as such, any other line as a string); `/event NAME` sends an event,
/// `/quit` or the end of input finishes the run. After each turn the output and where
/// the run stopped are printed (with `--trace`, after the turn's trace lines).
pub fn interactive(
    run: &mut Run,
    host: &mut CallerHost,
    input: &mut dyn BufRead,
    printed: Printed,
) -> Result<ExitCode> {
    let mut next = Input::Start;
    let mut turns = 0;
    let mut traced = 0;
    // Whether the output the run waits with was printed: finishing then ends the run
    // with that same output.
    let mut shown = false;
    loop {
        let finishing = next == Input::Finish;
        let stop = drive(run, host, next, &[], true);
        if host.interrupted() {
            return Ok(CallerHost::stop_interrupted(run, "(the session ends)"));
        }
        if printed.trace {
            traced = print_trace_from(run, traced);
        }
        match stop {
            Ok(Stop::Caller) => {
                shown = false;
                if let Some(idle) = run.idle().filter(|_| turns > 0) {
                    crate::out::json(idle.output);
                    shown = true;
                }
                turns += 1;
                eprintln!("stopped: {}", escape_control(&why(run)));
                eprint!("> ");
                let _ = std::io::stderr().flush();
            }
            other => {
                // The trace is printed up to here.
                let printed = Printed {
                    trace: false,
                    output_shown: finishing && shown,
                    ..printed
                };
                return finish(run, other, None, printed, Calls::default());
            }
        }
        next = loop {
            let mut line = String::new();
            let read = input
                .read_line(&mut line)
                .context("cannot read the next turn")?;
            let line = line.trim_end_matches(['\n', '\r']);
            if read == 0 || line == "/quit" {
                break Input::Finish;
            }
            let Some(event) = line.strip_prefix("/event ") else {
                break Input::Turn(turn_value(line));
            };
            // An event the run would refuse (not one the state takes, or in a terminal
            // state) ends a run; it is tried on a copy first, and the session goes on.
            let event = event.trim().to_owned();
            match try_event(run, &event) {
                Ok(()) => break Input::Event(event),
                Err(e) => {
                    let line = crate::result::error_line(&e);
                    eprintln!("{line}; the run is still waiting");
                    eprint!("> ");
                    let _ = std::io::stderr().flush();
                }
            }
        };
    }
}

/// Whether the run takes `event` now: tried on a copy of the run, which is dropped.
fn try_event(run: &Run, event: &str) -> std::result::Result<(), RunError> {
    let mut copy = Run::restore(run.program().clone(), &run.snapshot())
        .map_err(|e| RunError::new(packc_vm::ErrorKind::Internal, e.to_string()))?;
    copy.resume(Input::Event(event.to_owned())).map(|_| ())
}

/// A typed line as a turn's input: a JSON object or array as such, anything else as the
/// string it is.
fn turn_value(line: &str) -> Value {
    let t = line.trim();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(v) = serde_json::from_str(t) {
            return v;
        }
    }
    Value::String(line.to_owned())
}
