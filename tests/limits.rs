//! Every limit of the compiler (`packc_compiler::load::Limits`) and of the artifact
//! reader (`ir_spec::DecodeLimits`) at its edge: a pack or artifact exactly at the limit
//! passes cleanly, one item past it fails with one diagnostic (or error) naming the
//! limit. The VM's limits are tested in `vm/tests/limits.rs`.

use ir_spec::container::ContainerError;
use ir_spec::{Artifact, ArtifactError, DecodeLimits};
use packc_compiler::diag::{DiagKind, Diagnostic};
use packc_compiler::load::Limits;
use packc_compiler::{build_artifact, check_bytes, Checked, Options};
use packc_suite::gen::to_yaml;
use serde_json::{json, Map, Value};

/// How many of each thing a generated pack holds.
#[derive(Clone, Copy, Default)]
struct Shape {
    prompts: usize,
    tools: usize,
    agents: usize,
    states: usize,
    /// Compositions, each of `steps` steps: a prompt step, then (from 4 steps on) a
    /// parallel step of two branches, then prompt steps.
    comps: usize,
    steps: usize,
}

fn prompt(key: &str, template: &str) -> Value {
    json!({"id": key, "name": key, "version": "1.0.0", "system_template": template})
}

/// A clean pack of `shape`.
fn pack(shape: Shape) -> Value {
    let mut prompts = Map::new();
    for i in 0..shape.prompts.max(1) {
        prompts.insert(format!("p{i}"), prompt(&format!("p{i}"), "Do it."));
    }
    let mut root = json!({
        "id": "limits", "name": "Limits", "version": "1.0.0",
        "template_engine": {"version": "v1", "syntax": "{{variable}}"},
    });
    if shape.prompts > 0 {
        root["prompts"] = Value::Object(prompts);
    }
    if shape.tools > 0 {
        let tools: Map<String, Value> = (0..shape.tools)
            .map(|i| {
                let tool = json!({"name": format!("t{i}"), "description": "A tool.",
                                  "parameters": {"type": "object", "properties": {}}});
                (format!("t{i}"), tool)
            })
            .collect();
        root["tools"] = Value::Object(tools);
    }
    if shape.agents > 0 {
        // Plain members, each named after a prompt.
        let members: Map<String, Value> = (0..shape.agents)
            .map(|i| (format!("p{i}"), json!({})))
            .collect();
        root["agents"] = json!({"entry": "p0", "members": members});
    }
    if shape.states > 0 {
        let states: Map<String, Value> = (0..shape.states)
            .map(|i| {
                let mut state = json!({"prompt_task": "p0", "terminal": true});
                if i + 1 < shape.states {
                    state =
                        json!({"prompt_task": "p0", "on_event": {"Next": format!("s{}", i + 1)}});
                }
                (format!("s{i}"), state)
            })
            .collect();
        root["workflow"] = json!({"version": 1, "entry": "s0", "states": states});
    }
    if shape.comps > 0 {
        let comps: Map<String, Value> = (0..shape.comps)
            .map(|c| {
                (
                    format!("c{c}"),
                    json!({"version": 1, "steps": steps(shape.steps)}),
                )
            })
            .collect();
        root["compositions"] = Value::Object(comps);
    }
    root
}

/// `n` steps (parallel branches included), `n >= 1`.
fn steps(n: usize) -> Vec<Value> {
    let step =
        |id: String| json!({"id": id, "kind": "prompt", "prompt_task": "p0", "input": "${input}"});
    let mut list = vec![step("a".into())];
    let mut left = n - 1;
    if left >= 3 {
        list.push(json!({"id": "par", "kind": "parallel",
            "branches": [step("b0".into()), step("b1".into())],
            "reduce": {"strategy": "barrier", "into": "both"}}));
        left -= 3;
    }
    list.extend((0..left).map(|i| step(format!("s{i}"))));
    list
}

fn check_with(pack: &Value, limits: &Limits) -> [Checked; 2] {
    let options = Options {
        limits: limits.clone(),
        ..Options::default()
    };
    // Both loaders: the JSON fast path and the YAML one.
    let json = serde_json::to_vec(pack).unwrap();
    let yaml = to_yaml(pack);
    [
        check_bytes(&json, &options),
        check_bytes(yaml.as_bytes(), &options),
    ]
}

fn assert_clean(pack: &Value, limits: &Limits) {
    for checked in check_with(pack, limits) {
        assert!(!checked.has_errors(), "{:#?}", checked.diagnostics);
    }
}

/// The one diagnostic of a pack past a limit: of `kind`, naming `name`.
fn the_error(pack: &Value, limits: &Limits, kind: DiagKind, name: &str) -> Diagnostic {
    let [json, yaml] = check_with(pack, limits);
    for checked in [&json, &yaml] {
        assert_eq!(checked.diagnostics.len(), 1, "{:#?}", checked.diagnostics);
        let d = &checked.diagnostics[0];
        assert_eq!(d.kind, kind, "{d:#?}");
        assert!(d.message.contains(&format!("`{name}`")), "{}", d.message);
    }
    let (j, y) = (&json.diagnostics[0], &yaml.diagnostics[0]);
    assert_eq!((&j.message, j.pointer()), (&y.message, y.pointer()));
    json.diagnostics.into_iter().next().unwrap()
}

/// A limit at its edge: `pack` has exactly `n` of what `name` counts; the limit at `n`
/// (and `n + 1`) passes, at `n - 1` is one `limit_exceeded` at `pointer`.
fn edge(pack: &Value, name: &str, n: usize, pointer: &str) {
    let limits = |max: usize| {
        let mut limits = Limits::default();
        limits.set(name, max).unwrap();
        limits
    };
    assert_clean(pack, &limits(n + 1));
    assert_clean(pack, &limits(n));
    let d = the_error(pack, &limits(n - 1), DiagKind::LimitExceeded, name);
    assert_eq!(d.pointer(), Some(pointer), "{d:#?}");
}

#[test]
fn source_bytes() {
    let pack = pack(Shape {
        prompts: 1,
        ..Shape::default()
    });
    let n = serde_json::to_vec(&pack).unwrap().len();
    let options = |max| Options {
        limits: Limits {
            max_source_bytes: max,
            ..Limits::default()
        },
        ..Options::default()
    };
    let text = serde_json::to_vec(&pack).unwrap();
    assert!(!check_bytes(&text, &options(n)).has_errors());
    let over = check_bytes(&text, &options(n - 1));
    assert_eq!(over.diagnostics.len(), 1);
    assert_eq!(over.diagnostics[0].kind, DiagKind::LimitExceeded);
    assert!(over.diagnostics[0].message.contains("`max_source_bytes`"));
    assert_eq!(over.diagnostics[0].pointer(), None);
}

/// The nesting depth and node count of a JSON value, as the loader counts them.
fn depth_and_nodes(v: &Value) -> (usize, usize) {
    match v {
        Value::Array(items) => items.iter().fold((1, 1), |(d, n), v| {
            let (vd, vn) = depth_and_nodes(v);
            (d.max(vd + 1), n + vn)
        }),
        Value::Object(map) => map.values().fold((1, 1), |(d, n), v| {
            let (vd, vn) = depth_and_nodes(v);
            (d.max(vd + 1), n + vn)
        }),
        _ => (0, 1),
    }
}

#[test]
fn depth_and_node_count_are_parse_errors() {
    let pack = pack(Shape {
        prompts: 2,
        comps: 1,
        steps: 5,
        ..Shape::default()
    });
    let (depth, nodes) = depth_and_nodes(&pack);
    assert_eq!(depth, 7, "/compositions/c0/steps/1/branches/0 is an object");
    let with = |f: &dyn Fn(&mut Limits)| {
        let mut limits = Limits::default();
        f(&mut limits);
        limits
    };
    assert_clean(&pack, &with(&|l| l.max_depth = depth));
    the_error(
        &pack,
        &with(&|l| l.max_depth = depth - 1),
        DiagKind::ParseError,
        "max_depth",
    );
    assert_clean(&pack, &with(&|l| l.max_nodes = nodes));
    the_error(
        &pack,
        &with(&|l| l.max_nodes = nodes - 1),
        DiagKind::ParseError,
        "max_nodes",
    );
}

#[test]
fn string_bytes() {
    let mut p = pack(Shape {
        prompts: 2,
        ..Shape::default()
    });
    // The longest string: a description of 40 bytes.
    p["prompts"]["p1"]["description"] = json!("d".repeat(40));
    edge(&p, "max_string_bytes", 40, "/prompts/p1/description");
    // A key: blamed at its member.
    let mut p = pack(Shape {
        prompts: 1,
        ..Shape::default()
    });
    let key = "k".repeat(40);
    p["prompts"][key.as_str()] = prompt(&key, "x");
    edge(&p, "max_string_bytes", 40, &format!("/prompts/{key}"));
    // A multi-byte string counts bytes, not characters: 20 × `é` is 40 bytes.
    let mut p = pack(Shape {
        prompts: 1,
        ..Shape::default()
    });
    p["prompts"]["p0"]["description"] = json!("é".repeat(20));
    edge(&p, "max_string_bytes", 40, "/prompts/p0/description");
}

#[test]
fn template_bytes_with_fragments_expanded() {
    // A 30-byte template of 6 references to a 7-byte fragment: 42 bytes expanded.
    let mut p = pack(Shape {
        prompts: 2,
        ..Shape::default()
    });
    p["fragments"] = json!({"f": "fffffff"});
    p["prompts"]["p1"]["system_template"] = json!("{{f}}".repeat(6));
    edge(&p, "max_string_bytes", 42, "/prompts/p1/system_template");
    // In all: `Do it.` (6 bytes) + 42 bytes.
    edge(
        &p,
        "max_total_template_bytes",
        48,
        "/prompts/p1/system_template",
    );
    // A fragment bomb fails fast, without expanding anything.
    let mut bomb = p.clone();
    bomb["fragments"]["f"] = json!("f".repeat(1 << 20));
    bomb["prompts"]["p1"]["system_template"] = json!("{{f}}".repeat(200_000));
    let start = std::time::Instant::now();
    let checked = check_bytes(&serde_json::to_vec(&bomb).unwrap(), &Options::default());
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    let kinds: Vec<_> = checked.diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, [DiagKind::LimitExceeded, DiagKind::LimitExceeded]);
    assert!(checked.diagnostics[0]
        .message
        .contains("`max_string_bytes`"));
    assert!(checked.diagnostics[1]
        .message
        .contains("`max_total_template_bytes`"));
}

#[test]
fn counts() {
    let p = pack(Shape {
        prompts: 5,
        ..Shape::default()
    });
    edge(&p, "max_prompts", 5, "/prompts");
    let p = pack(Shape {
        prompts: 1,
        tools: 4,
        ..Shape::default()
    });
    edge(&p, "max_tools", 4, "/tools");
    let p = pack(Shape {
        prompts: 3,
        agents: 3,
        ..Shape::default()
    });
    edge(&p, "max_agents", 3, "/agents/members");
    let p = pack(Shape {
        prompts: 1,
        states: 4,
        ..Shape::default()
    });
    edge(&p, "max_states", 4, "/workflow/states");
    let p = pack(Shape {
        prompts: 1,
        comps: 3,
        steps: 1,
        ..Shape::default()
    });
    edge(&p, "max_compositions", 3, "/compositions");
}

#[test]
fn steps_per_composition_and_in_all() {
    // Three compositions of 6 steps: a prompt, a parallel of two branches, three prompts.
    let p = pack(Shape {
        prompts: 1,
        comps: 3,
        steps: 6,
        ..Shape::default()
    });
    assert_eq!(
        p["compositions"]["c0"]["steps"].as_array().unwrap().len(),
        4
    );
    // Every composition is past the limit; the first is blamed, once.
    edge(&p, "max_steps_per_composition", 6, "/compositions/c0/steps");
    // The third composition takes the total from 12 to 18.
    edge(&p, "max_total_steps", 18, "/compositions/c2/steps");
}

/// A pack built into an artifact, and its bytes.
fn built(pack: &Value) -> (Artifact, Vec<u8>) {
    let (checked, artifact) =
        build_artifact(&serde_json::to_vec(pack).unwrap(), &Options::default()).unwrap();
    let artifact = artifact.unwrap_or_else(|| panic!("{:#?}", checked.diagnostics));
    let bytes = artifact.encode();
    (artifact, bytes)
}

/// An artifact limit at its edge: the artifact has exactly `n` of what `name` counts.
fn artifact_edge(bytes: &[u8], set: fn(&mut DecodeLimits, usize), name: &str, n: usize) {
    let limits = |max: usize| {
        let mut limits = DecodeLimits::default();
        set(&mut limits, max);
        limits
    };
    assert!(Artifact::decode_with(bytes, &limits(n + 1)).is_ok());
    assert!(Artifact::decode_with(bytes, &limits(n)).is_ok());
    let err = Artifact::decode_with(bytes, &limits(n - 1)).unwrap_err();
    assert!(
        matches!(err, ArtifactError::Limit { limit, max, .. } if limit == name && max == n - 1),
        "{err:?}"
    );
    assert!(err.to_string().contains(&format!("`{name}`")), "{err}");
}

#[test]
fn artifact_limits() {
    let (artifact, bytes) = built(&pack(Shape {
        prompts: 3,
        tools: 2,
        agents: 2,
        states: 4,
        comps: 2,
        steps: 5,
    }));
    assert_eq!(artifact.module.compositions[0].steps.len(), 5);
    artifact_edge(&bytes, |l, n| l.max_prompts = n, "max_prompts", 3);
    artifact_edge(&bytes, |l, n| l.max_tools = n, "max_tools", 2);
    artifact_edge(&bytes, |l, n| l.max_agents = n, "max_agents", 2);
    artifact_edge(&bytes, |l, n| l.max_states = n, "max_states", 4);
    artifact_edge(&bytes, |l, n| l.max_compositions = n, "max_compositions", 2);
    artifact_edge(
        &bytes,
        |l, n| l.max_steps_per_composition = n,
        "max_steps_per_composition",
        5,
    );
    artifact_edge(&bytes, |l, n| l.max_total_steps = n, "max_total_steps", 10);

    // The size, checked before anything is read.
    let n = bytes.len();
    let sized = |max| DecodeLimits {
        max_artifact_bytes: max,
        ..DecodeLimits::default()
    };
    assert!(Artifact::decode_with(&bytes, &sized(n)).is_ok());
    assert!(Artifact::decode(&bytes, n).is_ok());
    let err = Artifact::decode_with(&bytes, &sized(n - 1)).unwrap_err();
    assert_eq!(
        err,
        ArtifactError::Container(ContainerError::TooLarge {
            size: n,
            limit: n - 1
        })
    );
    assert!(err.to_string().contains("`max_artifact_bytes`"), "{err}");
    assert_eq!(Artifact::decode(&bytes, n - 1), Err(err));
}

/// The compiler's count defaults are the reader's: what compiles under the defaults
/// loads under the defaults.
#[test]
fn compiler_and_reader_defaults_agree() {
    let c = Limits::default();
    let r = DecodeLimits::default();
    assert_eq!(
        (
            c.max_compositions,
            c.max_steps_per_composition,
            c.max_total_steps,
            c.max_states,
            c.max_prompts,
            c.max_tools,
            c.max_agents,
            c.max_attempts,
            c.max_patterns,
            c.max_banned_word_bytes,
        ),
        (
            r.max_compositions,
            r.max_steps_per_composition,
            r.max_total_steps,
            r.max_states,
            r.max_prompts,
            r.max_tools,
            r.max_agents,
            r.max_attempts,
            r.max_patterns,
            r.max_banned_word_bytes,
        )
    );
    assert_eq!(c.max_total_template_bytes, r.max_artifact_bytes);
    // Every limit has a name `Limits::set` takes, and an unknown name is refused.
    for name in Limits::NAMES {
        let mut l = Limits::default();
        l.set(name, 7).unwrap();
        assert_ne!(l, Limits::default(), "{name}");
    }
    assert!(Limits::default().set("max_everything", 1).is_err());
}

/// A pack whose composition `c` has a prompt step and a parallel step whose second
/// branch retries `attempts` times.
fn retrying(attempts: u64) -> Value {
    let mut p = pack(Shape {
        prompts: 1,
        comps: 1,
        steps: 4,
        ..Shape::default()
    });
    p["compositions"]["c0"]["steps"][1]["branches"][1]["modifiers"] =
        json!({"retry": {"max_attempts": attempts}});
    p
}

#[test]
fn retry_attempts() {
    let at = "/compositions/c0/steps/1/branches/1/modifiers/retry/max_attempts";
    edge(&retrying(7), "max_attempts", 7, at);
    // The attack: four billion attempts, each a model call. Refused under the defaults.
    let d = the_error(
        &retrying(4_000_000_000),
        &Limits::default(),
        DiagKind::LimitExceeded,
        "max_attempts",
    );
    assert_eq!(d.pointer(), Some(at));
    // An artifact built under a raised limit does not load under the default.
    let mut limits = Limits::default();
    limits.set("max_attempts", usize::MAX).unwrap();
    let options = Options {
        limits,
        ..Options::default()
    };
    let source = serde_json::to_vec(&retrying(4_000_000_000)).unwrap();
    let artifact = build_artifact(&source, &options).unwrap().1.unwrap();
    let bytes = artifact.encode();
    artifact_edge(
        &bytes,
        |l, n| l.max_attempts = n,
        "max_attempts",
        4_000_000_000,
    );
    assert!(Artifact::decode(&bytes, bytes.len()).is_err());
}

/// A pack whose prompt `p0` declares one string variable per pattern.
fn with_patterns(patterns: &[&str]) -> Value {
    let mut p = pack(Shape {
        prompts: 1,
        ..Shape::default()
    });
    let vars: Vec<Value> = patterns
        .iter()
        .enumerate()
        .map(|(i, pat)| json!({"name": format!("v{i}"), "type": "string", "required": false, "validation": {"pattern": pat}}))
        .collect();
    p["prompts"]["p0"]["variables"] = Value::Array(vars);
    p
}

#[test]
fn pattern_count_and_compiled_size() {
    let p = with_patterns(&["^a+$", "b", "[0-9]{3}"]);
    edge(
        &p,
        "max_patterns",
        3,
        "/prompts/p0/variables/2/validation/pattern",
    );
    let (_, bytes) = built(&p);
    artifact_edge(&bytes, |l, n| l.max_patterns = n, "max_patterns", 3);

    // The attack: 300 patterns of `\w{500}` (a 6.9 KB artifact) took 25 s to load. Each
    // is refused at compile time under the default size, quickly.
    let start = std::time::Instant::now();
    let big = with_patterns(&[r"\w{500}"; 300]);
    let d = the_error(
        &big,
        &Limits::default(),
        DiagKind::LimitExceeded,
        "max_pattern_size",
    );
    assert_eq!(
        d.pointer(),
        Some("/prompts/p0/variables/0/validation/pattern")
    );
    // A pattern within the size compiles, at the edge and in the VM alike.
    let small = with_patterns(&[r"\w{5}"]);
    assert_clean(&small, &Limits::default());
    let mut limits = Limits::default();
    limits.set("max_pattern_size", 1_000).unwrap();
    let d = the_error(&small, &limits, DiagKind::LimitExceeded, "max_pattern_size");
    assert_eq!(
        d.pointer(),
        Some("/prompts/p0/variables/0/validation/pattern")
    );

    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());

    // At load: the VM's loader compiles within the same limit, and refuses past it.
    let small_module = built(&small).0.module;
    assert!(packc_vm::Program::new(small_module.clone()).is_ok());
    let err = packc_vm::Program::with_max_pattern_size(small_module, 1_000).unwrap_err();
    assert_eq!(err.kind.as_str(), "limit_exceeded");
    assert!(
        err.message.contains("`max_pattern_size`"),
        "{}",
        err.message
    );
}

/// A pack whose prompt `p0` has one `regex` validator per pattern.
fn with_validators(patterns: &[&str]) -> Value {
    let mut p = pack(Shape {
        prompts: 1,
        ..Shape::default()
    });
    let validators: Vec<Value> = patterns
        .iter()
        .map(|pat| json!({"type": "regex", "params": {"pattern": pat}}))
        .collect();
    p["prompts"]["p0"]["validators"] = Value::Array(validators);
    p
}

#[test]
fn validator_patterns_count_with_variable_patterns() {
    let mut p = with_patterns(&["^a+$", "b"]);
    p["prompts"]["p0"]["validators"] = json!([
        {"type": "regex", "params": {"pattern": "c"}},
        // Disabled: never compiled, not counted.
        {"type": "regex", "enabled": false, "params": {"pattern": "d"}},
        {"type": "content_matches", "params": {"pattern": "e", "expect_match": false}},
        {"type": "banned_words", "params": {"words": ["f"]}},
    ]);
    edge(
        &p,
        "max_patterns",
        4,
        "/prompts/p0/validators/2/params/pattern",
    );
    let (_, bytes) = built(&p);
    artifact_edge(&bytes, |l, n| l.max_patterns = n, "max_patterns", 4);
}

#[test]
fn validator_pattern_compiled_size() {
    // The attack: 300 validators `\w{200}` on one prompt (an 18 KB pack) took a minute
    // and gigabytes to run. The first is refused at compile time under the default size.
    let big = with_validators(&[r"\w{200}"; 300]);
    let d = the_error(
        &big,
        &Limits::default(),
        DiagKind::LimitExceeded,
        "max_pattern_size",
    );
    assert_eq!(d.pointer(), Some("/prompts/p0/validators/0/params/pattern"));
    let small = with_validators(&["a", r"\w{5}"]);
    assert_clean(&small, &Limits::default());
    let mut limits = Limits::default();
    limits.set("max_pattern_size", 1_000).unwrap();
    let d = the_error(&small, &limits, DiagKind::LimitExceeded, "max_pattern_size");
    assert_eq!(d.pointer(), Some("/prompts/p0/validators/1/params/pattern"));

    // At load: the VM's loader compiles within the same limit, and refuses past it.
    let small_module = built(&small).0.module;
    assert!(packc_vm::Program::new(small_module.clone()).is_ok());
    let err = packc_vm::Program::with_max_pattern_size(small_module, 1_000).unwrap_err();
    assert_eq!(err.kind.as_str(), "limit_exceeded");
    assert!(
        err.message.contains("`max_pattern_size`"),
        "{}",
        err.message
    );
}

/// The words of all banned-word lists are counted in UTF-8 bytes, lowercased as the
/// check stores them; a disabled validator's list is not compiled and not counted.
#[test]
fn banned_word_bytes() {
    let mut p = with_patterns(&["^a+$"]);
    p["prompts"]["p0"]["validators"] = json!([
        {"type": "banned_words", "params": {"words": ["Ab", "cd"]}},
        {"type": "banned_words", "enabled": false, "params": {"words": ["zzzzzzzz"]}},
        // "ÉF" lowercases to "éf", 3 bytes: 7 in all.
        {"type": "content_excludes", "params": {"words": ["ÉF", ""], "match_mode": "substring"}},
    ]);
    edge(
        &p,
        "max_banned_word_bytes",
        7,
        "/prompts/p0/validators/2/params/words",
    );
    let (_, bytes) = built(&p);
    artifact_edge(
        &bytes,
        |l, n| l.max_banned_word_bytes = n,
        "max_banned_word_bytes",
        7,
    );
    // The list counts as no pattern: the variable pattern is the only one.
    artifact_edge(&bytes, |l, n| l.max_patterns = n, "max_patterns", 1);
}

/// A hand-made artifact cannot get past the limits the compiler holds validators to.
#[test]
fn an_artifact_past_the_validator_pattern_limits_does_not_load() {
    let (artifact, _) = built(&with_validators(&["a"]));
    let with = |patterns: &[&str]| {
        let mut artifact = artifact.clone();
        let guard = artifact.module.prompts[0].guards[0].clone();
        artifact.module.prompts[0].guards = patterns
            .iter()
            .map(|p| {
                let mut g = guard.clone();
                g.check = ir_spec::Check::Regex {
                    pattern: (*p).to_owned(),
                    expect_match: true,
                };
                g
            })
            .collect();
        artifact.encode()
    };
    let limits = DecodeLimits::default();
    assert!(packc_vm::Program::load(&with(&[r"\w{5}"]), &limits).is_ok());

    let err = packc_vm::Program::load(&with(&[r"\w{5}", r"\w{200}"]), &limits).unwrap_err();
    let packc_vm::LoadError::Run(err) = err else {
        panic!("{err:?}");
    };
    assert_eq!(err.kind.as_str(), "limit_exceeded");
    assert!(
        err.message.contains("`max_pattern_size`"),
        "{}",
        err.message
    );

    let many = with(&["a"; 1_001]);
    let err = packc_vm::Program::load(&many, &limits).unwrap_err();
    assert!(
        matches!(
            err,
            packc_vm::LoadError::Artifact(ArtifactError::Limit {
                limit: "max_patterns",
                max: 1_000,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(packc_vm::Program::load(&with(&["a"; 1_000]), &limits).is_ok());
}
