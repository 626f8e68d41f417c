//! `packc build`, `packc inspect` and `packc run` on built `.ppk` artifacts.

use std::path::Path;
use std::process::Output;

mod common;
use common::{
    assert_code, assert_contains, assert_stderr_contains, build_to, packc_output, repo, scratch,
    stderr, write,
};

/// `packc build <pack> -o <out>`, asserting success.
fn build(pack: &Path, out: &Path) {
    let res = build_to(pack, out);
    assert_code(&res, 0);
    let size = std::fs::metadata(out).unwrap().len();
    // Notes (such as `no_spec_version`) may come first; the last line is the result.
    assert_eq!(
        stderr(&res).trim_end().lines().last().unwrap_or_default(),
        format!("wrote {} ({size} bytes)", out.display())
    );
}

/// Builds `examples/<example>` to `<dir>/<name>` and returns the artifact's bytes.
fn build_example(dir: &Path, example: &str, name: &str) -> Vec<u8> {
    let ppk = dir.join(name);
    build(&repo().join("examples").join(example), &ppk);
    std::fs::read(&ppk).unwrap()
}

fn run_with_host(pack: &Path, host: &Path, input: &str) -> Output {
    packc_output!("run", pack, ["--input", input, "--trace", "--host"], host)
}

#[test]
fn running_the_artifact_matches_running_the_source() {
    let dir = scratch("run");
    let host = write(&dir, "host.yaml", "host:\n  prompts:\n    doc_classifier:\n      - output: {type: research_paper, confidence: 0.9}\n    research_paper_extractor:\n      - output: {title: T, authors: [A], summary: S, findings: [F]}\n");
    let pack = repo().join("examples/rfc0010-ex2.pack.yaml");
    let ppk = dir.join("ex2.ppk");
    build(&pack, &ppk);
    let input = r#"{"text": "a paper"}"#;
    let from_source = run_with_host(&pack, &host, input);
    let from_ppk = run_with_host(&ppk, &host, input);
    assert_code(&from_source, 0);
    assert_code(&from_ppk, 0);
    assert_eq!(
        String::from_utf8_lossy(&from_ppk.stdout),
        String::from_utf8_lossy(&from_source.stdout)
    );
    // The trace too, line for line.
    assert_eq!(stderr(&from_ppk), stderr(&from_source));
    let output: serde_json::Value = serde_json::from_slice(&from_ppk.stdout).unwrap();
    assert_eq!(output["title"], "T");
}

#[test]
fn default_output_replaces_the_suffix_and_builds_are_reproducible() {
    let dir = scratch("default");
    let pack = dir.join("wf.pack.yaml");
    std::fs::copy(repo().join("examples/guide-add-workflow.pack.yaml"), &pack).unwrap();
    let res = packc_output!("build", &pack);
    assert_code(&res, 0);
    let ppk = dir.join("wf.ppk");
    let first = std::fs::read(&ppk).unwrap();
    assert_stderr_contains(
        &res,
        &format!("wrote {} ({} bytes)", ppk.display(), first.len()),
    );
    let again = dir.join("again.ppk");
    build(&pack, &again);
    assert_eq!(std::fs::read(&again).unwrap(), first);
}

#[test]
fn a_pack_with_errors_writes_nothing_and_exits_one() {
    let dir = scratch("errors");
    let pack = write(&dir, "bad.pack.yaml", "id: [unclosed\n");
    let res = packc_output!(["build", "--color", "never"], &pack);
    assert_eq!(res.status.code(), Some(1));
    assert_stderr_contains(&res, "parse_error");
    assert!(!dir.join("bad.ppk").exists());
}

#[test]
fn inspect_shows_header_sections_and_module() {
    let dir = scratch("inspect");
    let pack = repo().join("examples/rfc0010-ex3.pack.yaml");
    let ppk = dir.join("ex3.ppk");
    build(&pack, &ppk);
    let res = packc_output!("inspect", &ppk);
    assert_code(&res, 0);
    let text = String::from_utf8(res.stdout).unwrap();
    let hash: String = packc_compiler::source_hash(&std::fs::read(&pack).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let size = std::fs::metadata(&ppk).unwrap().len();
    for expected in [
        "format:    1.2".to_owned(),
        format!("compiler:  {}", packc_compiler::COMPILER_VERSION),
        format!("source:    sha256:{hash}"),
        format!("size:      {size} bytes"),
        "checksum:  crc32:".to_owned(),
        "  MODL ".to_owned(),
        "  spec ".to_owned(),
        "  spec level: 1.5".to_owned(),
        "    main  composition deep_analyze  composition  terminal".to_owned(),
        "      0 extract_metadata  parallel 4 branch(es), reduce barrier into metadata".to_owned(),
        "        1 title  prompt title_extractor".to_owned(),
        "        3 structure  tool doc.parse_structure".to_owned(),
        "      5 synthesize  agent doc_analyzer".to_owned(),
    ] {
        assert!(text.contains(&expected), "missing {expected:?} in\n{text}");
    }

    // A workflow's transitions.
    let ppk = dir.join("wf.ppk");
    build(&repo().join("examples/guide-add-workflow.pack.yaml"), &ppk);
    let res = packc_output!("inspect", &ppk);
    let text = String::from_utf8(res.stdout).unwrap();
    assert_contains(
        &text,
        "    triage  prompt triage  internal\n      on billing -> billing_state\n",
    );
}

#[test]
fn corrupt_artifacts_exit_two_with_one_line() {
    let dir = scratch("corrupt");
    let bytes = build_example(&dir, "rfc0010-ex1.pack.yaml", "ok.ppk");

    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x10;
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("flipped.ppk", flipped, "corrupted .ppk file: checksum"),
        (
            "cut.ppk",
            bytes[..bytes.len() - 9].to_vec(),
            "truncated .ppk file",
        ),
        ("short.ppk", bytes[..20].to_vec(), "truncated .ppk file"),
        ("empty.ppk", Vec::new(), "truncated .ppk file: 0 bytes"),
        ("text.ppk", b"hello".to_vec(), "not a .ppk file"),
    ];
    for (name, content, message) in cases {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let res = packc_output!("inspect", &path);
        assert_eq!(res.status.code(), Some(2), "{name}");
        assert!(res.stdout.is_empty(), "{name}");
        let err = stderr(&res);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(
            err.starts_with(&format!("error: cannot load {}: ", path.display())),
            "{name}: {err}"
        );
        assert!(err.contains(message), "{name}: {err}");
    }

    // `run` refuses a damaged artifact the same way (recognised by its magic).
    let res = packc_output!("run", dir.join("flipped.ppk"));
    assert_eq!(res.status.code(), Some(2));
    assert_stderr_contains(&res, "corrupted .ppk file");
}

/// A cut artifact is reported as truncated with both lengths, not as corrupted; an empty
/// file named `.ppk` is an artifact too (not a pack that fails to parse).
#[test]
fn cut_and_empty_artifacts_are_truncated() {
    let dir = scratch("cut");
    let bytes = build_example(&dir, "rfc0010-ex2.pack.yaml", "ex2.ppk");
    let cut = write(&dir, "cut.ppk", &bytes[..bytes.len() - 100]);
    for command in ["inspect", "run"] {
        let out = packc_output!(command, &cut);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "truncated .ppk file: {} bytes, but its section payload needs ",
                bytes.len() - 100,
            )),
            "{command}: {}",
            stderr(&out)
        );
    }
    let empty = write(&dir, "empty.ppk", b"");
    let out = packc_output!("run", &empty);
    assert_code(&out, 2);
    assert_stderr_contains(&out, "truncated .ppk file: 0 bytes");
}
