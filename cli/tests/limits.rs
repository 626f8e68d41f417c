//! The limit flags of `packc check` and `packc build`: `--max-source-bytes N` and
//! `--limit NAME=N`, at the edge (the limits themselves are tested in the root
//! `tests/limits.rs`).

use std::path::PathBuf;
use std::process::{Command, Output};

fn packc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_packc"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

const EX2: &str = "examples/rfc0010-ex2.pack.yaml";

#[test]
fn limit_flags_at_the_edge() {
    // Example 2 has three prompts.
    let at = packc(&["check", "--limit", "max_prompts=3", EX2]);
    assert!(
        at.status.success(),
        "{}",
        String::from_utf8_lossy(&at.stderr)
    );
    let over = packc(&["check", "--format", "json", "--limit", "max_prompts=2", EX2]);
    assert_eq!(over.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&over.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("\"kind\":\"limit_exceeded\""), "{stdout}");
    assert!(stdout.contains("`max_prompts`"), "{stdout}");
    assert!(stdout.contains("\"pointer\":\"/prompts\""), "{stdout}");

    let size = std::fs::metadata(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(EX2),
    )
    .unwrap()
    .len()
    .to_string();
    let one_less = (size.parse::<u64>().unwrap() - 1).to_string();
    assert!(packc(&["check", "--max-source-bytes", &size, EX2])
        .status
        .success());
    let over = packc(&["check", "--max-source-bytes", &one_less, EX2]);
    assert_eq!(over.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&over.stderr).contains("`max_source_bytes`"));

    // `build` takes the same flags, and writes nothing past a limit.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("limits.ppk");
    let out_s = out.to_string_lossy().to_string();
    let over = packc(&["build", EX2, "-o", &out_s, "--limit", "max_prompts=2"]);
    assert_eq!(over.status.code(), Some(1));
    assert!(!out.exists());
    let at = packc(&["build", EX2, "-o", &out_s, "--limit", "max_prompts=3"]);
    assert!(
        at.status.success(),
        "{}",
        String::from_utf8_lossy(&at.stderr)
    );
    assert!(out.exists());
}

#[test]
fn unknown_or_malformed_limits_are_usage_errors() {
    for bad in [
        "max_everything=1",
        "max_prompts",
        "max_prompts=-1",
        "max_prompts=x",
    ] {
        let out = packc(&["check", "--limit", bad, EX2]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--limit"),
            "{bad}"
        );
    }
}
