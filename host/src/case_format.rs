//! The shape of a case file, checked before anything is read from it: every member is
//! one the format defines (conformance README, "Shape of a case"), of the type it
//! defines, and the case expects something. A test runner that skipped a misspelled
//! `ouput:` would pass a test it never ran, so nothing unknown is ignored.

use std::ops::Range;

use packc_compiler::load::SpanIndex;
use serde_json::Value;

/// One thing wrong with a case file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line; 0 when the problem has no place (the file cannot be read).
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// The objects of a case file whose members are fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    /// The file itself.
    Case,
    /// `run` (and the whole of a `packc run --host` script).
    Run,
    /// `run.host`.
    Host,
    /// An item of `run.script`.
    ScriptItem,
    /// `expect`.
    Expect,
    /// An item of `expect.calls`.
    Call,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Case => "the case",
            Section::Run => "`run`",
            Section::Host => "`run.host`",
            Section::ScriptItem => "a `run.script` item",
            Section::Expect => "`expect`",
            Section::Call => "an `expect.calls` item",
        }
    }
}

/// What a member holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Any value.
    Any,
    /// A string.
    String,
    /// An object, members free (`pack`, `variables`).
    Object,
    /// An object with the members of a section.
    Members(Section),
    /// A list of strings.
    Strings,
    /// A list of objects with the members of a section.
    ListOf(Section),
    /// Scripted answers: an object whose every value is a list (the queue of one
    /// prompt or tool). In a case the answers themselves are read when called: a
    /// malformed one is a `host_error` of the run (conformance README, "Settled
    /// details"), which a case may mean to test. A host script (`packc run --host`)
    /// tests nothing, so there a malformed answer is a slip, reported with the file.
    Queues,
    /// A list of non-negative integers.
    Clock,
}

/// Every member a case file may hold, by the object it belongs to. A new member of the
/// format is one line here, then its reading in `Case::parse`.
const MEMBERS: &[(Section, &str, Shape)] = &[
    (Section::Case, "about", Shape::String),
    (Section::Case, "pack", Shape::Object),
    (Section::Case, "pack_file", Shape::String),
    (Section::Case, "run", Shape::Members(Section::Run)),
    (Section::Case, "expect", Shape::Members(Section::Expect)),
    (Section::Run, "target", Shape::String),
    (Section::Run, "input", Shape::Any),
    (Section::Run, "script", Shape::ListOf(Section::ScriptItem)),
    (Section::Run, "host", Shape::Members(Section::Host)),
    (Section::Host, "prompts", Shape::Queues),
    (Section::Host, "tools", Shape::Queues),
    (Section::Host, "clock", Shape::Clock),
    (Section::Host, "variables", Shape::Object),
    (Section::Host, "guards", Shape::Queues),
    (Section::Host, "extensions", Shape::Queues),
    (Section::ScriptItem, "turn", Shape::Any),
    (Section::ScriptItem, "event", Shape::String),
    (Section::Expect, "compile_error", Shape::String),
    (Section::Expect, "at", Shape::String),
    (Section::Expect, "warnings", Shape::Strings),
    (Section::Expect, "notes", Shape::Strings),
    (Section::Expect, "error", Shape::String),
    (Section::Expect, "output", Shape::Any),
    (Section::Expect, "state", Shape::String),
    (Section::Expect, "reply", Shape::String),
    (Section::Expect, "calls", Shape::ListOf(Section::Call)),
    (Section::Expect, "trace", Shape::Strings),
    (Section::Call, "prompt", Shape::String),
    (Section::Call, "input", Shape::Any),
    (Section::Call, "system", Shape::Any),
    (Section::Call, "tool", Shape::String),
    (Section::Call, "args", Shape::Any),
    (Section::Call, "provider", Shape::String),
    (Section::Call, "guardrail", Shape::String),
    (Section::Call, "at", Shape::String),
    (Section::Call, "action", Shape::String),
    (Section::Call, "length", Shape::Any),
    (Section::Call, "guard", Shape::String),
    (Section::Call, "params", Shape::Any),
    (Section::Call, "text", Shape::Any),
    (Section::Call, "extension", Shape::String),
    (Section::Call, "answer", Shape::Any),
];

/// Finds the problems of a document that should be a `root` (a case file, or a host
/// script for `Section::Run`), each located in `text`.
pub(crate) fn check(text: &str, value: &Value, spans: &SpanIndex, root: Section) -> Vec<Problem> {
    let mut c = Checker {
        text,
        spans,
        answers: root == Section::Run,
        problems: Vec::new(),
    };
    c.shape(value, "", Shape::Members(root), root.name());
    if c.problems.is_empty() {
        match root {
            Section::Case => c.case_rules(value),
            Section::Run => {}
            _ => unreachable!("only a case or a run is a document"),
        }
    }
    c.problems.sort_by_key(|p| (p.line, p.column));
    c.problems
}

struct Checker<'a> {
    text: &'a str,
    spans: &'a SpanIndex,
    /// Scripted answers are checked too (a host script, not a case).
    answers: bool,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn at(&mut self, span: Option<Range<usize>>, message: String) {
        let (line, column) = match span {
            Some(span) => line_col(self.text, span.start),
            None => (1, 1),
        };
        self.problems.push(Problem {
            line,
            column,
            message,
        });
    }

    /// A problem with the node at `ptr` (a member's key, an item's value).
    fn blame(&mut self, ptr: &str, message: String) {
        let span = self.spans.key_or_value(ptr);
        self.at(span, message);
    }

    /// A problem with the value at `ptr` (for a member: its value, not its key).
    fn blame_value(&mut self, ptr: &str, message: String) {
        let span = self.spans.locate(ptr);
        self.at(span, message);
    }

    fn shape(&mut self, v: &Value, ptr: &str, shape: Shape, what: &str) {
        let wrong = |expected: &str| format!("{what} must be {expected}, not {}", kind(v));
        match shape {
            Shape::Any => {}
            Shape::String if !v.is_string() => self.blame_value(ptr, wrong("a string")),
            Shape::Object if !v.is_object() => self.blame_value(ptr, wrong("an object")),
            Shape::Members(section) => match v.as_object() {
                None => self.blame_value(ptr, wrong("an object")),
                Some(map) => {
                    for (key, child) in map {
                        let child_ptr = format!("{ptr}/{}", escape(key));
                        match MEMBERS.iter().find(|(s, k, _)| *s == section && k == key) {
                            Some(&(_, _, shape)) => {
                                let what = format!("`{}`", dotted(section, key));
                                self.shape(child, &child_ptr, shape, &what);
                            }
                            None => {
                                let message = unknown_member(section, key);
                                self.blame(&child_ptr, message);
                            }
                        }
                    }
                    if section == Section::ScriptItem && map.len() != 1 {
                        self.blame_value(
                            ptr,
                            "a `run.script` item has exactly one member: `turn: <input>` or `event: <name>`".into(),
                        );
                    }
                }
            },
            Shape::Strings | Shape::ListOf(_) | Shape::Clock => {
                let Some(items) = v.as_array() else {
                    let hint = if v.is_string() && shape == Shape::Strings {
                        " (write each line as a list item: `- enter main`)"
                    } else {
                        ""
                    };
                    return self.blame_value(ptr, format!("{}{hint}", wrong("a list")));
                };
                for (i, item) in items.iter().enumerate() {
                    let item_ptr = format!("{ptr}/{i}");
                    let item_what = format!("item {i} of {what}");
                    match shape {
                        Shape::Strings => self.shape(item, &item_ptr, Shape::String, &item_what),
                        Shape::ListOf(section) => {
                            self.shape(item, &item_ptr, Shape::Members(section), &item_what);
                        }
                        _ if item.as_u64().is_none() => self.blame_value(
                            &item_ptr,
                            format!(
                                "{item_what} must be a whole number of milliseconds (0 or more), not {}",
                                kind(item)
                            ),
                        ),
                        _ => {}
                    }
                }
            }
            Shape::Queues => match v.as_object() {
                None => self.blame_value(ptr, wrong("an object")),
                Some(map) => {
                    for (name, queue) in map {
                        let queue_ptr = format!("{ptr}/{}", escape(name));
                        let Some(answers) = queue.as_array() else {
                            self.blame_value(
                                &queue_ptr,
                                format!(
                                    "the answers for `{name}` in {what} must be a list, not {}: write each answer as a list item (`- output: ...`)",
                                    kind(queue)
                                ),
                            );
                            continue;
                        };
                        if !self.answers {
                            continue;
                        }
                        for (i, answer) in answers.iter().enumerate() {
                            let Some((member, why)) = crate::scripted::malformed(answer) else {
                                continue;
                            };
                            let message = format!("an answer for `{name}` in {what}: {why}");
                            match member {
                                Some(m) => {
                                    self.blame(&format!("{queue_ptr}/{i}/{}", escape(m)), message)
                                }
                                None => self.blame_value(&format!("{queue_ptr}/{i}"), message),
                            }
                        }
                    }
                }
            },
            Shape::String | Shape::Object => {}
        }
    }

    /// What a whole case must have: `about`, one pack, and something expected.
    fn case_rules(&mut self, v: &Value) {
        let has = |k: &str| v.get(k).is_some();
        if !has("about") {
            self.blame_value(
                "",
                "the case has no `about`: add a line saying what it checks".into(),
            );
        }
        match (has("pack"), has("pack_file")) {
            (false, false) => self.blame_value(
                "",
                "the case has neither `pack` (the pack inline) nor `pack_file` (a path relative to the case file)".into(),
            ),
            (true, true) => self.blame(
                "/pack_file",
                "the case has both `pack` and `pack_file`: keep one".into(),
            ),
            _ => {}
        }
        let Some(expect) = v.get("expect") else {
            return self.blame_value(
                "",
                "the case has no `expect`: say what must come out (`output`, `error` or `compile_error`)".into(),
            );
        };
        let e = |k: &str| expect.get(k).is_some();
        if !e("output") && !e("error") && !e("compile_error") && !e("warnings") && !e("notes") {
            self.blame(
                "/expect",
                "`expect` expects nothing: give `output`, `error` or `compile_error` (or, for a case without `run`, `warnings` or `notes`); a case that checks nothing would always pass".into(),
            );
        } else if has("run") && !e("output") && !e("error") && !e("compile_error") {
            self.blame(
                "/expect",
                "the case runs its pack but `expect` says nothing of the result: give `output` or `error`".into(),
            );
        }
        if e("compile_error") && (e("error") || e("output")) {
            self.blame(
                "/expect/compile_error",
                "`expect` has `compile_error` and a run result (`output` or `error`): a pack that fails to compile does not run; keep one".into(),
            );
        }
        if e("error") && e("output") {
            self.blame(
                "/expect/error",
                "`expect` has both `error` and `output`: a run either fails or gives an output; keep one".into(),
            );
        }
        if e("at") && !e("compile_error") {
            self.blame(
                "/expect/at",
                "`expect.at` is the pointer of the expected `compile_error`, and there is none"
                    .into(),
            );
        }
        self.kinds(expect);
    }

    /// The kinds `expect` names (`compile_error`, `warnings`, `notes`, `error`) are kinds
    /// packc reports: a misspelt one would only fail when compared, as if packc were wrong.
    fn kinds(&mut self, expect: &Value) {
        use packc_compiler::{DiagKind, Severity};
        let compile_kinds = || DiagKind::ALL.iter().map(|k| k.as_str());
        let run_kinds = || packc_vm::ErrorKind::ALL.iter().map(|k| k.as_str());
        let mut named: Vec<(String, &str, &str)> = Vec::new();
        for slot in ["compile_error", "error"] {
            if let Some(k) = expect.get(slot).and_then(Value::as_str) {
                named.push((format!("/expect/{slot}"), k, slot));
            }
        }
        for slot in ["warnings", "notes"] {
            let items = expect.get(slot).and_then(Value::as_array);
            for (i, k) in items.into_iter().flatten().enumerate() {
                if let Some(k) = k.as_str() {
                    named.push((format!("/expect/{slot}/{i}"), k, slot));
                }
            }
        }
        for (ptr, kind, slot) in named {
            let diag = DiagKind::from_name(kind);
            let problem = match (slot, diag) {
                ("error", _) if run_kinds().any(|k| k == kind) => continue,
                ("error", Some(_)) => format!(
                    "`{kind}` is reported when the pack is checked, not by a run: expect it as `compile_error`"
                ),
                ("error", None) => unknown(kind, "run-time error kind", run_kinds()),
                (_, None) => unknown(kind, "diagnostic kind", compile_kinds()),
                ("notes", Some(d)) if d.severity() != Severity::Note => format!(
                    "`{kind}` is not a note: list it under `warnings` (or expect it as `compile_error`)"
                ),
                ("warnings" | "compile_error", Some(d)) if d.severity() == Severity::Note => {
                    format!("`{kind}` is a note: list it under `notes`")
                }
                _ => continue,
            };
            self.blame_value(&ptr, problem);
        }
    }
}

/// `kind`, which is no `what` packc reports, with "did you mean" among `kinds`.
fn unknown<'k>(kind: &str, what: &str, kinds: impl Iterator<Item = &'k str> + Clone) -> String {
    let help = match packc_compiler::suggest(kind, kinds) {
        Some(s) => format!("did you mean `{s}`?"),
        None => "the kinds are listed in the conformance README".into(),
    };
    format!("`{kind}` is no {what} packc reports; {help}")
}

/// `section.key` for messages: `expect.ouput`, `run.host.prompts`.
fn dotted(section: Section, key: &str) -> String {
    let prefix = match section {
        Section::Case => "",
        Section::Run => "run.",
        Section::Host => "run.host.",
        Section::ScriptItem => "run.script[].",
        Section::Expect => "expect.",
        Section::Call => "expect.calls[].",
    };
    format!("{prefix}{key}")
}

fn unknown_member(section: Section, key: &str) -> String {
    let members = MEMBERS
        .iter()
        .filter(|(s, _, _)| *s == section)
        .map(|(_, k, _)| *k);
    // Two letters swapped (`inptu`) are one slip, though the edit distance counts two.
    let swapped = || {
        let mut sorted: Vec<char> = key.chars().collect();
        sorted.sort_unstable();
        members.clone().find(|m| {
            let mut m: Vec<char> = m.chars().collect();
            m.sort_unstable();
            m == sorted
        })
    };
    let help = match packc_compiler::check::suggest(key, members.clone()).or_else(swapped) {
        Some(s) => format!("did you mean `{s}`?"),
        None => format!(
            "its members are: {}",
            members
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("unknown member `{key}` in {}; {help}", section.name())
}

/// A problem with the node at `ptr` of a document already checked (a member's key, an
/// item's value), located in `text`.
pub(crate) fn problem_at(text: &str, spans: &SpanIndex, ptr: &str, message: String) -> Problem {
    let (line, column) = spans
        .key_or_value(ptr)
        .map_or((1, 1), |span| line_col(text, span.start));
    Problem {
        line,
        column,
        message,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A key as a JSON pointer segment (RFC 6901).
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// 1-based line and column (in characters) of a byte offset of `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use crate::case::{Case, RunSpec};

    /// A host script's answers are checked when it is read; a case's are left to the
    /// run, where a malformed one is a `host_error` the case may expect.
    #[test]
    fn answers_are_checked_in_a_host_script_only() {
        let run = "host:\n  prompts:\n    p:\n      - output: 1\n      - ouput: 2\n      - 3\n      - {tool_calls: [{args: {}}]}\n";
        let problems = RunSpec::parse(run).unwrap_err();
        let got: Vec<(usize, usize, &str)> = problems
            .iter()
            .map(|p| (p.line, p.column, p.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (5, 9, "an answer for `p` in `run.host.prompts`: unknown member `ouput`; did you mean `output`?"),
                (6, 9, "an answer for `p` in `run.host.prompts`: not an object; write the answer as `{output: 3}` (with `event: NAME` for a workflow state)"),
                (7, 10, "an answer for `p` in `run.host.prompts`: a tool call without a `name`"),
            ]
        );
        let indented: String = run.lines().map(|l| format!("  {l}\n")).collect();
        let case = format!("about: x\npack: {{}}\nrun:\n{indented}expect:\n  error: host_error\n");
        assert!(Case::parse(&case, std::path::Path::new(".")).is_ok());
    }

    /// The kinds `expect` names are checked when the case is read, with did-you-mean.
    #[test]
    fn expected_kinds_are_kinds_packc_reports() {
        let dir = std::path::Path::new(".");
        let problems = |expect: &str| -> Vec<(usize, usize, String)> {
            let case = format!("about: x\npack: {{}}\nexpect:\n{expect}");
            Case::parse(&case, dir)
                .err()
                .unwrap_or_default()
                .into_iter()
                .map(|p| (p.line, p.column, p.message))
                .collect()
        };
        assert_eq!(
            problems("  compile_error: unresolved_prompts\n"),
            [(4, 18, "`unresolved_prompts` is no diagnostic kind packc reports; did you mean `unresolved_prompt`?".to_owned())]
        );
        assert_eq!(
            problems("  warnings: [unreachable_state, unbounded_loops]\n  notes: [no_spec_versoin]\n"),
            [
                (4, 33, "`unbounded_loops` is no diagnostic kind packc reports; did you mean `unbounded_loop`?".to_owned()),
                (5, 11, "`no_spec_versoin` is no diagnostic kind packc reports; did you mean `no_spec_version`?".to_owned()),
            ]
        );
        // A run case's `error`, as the reader takes it.
        let run_error = |error: &str| -> Vec<String> {
            let case =
                format!("about: x\npack: {{}}\nrun: {{input: 1}}\nexpect:\n  error: {error}\n");
            Case::parse(&case, dir)
                .err()
                .unwrap_or_default()
                .into_iter()
                .map(|p| p.message)
                .collect()
        };
        assert_eq!(
            run_error("hosterror"),
            ["`hosterror` is no run-time error kind packc reports; did you mean `host_error`?"]
        );
        assert!(run_error("host_error").is_empty());
        assert!(
            problems("  compile_error: unresolved_prompt\n  warnings: [unbounded_loop]\n")
                .is_empty()
        );
        // A known kind in the wrong list says which list it belongs in.
        let messages = |expect: &str| -> Vec<String> {
            problems(expect).into_iter().map(|(_, _, m)| m).collect()
        };
        assert_eq!(
            messages("  warnings: [spaced_placeholder]\n  notes: [unbounded_loop]\n"),
            [
                "`spaced_placeholder` is a note: list it under `notes`",
                "`unbounded_loop` is not a note: list it under `warnings` (or expect it as `compile_error`)",
            ]
        );
        assert_eq!(
            run_error("parse_error"),
            ["`parse_error` is reported when the pack is checked, not by a run: expect it as `compile_error`"]
        );
    }
}
