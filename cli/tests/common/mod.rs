//! What the CLI tests share: the `packc` binary under test, scratch folders, and its
//! output as text.
//!
//! Each test binary compiles its own copy of this module and uses part of it.
#![allow(dead_code)]

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

/// Asserts that the command's stderr contains `needle`, showing the stderr when not.
#[track_caller]
pub fn assert_stderr_contains(out: &Output, needle: &str) {
    assert!(stderr(out).contains(needle), "{}", stderr(out));
}
