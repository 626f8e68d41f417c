//! What the CLI tests share: the `packc` binary under test, scratch folders, and its
//! output as text.
//!
//! Each test binary compiles its own copy of this module and uses part of it.
#![allow(dead_code, unused_macros, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `packc` binary of this build. `OPENAI_API_KEY` is removed from its environment, so
/// no test reaches a hosted API by accident and the key handling is tested on purpose.
pub fn packc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_packc"));
    c.env_remove("OPENAI_API_KEY");
    c
}

/// The repository root (examples, shared cases).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An empty folder of its own for one test, under cargo's temporary folder for
/// integration tests and named after the test binary, so binaries running at the same
/// time never share one.
pub fn scratch(name: &str) -> PathBuf {
    let binary = module_path!().split("::").next().unwrap_or("cli");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-{binary}"))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `dir/name` and returns that path.
pub fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// What the command printed on stdout, lossily decoded.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the command printed on stderr, lossily decoded.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that the command exited with `code`, showing its stderr when it did not.
#[track_caller]
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
}

/// Runs `packc <args>` (a shell command line's arguments) on a terminal, a pty from
/// util-linux `script`, with its stdout sent to /dev/null, asserts that it succeeded and
/// returns what the terminal showed. `None`, with a note, where there is no `script`.
#[track_caller]
pub fn on_a_terminal(args: &str) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to make a terminal");
        return None;
    }
    let command = format!("{} {args} >/dev/null", env!("CARGO_BIN_EXE_packc"));
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    Some(shown)
}

/// `packc build <pack> -o <out>`.
pub fn build_to(pack: impl AsRef<std::ffi::OsStr>, out: impl AsRef<std::ffi::OsStr>) -> Output {
    packc()
        .arg("build")
        .arg(pack)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

/// Builds `pack` to `ppk`, asserting success, and returns what `packc inspect <ppk>`
/// printed.
#[track_caller]
pub fn built_and_inspected(pack: &Path, ppk: &Path) -> String {
    assert_code(&build_to(pack, ppk), 0);
    stdout(&packc().arg("inspect").arg(ppk).output().unwrap())
}

/// `packc run <pack> --host <host>`.
pub fn run_host(pack: impl AsRef<std::ffi::OsStr>, host: impl AsRef<std::ffi::OsStr>) -> Output {
    packc()
        .arg("run")
        .arg(pack)
        .arg("--host")
        .arg(host)
        .output()
        .unwrap()
}

/// Asserts that `text` contains `needle`, showing the text when it does not.
#[track_caller]
pub fn assert_contains(text: impl AsRef<str>, needle: &str) {
    let text = text.as_ref();
    assert!(text.contains(needle), "{text}");
}

/// Asserts that `text` does not contain `needle`, showing the text when it does.
#[track_caller]
pub fn assert_lacks(text: impl AsRef<str>, needle: &str) {
    let text = text.as_ref();
    assert!(!text.contains(needle), "{text}");
}

/// `packc run --provider openai --model m --base-url <url>`: a live run against a
/// loopback mock server, to which the test adds the pack and the rest.
pub fn live(base_url: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = packc();
    c.args(["run", "--provider", "openai", "--model", "m", "--base-url"])
        .arg(base_url);
    c
}

/// Runs [`packc`] with these arguments and returns its output. An argument is one value
/// (`&pack`, `"check"`) or an array of values of one type (`["check", "--format", "json"]`).
/// `packc_output!(with command; args...)` starts from another `Command` instead.
macro_rules! packc_output {
    (with $cmd:expr; $($t:tt)*) => {{
        let mut c = $cmd;
        $crate::common::packc_output!(@push c; $($t)*);
        c.output().unwrap()
    }};
    (@push $c:ident;) => {};
    (@push $c:ident; [$($a:expr),* $(,)?] $(, $($rest:tt)*)?) => {
        $c.args([$($a),*]);
        $crate::common::packc_output!(@push $c; $($($rest)*)?);
    };
    (@push $c:ident; $a:expr $(, $($rest:tt)*)?) => {
        $c.arg($a);
        $crate::common::packc_output!(@push $c; $($($rest)*)?);
    };
    ($($t:tt)*) => {{
        let mut c = $crate::common::packc();
        $crate::common::packc_output!(@push c; $($t)*);
        c.output().unwrap()
    }};
}
pub(crate) use packc_output;

/// Runs [`live`] against `base_url` with these further arguments (as [`packc_output!`]
/// takes them) and returns its output.
macro_rules! live_output {
    ($base_url:expr $(, $($t:tt)*)?) => {{
        let mut c = $crate::common::live($base_url);
        $crate::common::packc_output!(@push c; $($($t)*)?);
        c.output().unwrap()
    }};
}
pub(crate) use live_output;

/// Asserts that the command's stderr contains `needle`, showing the stderr when not.
#[track_caller]
pub fn assert_stderr_contains(out: &Output, needle: &str) {
    assert!(stderr(out).contains(needle), "{}", stderr(out));
}
