//! Diagnostics: what the compiler reports, as data.
//!
//! A [`Diagnostic`] blames a node of the pack by its JSON pointer (RFC 6901); the
//! pointer is turned into `file:line:col` only when printing (see [`crate::render`]).
//! Parse errors, which have no node to point at, carry a byte span instead.
//!
//! Every stable kind lives in the one table below. The names match
//! `shared/conformance/README.md` letter for letter; new kinds are added, existing
//! ones are never renamed.

use crate::doc::{Node, Str};
use std::fmt;
use std::ops::Range;

macro_rules! diag_kinds {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $sev:ident; )*) => {
        /// A stable diagnostic kind. [`DiagKind::as_str`] gives its snake_case name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum DiagKind {
            $( $(#[$doc])* $variant, )*
        }

        impl DiagKind {
            /// Every kind, in table order.
            pub const ALL: &'static [DiagKind] = &[$(DiagKind::$variant),*];

            /// The stable snake_case name printed with the diagnostic.
            pub const fn as_str(self) -> &'static str {
                match self { $(DiagKind::$variant => $name,)* }
            }

            /// The severity this kind is reported with.
            pub const fn severity(self) -> Severity {
                match self { $(DiagKind::$variant => Severity::$sev,)* }
            }

            /// The kind with this stable name, if any.
            pub fn from_name(name: &str) -> Option<DiagKind> {
                match name { $($name => Some(DiagKind::$variant),)* _ => None }
            }
        }
    };
}

diag_kinds! {
    /// The source is malformed: not YAML / JSON, empty, not UTF-8, a duplicate key, an
    /// alias bomb, or nesting past the depth limit; a file named `*.json` that is not
    /// strict JSON (a trailing comma, an unquoted key, a comment: `load::strict_json`).
    /// Triggered by: cases/val-parse-error.case.yaml
    ParseError = "parse_error", Error;
    /// The source is past one of the embedder's [`Limits`](crate::load::Limits): larger
    /// than `max_source_bytes` (16 MiB by default; no pointer), or a string longer than
    /// `max_string_bytes`, or more compositions, steps, states, prompts, tools or agent
    /// members than allowed (at the string or the collection). The message names the
    /// limit; a pack past one gets no other diagnostic.
    /// Triggered by: tests/limits.rs
    LimitExceeded = "limit_exceeded", Error;
    /// Wrong type, missing required member, unknown member, value outside an enum.
    /// Triggered by: cases/val-schema-wrong-type.case.yaml
    SchemaViolation = "schema_violation", Error;
    /// `$schema` names a spec version above 1.9; the pack is read at level 1.9 and
    /// unknown fields are ignored.
    /// Triggered by: tests/cases/own-newer-spec-version.case.yaml
    NewerSpecVersion = "newer_spec_version", Warning;
    /// (note) The pack has no `$schema`, and declaring a version of v1.7 or later would
    /// change how it runs: a reachable non-terminal state whose own answer can name an
    /// event has an `on_event` target (or that target's `on_max_visits` redirect) that is
    /// neither terminal nor external (`later-versions.md` §1).
    /// Triggered by: tests/cases/spec-note-no-spec-version.case.yaml
    NoSpecVersion = "no_spec_version", Note;
    /// (note) `$schema` is present but names no version packc reads (`1.9.0`, a local
    /// path, a misspelt segment): the pack is read at level 1.5, as with no claim
    /// (`later-versions.md` §1, the conformance README's `newer_spec_version` row).
    /// Triggered by: tests/cases/spec-note-unknown-spec-version.case.yaml
    UnknownSpecVersion = "unknown_spec_version", Note;
    /// An unknown member of a v1 composition step kind: it has no effect. Also `provider`
    /// on a step that makes no model call (tool, branch, parallel, extension), and a member of a
    /// step's `modifiers` (or of its `retry`) that v1 does not define, such as a misspelt
    /// `retyr`.
    /// Triggered by: tests/cases/spec-ignored-member.case.yaml
    IgnoredMember = "ignored_member", Warning;
    /// `control: agent` on a terminal state (`terminal: true` or no `on_event`), where
    /// it has no effect (RFC 0014 rule 3).
    /// Triggered by: tests/cases/spec-inert-control.case.yaml
    InertControl = "inert_control", Warning;
    /// A conversational workflow state whose prompt names a provider whose role is not
    /// `llm`, or a `prompt` step without `output_schema` on such a provider (RFC 0017 rule 5).
    /// Triggered by: tests/cases/spec-provider-role.case.yaml
    ProviderRole = "provider_role", Warning;
    /// Two entries of `requires.providers` share a key (at the second).
    /// Triggered by: tests/cases/spec-duplicate-provider-key.case.yaml
    DuplicateProviderKey = "duplicate_provider_key", Error;
    /// A `provider` names a key that `requires.providers` does not declare (and is not
    /// `default`), RFC 0017 rule 1.
    /// Triggered by: tests/cases/spec-unresolved-provider.case.yaml
    UnresolvedProvider = "unresolved_provider", Error;
    /// (note) A pack read at level 1.5 (no `$schema`, or one naming an earlier version)
    /// has `metadata.governance`: governance is read from level 1.5.1, so here it is plain
    /// metadata, and `packc run --environment` does not gate it. Declaring a version
    /// would change that, hence a note, as `no_spec_version` (`later-versions.md` §1).
    /// Triggered by: tests/cases/spec-governance-ignored-at-v1-5.case.yaml
    IgnoredGovernance = "ignored_governance", Note;
    /// A governance obligation's control names a validator or eval `id` that the pack
    /// does not declare (RFC 0016).
    /// Triggered by: tests/cases/spec-unresolved-control.case.yaml
    UnresolvedControl = "unresolved_control", Error;
    /// A `prompt_task` (or agent key) names no prompt.
    /// Triggered by: cases/val-unresolved-prompt.case.yaml
    UnresolvedPrompt = "unresolved_prompt", Error;
    /// A tool name resolves to no tool. An error inside compositions; a warning in a
    /// prompt's `tools` list (where agent members also resolve), see [`Diagnostic::warning`].
    /// Triggered by: cases/comp-err-unresolved-tool.case.yaml
    UnresolvedTool = "unresolved_tool", Error;
    /// A step's `output_schema` file cannot be found next to the pack.
    /// Triggered by: tests/cases/own-unresolved-schema.case.yaml
    UnresolvedSchema = "unresolved_schema", Warning;
    /// A file the pack names (a step's `output_schema`) is outside the pack's folder: an
    /// absolute path, or a path that leaves the folder through `..` or a symbolic link
    /// (checked on the opened file), and not inside a folder the embedder allowed
    /// (`Options::allow_paths`, `--allow-path`). Reported whether or not the file exists;
    /// nothing outside is read.
    /// Triggered by: tests/cases/own-unsafe-path-parent.case.yaml
    UnsafePath = "unsafe_path", Error;
    /// An `eval` modifier names no pack-level eval.
    /// Triggered by: cases/comp-err-unresolved-eval.case.yaml
    UnresolvedEval = "unresolved_eval", Error;
    /// `entry`, an `on_event` target, `on_max_visits` or `AgentDef.state` names no state.
    /// Triggered by: cases/val-unresolved-state-entry.case.yaml
    UnresolvedState = "unresolved_state", Error;
    /// A state's `composition` names no composition.
    /// Triggered by: cases/val-unresolved-composition.case.yaml
    UnresolvedComposition = "unresolved_composition", Error;
    /// `then`, `else`, `depends_on` or `output` names no top-level step.
    /// Triggered by: cases/comp-err-unresolved-step.case.yaml
    UnresolvedStep = "unresolved_step", Error;
    /// A `${...}` reference is malformed or names nothing visible from its step.
    /// Triggered by: cases/comp-err-unresolved-binding-later-step.case.yaml
    UnresolvedBinding = "unresolved_binding", Error;
    /// A `{{name}}` placeholder names no declared variable, `input`, `artifacts` or fragment.
    /// Triggered by: cases/tpl-undeclared-variable.case.yaml
    UndeclaredVariable = "undeclared_variable", Warning;
    /// (note) A `system_template` holds `{{ name }}`: a placeholder's path with spaces or
    /// tabs inside the braces, which is literal text and sent as written (`workflow.md`
    /// §14). The fix is `{{name}}`.
    /// Triggered by: tests/cases/tpl-note-spaced-placeholder.case.yaml
    SpacedPlaceholder = "spaced_placeholder", Note;
    /// (note) A `system_template` holds another engine's template syntax: a Handlebars
    /// block, comment or partial (`{{#if x}}`, `{{/if}}`), a filter (`{{name | upper}}`),
    /// a Jinja statement (`{% if %}`) or a placeholder closed by one brace (`{{name}`).
    /// PromptPack templates have none of them, so it is literal text, sent as written
    /// (`workflow.md` §14). Also a composition step's binding (`input`, `args`) holding
    /// `{{path}}`: a binding reads values with `${...}` and sends `{{...}}` as written.
    /// Triggered by: tests/cases/tpl-note-foreign-syntax.case.yaml
    ForeignTemplateSyntax = "foreign_template_syntax", Note;
    /// (note) A step reads the output of an earlier step the walk may skip (a branch
    /// target, or a step whose `depends_on` may all be skipped) and does not depend on
    /// it: when it is skipped, the reference does not resolve and the run fails with
    /// `unresolved_binding` (`compositions.md` §4.2–4.3: a skip never travels along the
    /// step order alone). The fix is `depends_on: [that step]`.
    /// Triggered by: tests/cases/comp-note-skippable-reference.case.yaml
    SkippableReference = "skippable_reference", Note;
    /// A composition step's prompt declares a required variable that the step's `input`
    /// can never hold: the input is always a string (text around a reference, a
    /// literal), another literal that is not an object, or an object without that
    /// member. A declared variable is read from the call's input object (`workflow.md`
    /// §14), so every run of the step fails with `invalid_variable`.
    /// Triggered by: tests/cases/comp-warn-unbound-variable.case.yaml
    UnboundVariable = "unbound_variable", Warning;
    /// Two steps of one composition share an id.
    /// Triggered by: cases/comp-err-duplicate-step-id-nested.case.yaml
    DuplicateStepId = "duplicate_step_id", Error;
    /// A step id does not match `^[a-zA-Z_][a-zA-Z0-9_]*$` or is `input`.
    /// Triggered by: cases/comp-err-invalid-step-id.case.yaml
    InvalidStepId = "invalid_step_id", Error;
    /// A step kind outside the v1 vocabulary, or a branch/parallel nested in a parallel.
    /// Triggered by: tests/cases/own-unknown-step-kind.case.yaml
    UnsupportedStepKind = "unsupported_step_kind", Error;
    /// The step graph has a cycle (or breaks the declaration-order rule).
    /// Triggered by: cases/comp-err-cyclic-composition.case.yaml
    CyclicComposition = "cyclic_composition", Error;
    /// An agent step without `termination.max_steps` or `termination.tool_called`.
    /// Triggered by: cases/comp-err-agent-missing-termination.case.yaml
    AgentMissingTermination = "agent_missing_termination", Error;
    /// A parallel step with fewer than two branches.
    /// Triggered by: cases/comp-err-parallel-too-few-branches.case.yaml
    ParallelTooFewBranches = "parallel_too_few_branches", Error;
    /// A parallel step without `reduce`.
    /// Triggered by: cases/comp-err-parallel-missing-reduce.case.yaml
    ParallelMissingReduce = "parallel_missing_reduce", Error;
    /// A predicate that is not exactly one well-formed predicate form.
    /// Triggered by: cases/comp-err-invalid-predicate-expression.case.yaml
    InvalidPredicate = "invalid_predicate", Error;
    /// A state's orchestration mode disagrees with its `composition` / `prompt_task`.
    /// Triggered by: cases/comp-err-orchestration-conflict.case.yaml
    OrchestrationConflict = "orchestration_conflict", Error;
    /// `AgentDef.state` in a pack with no `workflow`.
    /// Triggered by: cases/val-state-agent-without-workflow.case.yaml
    StateAgentWithoutWorkflow = "state_agent_without_workflow", Error;
    /// A state that no root reaches in the transition graph.
    /// Triggered by: cases/val-warn-unreachable-state.case.yaml
    UnreachableState = "unreachable_state", Warning;
    /// No state is terminal.
    /// Triggered by: cases/val-warn-no-terminal-state.case.yaml
    NoTerminalState = "no_terminal_state", Warning;
    /// A state on a transition cycle with neither `max_visits` nor a workflow budget.
    /// Triggered by: cases/val-warn-unbounded-loop.case.yaml
    UnboundedLoop = "unbounded_loop", Warning;
    /// A composition state has `on_event`, but its composition's output can never carry
    /// the `event` member that moves it on: the output step's `output_schema` is not an
    /// object, or lists `properties` without `event` (`check::workflow`).
    /// Triggered by: cli/tests/cli.rs, `composition_state_without_event_output_warns`
    EventNeverOutput = "event_never_output", Warning;
    /// A param of a built-in validator type is present but unusable: a `regex` `pattern`
    /// that does not compile, a length limit that is not a positive integer, `words` that
    /// is not a list of strings, a `direction` other than `output`, `input` or `both`
    /// (`later-versions.md` §4). Located at the param. Also a validator `id` used twice
    /// (level 1.8 and above; at the second).
    /// Triggered by: tests/cases/guard-invalid-regex.case.yaml
    InvalidValidator = "invalid_validator", Error;
    /// A built-in validator lacks the params it needs (a `length` with no limit, an empty
    /// word list) and can never trigger; it is not compiled.
    /// Triggered by: tests/cases/guard-disabled-inert-deprecated.case.yaml
    InertValidator = "inert_validator", Warning;
    /// A validator carries `fail_on_violation: false` (at any level) or `true` (at spec
    /// level 1.8 and above): validators always enforce; evals measure without enforcing.
    /// Triggered by: tests/cases/guard-fail-on-violation-level.case.yaml
    DeprecatedFailOnViolation = "deprecated_fail_on_violation", Warning;
}

impl fmt::Display for DiagKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad a diagnostic is. Warnings never fail a build unless `--deny-warnings`; notes
/// never fail anything and are never counted as warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Compilation fails.
    Error,
    /// Reported; compilation goes on.
    Warning,
    /// Information the author should know (like rustc's notes): printed, never a warning.
    Note,
}

impl Severity {
    /// `"error"`, `"warning"` or `"note"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// Where a diagnostic or one of its labels points.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// A node of the pack, by JSON pointer (`""` is the whole document).
    Pointer(String),
    /// A byte range of the source text, for errors that precede the document tree.
    Span(Range<usize>),
    /// Nowhere in particular (an empty file, an I/O-level limit).
    Whole,
}

/// A secondary place involved in a diagnostic ("first used here").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// Where the label points.
    pub site: Site,
    /// What the label says.
    pub message: String,
}

/// One compiler finding: a kind, a message, the place it blames, other places involved,
/// and a line of help saying how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// The stable kind.
    pub kind: DiagKind,
    /// Error or warning (normally the kind's own; see [`DiagKind::severity`]).
    pub severity: Severity,
    /// One sentence saying what is wrong.
    pub message: String,
    /// The node blamed.
    pub site: Site,
    /// Further places involved, each with its own message.
    pub labels: Vec<Label>,
    /// How to fix it, when there is something useful to say.
    pub help: Option<String>,
    /// Text inside the blamed node to point at when printing (a template's
    /// `{{placeholder}}`): its first occurrence in the node's source, else the node.
    pub within: Option<std::sync::Arc<str>>,
}

impl Diagnostic {
    /// A diagnostic of `kind` with the kind's own severity, blaming the whole source.
    pub fn new(kind: DiagKind, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
            severity: kind.severity(),
            message: message.into(),
            site: Site::Whole,
            labels: Vec::new(),
            help: None,
            within: None,
        }
    }

    /// The same diagnostic reported as a warning (e.g. `unresolved_tool` in a prompt's
    /// `tools` list).
    pub fn warning(mut self) -> Diagnostic {
        self.severity = Severity::Warning;
        self
    }

    /// Blame the node at this JSON pointer.
    pub fn at(mut self, pointer: impl Into<String>) -> Diagnostic {
        self.site = Site::Pointer(pointer.into());
        self
    }

    /// Blame this byte range of the source.
    pub fn at_span(mut self, span: Range<usize>) -> Diagnostic {
        self.site = Site::Span(span);
        self
    }

    /// Add a label on another node.
    pub fn also(mut self, pointer: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            site: Site::Pointer(pointer.into()),
            message: message.into(),
        });
        self
    }

    /// Point, when printing, at the first occurrence of `text` inside the blamed node.
    pub fn within(mut self, text: impl Into<String>) -> Diagnostic {
        self.within = Some(text.into().into());
        self
    }

    /// Add a help line.
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// The JSON pointer blamed, if the diagnostic blames a node.
    pub fn pointer(&self) -> Option<&str> {
        match &self.site {
            Site::Pointer(p) => Some(p),
            _ => None,
        }
    }

    /// Whether this diagnostic fails compilation.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Whether this diagnostic is a warning (notes are not).
    pub fn is_warning(&self) -> bool {
        self.severity == Severity::Warning
    }
}

/// Escape one reference token of a JSON pointer (RFC 6901: `~` → `~0`, `/` → `~1`).
pub fn escape_token(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

/// A JSON pointer not yet written out: a pointer and the reference tokens below it, each
/// borrowed from the walk that reached the node. Checks pass one down as they descend and
/// write it out ([`At::pointer`]) only for a diagnostic, so a clean pack builds none.
///
/// ```
/// # use packc_compiler::diag::At;
/// let steps = At::Text("/compositions/c").key("steps");
/// assert_eq!(steps.index(2).key("a/b").pointer(), "/compositions/c/steps/2/a~1b");
/// ```
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    /// A pointer already written out (`""` is the document itself).
    Text(&'a str),
    /// The member `.1` of the node at `.0`.
    Key(&'a At<'a>, &'a str),
    /// The item `.1` of the array at `.0`.
    Index(&'a At<'a>, usize),
    /// The node the tokens `.1` lead to from the node at `.0`.
    Path(&'a At<'a>, &'a [Token<'a>]),
}

/// One reference token of an [`At::Path`].
#[derive(Clone, Copy, Debug)]
pub enum Token<'a> {
    /// A member name.
    Key(&'a str),
    /// An array index.
    Index(usize),
}

impl<'a> At<'a> {
    /// The member `key` of this node.
    pub fn key(&'a self, key: &'a str) -> At<'a> {
        At::Key(self, key)
    }

    /// The item `index` of this array.
    pub fn index(&'a self, index: usize) -> At<'a> {
        At::Index(self, index)
    }

    /// The pointer written out, each member name escaped (RFC 6901).
    pub fn pointer(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match *self {
            At::Text(text) => out.push_str(text),
            At::Key(parent, key) => {
                parent.write(out);
                Token::Key(key).write(out);
            }
            At::Index(parent, index) => {
                parent.write(out);
                Token::Index(index).write(out);
            }
            At::Path(parent, tokens) => {
                parent.write(out);
                for token in tokens {
                    token.write(out);
                }
            }
        }
    }
}

impl Token<'_> {
    /// The tokens from a composition to its step `step`, or to the branch `branch` of the
    /// parallel step `step` (`steps/<step>[/branches/<branch>]`): the first `n` of the array.
    pub(crate) fn step(step: usize, branch: Option<usize>) -> ([Token<'static>; 4], usize) {
        let tokens = [
            Token::Key("steps"),
            Token::Index(step),
            Token::Key("branches"),
            Token::Index(branch.unwrap_or(0)),
        ];
        (tokens, if branch.is_some() { 4 } else { 2 })
    }

    /// `/` and the token, a member name escaped (RFC 6901).
    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        match *self {
            Token::Key(key) => {
                out.push('/');
                out.push_str(&escape_token(key));
            }
            Token::Index(index) => {
                let _ = write!(out, "/{index}");
            }
        }
    }
}

/// Visits `v` and every value inside it in document order, each with the tokens that lead
/// to it from `v` (an object member's last token is its name), until `visit` breaks.
///
/// The walk keeps its own stack, because the depth limit is the embedder's to raise, and
/// nothing is written out: a check builds a pointer (`At::Path(base, tokens)`) only for
/// what it reports.
///
/// ```
/// # use std::ops::ControlFlow;
/// # use packc_compiler::diag::{walk, At};
/// let v = serde_json::json!({"a": [1, "x"], "b/c": "y"});
/// let arena = packc_compiler::doc::Arena::new();
/// let v = packc_compiler::doc::Node::borrow(&v, &arena);
/// let mut strings = Vec::new();
/// walk::<()>(&v, |tokens, node| {
///     if node.is_string() {
///         strings.push(At::Path(&At::Text(""), tokens).pointer());
///     }
///     ControlFlow::Continue(())
/// });
/// assert_eq!(strings, ["/a/1", "/b~1c"]);
/// ```
pub fn walk<'v, 's, B>(
    v: &'v Node<'s>,
    mut visit: impl FnMut(&[Token<'v>], &'v Node<'s>) -> std::ops::ControlFlow<B>,
) -> Option<B> {
    /// The open collections, innermost last; `tokens[i]` is the current member of `frames[i]`.
    enum Frame<'v, 's> {
        Array(std::iter::Enumerate<std::slice::Iter<'v, Node<'s>>>),
        Object(std::slice::Iter<'v, (Str<'s>, Node<'s>)>),
    }
    let mut frames: Vec<Frame<'v, 's>> = Vec::new();
    let mut tokens: Vec<Token<'v>> = Vec::new();
    let mut next = Some(v);
    loop {
        if let Some(node) = next.take() {
            if let std::ops::ControlFlow::Break(b) = visit(&tokens, node) {
                return Some(b);
            }
            match node {
                Node::Array(items) => frames.push(Frame::Array(items.iter().enumerate())),
                Node::Object(members) => frames.push(Frame::Object(members.as_slice().iter())),
                _ => {}
            }
        }
        let depth = frames.len();
        let frame = frames.last_mut()?;
        let member = match frame {
            Frame::Array(items) => items.next().map(|(i, v)| (Token::Index(i), v)),
            Frame::Object(members) => members.next().map(|(k, v)| (Token::Key(k.as_str()), v)),
        };
        match member {
            Some((token, v)) => {
                // Drop the tokens of the collections closed since, then step down.
                tokens.truncate(depth - 1);
                tokens.push(token);
                next = Some(v);
            }
            None => {
                frames.pop();
            }
        }
    }
}

impl From<At<'_>> for String {
    fn from(at: At<'_>) -> String {
        at.pointer()
    }
}

impl From<&At<'_>> for String {
    fn from(at: &At<'_>) -> String {
        at.pointer()
    }
}

/// Build a JSON pointer from a base pointer and more reference tokens, escaping each.
///
/// ```
/// # use packc_compiler::diag::join;
/// assert_eq!(join("/tools", &["a/b"]), "/tools/a~1b");
/// ```
pub fn join(base: &str, tokens: &[&str]) -> String {
    // One allocation: escaping only ever lengthens a token, by one byte per `~` or `/`.
    let len = base.len() + tokens.iter().map(|t| t.len() + 1).sum::<usize>();
    let mut out = String::with_capacity(len);
    out.push_str(base);
    for t in tokens {
        out.push('/');
        if t.bytes().any(|b| b == b'~' || b == b'/') {
            out.push_str(&escape_token(t));
        } else {
            out.push_str(t);
        }
    }
    out
}

/// A diagnostic as tests compare it: its pointer, its help and the pointers of its other
/// labels.
#[cfg(test)]
pub(crate) fn summary(d: Diagnostic) -> (String, String, Vec<String>) {
    let also = d
        .labels
        .iter()
        .filter_map(|l| match &l.site {
            Site::Pointer(p) => Some(p.to_string()),
            _ => None,
        })
        .collect();
    (
        d.pointer().unwrap_or("").to_owned(),
        d.help.unwrap_or_default(),
        also,
    )
}
