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
/// lost, and the command goes on to end with the exit code its work earned.
pub fn err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
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
