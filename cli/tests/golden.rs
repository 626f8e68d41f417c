//! The checked-in golden artifact and its disassembly (STYLE item 7: bytes are a
//! contract). `tests/golden/rfc0010-ex2.ppk` is what `packc build` makes of
//! `examples/rfc0010-ex2.pack.yaml`, and `rfc0010-ex2.inspect.txt` is what `packc inspect`
//! prints for it. A change of layout shows up here as a diff, and must also change
//! `ir-spec/FORMAT.md`. Regenerate both with `UPDATE_GOLDEN=1 cargo test -p packc --test golden`.

use std::path::Path;
use std::process::Command;

mod common;
use common::repo;

fn packc(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_packc"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "packc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn check_or_update(path: &Path, actual: &[u8]) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        expected == actual,
        "{} differs from what packc makes now; if the change is intended, regenerate with UPDATE_GOLDEN=1 and update ir-spec/FORMAT.md",
        path.display()
    );
}

#[test]
fn golden_artifact_is_what_build_makes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ex2.ppk");
    packc(&[
        "build",
        "examples/rfc0010-ex2.pack.yaml",
        "-o",
        out.to_str().unwrap(),
    ]);
    check_or_update(
        &repo().join("tests/golden/rfc0010-ex2.ppk"),
        &std::fs::read(&out).unwrap(),
    );
}

#[test]
fn golden_disassembly_is_what_inspect_prints() {
    let text = packc(&["inspect", "tests/golden/rfc0010-ex2.ppk"]);
    check_or_update(&repo().join("tests/golden/rfc0010-ex2.inspect.txt"), &text);
}

#[test]
fn golden_artifact_runs() {
    assert_runs_ex2("tests/golden/rfc0010-ex2.ppk");
}

/// `tests/golden/rfc0010-ex2.format-1.0.ppk` is the same pack built by a format 1.0
/// compiler (no `spec` section): it still loads, as level 1.5, and runs.
#[test]
fn format_1_0_artifact_loads_as_level_1_5() {
    let text = String::from_utf8(packc(&[
        "inspect",
        "tests/golden/rfc0010-ex2.format-1.0.ppk",
    ]))
    .unwrap();
    assert!(text.contains("format:    1.0\n"), "{text}");
    assert!(!text.contains("(optional)"), "{text}");
    assert!(text.contains("  spec level: 1.5\n"), "{text}");
    let bytes = std::fs::read(repo().join("tests/golden/rfc0010-ex2.format-1.0.ppk")).unwrap();
    let a = ir_spec::Artifact::decode(&bytes, 1 << 20).unwrap();
    assert_eq!(a.module.spec, ir_spec::SpecInfo::default());
    assert_runs_ex2("tests/golden/rfc0010-ex2.format-1.0.ppk");
}

/// Runs the artifact at `ppk` against example 2's host script and checks its output.
#[track_caller]
fn assert_runs_ex2(ppk: &str) {
    let out = packc(&["run", ppk, "--host", "examples/rfc0010-ex2.host.yaml"]);
    let output: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        output["title"],
        "Deep Residual Learning for Image Recognition"
    );
}
