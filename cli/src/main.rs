//! `packc`: compile PromptPacks to verified bytecode and run them.
//!
//! Exit codes: 0 clean, 1 the packs have errors (or warnings under `--deny-warnings`),
//! 2 usage or I/O trouble, or an artifact that is not a valid `.ppk` file.

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
mod result;
mod run;
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

#[derive(Subcommand, Debug)]
enum Command {
    /// Check packs for errors without building anything.
    ///
    /// Every pack is parsed (YAML 1.2 or JSON), validated against the schema of its spec
    /// level (its `$schema` claim, or `--spec-level`) and checked against every rule of
    /// the spec. All problems of a file are
    /// reported in one pass, in source order, each pointing at its line.
    ///
    /// Examples:
    ///   packc check examples/rfc0010-ex2.pack.yaml
    ///   packc check --format json packs/*.yaml
    ///   packc check --deny-warnings my.pack.json
    #[command(verbatim_doc_comment)]
    Check(check::CheckArgs),
    /// Check a pack and compile it into a `.ppk` artifact.
    ///
    /// Diagnostics are printed as by `packc check`; when there is an error nothing is
    /// written and the exit code is 1. The artifact records the SHA-256 of the source and
    /// the compiler version; the same pack always gives the same bytes.
    ///
    /// Examples:
    ///   packc build examples/rfc0010-ex2.pack.yaml        # writes examples/rfc0010-ex2.ppk
    ///   packc build my.pack.json -o build/my.ppk
    #[command(verbatim_doc_comment)]
    Build(build::BuildArgs),
    /// Show what a `.ppk` artifact holds.
    ///
    /// Prints the header (format version, compiler, source SHA-256, size, checksum), the
    /// sections with their sizes, then the module: prompts, tools, workflow states with
    /// their transitions, agents, and each composition's steps in walk order. A file that
    /// is not a valid artifact is an error (exit 2).
    ///
    /// Examples:
    ///   packc inspect examples/rfc0010-ex2.ppk
    #[command(verbatim_doc_comment)]
    Inspect(inspect::InspectArgs),
    /// Draw a pack's workflow and compositions as a Graphviz or Mermaid graph.
    ///
    /// Compiles the pack (or loads a built `.ppk`) and prints one graph. The workflow:
    /// states as nodes (terminal states double-bordered), an edge per `on_event`
    /// transition labeled with its event, and a dashed `max_visits N` edge to each
    /// `on_max_visits` target. Each composition: its steps in walk order joined by
    /// plain edges, a branch's `then` / `else` edges labeled (a branch without `else`
    /// also gets a dashed `false: skip` edge; a step only a branch selects has no plain
    /// edge into it), a parallel step boxed with its branches, and a dashed edge from
    /// each `depends_on` step to its dependent.
    ///
    /// Examples:
    ///   packc graph examples/rfc0010-ex2.pack.yaml | dot -Tsvg > ex2.svg
    ///   packc graph examples/guide-add-workflow.pack.yaml --format mermaid
    #[command(verbatim_doc_comment)]
    Graph(graph::GraphArgs),
    /// Run conformance cases (`*.case.yaml`) with scripted model and tool answers.
    ///
    /// Each case compiles its pack, runs it against a scripted host and compares the
    /// output, error, calls and trace with its `expect`. One line is printed per failing
    /// case with what differed, then `N passed, N failed`.
    ///
    /// Examples:
    ///   packc test ../shared/conformance/cases
    ///   packc test examples/cases/rfc0010-ex2.case.yaml
    #[command(verbatim_doc_comment)]
    Test(test::TestArgs),
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
    #[command(verbatim_doc_comment)]
    Run(Box<inputs::RunArgs>),
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
    #[command(verbatim_doc_comment)]
    Resume(hitl::ResumeArgs),
    /// Run a pack's scripted run many times in process and measure the VM.
    ///
    /// The pack is compiled once; each run is a fresh run of the same program answered
    /// by the host script. Prints runs per second, the time of one run (min, median,
    /// p99), host calls per run and allocations per run (counted by the binary's
    /// allocator during each run: the VM, the scripted host and the driver). Use a
    /// release build (`cargo install --path cli`) for figures worth comparing.
    ///
    /// Examples:
    ///   packc bench examples/rfc0010-ex2.pack.yaml --host examples/rfc0010-ex2.host.yaml
    ///   packc bench pack.ppk --host h.yaml --target composition:analyze --runs 10000
    #[command(verbatim_doc_comment)]
    Bench(bench::BenchArgs),
    /// Run a pack live once per row of a dataset, many rows at once, restartably.
    ///
    /// Each row of `--input` (JSON Lines, CSV, or `-` for stdin) is the input of one run
    /// against the model of the live flags (as `packc run --provider ...`). Each result
    /// is one JSON line of `--output`, in input order (or as rows finish, with
    /// `--unordered`): `{"id", "output" | "error": {"kind", "message", "where"},
    /// "calls", "tokens", "wall_ms"}`; `id` is the row's `id` member (or CSV column),
    /// else its line number. A row that is not JSON, is a bad CSV record or does not
    /// match the target's input_schema fails alone; the batch goes on.
    ///
    /// A journal beside the output (`<output>.journal.sqlite`) keeps every finished row
    /// and the last state of every row in flight: after a crash, a kill or Ctrl-C, the
    /// same command goes on where the batch was, without running a finished row again or
    /// asking an answered call again. `--fresh` starts over. Limits shared by all rows:
    /// `--concurrency` model calls in flight (default 64), `--rpm`, `--tpm`; a 429 holds
    /// every row's requests for its Retry-After.
    ///
    /// Exit codes: 0 every row ran (failed rows included), 1 stopped by
    /// `--max-failures`, 2 refused before any call (unreadable input, unwritable output,
    /// a journal of another pack or input), 130 interrupted.
    ///
    /// Examples:
    ///   packc batch pack.yaml --input rows.jsonl --output results.jsonl \
    ///       --provider openai --model gpt-4o-mini --rpm 500
    ///   packc batch pack.ppk --input tickets.csv --output out.jsonl --provider openai \
    ///       --model local --base-url http://127.0.0.1:8080/v1 --concurrency 256
    ///   cat rows.jsonl | packc batch pack.yaml --input - --output out.jsonl --unordered ...
    #[command(verbatim_doc_comment)]
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
    /// One JSON object per line: kind, severity, message, file, line, column, pointer.
    Json,
}

/// When to colour output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and `NO_COLOR` is unset.
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
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
            }
        }
    }
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
        Err(err) => {
            // Errors quote pack text, server answers and paths: escape what a terminal
            // would interpret.
            let text = format!("{err:#}");
            eprintln!("error: {}", packc_compiler::render::escape_control(&text));
            ExitCode::from(2)
        }
    }
}
