//! `packc inspect`: show what a `.ppk` artifact holds: header, sections, module summary.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use ir_spec::container::{Container, ContainerError, DEFAULT_MAX_ARTIFACT_BYTES, MAGIC};
use ir_spec::{
    AgentStart, Artifact, Composition, Module, Orchestration, Reduce, StateBody, Step, StepId,
    StepKind, ToolRef,
};

/// Show what a `.ppk` artifact holds.
///
/// Prints the header (format version, compiler, source SHA-256, size, checksum), the
/// sections with their sizes, then the module: prompts with their validators, tools,
/// workflow states with their transitions, agents, and each composition's steps in walk
/// order. A file that
/// is not a valid artifact is an error (exit 2).
///
/// Examples:
///   packc inspect examples/rfc0010-ex2.ppk
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct InspectArgs {
    /// The artifact, as written by `packc build`.
    #[arg(value_name = "PPK")]
    pub artifact: PathBuf,
}

/// Print the header, the sections and a summary of the module. Exit 2 when the file is
/// not a readable, valid artifact.
pub fn run(args: &InspectArgs) -> Result<ExitCode> {
    let path = &args.artifact;
    let source = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
    if source && path.is_file() && !is_artifact(path).unwrap_or(true) {
        let word = crate::shell::path(path);
        anyhow::bail!(
            "{} is a pack, not a built artifact: `packc build {word}` makes one to inspect \
             (`packc check {word}` checks the pack, `packc graph {word}` draws it)",
            path.display()
        );
    }
    let (bytes, artifact) = read_artifact(&args.artifact)?;
    // `read_artifact` succeeded, so the container decodes.
    let container = Container::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES)
        .with_context(|| format!("cannot load {}", args.artifact.display()))?;
    // Artifact strings are untrusted: no control character reaches the terminal.
    let text = describe(&args.artifact, &bytes, &container, &artifact);
    out!("{}", packc_compiler::render::escape_control(&text));
    Ok(ExitCode::SUCCESS)
}

/// Whether the file is an artifact: named `*.ppk`, or starting with the `.ppk` magic bytes.
pub fn is_artifact(path: &Path) -> Result<bool> {
    // A file named `.ppk` is an artifact even when it is too short to show its magic (an
    // empty or cut file gets the artifact error, not a pack parse error).
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ppk"))
    {
        return Ok(true);
    }
    // A pipe or device is not opened here (a pipe would block for a writer): reading the
    // pack refuses it with its own message.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Ok(false);
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut head = Vec::with_capacity(MAGIC.len());
    file.by_ref()
        .take(MAGIC.len() as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(head == MAGIC)
}

/// Read, decode and verify an artifact file; the error is one line naming the file.
pub fn read_artifact(path: &Path) -> Result<(Vec<u8>, Artifact)> {
    let context = || format!("cannot load {}", path.display());
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.len() > DEFAULT_MAX_ARTIFACT_BYTES as u64 {
        // Do not read a huge file just to say it is too big.
        let err = ContainerError::TooLarge {
            size: usize::try_from(meta.len()).unwrap_or(usize::MAX),
            limit: DEFAULT_MAX_ARTIFACT_BYTES,
        };
        return Err(err).with_context(context);
    }
    let bytes = packc_compiler::paths::read_regular(path, DEFAULT_MAX_ARTIFACT_BYTES as u64)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let artifact = Artifact::decode(&bytes, DEFAULT_MAX_ARTIFACT_BYTES).with_context(context)?;
    Ok((bytes, artifact))
}

/// The text `packc inspect` prints.
pub fn describe(path: &Path, bytes: &[u8], c: &Container<'_>, a: &Artifact) -> String {
    let mut out = String::new();
    let w = &mut out;
    let crc = bytes
        .get(bytes.len().saturating_sub(4)..)
        .map_or(0, |t| u32::from_le_bytes([t[0], t[1], t[2], t[3]]));
    let _ = writeln!(w, "file:      {}", path.display());
    let _ = writeln!(w, "size:      {} bytes", bytes.len());
    let _ = writeln!(
        w,
        "format:    {}.{}",
        ir_spec::container::FORMAT_MAJOR,
        c.minor
    );
    let _ = writeln!(w, "compiler:  {}", a.compiler);
    let _ = writeln!(w, "source:    sha256:{}", hex(&a.source_hash));
    let _ = writeln!(w, "checksum:  crc32:{crc:08x}");
    let _ = writeln!(w, "sections:");
    for (tag, payload) in &c.sections {
        let note = if tag.is_optional() {
            "  (optional)"
        } else {
            ""
        };
        let _ = writeln!(w, "  {tag}  {:>8} bytes{note}", payload.len());
    }
    summarize(w, &a.module);
    out
}

/// Longer texts (a validator's words, message or pattern) are cut to this many characters.
const SHOWN_CHARS: usize = 60;

/// `text` cut to [`SHOWN_CHARS`] characters, and whether it was cut.
fn cut(text: &str) -> (&str, &str) {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => (&text[..at], "…"),
        None => (text, ""),
    }
}

/// `text` quoted, cut to [`SHOWN_CHARS`] with `…` when longer.
fn quoted(text: &str) -> String {
    let (text, more) = cut(text);
    format!("{text:?}{more}")
}

/// A list of strings, quoted, at most five of them shown.
fn quoted_list(items: &[String]) -> String {
    let mut shown: Vec<String> = items.iter().take(5).map(|i| quoted(i)).collect();
    if items.len() > 5 {
        shown.push(format!("… {} more", items.len() - 5));
    }
    format!("[{}]", shown.join(", "))
}

/// One validator of a prompt, as it runs: its `type` as written, what it checks, what it
/// reads (when not only the answer) and, for those that replace an answer, the text
/// they put in its place.
fn describe_guard(g: &ir_spec::Guard) -> String {
    use ir_spec::{Check, Direction};
    let mut line = g.name.clone();
    let replaces = match &g.check {
        Check::BannedWords {
            words,
            word_boundary,
        } => {
            let how = if *word_boundary {
                "whole words"
            } else {
                "substrings"
            };
            let _ = write!(line, "  bans {} ({how}, any case)", quoted_list(words));
            true
        }
        Check::MaxLength {
            max_characters,
            max_tokens,
        } => {
            if let Some(n) = max_characters {
                let _ = write!(line, "  at most {n} characters (truncates)");
            }
            if let Some(n) = max_tokens {
                let _ = write!(line, "  at most {n} words (replaces)");
            }
            max_tokens.is_some()
        }
        Check::MaxSentences(n) => {
            let _ = write!(line, "  at most {n} sentences");
            true
        }
        Check::ContainsAll(items) => {
            let _ = write!(line, "  requires all of {}", quoted_list(items));
            true
        }
        Check::ContainsAny(items) => {
            let _ = write!(line, "  requires one of {}", quoted_list(items));
            true
        }
        Check::Regex {
            pattern,
            expect_match,
        } => {
            let how = if *expect_match {
                "must match"
            } else {
                "must not match"
            };
            let (pattern, more) = cut(pattern);
            let _ = write!(line, "  {how} `{pattern}`{more}");
            true
        }
        Check::JsonValid => {
            line.push_str("  valid JSON");
            true
        }
        Check::JsonSchema(schema) => {
            let _ = write!(
                line,
                "  valid JSON under a schema of {} bytes",
                schema.get().len()
            );
            true
        }
        Check::Host { params } => {
            let (params, more) = cut(params.get());
            let _ = write!(line, "  judged by the host, params {params}{more}");
            true
        }
    };
    match g.direction {
        Direction::Output => {}
        Direction::Input => line.push_str("  reads the input"),
        Direction::Both => line.push_str("  reads the input and the answer"),
    }
    if replaces {
        if g.message == ir_spec::DEFAULT_BLOCKED_MESSAGE {
            line.push_str("  default message");
        } else {
            let _ = write!(line, "  message {}", quoted(&g.message));
        }
    }
    line
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The module, table by table. Indices are in range: the module was validated.
fn summarize(w: &mut String, m: &Module) {
    let _ = writeln!(w, "module {:?}", m.id);
    let _ = writeln!(w, "  spec level: {}", m.spec.level);
    if !m.spec.providers.is_empty() {
        let _ = writeln!(w, "  providers ({}):", m.spec.providers.len());
        for p in &m.spec.providers {
            let required = if p.required { "required" } else { "optional" };
            let _ = writeln!(w, "    {}  role {}  {required}", p.key, p.role);
        }
    }
    let _ = writeln!(w, "  strings: {}", m.strings.len());
    let _ = writeln!(w, "  prompts ({}):", m.prompts.len());
    for (i, p) in m.prompts.iter().enumerate() {
        let mut line = format!("    {}", m.str(p.key));
        if !p.variables.is_empty() {
            let vars: Vec<&str> = p.variables.iter().map(|v| v.name.as_str()).collect();
            let _ = write!(line, "  variables [{}]", vars.join(", "));
        }
        if !p.tools.is_empty() {
            let _ = write!(line, "  tools [{}]", tool_refs(m, &p.tools));
        }
        let pid = ir_spec::PromptId(i as u32);
        let provider = m.spec.prompt_provider(pid);
        if provider != 0 {
            let _ = write!(line, "  provider {}", m.spec.provider_key(provider));
        }
        let _ = writeln!(w, "{line}");
        for g in &p.guards {
            let _ = writeln!(w, "      validator {}", describe_guard(g));
        }
    }
    let _ = writeln!(w, "  tools ({}):", m.tools.len());
    for t in &m.tools {
        let key = m.str(t.key);
        if t.name == key {
            let _ = writeln!(w, "    {key}");
        } else {
            let _ = writeln!(w, "    {key}  (called {:?})", t.name);
        }
    }
    match &m.workflow {
        None => {
            let _ = writeln!(w, "  workflow: none");
        }
        Some(wf) => {
            let state = |s: ir_spec::StateId| m.str(wf.states[s.index()].key);
            let _ = writeln!(
                w,
                "  workflow: entry {}, {} state(s)",
                state(wf.entry),
                wf.states.len()
            );
            for (i, s) in wf.states.iter().enumerate() {
                let body = match s.body {
                    StateBody::Prompt(p) => format!("prompt {}", m.str(m.prompts[p.index()].key)),
                    StateBody::Composition(c) => {
                        format!("composition {}", m.str(m.compositions[c.index()].key))
                    }
                };
                let mode = match s.mode {
                    Orchestration::Internal => "internal",
                    Orchestration::External => "external",
                    Orchestration::Hybrid => "hybrid",
                    Orchestration::Composition => "composition",
                };
                let mut line = format!("    {}  {body}  {mode}", m.str(s.key));
                if s.terminal {
                    line.push_str("  terminal");
                }
                if s.persistent {
                    line.push_str("  persistent");
                }
                let sid = ir_spec::StateId(i as u32);
                if m.spec.level >= ir_spec::SpecLevel::V1_8 && !s.terminal {
                    line.push_str(if m.spec.holds_turn(sid) {
                        "  control user"
                    } else {
                        "  control agent"
                    });
                }
                let _ = writeln!(w, "{line}");
                for (event, to) in &s.on_event {
                    let _ = writeln!(w, "      on {} -> {}", m.event(*event), state(*to));
                }
                if let Some(max) = s.max_visits {
                    let then = s
                        .on_max_visits
                        .map_or("error".into(), |t| state(t).to_owned());
                    let _ = writeln!(w, "      after {max} visit(s) -> {then}");
                }
            }
        }
    }
    let _ = writeln!(w, "  agents ({}):", m.agents.len());
    for (index, a) in m.agents.iter().enumerate() {
        let start = match a.start {
            AgentStart::Plain(Some(p)) => format!("prompt {}", m.str(m.prompts[p.index()].key)),
            AgentStart::Plain(None) => "no prompt".into(),
            AgentStart::State(s) => {
                let key = m
                    .workflow
                    .as_ref()
                    .map_or("", |wf| m.str(wf.states[s.index()].key));
                format!("state {key}")
            }
        };
        let _ = writeln!(w, "    {}  {start}", m.str(a.key));
        if let Some(g) = m.spec.agent_governance(ir_spec::AgentId(index as u32)) {
            let _ = writeln!(w, "      governance:");
            describe_governance_facts(w, g, "        ");
        }
    }
    let _ = writeln!(w, "  compositions ({}):", m.compositions.len());
    for c in &m.compositions {
        let output = c
            .output
            .map_or("last step".into(), |o| step_name(m, c, o).to_owned());
        let _ = writeln!(
            w,
            "    {}  {} step(s), output {output}",
            m.str(c.key),
            c.steps.len()
        );
        for id in &c.walk {
            describe_step(w, m, c, *id, 6);
            if let StepKind::Parallel { branches, .. } = &c.steps[id.index()].kind {
                for b in branches {
                    describe_step(w, m, c, *b, 8);
                }
            }
        }
    }
    describe_bounds(w, m);
    describe_governance(w, m);
}

/// `metadata.governance` (RFC 0013, RFC 0016): purpose, autonomy, risk, approved
/// environments, obligations and their controls.
fn describe_governance(w: &mut String, m: &Module) {
    let Some(g) = &m.spec.governance else {
        return;
    };
    let _ = writeln!(w, "governance:");
    describe_governance_facts(w, g, "  ");
}

/// The facts of one `governance` object (the pack's or an agent member's), each line
/// starting with `indent`.
fn describe_governance_facts(w: &mut String, g: &serde_json::Value, indent: &str) {
    let text = |k: &str| g.get(k).and_then(serde_json::Value::as_str);
    for (label, key) in [
        ("purpose", "intended_purpose"),
        ("autonomy level", "autonomy_level"),
        ("risk", "risk_classification"),
        ("accountable owner", "accountable_owner"),
    ] {
        if let Some(v) = text(key) {
            let _ = writeln!(w, "{indent}{label}: {}", v.trim());
        }
    }
    if let Some(envs) = g.get("approved_environments").and_then(|e| e.as_array()) {
        let envs: Vec<&str> = envs.iter().filter_map(|e| e.as_str()).collect();
        let _ = writeln!(w, "{indent}approved environments: {}", envs.join(", "));
    }
    let obligations = g.get("obligations").and_then(|o| o.as_array());
    for o in obligations.into_iter().flatten() {
        let id = o.get("id").and_then(|v| v.as_str()).unwrap_or("?");
        let what = o.get("obligation").and_then(|v| v.as_str()).unwrap_or("?");
        let _ = writeln!(w, "{indent}obligation {id}: {what}");
        let controls = o.get("controls").and_then(|c| c.as_array());
        for c in controls.into_iter().flatten().filter_map(|c| c.as_object()) {
            for (kind, v) in c {
                let v = v.as_str().unwrap_or_default().trim();
                let _ = writeln!(w, "{indent}  control {kind}: {v}");
            }
        }
    }
}

/// The most model and tool calls one run can make (`ir_spec::bounds`): per composition
/// run, per state execution, and per workflow turn.
fn describe_bounds(w: &mut String, m: &Module) {
    let b = ir_spec::bounds::module(m);
    let _ = writeln!(w, "static call bounds (most calls one run can make):");
    for (c, calls) in m.compositions.iter().zip(&b.compositions) {
        let _ = writeln!(w, "  composition {}: {calls}", m.str(c.key));
    }
    if let Some(wf) = &m.workflow {
        for (s, calls) in wf.states.iter().zip(&b.states) {
            let _ = writeln!(w, "  state {}: {calls} per execution", m.str(s.key));
        }
    }
    if let Some(turn) = &b.workflow_turn {
        let _ = writeln!(
            w,
            "  workflow turn: {} state execution(s), {}",
            turn.executions, turn.calls
        );
    }
}

/// A reference as the pack writes it, with the slot it reads: `${classify#0.output.type}`.
fn reference(m: &Module, c: &Composition, r: &ir_spec::Ref) -> String {
    let mut out = match r.root {
        ir_spec::Root::Input => "${input".to_string(),
        ir_spec::Root::Step(s) => format!("${{{}#{}.output", step_name(m, c, s), s.0),
    };
    for seg in &r.path {
        out.push('.');
        out.push_str(seg);
    }
    out.push('}');
    out
}

/// A pre-parsed binding in a compact JSON-like notation.
fn bind(m: &Module, c: &Composition, b: &ir_spec::Bind) -> String {
    use ir_spec::{Bind, Part};
    match b {
        Bind::Const(v) => v.to_string(),
        Bind::Whole(r) => reference(m, c, r),
        Bind::Interp(parts) => {
            let mut out = String::from("\"");
            for p in parts {
                match p {
                    Part::Text(t) => out.push_str(&t.escape_debug().to_string()),
                    Part::Ref(r) => out.push_str(&reference(m, c, r)),
                }
            }
            out.push('"');
            out
        }
        Bind::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| bind(m, c, i)).collect();
            format!("[{}]", items.join(", "))
        }
        Bind::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{k:?}: {}", bind(m, c, v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
    }
}

/// A predicate in infix notation, constants with their lowered types.
fn pred(m: &Module, c: &Composition, p: &ir_spec::Pred) -> String {
    use ir_spec::{Compare, Ordering, Pred};
    let list = |ps: &[Pred], op: &str| {
        let parts: Vec<String> = ps.iter().map(|p| pred(m, c, p)).collect();
        format!("({})", parts.join(op))
    };
    match p {
        Pred::Compare { path, test } => {
            let path = reference(m, c, path);
            match test {
                Compare::Equals { value, negate } => {
                    format!("{path} {} {value}", if *negate { "!=" } else { "==" })
                }
                Compare::In { list, negate } => {
                    let op = if *negate { "not in" } else { "in" };
                    match list {
                        Some(l) => format!("{path} {op} {}", serde_json::Value::from(l.clone())),
                        None => format!("{path} {op} <not a list: type_error>"),
                    }
                }
                Compare::Ordered { op, bound } => {
                    let op = match op {
                        Ordering::Lt => "<",
                        Ordering::Le => "<=",
                        Ordering::Gt => ">",
                        Ordering::Ge => ">=",
                    };
                    match bound {
                        Some(b) => format!("{path} {op} {b}"),
                        None => format!("{path} {op} <not a number: type_error>"),
                    }
                }
            }
        }
        Pred::Exists { path, expect } => {
            let path = reference(m, c, path);
            if *expect {
                format!("exists {path}")
            } else {
                format!("missing {path}")
            }
        }
        Pred::All(ps) => list(ps, " && "),
        Pred::Any(ps) => list(ps, " || "),
        // `not (a == b)`: a bare `!` before a comparison reads as if it negated its left side.
        Pred::Not(p) => match **p {
            Pred::All(_) | Pred::Any(_) => format!("not {}", pred(m, c, p)),
            _ => format!("not ({})", pred(m, c, p)),
        },
    }
}

fn step_name<'m>(m: &'m Module, c: &Composition, id: StepId) -> &'m str {
    m.str(c.steps[id.index()].id)
}

fn tool_refs(m: &Module, tools: &[ToolRef]) -> String {
    let names: Vec<String> = tools
        .iter()
        .map(|t| match t {
            ToolRef::Tool(t) => m.str(m.tools[t.index()].key).to_owned(),
            ToolRef::Member(k) => format!("agent:{}", m.str(*k)),
        })
        .collect();
    names.join(", ")
}

/// One line: `<index> <id>  <kind> <details>  [depends_on ...]  [attempts N]`.
fn describe_step(w: &mut String, m: &Module, c: &Composition, id: StepId, indent: usize) {
    let step: &Step = &c.steps[id.index()];
    let mut line = describe_step_kind(m, c, id, step, indent);
    if let StepKind::Prompt { prompt, .. } | StepKind::Agent { prompt, .. } = &step.kind {
        let comp = m
            .compositions
            .iter()
            .position(|x| std::ptr::eq(x, c))
            .and_then(ir_spec::CompId::from_index);
        if let Some(comp) = comp {
            let provider = m.spec.step_provider(comp, id, *prompt);
            if provider != 0 {
                let _ = write!(line, "  provider {}", m.spec.provider_key(provider));
            }
        }
    }
    let _ = writeln!(w, "{line}");
}

fn describe_step_kind(
    m: &Module,
    c: &Composition,
    id: StepId,
    step: &Step,
    indent: usize,
) -> String {
    let prompt = |p: ir_spec::PromptId| m.str(m.prompts[p.index()].key);
    let mut line = format!("{:indent$}{} {}  ", "", id.0, m.str(step.id));
    match &step.kind {
        StepKind::Prompt {
            prompt: p,
            output_schema,
            input,
        } => {
            let _ = write!(line, "prompt {}({})", prompt(*p), bind(m, c, input));
            if let Some(s) = output_schema {
                let _ = write!(line, " -> {}", s.name);
            }
        }
        StepKind::Agent {
            prompt: p,
            output_schema,
            tools,
            max_steps,
            tool_called,
            input,
            ..
        } => {
            let _ = write!(
                line,
                "agent {}({}) tools [{}]",
                prompt(*p),
                bind(m, c, input),
                tool_refs(m, tools)
            );
            if let Some(n) = max_steps {
                let _ = write!(line, " max_steps {n}");
            }
            if let Some(t) = tool_called {
                let _ = write!(line, " until {}", m.str(m.tools[t.index()].key));
            }
            if let Some(s) = output_schema {
                let _ = write!(line, " -> {}", s.name);
            }
        }
        StepKind::Tool { tool, args } => {
            let _ = write!(
                line,
                "tool {}({})",
                m.str(m.tools[tool.index()].key),
                bind(m, c, args)
            );
        }
        StepKind::Extension {
            kind,
            params,
            input,
        } => {
            let _ = write!(
                line,
                "extension {kind}({}) {}",
                bind(m, c, input),
                params.get()
            );
        }
        StepKind::Branch {
            then,
            otherwise,
            predicate,
        } => {
            let _ = write!(
                line,
                "branch if {} then {}",
                pred(m, c, predicate),
                step_name(m, c, *then)
            );
            if let Some(o) = otherwise {
                let _ = write!(line, " else {}", step_name(m, c, *o));
            }
        }
        StepKind::Parallel {
            branches,
            strategy,
            into,
        } => {
            let strategy = match strategy {
                Reduce::Append => "append",
                Reduce::Replace => "replace",
                Reduce::Barrier => "barrier",
            };
            let _ = write!(
                line,
                "parallel {} branch(es), reduce {strategy} into {into}",
                branches.len()
            );
        }
    }
    if !step.depends_on.is_empty() {
        let deps: Vec<&str> = step
            .depends_on
            .iter()
            .map(|d| step_name(m, c, *d))
            .collect();
        let _ = write!(line, "  depends_on [{}]", deps.join(", "));
    }
    if step.max_attempts > 1 {
        let _ = write!(line, "  attempts {}", step.max_attempts);
    }
    if !step.evals.is_empty() {
        let _ = write!(line, "  eval [{}]", step.evals.join(", "));
    }
    line
}
