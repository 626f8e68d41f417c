//! No circle of imports between the modules of `vm/src` and of `cli/src`: the VM's
//! modules import only those below them (run → walk/workflow → lane → view/render →
//! value/pred → program, `src/lib.rs`), and so do the CLI's.
//!
//! A module is a top-level file or folder of `src` (`lane/ctx.rs` belongs to `lane`); it
//! imports every module it names through `crate::` (`use crate::a::X`,
//! `use crate::{a, b::Y}`, a path `crate::a::f()` in code) or, from a top-level file,
//! through `super::`. Comments do not count.
//!
//! `cargo test -p packc-vm --test imports -- --nocapture` prints each folder's modules
//! with what they import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The `.rs` files under `dir`, with the top-level module each belongs to; the crate
/// roots (`lib.rs`, `main.rs`) are left out.
fn modules(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(dir).expect("under dir");
            let first = rel.components().next().expect("a component");
            let name = first.as_os_str().to_string_lossy();
            let module = name.strip_suffix(".rs").unwrap_or(&name).to_owned();
            if rel.components().count() == 1 && (module == "lib" || module == "main") {
                continue;
            }
            out.push((module, path));
        }
    }
    out.sort();
    out
}

/// `src` without its `//` comments (doc comments included).
fn strip_comments(src: &str) -> String {
    src.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level names `code` reaches through `prefix` (`crate::` or `super::`).
fn named_after(code: &str, prefix: &str, into: &mut BTreeSet<String>) {
    for (at, _) in code.match_indices(prefix) {
        // `foo_crate::` or `self::super::` is not this prefix.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = code[at + prefix.len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's own depth: `{a, b::{X, Y}, c}` names a, b and c.
            let (mut depth, mut item_start) = (0usize, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && depth == 0 && !c.is_whitespace() => {
                        item_start = false;
                        let name = ident(&group[i..]);
                        if !name.is_empty() {
                            into.insert(name.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                into.insert(name.to_owned());
            }
        }
    }
}

/// Each module of `dir` with the other modules of `dir` it imports.
fn graph(dir: &Path) -> Graph {
    let files = modules(dir);
    let names: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut g = Graph::new();
    for (module, path) in &files {
        let code = strip_comments(&std::fs::read_to_string(path).expect("readable source"));
        let mut named = BTreeSet::new();
        named_after(&code, "crate::", &mut named);
        if path.parent() == Some(dir) {
            named_after(&code, "super::", &mut named);
        }
        let edges = g.entry(module.clone()).or_default();
        edges.extend(
            named
                .into_iter()
                .filter(|n| n != module && names.contains(n)),
        );
    }
    g
}

/// A circle of imports in `g`, as the modules along it (the first repeated at the end).
fn circle(g: &Graph) -> Option<Vec<String>> {
    // Depth-first search; a module met again while still on the path closes a circle.
    fn visit<'g>(
        g: &'g Graph,
        m: &'g str,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut c: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            c.push(m.to_owned());
            return Some(c);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for next in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

fn src(crate_dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("src")
}

fn assert_no_circle(crate_dir: &str) {
    let dir = src(crate_dir);
    let g = graph(&dir);
    for (m, edges) in &g {
        let edges: Vec<&str> = edges.iter().map(String::as_str).collect();
        println!("{crate_dir}/src: {m} -> {}", edges.join(", "));
    }
    if let Some(c) = circle(&g) {
        panic!(
            "{crate_dir}/src: the modules {} import each other in a circle; move what both use \
             into a module below them, or let the caller pass it in",
            c.join(" -> ")
        );
    }
}

#[test]
fn vm_modules_import_one_way() {
    assert_no_circle("vm");
}

#[test]
fn cli_modules_import_one_way() {
    assert_no_circle("cli");
}

/// The checker itself finds a circle, through every form of path it reads.
#[test]
fn a_circle_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c;").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::{\n    c::X,\n};\n").unwrap();
    std::fs::write(dir.join("c.rs"), "fn f() { super::b::g() } // crate::a\n").unwrap();
    std::fs::write(dir.join("b").join("mod.rs"), "mod d;").unwrap();
    std::fs::write(dir.join("b").join("d.rs"), "pub fn g() { crate::a::h() }").unwrap();
    let g = graph(dir);
    assert_eq!(
        circle(&g).map(|c| c.join(" -> ")),
        Some("a -> c -> b -> a".to_owned())
    );
    // Without the path in `b/d.rs` there is none: the `crate::a` in the comment of
    // `c.rs` does not count.
    let mut g = g;
    g.get_mut("b").unwrap().clear();
    assert_eq!(circle(&g), None);
}
