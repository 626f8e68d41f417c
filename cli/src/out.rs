//! Standard output that does not panic. `println!` panics when stdout cannot be written,
//! which is common: `packc run … | head` closes the pipe early. Here a reader that went
//! away ends the process quietly with exit code 141, as a process stopped by `SIGPIPE`
//! reports in a shell (the default action is not restored: it would also stop the
//! process when a tool command closes its end of a pipe); any other failure to write
//! (a full disk) is an error, exit code 2.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// The exit code of a process whose output pipe was closed: 128 + `SIGPIPE` (13).
const CLOSED_PIPE: u8 = 141;

/// Writes `args` to standard output ([`outln!`] and [`out!`]), ending the process when
/// that fails.
pub fn write(args: std::fmt::Arguments<'_>) {
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(i32::from(CLOSED_PIPE));
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(2);
    }
}

/// Writes `args` to standard error ([`eprintln!`] and [`eprint!`] in this crate). A
/// failure is ignored: what could not be said to a closed or full standard error is
/// lost, and the command goes on to end with the exit code its work earned. When
/// standard error is coloured ([`set_stderr_color`]), a line's leading `error:`,
/// `error[kind]:` or `warning:` is painted red or yellow, as `packc check` paints its
/// diagnostics.
pub fn err(args: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = if stderr_color() {
        stderr.write_all(paint_levels(&args.to_string()).as_bytes())
    } else {
        stderr.write_fmt(args)
    };
}

static STDERR_COLOR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Sets whether standard error is coloured, for a command with a `--color` flag; only
/// the first call counts. Otherwise [`ColorChoice::Auto`](crate::ColorChoice::Auto)
/// decides, when something is first written.
pub fn set_stderr_color(on: bool) {
    let _ = STDERR_COLOR.set(on);
}

fn stderr_color() -> bool {
    *STDERR_COLOR.get_or_init(|| crate::ColorChoice::Auto.for_stderr())
}

const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[1;33m";
const GREEN: &str = "\x1b[1;32m";
const RESET: &str = "\x1b[0m";

/// `text` with each line's leading level (`error`, `error[kind]`, `warning`, before a
/// `:`) painted: errors red, warnings yellow.
pub fn paint_levels(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive('\n') {
        let level = ["error:", "error[", "warning:"]
            .into_iter()
            .find(|p| line.starts_with(p))
            .and_then(|_| line.find(':'));
        match level {
            Some(end) => {
                let colour = if line.starts_with("warning") {
                    YELLOW
                } else {
                    RED
                };
                out.push_str(colour);
                out.push_str(&line[..end]);
                out.push_str(RESET);
                out.push_str(&line[end..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `word` painted when `on`: red for a failure (`FAIL`), green otherwise.
pub fn paint(word: &str, failure: bool, on: bool) -> String {
    if !on {
        return word.to_owned();
    }
    let colour = if failure { RED } else { GREEN };
    format!("{colour}{word}{RESET}")
}

/// Writes `value` to standard output as indented JSON and a newline, its control
/// characters escaped (`packc_compiler::render::json_pretty`): the JSON outputs of
/// `packc run` and `packc resume`.
pub fn json(value: &serde_json::Value) {
    write(format_args!(
        "{}\n",
        packc_compiler::render::json_pretty(value)
    ));
}

/// Whether `err` comes from writing to a pipe whose reader went away.
pub fn is_closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == ErrorKind::BrokenPipe)
    })
}

/// The quiet end of a command whose output pipe was closed.
pub fn closed_pipe() -> ExitCode {
    ExitCode::from(CLOSED_PIPE)
}
