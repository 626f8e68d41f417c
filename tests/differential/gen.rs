//! Generators: a valid pack (as a JSON value), a run target and script, and the scripted
//! host's answers, all drawn from choice tapes (`tape.rs`).
//!
//! Validity is by construction: names are drawn from what exists, a step's references
//! only from `input` and earlier top-level steps with an output, `then` / `else` only
//! from later top-level steps, `depends_on` only from earlier ones
//! (`compositions.md` §2, §3.3). The test asserts that the compiler agrees.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::tape::Tape;

/// One caller action of the script (`workflow.md` §2).
#[derive(Clone, Debug)]
pub enum Item {
    /// A turn with this input.
    Turn(Value),
    /// A caller event.
    Event(String),
}

/// A generated run: the pack, what the caller does and what the host answers.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The pack.
    pub pack: Value,
    /// `workflow`, `composition:<name>` or `agent:<member>`.
    pub target: String,
    /// The caller's turns and events.
    pub script: Vec<Item>,
    /// Model answers keyed by prompt key, consumed in call order.
    pub prompts: BTreeMap<String, Vec<Value>>,
    /// Tool answers keyed by tool key (or agent member key), consumed in call order.
    pub tools: BTreeMap<String, Vec<Value>>,
    /// Extension step answers keyed by step kind, consumed in call order.
    pub extensions: BTreeMap<String, Vec<Value>>,
    /// Clock readings in milliseconds, the last repeated (`[]` reads 0).
    pub clock: Vec<u64>,
    /// Host variables.
    pub variables: Map<String, Value>,
    /// Run the VM from a snapshot restored after every `resume`.
    pub restore: bool,
    /// The embedder's cap on host calls (`RunOptions::max_host_calls`).
    pub max_host_calls: Option<u64>,
}

/// Member names used in inputs and outputs, so that paths resolve some of the time.
const KEYS: [&str; 5] = ["x", "y", "k", "n", "hv"];
/// Event names.
const EVENTS: [&str; 3] = ["E0", "E1", "E2"];
/// Artifact names.
const ARTIFACTS: [&str; 2] = ["r0", "r1"];
/// Reducer `into` names.
const INTOS: [&str; 3] = ["m", "items", "x"];
/// Extension step kinds (`later-versions.md` §5), from level 1.8.
const EXTENSIONS: [&str; 2] = ["acme.ext", "acme.vec-search"];

/// What the host generator needs to know about the pack.
struct Info {
    prompts: Vec<String>,
    /// Provider keys other than `default` that calls may be routed to (level 1.9).
    providers: Vec<String>,
    tools: Vec<String>,
    members: Vec<String>,
    targets: Vec<(String, u32)>,
    /// Level 1.8 or above: compositions may have extension steps.
    extensions: bool,
}

/// Generates a pack from `pack_tape` and a run of it from `run_tape`.
pub fn generate(pack_tape: &[u32], run_tape: &[u32]) -> Generated {
    let (pack, info) = pack(&mut Tape::new(pack_tape));
    let t = &mut Tape::new(run_tape);
    let weights: Vec<u32> = info.targets.iter().map(|(_, w)| *w).collect();
    let target = info.targets[t.weighted(&weights)].0.clone();
    let mut script = Vec::new();
    for i in 0..t.range(1, 4) {
        if i > 0 && t.chance(20) || i == 0 && t.chance(3) {
            script.push(Item::Event(event(t)));
        } else {
            script.push(Item::Turn(input_value(t)));
        }
    }
    let mut prompts = BTreeMap::new();
    for p in &info.prompts {
        let n = t.count(95, (2, 16), (0, 1));
        let mut answers: Vec<Value> = (0..n).map(|_| model_answer(t, &info)).collect();
        if t.chance(4) {
            // A model that keeps asking for tools: runs into `max_rounds`, an agent
            // step's `max_steps`, or the 50-turn cap of a `tool_called`-only loop.
            let mut names: Vec<String> = info.tools.clone();
            names.extend(info.members.iter().cloned());
            names.push("ghost".into());
            let long: Vec<Value> = (0..t.range(48, 53))
                .map(|_| json!({"tool_calls": [{"name": t.pick(&names), "args": {}}]}))
                .collect();
            answers.splice(0..0, long);
        }
        prompts.insert(p.clone(), answers);
        // Answers keyed `provider/prompt_task`: a call routed to that provider takes
        // them, and only them (`later-versions.md` §3).
        for provider in std::iter::once("default").chain(info.providers.iter().map(|s| s.as_str()))
        {
            if !info.providers.is_empty() && t.chance(25) {
                let n = t.range(0, 6) as usize;
                let keyed: Vec<Value> = (0..n).map(|_| model_answer(t, &info)).collect();
                prompts.insert(format!("{provider}/{p}"), keyed);
            }
        }
    }
    let mut tools = BTreeMap::new();
    for name in info.tools.iter().chain(&info.members) {
        let n = if t.chance(96) { t.range(1, 8) } else { 0 } as usize;
        tools.insert(name.clone(), answers(t, n, 6, "tool failed"));
    }
    // A tool no one offers: its answer must never be taken.
    tools.insert("ghost".into(), vec![json!({"output": "ghost answer"})]);
    let mut extensions = BTreeMap::new();
    if info.extensions {
        for kind in EXTENSIONS {
            let n = t.range(0, 6) as usize;
            extensions.insert(kind.to_owned(), answers(t, n, 10, "extension failed"));
        }
    }
    let mut clock = Vec::new();
    if t.chance(50) {
        let mut now = t.range(0, 2) * 1000;
        for _ in 0..t.range(1, 6) {
            clock.push(now);
            now += *t.pick(&[0, 300, 1000, 2500]);
        }
    }
    let mut variables = Map::new();
    if t.chance(30) {
        variables.insert("hv".into(), scalar(t));
    }
    let restore = t.chance(20);
    let max_host_calls = t.chance(10).then(|| t.range(1, 8));
    Generated {
        pack,
        target,
        script,
        prompts,
        tools,
        extensions,
        clock,
        variables,
        restore,
        max_host_calls,
    }
}

// ---------------------------------------------------------------------------------------
// Values

fn scalar(t: &mut Tape) -> Value {
    match t.weighted(&[30, 10, 25, 10, 10]) {
        0 => json!(t.range(0, 3)),
        1 => t
            .pick(&[json!(1.5), json!(2.0), json!(-1), json!(0.25)])
            .clone(),
        2 if t.chance(50) => json!(word(t)),
        2 => json!(*t.pick(&["a", "b", "", "x y", "{\"k\":1}", "[1,2]", "3", "{{x}}"])),
        3 => json!(t.chance(50)),
        _ => Value::Null,
    }
}

/// A string from a family of near-equal ones (lengths around the 4-, 8- and 16-byte
/// boundaries, differing at the first or last byte), so equality is tested hard.
fn word(t: &mut Tape) -> &'static str {
    t.one(&[
        "abc",
        "abd",
        "abcd",
        "abce",
        "Abcd",
        "abcdefg",
        "abcdefh",
        "abcdefgh",
        "abcdefgi",
        "bbcdefgh",
        "abcdefghijklmnop",
        "abcdefghijklmnoq",
        "bbcdefghijklmnop",
        "abcdefghijklmnopq",
        "abcdefghijklmnopr",
        "ab\u{e9}",
        "ab\u{e8}",
    ])
}

/// A member value: each usual member name mostly holds one type (`x` a string, `y` and
/// `n` numbers, `k` an object), so that declared variables and predicates often fit.
fn member(t: &mut Tape, key: &str, depth: u32) -> Value {
    if t.chance(25) {
        return value(t, depth);
    }
    match key {
        "x" | "hv" if t.chance(30) => json!(word(t)),
        "x" | "hv" => json!(*t.pick(&["a", "b", "", "x y", "abc"])),
        "y" | "n" => json!(t.range(0, 3)),
        _ if depth < 2 => {
            let mut m = Map::new();
            for _ in 0..t.range(0, 2) {
                let k = *t.pick(&KEYS);
                m.insert(k.to_string(), member(t, k, depth + 1));
            }
            Value::Object(m)
        }
        _ => scalar(t),
    }
}

fn object(t: &mut Tape, depth: u32, n: std::ops::RangeInclusive<u64>) -> Map<String, Value> {
    let mut m = Map::new();
    if t.chance(50) {
        m.insert("y".into(), member(t, "y", depth + 1));
    }
    for _ in 0..t.range(*n.start(), *n.end()) {
        let k = *t.pick(&KEYS);
        m.insert(k.to_string(), member(t, k, depth + 1));
    }
    m
}

fn value(t: &mut Tape, depth: u32) -> Value {
    match t.weighted(&[
        55,
        if depth < 2 { 30 } else { 0 },
        if depth < 2 { 15 } else { 0 },
    ]) {
        0 => scalar(t),
        1 => Value::Object(object(t, depth, 0..=3)),
        _ => Value::Array((0..t.range(0, 3)).map(|_| value(t, depth + 1)).collect()),
    }
}

/// A turn input: mostly an object with the usual member names.
fn input_value(t: &mut Tape) -> Value {
    if t.chance(15) {
        return value(t, 1);
    }
    let mut m = object(t, 0, 2..=5);
    runtime_strings(t, &mut m);
    Value::Object(m)
}

/// Strings that only run-time values may hold (a pack may not: `${` there is a
/// reference): they must pass through bindings and templates as plain text.
fn runtime_strings(t: &mut Tape, m: &mut Map<String, Value>) {
    if t.chance(10) {
        let s = *t.pick(&[
            "${input.x}",
            "${a0.output}",
            "héllo wörld",
            "}}{{",
            "{{input}}",
        ]);
        m.insert("x".into(), json!(s));
    }
}

/// A model or tool output: objects may carry an `event` (a composition state's event)
/// and `artifacts` (artifact writes), strings may hold JSON text (the string rule).
/// `n` answers of a tool or an extension: each an `error` with `message` at `percent`
/// percent, else an `output`.
fn answers(t: &mut Tape, n: usize, percent: u32, message: &str) -> Vec<Value> {
    (0..n)
        .map(|_| {
            if t.chance(percent) {
                json!({"error": message})
            } else {
                json!({"output": output_value(t, 0)})
            }
        })
        .collect()
}

fn output_value(t: &mut Tape, depth: u32) -> Value {
    match t.weighted(&[20, 60, 8, 12]) {
        0 => scalar(t),
        1 => {
            let mut m = object(t, depth, 2..=4);
            runtime_strings(t, &mut m);
            if t.chance(8) {
                // More members than the VM searches linearly.
                for i in 0..t.range(10, 16) {
                    m.insert(format!("m{i}"), json!(i));
                }
                m.insert("y".into(), json!(t.range(0, 3)));
            }
            if t.chance(20) {
                m.insert("event".into(), json!(event(t)));
            } else if t.chance(3) {
                m.insert("event".into(), json!(3));
            }
            if t.chance(25) {
                let mut a = Map::new();
                for name in ARTIFACTS {
                    if t.chance(60) {
                        a.insert(name.into(), value(t, 2));
                    }
                }
                m.insert("artifacts".into(), Value::Object(a));
            } else if t.chance(3) {
                m.insert("artifacts".into(), json!([1]));
            }
            Value::Object(m)
        }
        2 => Value::Array((0..t.range(0, 3)).map(|_| value(t, depth + 1)).collect()),
        _ => {
            let inner = value(t, 1);
            json!(inner.to_string())
        }
    }
}

/// An event name: mostly ones that states declare (`E0` most of all), sometimes one that
/// none does.
fn event(t: &mut Tape) -> String {
    ["E0", "E1", "E2", "Bogus"][t.weighted(&[50, 30, 15, 5])].to_owned()
}

fn model_answer(t: &mut Tape, info: &Info) -> Value {
    match t.weighted(&[40, 45, 6, 3, 4, 1]) {
        0 => json!({"output": output_value(t, 0)}),
        1 => json!({"output": output_value(t, 0), "event": event(t)}),
        2 => {
            let mut names: Vec<String> = info.tools.clone();
            names.extend(info.members.iter().cloned());
            names.push("ghost".into());
            let calls: Vec<Value> = (0..t.range(1, 3))
                .map(|_| {
                    let name = t.pick(&names).clone();
                    if t.chance(85) {
                        let mut args = Map::new();
                        for _ in 0..t.range(0, 2) {
                            args.insert(t.pick(&KEYS).to_string(), scalar(t));
                        }
                        json!({"name": name, "args": args})
                    } else {
                        json!({"name": name})
                    }
                })
                .collect();
            json!({ "tool_calls": calls })
        }
        3 => json!({"error": "model failed"}),
        4 => json!({ "event": event(t) }),
        _ => t
            .pick(&[
                json!({"tool_calls": []}),
                json!({"output": 1, "event": 3}),
                json!({"output": 1, "confidence": 0.5}),
            ])
            .clone(),
    }
}

// ---------------------------------------------------------------------------------------
// The pack

fn pack(t: &mut Tape) -> (Value, Info) {
    // Some packs focus on a parallel step inside a budgeted workflow, where the issue
    // order of the branches' calls decides which call trips the budget or the clock
    // (`compositions.md` §8.1).
    let focus = t.chance(15);
    let n_prompts = t.range(1, 4) as usize;
    let prompt_keys: Vec<String> = (0..n_prompts).map(|i| format!("p{i}")).collect();
    let tool_keys: Vec<String> = (0..t.range(u64::from(focus), 3))
        .map(|i| format!("t{i}"))
        .collect();
    let has_workflow = focus || t.chance(75);
    let mut n_comps = t.range(0, 3) as usize;
    if (focus || !has_workflow) && n_comps == 0 {
        n_comps = 1;
    }
    let comp_keys: Vec<String> = (0..n_comps).map(|i| format!("c{i}")).collect();
    let n_states = t.count(10, (5, 10), (1, 4));
    let state_keys: Vec<String> = (0..n_states).map(|i| format!("w{i}")).collect();
    let members: Vec<String> = if t.chance(30) {
        let mut m: Vec<String> = prompt_keys
            .iter()
            .filter(|_| t.chance(50))
            .cloned()
            .collect();
        if m.is_empty() {
            m.push(prompt_keys[0].clone());
        }
        m
    } else {
        Vec::new()
    };
    let has_evals = t.chance(20);
    // Half of the packs avoid what most often ends a run early (placeholders and
    // references naming members that may be missing, declared variables), so that
    // runs get deep.
    let risky = t.chance(35);
    let has_fragments = t.chance(25);
    // The spec level (`later-versions.md` §1): no claim (1.5), v1.8.1 (`control`), or
    // v1.9.0 (`control` and providers).
    let level = t.weighted(&[60, 15, 25]);
    let providers: Vec<String> = if level == 2 && t.chance(60) {
        vec!["fast".into(), "slow".into()]
    } else {
        Vec::new()
    };

    let mut pack = Map::new();
    match level {
        1 => {
            pack.insert(
                "$schema".into(),
                json!("https://promptpack.org/schema/v1.8.1/promptpack.schema.json"),
            );
        }
        2 => {
            pack.insert(
                "$schema".into(),
                json!("https://promptpack.org/schema/v1.9.0/promptpack.schema.json"),
            );
        }
        _ => {}
    }
    if !providers.is_empty() {
        pack.insert(
            "requires".into(),
            json!({"providers": ["default", {"key": "fast", "role": "llm"}, "slow"]}),
        );
    }
    pack.insert("id".into(), json!("gen"));
    pack.insert("name".into(), json!("Generated"));
    pack.insert("version".into(), json!("1.0.0"));
    pack.insert(
        "template_engine".into(),
        json!({"version": "v1", "syntax": "{{variable}}"}),
    );

    // Names a prompt's `tools` list may hold: tool keys, member keys, and one that is
    // neither (a warning; never offered).
    let mut offer_pool: Vec<String> = tool_keys.clone();
    offer_pool.extend(members.iter().cloned());
    offer_pool.push("ghost".into());
    let mut prompts = Map::new();
    let provider_pool: Vec<String> = providers
        .iter()
        .cloned()
        .chain(std::iter::once("default".to_owned()))
        .collect();
    for key in &prompt_keys {
        let mut p = prompt(t, key, &offer_pool, risky, has_fragments);
        if !providers.is_empty() && t.chance(40) {
            p["provider"] = json!(t.pick(&provider_pool));
        }
        prompts.insert(key.clone(), p);
    }
    pack.insert("prompts".into(), Value::Object(prompts));
    if has_fragments {
        // `f1` names `f0`: fragments expand one level, so that stays a placeholder.
        let mut f = Map::new();
        f.insert("f0".into(), json!("frag[{{input}}]"));
        f.insert("f1".into(), json!("F1 {{fragments.f0}}"));
        if t.chance(50) {
            f.insert("y".into(), json!("fragment y"));
        }
        pack.insert("fragments".into(), Value::Object(f));
    }

    if !tool_keys.is_empty() {
        let mut tools = Map::new();
        for key in &tool_keys {
            tools.insert(
                key.clone(),
                json!({
                    "name": key,
                    "description": format!("Tool {key}."),
                    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}
                }),
            );
        }
        pack.insert("tools".into(), Value::Object(tools));
    }
    if has_evals {
        pack.insert(
            "evals".into(),
            json!([
                {"id": "e0", "type": "llm_judge", "trigger": "every_turn"},
                {"id": "e1", "type": "contains", "trigger": "every_turn"}
            ]),
        );
    }

    if !comp_keys.is_empty() {
        let ctx = CompCtx {
            providers: if providers.is_empty() {
                &[]
            } else {
                &provider_pool
            },
            prompts: &prompt_keys,
            tools: &tool_keys,
            has_evals,
            risky,
            focus,
            extensions: level > 0,
        };
        let mut comps = Map::new();
        for key in &comp_keys {
            comps.insert(key.clone(), composition(t, &ctx));
        }
        pack.insert("compositions".into(), Value::Object(comps));
    }

    if has_workflow {
        pack.insert(
            "workflow".into(),
            workflow(t, &state_keys, &prompt_keys, &comp_keys, focus, level > 0),
        );
    }

    if !members.is_empty() {
        let mut m = Map::new();
        for key in &members {
            let mut def = Map::new();
            if has_workflow && t.chance(50) {
                def.insert("state".into(), json!(t.pick(&state_keys)));
            }
            if t.chance(20) {
                def.insert("tags".into(), json!(["gen"]));
            }
            m.insert(key.clone(), Value::Object(def));
        }
        pack.insert(
            "agents".into(),
            json!({"entry": members[0], "members": Value::Object(m)}),
        );
    }

    let mut targets = Vec::new();
    if has_workflow {
        targets.push(("workflow".to_string(), 6));
    }
    for c in &comp_keys {
        targets.push((format!("composition:{c}"), 2));
    }
    for m in &members {
        targets.push((format!("agent:{m}"), 1));
    }
    let info = Info {
        prompts: prompt_keys,
        providers,
        tools: tool_keys,
        members,
        targets,
        extensions: level > 0,
    };
    (Value::Object(pack), info)
}

fn prompt(t: &mut Tape, key: &str, offer_pool: &[String], risky: bool, fragments: bool) -> Value {
    let mut template = format!("P {key}:");
    // Most prompts only use placeholders that always render; the others may name
    // members the input lacks (`invalid_variable`).
    let safe = !risky || t.chance(60);
    let mut parts: Vec<&str> = if safe {
        vec![
            " text",
            " {{input}}",
            " {{artifacts.r0}}",
            " {{artifacts.r1}}",
            " {{ input }}",
        ]
    } else {
        vec![
            " text",
            " {{input}}",
            " {{input.x}}",
            " {{input.k.x}}",
            " {{input.y[0]}}",
            " {{artifacts.r0}}",
            " {{artifacts.r1}}",
            " {{artifacts.r1[0]}}",
            " {{artifacts.r0.x}}",
            " {{x}}",
            " {{y}}",
            " {{x.k}}",
            " {{hv}}",
            " {{ input }}",
            " [{{x}}|{{y}}]",
            " {{input.items[0]}}",
            " {{input.items[2]}}",
            " {{input.m}}",
            " {{input.m.a0_1}}",
            " {{input.x.a1_0}}",
            " {{input.m.y}}",
            " {{{input}}}",
            " {{input",
            " {{input.}}",
            " {{x}}}",
            " {{input.x[0]}}",
            " {{ x}}",
            " {{fragments.f1}}",
            " {{f1}}",
            " {{fragments.nope}}",
        ]
    };
    if fragments {
        parts.extend([" {{fragments.f0}}", " {{fragment:f0}}", " {{f0}}"]);
    }
    for _ in 0..t.range(0, 4) {
        template.push_str(t.one(&parts));
    }
    let mut p = Map::new();
    p.insert("id".into(), json!(key));
    p.insert("name".into(), json!(format!("Prompt {key}")));
    p.insert("version".into(), json!("1.0.0"));
    p.insert("system_template".into(), json!(template));
    let mut vars = Vec::new();
    for name in ["x", "y"] {
        if risky && t.chance(30) {
            vars.push(variable(t, name));
        }
    }
    if !vars.is_empty() {
        p.insert("variables".into(), Value::Array(vars));
    }
    if t.chance(40) {
        let tools: Vec<Value> = (0..t.range(1, 3))
            .map(|_| json!(t.pick(offer_pool)))
            .collect();
        p.insert("tools".into(), Value::Array(tools));
    }
    if t.chance(30) {
        let mut policy = Map::new();
        if t.chance(40) {
            policy.insert(
                "tool_choice".into(),
                json!(*t.pick(&["auto", "required", "none"])),
            );
        }
        if t.chance(50) {
            policy.insert("max_rounds".into(), json!(t.range(1, 3)));
        }
        if t.chance(40) {
            policy.insert("max_tool_calls_per_turn".into(), json!(t.range(1, 2)));
        }
        if t.chance(40) {
            policy.insert("blocklist".into(), json!([t.pick(offer_pool)]));
        }
        p.insert("tool_policy".into(), Value::Object(policy));
    }
    if t.chance(15) {
        // Validators (`later-versions.md` §4): banned words drawn from the answers'
        // word pool, and character limits short enough to truncate or block.
        let validators: Vec<Value> = (0..t.range(1, 2))
            .map(|_| {
                let mut v = if t.chance(50) {
                    json!({"type": "banned_words", "params": {"words": [word(t)]}})
                } else {
                    json!({"type": "max_length", "params": {"max_characters": t.range(1, 30)}})
                };
                if t.chance(50) {
                    v["message"] = json!("blocked");
                }
                v
            })
            .collect();
        p.insert("validators".into(), Value::Array(validators));
    }
    Value::Object(p)
}

fn variable(t: &mut Tape, name: &str) -> Value {
    let usual = if name == "x" { "string" } else { "number" };
    let ty = [
        usual, "text", "string", "number", "boolean", "object", "array",
    ][t.weighted(&[50, 20, 6, 6, 6, 6, 6])];
    let required = t.chance(15);
    let mut v = Map::new();
    v.insert("name".into(), json!(name));
    v.insert("type".into(), json!(ty));
    v.insert("required".into(), json!(required));
    if !required && t.chance(50) {
        let default = if t.chance(95) {
            match ty {
                "string" => json!(*t.pick(&["dflt", "", "ab"])),
                "number" => json!(t.range(0, 3)),
                "boolean" => json!(true),
                "object" => json!({"k": 1, "b": [true]}),
                "array" => json!([1, "two"]),
                _ => json!("plain"),
            }
        } else {
            scalar(t)
        };
        if !default.is_null() {
            v.insert("default".into(), default);
        }
    }
    if t.chance(15) {
        let mut val = Map::new();
        match ty {
            "string" => {
                if t.chance(50) {
                    val.insert("min_length".into(), json!(t.range(0, 2)));
                }
                if t.chance(50) {
                    val.insert("max_length".into(), json!(t.range(1, 4)));
                }
            }
            "number" => {
                if t.chance(50) {
                    val.insert("minimum".into(), json!(t.range(0, 2)));
                }
                if t.chance(50) {
                    val.insert("maximum".into(), json!(t.range(1, 3)));
                }
            }
            _ => {}
        }
        if t.chance(25) {
            val.insert("enum".into(), json!([scalar(t), scalar(t)]));
        }
        v.insert("validation".into(), Value::Object(val));
    }
    Value::Object(v)
}

// ---------------------------------------------------------------------------------------
// Compositions

struct CompCtx<'a> {
    /// Provider keys a prompt or agent step may name (empty below level 1.9).
    providers: &'a [String],
    prompts: &'a [String],
    tools: &'a [String],
    has_evals: bool,
    risky: bool,
    focus: bool,
    /// Level 1.8 or above: a leaf may be an extension step.
    extensions: bool,
}

/// A root a reference may start from: `input`, or an earlier step with an output
/// (with the reducer's `into` and the branch ids for a parallel step, to aim paths at
/// its merged value and, for `barrier`, at one branch's output).
#[derive(Clone)]
struct Root {
    name: String,
    into: Option<String>,
    branches: Vec<String>,
}

fn ref_body(t: &mut Tape, visible: &[Root], risky: bool) -> String {
    let root = t.pick(visible).clone();
    let mut body = if root.name == "input" {
        "input".to_string()
    } else {
        format!("{}.output", root.name)
    };
    let mut segs = if risky { t.weighted(&[50, 35, 15]) } else { 0 };
    if let Some(into) = &root.into {
        if t.chance(70) {
            body.push('.');
            body.push_str(into);
            segs = segs.saturating_sub(1);
            if t.chance(40) {
                body.push('.');
                body.push_str(t.pick(&root.branches).as_str());
                segs = segs.saturating_sub(1);
            }
        }
    }
    for _ in 0..segs {
        body.push('.');
        body.push_str(t.one(&KEYS));
    }
    body
}

fn reference(t: &mut Tape, visible: &[Root], risky: bool) -> String {
    let body = ref_body(t, visible, risky);
    if t.chance(8) {
        format!("${{ {body} }}")
    } else {
        format!("${{{body}}}")
    }
}

/// A binding value for a step's `input` / a member of `args` (`compositions.md` §3).
fn binding(t: &mut Tape, visible: &[Root], risky: bool, depth: u32) -> Value {
    let nest = if depth < 2 { 1 } else { 0 };
    match t.weighted(&[40, 20, 15 * nest, 5 * nest, 20]) {
        0 => json!(reference(t, visible, risky)),
        1 => {
            let mut s = String::new();
            for _ in 0..t.range(1, 2) {
                s.push_str(t.one(&["", "v=", " ", "-", "a b "]));
                s.push_str(&reference(t, visible, risky));
            }
            s.push_str(t.one(&["", "!", " end"]));
            json!(s)
        }
        2 => {
            let mut m = Map::new();
            for _ in 0..t.range(0, 3) {
                m.insert(
                    t.pick(&KEYS).to_string(),
                    binding(t, visible, risky, depth + 1),
                );
            }
            Value::Object(m)
        }
        3 => Value::Array(
            (0..t.range(0, 2))
                .map(|_| binding(t, visible, risky, depth + 1))
                .collect(),
        ),
        _ => scalar(t),
    }
}

fn predicate(t: &mut Tape, visible: &[Root], depth: u32) -> Value {
    let risky = true; // a missing path is never an error in a predicate
    let nest = if depth < 2 { 1 } else { 0 };
    match t.weighted(&[55, 15, 10 * nest, 10 * nest, 10 * nest]) {
        0 => {
            let op = *t.pick(&[
                "equals",
                "not_equals",
                "in",
                "not_in",
                "less_than",
                "less_than_or_equals",
                "greater_than",
                "greater_than_or_equals",
            ]);
            let value = match op {
                "in" | "not_in" if t.chance(85) => {
                    Value::Array((0..t.range(0, 3)).map(|_| scalar(t)).collect())
                }
                "less_than" | "less_than_or_equals" | "greater_than" | "greater_than_or_equals"
                    if t.chance(85) =>
                {
                    t.pick(&[json!(0), json!(1), json!(2), json!(1.5), json!(-1)])
                        .clone()
                }
                _ => value(t, 1),
            };
            let ordered = op.contains("than");
            let path = if ordered && t.chance(75) {
                // Aim at a member that usually holds a number.
                let root = t.pick(visible).clone();
                let mut body = if root.name == "input" {
                    "input".to_string()
                } else {
                    format!("{}.output", root.name)
                };
                if let Some(into) = &root.into {
                    body = format!("{body}.{into}");
                }
                format!("${{{body}.{}}}", t.pick(&["y", "n"]))
            } else {
                reference(t, visible, risky)
            };
            json!({"path": path, "op": op, "value": value})
        }
        1 => json!({"path": reference(t, visible, risky), "exists": t.chance(50)}),
        2 => {
            json!({"all_of": (0..t.range(1, 3)).map(|_| predicate(t, visible, depth + 1)).collect::<Vec<_>>()})
        }
        3 => {
            json!({"any_of": (0..t.range(1, 3)).map(|_| predicate(t, visible, depth + 1)).collect::<Vec<_>>()})
        }
        _ => json!({"not": predicate(t, visible, depth + 1)}),
    }
}

/// A `modifiers.eval` list.
fn evals(t: &mut Tape) -> Vec<&'static str> {
    [vec!["e0"], vec!["e1", "e0"], vec!["e1"]][t.below(3)].clone()
}

/// A `prompt`, `tool` or `agent` step (`kind` 0, 1, 2).
fn leaf(t: &mut Tape, ctx: &CompCtx, id: &str, kind: usize, visible: &[Root]) -> Value {
    let mut s = Map::new();
    s.insert("id".into(), json!(id));
    match kind {
        1 if ctx.extensions && t.chance(30) => {
            s.insert("kind".into(), json!(*t.pick(&EXTENSIONS)));
            if t.chance(70) {
                s.insert("input".into(), binding(t, visible, ctx.risky, 0));
            }
            if t.chance(50) {
                s.insert("top_k".into(), json!(t.range(1, 5)));
            }
        }
        1 => {
            s.insert("kind".into(), json!("tool"));
            s.insert("tool".into(), json!(t.pick(ctx.tools)));
            if t.chance(80) {
                let mut args = Map::new();
                for _ in 0..t.range(0, 3) {
                    args.insert(t.pick(&KEYS).to_string(), binding(t, visible, ctx.risky, 1));
                }
                s.insert("args".into(), Value::Object(args));
            }
        }
        _ => {
            s.insert(
                "kind".into(),
                json!(if kind == 0 { "prompt" } else { "agent" }),
            );
            s.insert("prompt_task".into(), json!(t.pick(ctx.prompts)));
            if t.chance(85) {
                s.insert("input".into(), binding(t, visible, ctx.risky, 0));
            }
            if t.chance(20) {
                s.insert("output_schema".into(), json!("out.schema.json"));
            }
            if !ctx.providers.is_empty() && t.chance(30) {
                s.insert("provider".into(), json!(t.pick(ctx.providers)));
            }
            if kind == 2 {
                let mut termination = Map::new();
                let mut listed = Vec::new();
                if !ctx.tools.is_empty() && t.chance(60) {
                    for _ in 0..t.range(1, 3) {
                        let name = t.pick(ctx.tools).clone();
                        if !listed.contains(&name) {
                            listed.push(name);
                        }
                    }
                    s.insert("tools".into(), json!(listed));
                }
                let tool_called = !listed.is_empty() && t.chance(50);
                if tool_called {
                    termination.insert("tool_called".into(), json!(t.pick(&listed)));
                }
                if !tool_called || t.chance(60) {
                    termination.insert("max_steps".into(), json!(t.range(1, 4)));
                }
                s.insert("termination".into(), Value::Object(termination));
            }
        }
    }
    let mut modifiers = Map::new();
    if t.chance(25) {
        modifiers.insert("retry".into(), json!({"max_attempts": t.range(1, 3)}));
    }
    if ctx.has_evals && t.chance(30) {
        modifiers.insert("eval".into(), json!(evals(t)));
    }
    if !modifiers.is_empty() {
        s.insert("modifiers".into(), Value::Object(modifiers));
    }
    if t.chance(10) {
        s.insert("description".into(), json!("a step"));
    }
    Value::Object(s)
}

fn composition(t: &mut Tape, ctx: &CompCtx) -> Value {
    let n = t.count(10, (6, 10), (1, 5));
    let ids: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    let mut steps = Vec::new();
    let mut visible = vec![Root {
        name: "input".into(),
        into: None,
        branches: Vec::new(),
    }];
    let mut with_output = Vec::new();
    for i in 0..n {
        let tool_w = if ctx.tools.is_empty() { 0 } else { 20 };
        let branch_w = if i + 1 < n { 22 } else { 0 };
        let parallel_w = if ctx.focus { 45 } else { 15 };
        let kind = t.weighted(&[30, tool_w, 15, branch_w, parallel_w]);
        let id = &ids[i];
        let mut step = match kind {
            0..=2 => leaf(t, ctx, id, kind, &visible),
            3 => {
                let later = &ids[i + 1..];
                let mut s = Map::new();
                s.insert("id".into(), json!(id));
                s.insert("kind".into(), json!("branch"));
                s.insert("predicate".into(), predicate(t, &visible, 0));
                s.insert("then".into(), json!(t.pick(later)));
                if t.chance(60) {
                    s.insert("else".into(), json!(t.pick(later)));
                }
                Value::Object(s)
            }
            _ => {
                let branches: Vec<Value> = (0..t.range(2, 3))
                    .map(|j| {
                        let bkind = t.weighted(&[40, tool_w, 20]);
                        leaf(t, ctx, &format!("{id}_{j}"), bkind, &visible)
                    })
                    .collect();
                let into = t.pick(&INTOS).to_string();
                let mut s = Map::new();
                s.insert("id".into(), json!(id));
                s.insert("kind".into(), json!("parallel"));
                s.insert("branches".into(), json!(branches));
                s.insert(
                    "reduce".into(),
                    json!({"strategy": t.pick(&["append", "replace", "barrier"]), "into": into}),
                );
                let mut modifiers = Map::new();
                if t.chance(10) {
                    modifiers.insert("retry".into(), json!({"max_attempts": 2}));
                }
                if ctx.has_evals && t.chance(30) {
                    modifiers.insert("eval".into(), json!(evals(t)));
                }
                if !modifiers.is_empty() {
                    s.insert("modifiers".into(), Value::Object(modifiers));
                }
                Value::Object(s)
            }
        };
        if i > 0 && t.chance(25) {
            let mut deps: Vec<String> = Vec::new();
            for _ in 0..t.range(1, 2) {
                let d = t.pick(&ids[..i]).clone();
                if !deps.contains(&d) {
                    deps.push(d);
                }
            }
            step["depends_on"] = json!(deps);
        }
        if kind != 3 {
            with_output.push(id.clone());
            let branches = step
                .get("branches")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|b| b["id"].as_str().unwrap().to_owned())
                .collect();
            visible.push(Root {
                name: id.clone(),
                into: (kind == 4).then(|| step["reduce"]["into"].as_str().unwrap().to_owned()),
                branches,
            });
        }
        steps.push(step);
    }
    let mut c = Map::new();
    c.insert("version".into(), json!(1));
    if t.chance(10) {
        c.insert("description".into(), json!("generated"));
    }
    if !with_output.is_empty() && t.chance(30) {
        c.insert("output".into(), json!(t.pick(&with_output)));
    }
    c.insert("steps".into(), Value::Array(steps));
    Value::Object(c)
}

// ---------------------------------------------------------------------------------------
// The workflow

fn workflow(
    t: &mut Tape,
    states: &[String],
    prompts: &[String],
    comps: &[String],
    focus: bool,
    control: bool,
) -> Value {
    let mut out = Map::new();
    for (i, key) in states.iter().enumerate() {
        let mut s = Map::new();
        if control {
            match t.weighted(&[50, 40, 10]) {
                1 => {
                    s.insert("control".into(), json!("agent"));
                }
                2 => {
                    s.insert("control".into(), json!("user"));
                }
                _ => {}
            }
        }
        if !comps.is_empty() && (focus && i == 0 || t.chance(35)) {
            s.insert("orchestration".into(), json!("composition"));
            s.insert("composition".into(), json!(t.pick(comps)));
            if t.chance(10) {
                s.insert("prompt_task".into(), json!(t.pick(prompts)));
            }
        } else {
            s.insert("prompt_task".into(), json!(t.pick(prompts)));
            match t.weighted(&[50, 15, 15, 20]) {
                0 => {}
                1 => {
                    s.insert("orchestration".into(), json!("internal"));
                }
                2 => {
                    s.insert("orchestration".into(), json!("external"));
                }
                _ => {
                    s.insert("orchestration".into(), json!("hybrid"));
                }
            }
        }
        if t.chance(80) {
            let mut on = Map::new();
            for (e, p) in EVENTS.iter().zip([100, 60, 30]) {
                if t.chance(p) {
                    on.insert(e.to_string(), json!(t.pick(states)));
                }
            }
            s.insert("on_event".into(), Value::Object(on));
        } else if t.chance(50) {
            s.insert("on_event".into(), json!({}));
        }
        if t.chance(15) {
            s.insert("terminal".into(), json!(true));
        } else if t.chance(5) {
            s.insert("terminal".into(), json!(false));
        }
        if t.chance(30) {
            s.insert("max_visits".into(), json!(t.range(1, 3)));
            if t.chance(50) {
                s.insert("on_max_visits".into(), json!(t.pick(states)));
            }
        }
        if t.chance(30) {
            let mut arts = Map::new();
            for name in ARTIFACTS {
                if t.chance(60) {
                    let mut def = Map::new();
                    def.insert("type".into(), json!("text/plain"));
                    if t.chance(60) {
                        def.insert("mode".into(), json!(*t.pick(&["replace", "append"])));
                    }
                    arts.insert(name.into(), Value::Object(def));
                }
            }
            s.insert("artifacts".into(), Value::Object(arts));
        }
        if t.chance(20) {
            s.insert(
                "persistence".into(),
                json!(*t.pick(&["transient", "persistent"])),
            );
        }
        out.insert(key.clone(), Value::Object(s));
    }
    let entry = if focus || t.chance(80) {
        states[0].clone()
    } else {
        t.pick(states).clone()
    };
    let mut w = Map::new();
    w.insert("version".into(), json!(*t.pick(&[1, 2])));
    w.insert("entry".into(), json!(entry));
    if focus || t.chance(40) {
        let mut budget = Map::new();
        if t.chance(50) {
            budget.insert("max_total_visits".into(), json!(t.range(1, 6)));
        }
        if focus || t.chance(50) {
            budget.insert("max_tool_calls".into(), json!(t.range(1, 4)));
        }
        if focus || t.chance(50) {
            budget.insert("max_wall_time_sec".into(), json!(t.range(1, 3)));
        }
        let mut engine = Map::new();
        engine.insert("budget".into(), Value::Object(budget));
        if t.chance(10) {
            engine.insert("mode".into(), json!("opaque"));
        }
        w.insert("engine".into(), Value::Object(engine));
    }
    w.insert("states".into(), Value::Object(out));
    Value::Object(w)
}
