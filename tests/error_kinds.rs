//! Every stable kind has a trigger that exists and expects it: each diagnostic kind of
//! `compiler/src/diag.rs` (its `Triggered by:` line) and each runtime kind of
//! `vm/src/error.rs` ([`ErrorKind::trigger`]). A trigger is a case file (looked up in
//! `tests/cases`, `examples/cases` and, when present, `../shared/conformance/cases`)
//! whose `expect` names the kind, or a test file and test name whose file names the
//! kind; `-` marks the one kind only a bug triggers (`internal`).

use std::path::PathBuf;

use packc_compiler::diag::DiagKind;
use packc_vm::ErrorKind;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folders a case file name is looked up in; the shared cases are skipped when the
/// checkout has none.
fn case_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("tests/cases"), root().join("examples/cases")];
    let shared = root().join("../shared/conformance/cases");
    if shared.is_dir() {
        dirs.push(shared);
    }
    dirs
}

/// The case file `name`, if one of the folders holds it.
fn find_case(name: &str) -> Option<PathBuf> {
    case_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Checks `trigger` for the kind `name`, spelled `spelled` in Rust source; returns what
/// is wrong.
fn check(kind: &str, name: &str, spelled: &str, trigger: &str, compile: bool) -> Option<String> {
    let trigger = trigger.trim();
    if let Some(file) = trigger
        .rsplit('/')
        .next()
        .filter(|f| f.ends_with(".case.yaml"))
    {
        let Some(path) = find_case(file) else {
            if !root().join("../shared/conformance/cases").is_dir() {
                return None;
            }
            return Some(format!("{kind} `{name}`: no case `{file}`"));
        };
        let text = std::fs::read_to_string(&path).ok()?;
        let expect = &text[text.find("\nexpect:").unwrap_or(0)..];
        let expects = if compile {
            // `compile_error: x`, `warnings: [x]`, `notes: [x]`, `kind: x`.
            expect
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == name)
        } else {
            expect.lines().any(|l| {
                l.trim()
                    .strip_prefix("error:")
                    .is_some_and(|v| v.trim() == name)
            })
        };
        return (!expects)
            .then(|| format!("{kind} `{name}`: `{}` does not expect it", path.display()));
    }
    let (file, test) = match trigger.split_once("::") {
        Some((file, test)) => (file, Some(test)),
        None => (trigger.split(',').next().unwrap_or(trigger), None),
    };
    let path = root().join(file.trim());
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Some(format!("{kind} `{name}`: no test file `{file}`"));
    };
    if let Some(test) = test {
        if !text.contains(&format!("fn {test}(")) {
            return Some(format!("{kind} `{name}`: no test `{test}` in `{file}`"));
        }
    }
    (!text.contains(spelled) && !text.contains(name))
        .then(|| format!("{kind} `{name}`: `{file}` does not name it"))
}

/// The `(variant, name, trigger)` rows of `diag_kinds!`, read from its source.
fn diag_rows() -> Vec<(String, String, String)> {
    let src = std::fs::read_to_string(root().join("compiler/src/diag.rs")).unwrap();
    let table = &src[src.find("diag_kinds! {").expect("the table")..];
    let mut rows = Vec::new();
    let mut trigger = String::new();
    for line in table.lines().skip(1) {
        let line = line.trim();
        if line == "}" {
            break;
        }
        if let Some(t) = line.strip_prefix("/// Triggered by:") {
            trigger = t.trim().to_owned();
        } else if !line.starts_with("///") {
            if let Some((variant, rest)) = line.split_once(" = \"") {
                let name = rest.split('"').next().unwrap_or_default().to_owned();
                rows.push((
                    variant.trim().to_owned(),
                    name,
                    std::mem::take(&mut trigger),
                ));
            }
        }
    }
    rows
}

#[test]
fn every_diagnostic_kind_has_a_trigger_that_expects_it() {
    let rows = diag_rows();
    assert_eq!(rows.len(), DiagKind::ALL.len(), "a row per kind");
    let mut wrong = Vec::new();
    for (variant, name, trigger) in &rows {
        assert!(DiagKind::from_name(name).is_some(), "`{name}` is a kind");
        if trigger.is_empty() {
            wrong.push(format!("diagnostic `{name}`: no `Triggered by:` line"));
            continue;
        }
        let spelled = format!("DiagKind::{variant}");
        wrong.extend(check("diagnostic", name, &spelled, trigger, true));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_runtime_kind_has_a_trigger_that_expects_it() {
    let mut wrong = Vec::new();
    for &kind in ErrorKind::ALL {
        let name = kind.as_str();
        assert_eq!(ErrorKind::from_name(name), Some(kind));
        if kind.trigger() == "-" {
            assert_eq!(kind, ErrorKind::Internal, "only `internal` has no trigger");
            continue;
        }
        let spelled = format!("ErrorKind::{kind:?}");
        wrong.extend(check("runtime kind", name, &spelled, kind.trigger(), false));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_trigger_that_does_not_expect_its_kind_is_reported() {
    // The check itself can fail: a case that expects another kind.
    let case = "comp-no-output.case.yaml";
    if find_case(case).is_some() {
        assert!(check(
            "runtime kind",
            "host_error",
            "ErrorKind::HostError",
            case,
            false
        )
        .is_some());
        assert!(check(
            "runtime kind",
            "no_output",
            "ErrorKind::NoOutput",
            case,
            false
        )
        .is_none());
    }
    assert!(check(
        "runtime kind",
        "x",
        "ErrorKind::X",
        "vm/tests/none.rs::t",
        false
    )
    .is_some());
}
