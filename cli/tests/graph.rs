//! `packc graph` on RFC 0010 Example 2, in both formats: the workflow's one terminal
//! state, the composition's steps in walk order, and the branch's labeled edges.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::assert_code;

fn graph(format: Option<&str>) -> String {
    let pack = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/rfc0010-ex2.pack.yaml");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_packc"));
    cmd.arg("graph").arg(pack);
    if let Some(f) = format {
        cmd.args(["--format", f]);
    }
    let out = cmd.output().unwrap();
    assert_code(&out, 0);
    String::from_utf8(out.stdout).unwrap()
}

fn assert_lines(text: &str, expected: &[&str]) {
    let lines: Vec<&str> = text.lines().collect();
    for line in expected {
        assert!(lines.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn dot_is_the_default() {
    let dot = graph(None);
    assert_eq!(dot, graph(Some("dot")));
    assert_lines(
        &dot,
        &[
            r#"digraph "rfc0010-ex2-analyze-document" {"#,
            r#"    s0 [label="main\ncomposition analyze_document", peripheries=2];"#,
            r#"    c0_0 [label="classify\nprompt doc_classifier"];"#,
            r#"    c0_1 [label="route\nbranch", shape=diamond];"#,
            r#"    c0_2 [label="extract_paper\nprompt research_paper_extractor"];"#,
            r#"    c0_3 [label="extract_general\nprompt general_doc_extractor"];"#,
            "  wf_entry -> s0;",
            "  c0_0 -> c0_1;",
            r#"  c0_1 -> c0_2 [label="then"];"#,
            r#"  c0_1 -> c0_3 [label="else"];"#,
            "}",
        ],
    );
    // The else target runs only when the branch takes it: no edge from the then target.
    assert!(!dot.contains("c0_2 -> c0_3"), "{dot}");
    // Steps appear in walk order.
    let at = |s: &str| dot.find(s).unwrap();
    assert!(
        at("c0_0 [") < at("c0_1 [") && at("c0_1 [") < at("c0_2 [") && at("c0_2 [") < at("c0_3 [")
    );
}

#[test]
fn mermaid() {
    let text = graph(Some("mermaid"));
    assert_lines(
        &text,
        &[
            "flowchart TD",
            r#"  subgraph wf["workflow"]"#,
            r#"    s0((("main<br/>composition analyze_document")))"#,
            r#"  subgraph c0["composition analyze_document"]"#,
            r#"    c0_0["classify<br/>prompt doc_classifier"]"#,
            r#"    c0_1{"route<br/>branch"}"#,
            "  wf_entry --> s0",
            "  c0_0 --> c0_1",
            r#"  c0_1 -->|"then"| c0_2"#,
            r#"  c0_1 -->|"else"| c0_3"#,
        ],
    );
}

#[test]
fn a_pack_with_errors_exits_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pack = dir.join("bad.pack.yaml");
    std::fs::write(&pack, "id: demo\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_packc"))
        .arg("graph")
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}
