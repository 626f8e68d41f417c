//! `ir-spec/FORMAT.md` suffices to read an artifact: `ir-spec/tools/ppk_dump.py`, a reader
//! written from the document alone, decodes the `.ppk` of every example, of every
//! `../shared/corpus` pack that builds, the checked-in golden artifact and a hand-built
//! module holding every IR variant to the same module the Rust reader
//! (`Artifact::decode`) gives (its summary, and the whole module field by field), and
//! refuses what the document says to refuse. `check_format_tables.py` checks that the
//! reader's type listings are the document's tables.
//!
//! The Python parts are skipped, with a note, when `python3` is not on the `PATH`.

#[path = "format_doc/errors.rs"]
mod errors;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ir_spec::container::{Container, Tag, DEFAULT_MAX_ARTIFACT_BYTES};
use ir_spec::{Artifact, Module};
use packc_compiler::{build_artifact, Options};
use serde_json::{json, Value};

/// `Artifact::decode` under the default limits but `max_attempts`, lifted: the
/// every-variant module carries `u32::MAX` attempts to pin the widest varint.
fn decode(bytes: &[u8]) -> Result<Artifact, ir_spec::ArtifactError> {
    let limits = ir_spec::DecodeLimits {
        max_artifact_bytes: DEFAULT_MAX_ARTIFACT_BYTES,
        max_attempts: usize::MAX,
        ..Default::default()
    };
    Artifact::decode_with(bytes, &limits)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python_available() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("note: python3 is not available; skipping the FORMAT.md reader check");
    }
    ok
}

fn example_paths() -> Vec<PathBuf> {
    let files = packc_suite::example_packs();
    assert!(!files.is_empty(), "no examples");
    files
}

/// Build a pack file as `packc build` does (schemas read beside it); `None` when it has
/// errors.
fn build(path: &Path) -> Option<Artifact> {
    let source = std::fs::read(path).unwrap();
    let options = Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Options::default()
    };
    build_artifact(&source, &options).ok()?.1
}

/// Run `ppk_dump.py` on `bytes` (written to a temp file) with `flags`.
fn dump(name: &str, bytes: &[u8], flags: &[&str]) -> Output {
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let file = std::env::temp_dir().join(format!(
        "packc-format-doc-{}-{safe}.ppk",
        std::process::id()
    ));
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new("python3")
        .arg(root().join("ir-spec/tools/ppk_dump.py"))
        .arg(&file)
        .args(flags)
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_file(&file);
    out
}

/// The JSON `ppk_dump.py` printed; panics with its stderr when it refused the file.
fn dump_json(name: &str, bytes: &[u8], flags: &[&str]) -> Value {
    let out = dump(name, bytes, flags);
    assert!(
        out.status.success(),
        "{name}: ppk_dump.py {flags:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The summary `ppk_dump.py` prints, computed from the module the Rust reader decoded.
fn expected_summary(a: &Artifact) -> Value {
    let m: &Module = &a.module;
    let s = |id: ir_spec::StrId| m.str(id).to_owned();
    let (entry, states) = match &m.workflow {
        Some(wf) => (
            json!(s(wf.states[wf.entry.index()].key)),
            wf.states
                .iter()
                .map(|st| {
                    let transitions: Vec<Value> = st
                        .on_event
                        .iter()
                        .map(|(e, t)| json!([m.event(*e), s(wf.states[t.index()].key)]))
                        .collect();
                    json!({"name": s(st.key), "terminal": st.terminal, "transitions": transitions})
                })
                .collect(),
        ),
        None => (Value::Null, Vec::new()),
    };
    let kind = |k: &ir_spec::StepKind| match k {
        ir_spec::StepKind::Prompt { .. } => "prompt",
        ir_spec::StepKind::Agent { .. } => "agent",
        ir_spec::StepKind::Tool { .. } => "tool",
        ir_spec::StepKind::Branch { .. } => "branch",
        ir_spec::StepKind::Parallel { .. } => "parallel",
        ir_spec::StepKind::Extension { .. } => "extension",
    };
    let compositions: Vec<Value> = m
        .compositions
        .iter()
        .map(|c| {
            let steps: Vec<Value> = c
                .steps
                .iter()
                .map(|st| json!({"id": s(st.id), "kind": kind(&st.kind)}))
                .collect();
            let walk: Vec<String> = c.walk.iter().map(|i| s(c.steps[i.index()].id)).collect();
            json!({"name": s(c.key), "steps": steps, "walk": walk})
        })
        .collect();
    json!({
        "format": format!(
            "{}.{}",
            ir_spec::container::FORMAT_MAJOR,
            ir_spec::container::FORMAT_MINOR
        ),
        "compiler": a.compiler,
        "sections": if m.prompts.iter().any(|p| !p.guards.is_empty()) {
            json!(["MODL", "spec", "GARD"])
        } else {
            json!(["MODL", "spec"])
        },
        "pack": m.id,
        "prompts": m.prompts.iter().map(|p| s(p.key)).collect::<Vec<_>>(),
        "tools": m.tools.iter().map(|t| s(t.key)).collect::<Vec<_>>(),
        "entry": entry,
        "states": states,
        "agents": m.agents.iter().map(|a| s(a.key)).collect::<Vec<_>>(),
        "compositions": compositions,
    })
}

/// The Python reader and the Rust reader agree on `bytes`: the summary, and the whole
/// module field by field (`--serde` prints the shape serde_json gives the Rust `Module`).
fn check_agrees(name: &str, bytes: &[u8]) {
    let rust = decode(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let both = dump_json(name, bytes, &["--both"]);
    assert_eq!(both["summary"], expected_summary(&rust), "{name}: summary");
    assert_eq!(
        both["serde"],
        serde_json::to_value(&rust.module).unwrap(),
        "{name}: full module"
    );
    assert_eq!(
        both["guards"],
        serde_json::to_value(rust.module.guards()).unwrap(),
        "{name}: guards"
    );
}

#[test]
fn the_format_doc_reader_reads_every_example() {
    if !python_available() {
        return;
    }
    for path in example_paths() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let artifact = build(&path).unwrap_or_else(|| panic!("{name} has errors"));
        check_agrees(&name, &artifact.encode());
    }
}

/// Every pack of `../shared/corpus` that builds. Skipped without `../shared`.
#[test]
fn the_format_doc_reader_reads_the_corpus() {
    if !python_available() {
        return;
    }
    if packc_suite::shared_dir().is_none() {
        println!("note: no ../shared; skipping the corpus");
        return;
    }
    let mut read = 0;
    for packc_suite::CorpusPack { file, path, .. } in packc_suite::corpus() {
        let Some(artifact) = build(&path) else {
            continue;
        };
        check_agrees(&file, &artifact.encode());
        read += 1;
    }
    assert!(read > 0, "no corpus pack built");
}

/// What FORMAT.md says a reader refuses, the Python reader refuses (exit status 1).
#[test]
fn the_format_doc_reader_refuses_damaged_files() {
    if !python_available() {
        return;
    }
    let path = root().join("examples/rfc0010-ex3.pack.yaml");
    let artifact = build(&path).unwrap();
    let bytes = artifact.encode();
    let modl = postcard::to_allocvec(&artifact.module).unwrap();
    let refused = |what: &str, bytes: &[u8], why: &str| {
        let out = dump(what, bytes, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(why), "{what}: {stderr}");
        assert!(decode(bytes).is_err(), "{what}: the Rust reader accepts it");
    };
    let with_modl = |modl: &[u8]| {
        Container::encode(
            artifact.source_hash,
            &artifact.compiler,
            &[(Tag(*b"MODL"), modl)],
        )
    };

    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x10;
    refused("flipped", &flipped, "corrupted");
    refused("cut", &bytes[..bytes.len() - 1], "truncated");
    let mut v2 = bytes.clone();
    v2[8] = 2;
    refused("major 2", &v2, "format 2.x not supported");

    let mut long = modl.clone();
    long.push(0);
    refused(
        "extra byte",
        &with_modl(&long),
        "unexpected bytes after the module",
    );
    refused(
        "short",
        &with_modl(&modl[..modl.len() - 1]),
        "does not decode",
    );
    refused(
        "unknown required section",
        &Container::encode(
            artifact.source_hash,
            &artifact.compiler,
            &[(Tag(*b"MODL"), &modl), (Tag(*b"CODE"), b"")],
        ),
        "required but unknown",
    );
    // An unknown optional section is skipped.
    let optional = Container::encode(
        artifact.source_hash,
        &artifact.compiler,
        &[(Tag(*b"MODL"), &modl), (Tag(*b"note"), b"hi")],
    );
    let summary = dump_json("optional section", &optional, &[]);
    assert_eq!(summary["sections"], json!(["MODL", "note"]));

    // A module that decodes but points outside its tables (§3).
    let mut bad = artifact.clone();
    bad.module.events = vec![ir_spec::StrId(9999)];
    refused("bad index", &bad.encode(), "invalid_module");
}

/// A module built by hand so that every variant of every enum, every optional field both
/// absent and present, and varints of every width occur: each row of FORMAT.md §2.3–§2.6
/// is read by the Python reader and compared with the Rust reader.
fn every_variant() -> Artifact {
    use ir_spec::*;
    let r = |root: Root, path: &[&str]| Ref {
        root,
        path: path.iter().map(|s| (*s).to_owned()).collect(),
    };
    let var = |name: &str, ty: Option<VarType>| Variable {
        name: name.into(),
        ty,
        required: false,
        default: None,
        validation: Validation::default(),
    };
    let ph = |root: VarRoot, path: Vec<PathSeg>| Segment::Var(Placeholder { root, path });
    let step = |id: u32, kind: StepKind| Step {
        id: StrId(id),
        kind,
        depends_on: vec![],
        guarded_by: vec![],
        max_attempts: 1,
        evals: vec![],
    };
    let state = |key: u32, body: StateBody, mode: Orchestration| State {
        key: StrId(key),
        body,
        mode,
        terminal: true,
        on_event: vec![],
        max_visits: None,
        on_max_visits: None,
        persistent: false,
        artifacts: vec![],
    };
    let cmp = |test: Compare| Pred::Compare {
        path: r(Root::Step(StepId(0)), &["x"]),
        test,
    };
    let ordered = |op: Ordering, bound: Option<f64>| cmp(Compare::Ordered { op, bound });
    // 200 strings, so that StrIds past 127 take two varint bytes.
    let mut strings: Vec<String> = (0..200).map(|i| format!("s{i}")).collect();
    strings[0] = "greeter".into();
    strings[199] = "Go".into();

    let mut variables = vec![
        Variable {
            name: "n".into(),
            ty: Some(VarType::Number),
            required: false,
            default: Some(json!(5)),
            validation: Validation {
                pattern: Some("^a+$".into()),
                min_length: Some(0),
                max_length: Some(u64::MAX),
                minimum: Some(-1.5),
                maximum: Some(1e300),
                allowed: Some(vec![json!(1), json!("x"), json!({"k": [null]})]),
            },
        },
        Variable {
            required: true,
            ..var("s", Some(VarType::String))
        },
    ];
    variables.extend([
        var("b", Some(VarType::Boolean)),
        var("o", Some(VarType::Object)),
        var("a", Some(VarType::Array)),
        var("any", None),
    ]);

    let mut steps = vec![
        // 0
        step(
            10,
            StepKind::Prompt {
                prompt: PromptId(0),
                input: Bind::Const(json!({"a": [1, 2.5, {"b": null}], "é": "ü\n"})),
                output_schema: Some(OutputSchema {
                    name: "schemas/v.json".into(),
                    schema: Some(ir_spec::JsonText::from_value(&json!({"type": "object"}))),
                }),
            },
        ),
        // 1
        step(
            11,
            StepKind::Agent {
                prompt: PromptId(0),
                input: Bind::Whole(r(Root::Input, &["q", "r"])),
                output_schema: Some(OutputSchema {
                    name: "missing.json".into(),
                    schema: None,
                }),
                tools: vec![ToolRef::Tool(ToolId(0)), ToolRef::Member(StrId(150))],
                max_tool_calls_per_turn: Some(2),
                max_steps: Some(300),
                tool_called: Some(ToolId(0)),
            },
        ),
        // 2
        step(
            12,
            StepKind::Agent {
                prompt: PromptId(0),
                input: Bind::Const(json!(null)),
                output_schema: None,
                tools: vec![],
                max_tool_calls_per_turn: None,
                max_steps: None,
                tool_called: None,
            },
        ),
        // 3
        step(
            13,
            StepKind::Tool {
                tool: ToolId(0),
                args: Bind::Object(vec![
                    (
                        "a".into(),
                        Bind::Interp(vec![
                            Part::Text("n=".into()),
                            Part::Ref(r(Root::Step(StepId(0)), &[])),
                        ]),
                    ),
                    (
                        "b".into(),
                        Bind::Array(vec![
                            Bind::Const(json!(1)),
                            Bind::Whole(r(Root::Step(StepId(1)), &["x", "y"])),
                        ]),
                    ),
                ]),
            },
        ),
        // 4
        step(
            14,
            StepKind::Branch {
                predicate: Pred::All(vec![
                    cmp(Compare::Equals {
                        value: json!("x"),
                        negate: true,
                    }),
                    Pred::Any(vec![
                        cmp(Compare::In {
                            list: Some(vec![json!(1), json!([2])]),
                            negate: false,
                        }),
                        cmp(Compare::In {
                            list: None,
                            negate: true,
                        }),
                    ]),
                    Pred::Not(Box::new(Pred::Not(Box::new(Pred::Exists {
                        path: r(Root::Input, &["z"]),
                        expect: false,
                    })))),
                    ordered(Ordering::Lt, Some(1.0)),
                    ordered(Ordering::Le, Some(-0.0)),
                    ordered(Ordering::Gt, Some(f64::MAX)),
                    ordered(Ordering::Ge, None),
                ]),
                then: StepId(5),
                otherwise: Some(StepId(8)),
            },
        ),
        // 5
        step(
            15,
            StepKind::Parallel {
                branches: vec![StepId(6), StepId(7)],
                strategy: Reduce::Barrier,
                into: "results".into(),
            },
        ),
        // 6, 7: the branches of 5
        step(
            16,
            StepKind::Extension {
                kind: "acme.rerank".into(),
                params: ir_spec::JsonText::from_value(&json!({"top_k": 3})),
                input: Bind::Whole(r(Root::Input, &["q"])),
            },
        ),
        step(
            17,
            StepKind::Prompt {
                prompt: PromptId(0),
                input: Bind::Whole(r(Root::Step(StepId(3)), &[])),
                output_schema: None,
            },
        ),
        // 8, 9
        step(
            18,
            StepKind::Parallel {
                branches: vec![],
                strategy: Reduce::Append,
                into: "all".into(),
            },
        ),
        step(
            19,
            StepKind::Parallel {
                branches: vec![],
                strategy: Reduce::Replace,
                into: String::new(),
            },
        ),
    ];
    steps[5].guarded_by = vec![StepId(4)];
    steps[8].guarded_by = vec![StepId(4)];
    steps[3].depends_on = vec![StepId(0), StepId(1)];
    steps[0].max_attempts = u32::MAX;
    steps[0].evals = vec!["tone".into(), "facts".into()];

    let module = Module {
        id: "every-variant".into(),
        strings,
        events: vec![StrId(199), StrId(198)],
        prompts: vec![Prompt {
            key: StrId(0),
            system: vec![
                Segment::Text("Hello ".into()),
                ph(
                    VarRoot::Input,
                    vec![PathSeg::Field("a".into()), PathSeg::Index(300)],
                ),
                ph(VarRoot::Artifacts, vec![]),
                ph(
                    VarRoot::Artifact(Some(ArtifactId(0))),
                    vec![PathSeg::Index(0)],
                ),
                ph(VarRoot::Artifact(None), vec![]),
                ph(VarRoot::Declared(5), vec![]),
                ph(VarRoot::Undeclared("who".into()), vec![]),
            ],
            variables,
            tools: vec![ToolRef::Tool(ToolId(0)), ToolRef::Member(StrId(150))],
            policy: ToolPolicy {
                tool_choice_none: true,
                max_rounds: Some(3),
                max_tool_calls_per_turn: Some(u32::MAX),
                blocklist: vec!["rm".into()],
            },
            parameters: ir_spec::JsonText::from_value(
                &json!({"temperature": 0.7, "max_tokens": 256}),
            ),
            guards: every_guard(),
        }],
        tools: vec![Tool {
            key: StrId(1),
            name: "kb.lookup".into(),
            description: "Search \"the\" KB.".into(),
            parameters: ir_spec::JsonText::from_value(
                &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ),
        }],
        workflow: Some(Workflow {
            entry: StateId(1),
            states: vec![
                State {
                    terminal: false,
                    on_event: vec![(EventId(0), StateId(1)), (EventId(1), StateId(3))],
                    max_visits: Some(u64::MAX),
                    on_max_visits: Some(StateId(2)),
                    persistent: true,
                    artifacts: vec![
                        (ArtifactId(0), ArtifactMode::Append),
                        (ArtifactId(1), ArtifactMode::Replace),
                    ],
                    ..state(2, StateBody::Prompt(PromptId(0)), Orchestration::Internal)
                },
                state(
                    3,
                    StateBody::Composition(CompId(0)),
                    Orchestration::Composition,
                ),
                state(4, StateBody::Prompt(PromptId(0)), Orchestration::External),
                state(5, StateBody::Prompt(PromptId(0)), Orchestration::Hybrid),
            ],
            budget: Budget {
                max_total_visits: Some(20),
                max_tool_calls: Some(1 << 40),
                max_wall_time_sec: None,
            },
            artifacts: vec![StrId(6), StrId(7)],
        }),
        agents: vec![
            Agent {
                key: StrId(0),
                start: AgentStart::Plain(Some(PromptId(0))),
            },
            Agent {
                key: StrId(8),
                start: AgentStart::Plain(None),
            },
            Agent {
                key: StrId(150),
                start: AgentStart::State(StateId(3)),
            },
        ],
        compositions: vec![
            Composition {
                key: StrId(9),
                steps,
                walk: vec![
                    StepId(0),
                    StepId(1),
                    StepId(2),
                    StepId(3),
                    StepId(4),
                    StepId(5),
                    StepId(8),
                    StepId(9),
                ],
                output: Some(StepId(3)),
            },
            Composition {
                key: StrId(20),
                steps: vec![],
                walk: vec![],
                output: None,
            },
        ],
        spec: ir_spec::SpecInfo::default(),
    };
    Artifact {
        source_hash: [0x5a; 32],
        compiler: "packc format-doc".into(),
        module,
    }
}

#[test]
fn the_format_doc_reader_reads_every_variant() {
    let artifact = every_variant();
    let bytes = artifact.encode();
    // The module round-trips through the Rust reader unchanged...
    assert_eq!(decode(&bytes).unwrap(), artifact);
    if !python_available() {
        return;
    }
    // ...and the Python reader, written from FORMAT.md, reads the same module.
    check_agrees("every-variant", &bytes);
}

/// FORMAT.md §2.1: a `json?` field is an option around the text, so a present JSON null
/// (`default: null` in a pack) survives the round trip, distinct from an absent default.
#[test]
fn a_json_null_in_an_optional_json_field_stays_present() {
    let mut artifact = every_variant();
    artifact.module.prompts[0].variables[0].default = Some(Value::Null);
    let back = decode(&artifact.encode()).unwrap();
    assert_eq!(
        back.module.prompts[0].variables[0].default,
        Some(Value::Null)
    );
    artifact.module.prompts[0].variables[0].default = None;
    let back = decode(&artifact.encode()).unwrap();
    assert_eq!(back.module.prompts[0].variables[0].default, None);
}

/// FORMAT.md §2.1: `Pred` / `Bind` values nested 256 levels deep are read, 257 refused,
/// by both readers.
#[test]
fn the_format_doc_reader_limits_nesting() {
    let nested = |levels: usize| {
        let mut p = ir_spec::Pred::Exists {
            path: ir_spec::Ref {
                root: ir_spec::Root::Input,
                path: ir_spec::Path::default(),
            },
            expect: true,
        };
        for _ in 1..levels {
            p = ir_spec::Pred::Not(Box::new(p));
        }
        let mut a = every_variant();
        match &mut a.module.compositions[0].steps[4].kind {
            ir_spec::StepKind::Branch { predicate, .. } => *predicate = p,
            other => panic!("step 4 is {other:?}"),
        }
        a.encode()
    };
    let deepest = nested(256);
    let too_deep = nested(257);
    assert!(decode(&deepest).is_ok());
    let err = decode(&too_deep).unwrap_err();
    assert!(err.to_string().contains("nested deeper"), "{err}");
    if !python_available() {
        return;
    }
    // (Only the summary: serde_json refuses to parse JSON nested past 128 levels.)
    let rust = decode(&deepest).unwrap();
    assert_eq!(
        dump_json("nested 256", &deepest, &[]),
        expected_summary(&rust)
    );
    let out = dump("nested 257", &too_deep, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("nested deeper than 256"), "{stderr}");
}

/// FORMAT.md §2.1: a JSON text nested 127 levels is read, 128 refused, by both readers.
#[test]
fn the_format_doc_reader_limits_json_depth() {
    let with_schema = |levels: usize| {
        let mut v = json!(1);
        for _ in 0..levels {
            v = json!([v]);
        }
        let mut a = every_variant();
        match &mut a.module.compositions[0].steps[0].kind {
            ir_spec::StepKind::Prompt { output_schema, .. } => {
                output_schema.as_mut().unwrap().schema = Some(ir_spec::JsonText::from_value(&v));
            }
            other => panic!("step 0 is {other:?}"),
        }
        a.encode()
    };
    let deepest = with_schema(127);
    let too_deep = with_schema(128);
    assert!(decode(&deepest).is_ok());
    assert!(decode(&too_deep).is_err());
    if !python_available() {
        return;
    }
    check_agrees("json 127", &deepest);
    let out = dump("json 128", &too_deep, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("nested deeper than 127"), "{stderr}");
}

/// One guard of each [`ir_spec::Check`] variant, across every [`ir_spec::Direction`].
fn every_guard() -> Vec<ir_spec::Guard> {
    use ir_spec::{Check, Direction, Guard};
    let checks = vec![
        Check::BannedWords {
            words: vec!["darn".into(), "heck".into()],
            word_boundary: true,
        },
        Check::MaxLength {
            max_characters: Some(200),
            max_tokens: None,
        },
        Check::MaxSentences(3),
        Check::ContainsAll(vec!["id".into()]),
        Check::ContainsAny(vec!["yes".into(), "no".into()]),
        Check::Regex {
            pattern: "^[a-z]+$".into(),
            expect_match: false,
        },
        Check::JsonValid,
        Check::JsonSchema(ir_spec::JsonText::from_value(&json!({"type": "object"}))),
        Check::Host {
            params: ir_spec::JsonText::from_value(&json!({"threshold": 0.8})),
        },
    ];
    let directions = [Direction::Output, Direction::Input, Direction::Both];
    checks
        .into_iter()
        .enumerate()
        .map(|(i, check)| Guard {
            name: format!("type{i}"),
            check,
            message: "no".into(),
            direction: directions[i % 3],
        })
        .collect()
}

/// The type listings `ppk_dump.py` decodes with are the tables of FORMAT.md §2.3–§2.6,
/// so the agreement checked above is an agreement between FORMAT.md and the Rust code.
#[test]
fn the_format_doc_reader_follows_the_format_doc_tables() {
    if !python_available() {
        return;
    }
    let out = Command::new("python3")
        .arg(root().join("ir-spec/tools/check_format_tables.py"))
        .arg(root().join("ir-spec/FORMAT.md"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "FORMAT.md and ppk_dump.py disagree:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The checked-in golden artifact (`tests/golden/`, see `cli/tests/golden.rs`), read as
/// the bytes on disk rather than rebuilt.
#[test]
fn the_format_doc_reader_reads_the_golden_artifact() {
    if !python_available() {
        return;
    }
    let path = root().join("tests/golden/rfc0010-ex2.ppk");
    let Ok(bytes) = std::fs::read(&path) else {
        println!("note: no {}; skipping", path.display());
        return;
    };
    check_agrees("golden rfc0010-ex2.ppk", &bytes);
}

/// The worked examples of FORMAT.md §2.7 are what postcard writes.
#[test]
fn the_format_doc_examples_are_exact() {
    let empty = Module {
        id: "demo".into(),
        ..Module::default()
    };
    assert_eq!(
        postcard::to_allocvec(&empty).unwrap(),
        b"\x04demo\x00\x00\x00\x00\x00\x00\x00"
    );
    let step = ir_spec::Step {
        id: ir_spec::StrId(4),
        kind: ir_spec::StepKind::Tool {
            tool: ir_spec::ToolId(0),
            args: ir_spec::Bind::Const(json!({"q": 1})),
        },
        depends_on: vec![],
        guarded_by: vec![],
        max_attempts: 1,
        evals: vec![],
    };
    assert_eq!(
        postcard::to_allocvec(&step).unwrap(),
        b"\x04\x02\x00\x00\x07{\"q\":1}\x00\x00\x01\x00"
    );
}
