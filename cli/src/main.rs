//! `packc`: compile PromptPacks to verified bytecode and run them.
//!
//! Exit codes: 0 clean, 1 the packs have errors (or warnings under `--deny-warnings`),
//! 2 usage or I/O trouble, or an artifact that is not a valid `.ppk` file.

/// `println!` that does not panic when standard output fails ([`out::write`]).
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that does not panic when standard output fails ([`out::write`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// `eprintln!` that does not panic when standard error cannot be written
/// ([`out::err`]): `packc batch … 2>&1 >/dev/null | head` closes it early, and a command
/// whose work is done must not end as a crash for want of a place to say so.
macro_rules! eprintln {
    () => {
        $crate::out::err(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that does not panic when standard error cannot be written ([`out::err`]).
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::out::err(format_args!($($arg)*))
    };
}

mod batch;
mod bench;
mod build;
mod check;
mod files;
mod graph;
mod hitl;
mod inputs;
mod inspect;
mod live;
mod out;
mod result;
mod run;
mod shell;
mod test;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// packc compiles PromptPacks (portable YAML/JSON packages of prompts, tools, workflows,
/// agents and compositions) into a verified bytecode artifact, and runs them.
#[derive(Parser, Debug)]
#[command(name = "packc", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's arguments are defined only when it is the one invoked (`defer`):
/// defining all of them cost more at every start than checking a small pack. A
/// subcommand's help is the doc comment of its arguments struct, applied with them;
/// the one line here is what `packc --help` lists.
#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum Command {
    /// Check packs for errors without building anything.
    Check(check::CheckArgs),
    /// Check a pack and compile it into a `.ppk` artifact.
    Build(build::BuildArgs),
    /// Show what a `.ppk` artifact holds.
    Inspect(inspect::InspectArgs),
    /// Draw a pack's workflow and compositions as a Graphviz or Mermaid graph.
    Graph(graph::GraphArgs),
    /// Run conformance cases (`*.case.yaml`) with scripted model and tool answers.
    Test(test::TestArgs),
    /// Compile a pack (or load a built `.ppk`) and run it, printing the output as JSON.
    Run(Box<inputs::RunArgs>),
    /// Continue a run saved by `packc run --save` with one turn or event.
    Resume(hitl::ResumeArgs),
    /// Run a pack's scripted run many times in process and measure the VM.
    Bench(bench::BenchArgs),
    /// Run a pack live once per row of a dataset, many rows at once, restartably.
    Batch(Box<batch::BatchArgs>),
}

/// Counts allocations for `packc bench`; the system allocator otherwise.
#[global_allocator]
static ALLOC: bench::CountingAlloc = bench::CountingAlloc;

/// How diagnostics are printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Source excerpts with labels, like rustc.
    #[default]
    Human,
    /// One JSON object per line: kind, severity, message, file, line, column, pointer, help.
    Json,
}

/// When to colour output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour output written to stderr.
    pub fn for_stderr(self) -> bool {
        use std::io::IsTerminal;
        self.colour(|| std::io::stderr().is_terminal())
    }

    /// Whether to colour output written to stdout (`packc test`'s `FAIL` lines).
    pub fn for_stdout(self) -> bool {
        use std::io::IsTerminal;
        self.colour(|| std::io::stdout().is_terminal())
    }

    /// `Auto`: colour on a terminal (`is_terminal`) or where `CLICOLOR_FORCE` asks, unless
    /// `NO_COLOR` is set.
    fn colour(self, is_terminal: impl FnOnce() -> bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                !no_color(std::env::var_os("NO_COLOR")) && (is_terminal() || force_color())
            }
        }
    }
}

/// Whether `CLICOLOR_FORCE` asks for colour where it would not be (not a terminal): set,
/// not empty and not `0`. `NO_COLOR` still wins.
fn force_color() -> bool {
    std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether `NO_COLOR` turns colour off: set and not empty (no-color.org: "when present
/// and not an empty string").
fn no_color(value: Option<std::ffi::OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

/// Leaves `value` to the operating system instead of freeing it: for what a command
/// holds when it is about to return and the process to exit. Freeing a large pack's
/// trees one node at a time costs about a tenth of checking it, for nothing.
pub fn leave_until_exit<T>(value: T) {
    std::mem::forget(value);
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Graph(args) => graph::run(&args),
        Command::Test(args) => test::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Resume(args) => hitl::resume(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Batch(args) => batch::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) if out::is_closed_pipe(&err) => out::closed_pipe(),
        Err(err) => {
            // Errors quote pack text, server answers and paths: escape what a terminal
            // would interpret.
            let text = format!("{err:#}");
            eprintln!("error: {}", packc_compiler::render::escape_control(&text));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_non_empty_no_color_turns_colour_off() {
        assert!(!super::no_color(None));
        assert!(!super::no_color(Some("".into())));
        assert!(super::no_color(Some("1".into())));
    }
}
