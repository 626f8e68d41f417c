//! `docs/authoring.md` works as written: every YAML block that names a file (its first
//! line `# name`) is written to a scratch folder, each pack checks with no error, the
//! workflow block added to the full pack checks too, the host script runs the pack to the
//! output the guide shows, and the case file passes `packc test`'s runner.

use std::path::Path;

use packc_compiler::{check_bytes, Options};

/// The YAML blocks of the guide, each with the name its first line gives.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```yaml\n") {
        let body = &rest[start + 8..];
        let end = body.find("```").expect("a closed block");
        let block = &body[..end];
        let first = block.lines().next().unwrap_or_default();
        let name = first.trim_start_matches("# ").to_owned();
        out.push((name, block.to_owned()));
        rest = &body[end + 3..];
    }
    out
}

fn check(dir: &Path, text: &str) {
    let options = Options {
        base_dir: Some(dir.to_path_buf()),
        ..Options::default()
    };
    let checked = check_bytes(text.as_bytes(), &options);
    assert!(!checked.has_errors(), "{text}\n{:#?}", checked.diagnostics);
}

#[test]
fn the_authoring_guide_works_as_written() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/authoring.md"))
            .unwrap();
    let blocks = blocks(&text);
    let names: Vec<&str> = blocks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "support.pack.yaml",
            "support.pack.yaml, in full",
            "To add to support.pack.yaml, beside `compositions`:",
            "support.host.yaml",
            "cases/support-order.case.yaml",
        ]
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("cases")).unwrap();
    // The first pack alone, the full pack, and the full pack with the workflow added.
    check(dir, &blocks[0].1);
    check(dir, &blocks[1].1);
    check(dir, &format!("{}{}", blocks[1].1, blocks[2].1));
    std::fs::write(dir.join("support.pack.yaml"), &blocks[1].1).unwrap();
    std::fs::write(dir.join("support.host.yaml"), &blocks[3].1).unwrap();
    let case = dir.join("cases/support-order.case.yaml");
    std::fs::write(&case, &blocks[4].1).unwrap();
    packc_host::run_case_file(&case).unwrap();
    // Without `depends_on`, the check notes what the guide says it notes.
    let without = blocks[1].1.replace("        depends_on: [lookup]\n", "");
    assert_ne!(without, blocks[1].1);
    let checked = check_bytes(without.as_bytes(), &Options::default());
    assert!(checked
        .diagnostics
        .iter()
        .any(|d| d.kind.as_str() == "skippable_reference"));
}
