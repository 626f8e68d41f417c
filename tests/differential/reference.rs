//! The reference interpreter: a direct, recursive walk over the pack's JSON, written
//! from `shared/conformance/README.md` and `shared/semantics/{compositions,workflow}.md`
//! for this test, with no compilation and no cleverness. It shares no code with the
//! lowering or the VM (only `ir_spec::text_form`, see `values.rs`).
//!
//! The scripted host answers the outstanding call of the lowest-numbered parallel branch
//! first (conformance README), so answers are consumed branch after branch. What the
//! issue order of a parallel step changes (budget checks and clock reads, `compositions.md`
//! §8.1) is modelled by issuing every branch's first call before running the branches one
//! after another.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Map, Value};

use super::gen::{Generated, Item};
use super::render::{render, Artifact};
use super::values::{bind, json_eq, path_body, resolve, Scope};

/// A run-time error kind (conformance README, "Runtime error kinds").
pub type Kind = &'static str;
type Res<T> = Result<T, Kind>;

const HOST_ERROR: Kind = "host_error";
const BUDGET: Kind = "budget_exhausted";
const LIMIT: Kind = "limit_exceeded";

/// A failure that ends the whole run at once, even inside a parallel step (conformance
/// README, "Settled details").
fn run_wide(kind: Kind) -> bool {
    kind == BUDGET || kind == LIMIT
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The output and end state, or the error kind.
    pub result: Result<(Value, Option<String>), String>,
    /// The trace lines.
    pub trace: Vec<String>,
    /// The calls, as `{prompt, input, system}` / `{tool, args}`.
    pub calls: Vec<Value>,
    /// The eval requests (`compositions.md` §9.2), as `{step, eval, output}`.
    pub evals: Vec<Value>,
    /// The last turn's reply (RFC 0014 reply assembly).
    pub reply: String,
}

/// A scripted answer, read as the conformance README says.
enum Answer {
    Output(Value, Option<String>),
    ToolCalls(Vec<(String, Value)>),
    Error,
}

fn parse_answer(v: &Value) -> Answer {
    let Some(obj) = v.as_object() else {
        return Answer::Error;
    };
    if obj
        .keys()
        .any(|k| !matches!(k.as_str(), "output" | "event" | "tool_calls" | "error"))
        || obj.contains_key("error")
    {
        return Answer::Error;
    }
    if let Some(calls) = obj.get("tool_calls") {
        let mut out = Vec::new();
        for c in calls.as_array().unwrap() {
            let name = c["name"].as_str().unwrap().to_owned();
            let args = c.get("args").cloned().unwrap_or(json!({}));
            out.push((name, args));
        }
        return Answer::ToolCalls(out);
    }
    match obj.get("event") {
        Some(Value::String(e)) => Answer::Output(
            obj.get("output").cloned().unwrap_or(Value::Null),
            Some(e.clone()),
        ),
        Some(_) => Answer::Error,
        None => Answer::Output(obj.get("output").cloned().unwrap_or(Value::Null), None),
    }
}

/// The trace and calls being written: the run's, or one parallel branch's.
#[derive(Default)]
struct Log {
    trace: Vec<String>,
    calls: Vec<Value>,
    evals: Vec<Value>,
}

/// How a step ended, for skipping (`compositions.md` §4.2) and references.
enum Status {
    Ran {
        output: Option<Value>,
        selected: Option<String>,
    },
    Skipped,
}

/// A leaf step ready to issue its first call: bindings resolved, prompt rendered.
struct Prepared {
    input: Value,
    system: String,
}

struct Interp<'p> {
    pack: &'p Value,
    prompts: BTreeMap<String, VecDeque<Value>>,
    tools: BTreeMap<String, VecDeque<Value>>,
    extensions: BTreeMap<String, VecDeque<Value>>,
    clock: Vec<u64>,
    clock_reads: usize,
    variables: Map<String, Value>,
    log: Log,
    /// `engine.budget` while a workflow runs.
    budget: Option<&'p Value>,
    start_ms: u64,
    tool_calls: u64,
    artifacts: BTreeMap<String, Artifact>,
    /// The embedder's cap on host calls, and the calls issued so far.
    max_host_calls: Option<u64>,
    host_calls: u64,
    /// The turn's reply: the non-empty string outputs of the states executed in it.
    reply: Vec<String>,
}

/// Runs `g` on the reference interpreter.
pub fn run(g: &Generated) -> Outcome {
    let mut it = Interp {
        pack: &g.pack,
        prompts: g
            .prompts
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
            .collect(),
        tools: g
            .tools
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
            .collect(),
        extensions: g
            .extensions
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
            .collect(),
        clock: g.clock.clone(),
        clock_reads: 0,
        variables: g.variables.clone(),
        log: Log::default(),
        budget: None,
        start_ms: 0,
        tool_calls: 0,
        artifacts: BTreeMap::new(),
        max_host_calls: g.max_host_calls,
        host_calls: 0,
        reply: Vec::new(),
    };
    let result = it.target(&g.target, &g.script);
    Outcome {
        reply: it.reply.join("\n\n"),
        result: result.map_err(str::to_owned),
        trace: it.log.trace,
        calls: it.log.calls,
        evals: it.log.evals,
    }
}

impl<'p> Interp<'p> {
    // -----------------------------------------------------------------------------------
    // Targets (`workflow.md` §2, §15)

    fn target(&mut self, target: &str, script: &[Item]) -> Res<(Value, Option<String>)> {
        let pack = self.pack;
        if target == "workflow" {
            let entry = pack["workflow"]["entry"].as_str().unwrap();
            return self.workflow(entry, script);
        }
        if let Some(name) = target.strip_prefix("composition:") {
            let mut last = Value::Null;
            for item in script {
                match item {
                    Item::Turn(input) => {
                        last = self.composition(name, input)?;
                        self.reply.clear();
                        self.add_reply(&last);
                    }
                    Item::Event(_) => return Err("invalid_event"),
                }
            }
            return Ok((last, None));
        }
        let member = target.strip_prefix("agent:").unwrap();
        if let Some(state) = pack["agents"]["members"][member]["state"].as_str() {
            return self.workflow(state, script);
        }
        let mut last = Value::Null;
        for item in script {
            match item {
                Item::Turn(input) => {
                    last = self.prompt_state(member, member, input)?.0;
                    self.reply.clear();
                    self.add_reply(&last);
                }
                Item::Event(_) => return Err("invalid_event"),
            }
        }
        Ok((last, None))
    }

    /// Appends a non-empty string output to the turn's reply (RFC 0014).
    fn add_reply(&mut self, output: &Value) {
        if let Some(text) = output.as_str().filter(|t| !t.is_empty()) {
            self.reply.push(text.to_owned());
        }
    }

    /// The pack claims v1.7 or later: `control` is executed (`later-versions.md` §2).
    fn control_level(&self) -> bool {
        self.pack["$schema"]
            .as_str()
            .is_some_and(|s| s.contains("/v1.7") || s.contains("/v1.8") || s.contains("/v1.9"))
    }

    /// The provider of a call made with `prompt` (`default` below level 1.9).
    fn prompt_provider(&self, prompt: &str) -> String {
        let level_1_9 = self.pack["$schema"]
            .as_str()
            .is_some_and(|s| s.contains("/v1.9"));
        match self.pack["prompts"][prompt]["provider"].as_str() {
            Some(p) if level_1_9 => p.to_owned(),
            _ => "default".to_owned(),
        }
    }

    /// A prompt or agent step's provider: its own, else its prompt's.
    fn step_provider(&self, step: &Value) -> String {
        match step["provider"].as_str() {
            Some(p) => p.to_owned(),
            None => self.prompt_provider(step["prompt_task"].as_str().unwrap()),
        }
    }

    // -----------------------------------------------------------------------------------
    // Host calls

    fn read_clock(&mut self) -> u64 {
        let i = self.clock_reads.min(self.clock.len().saturating_sub(1));
        self.clock_reads += 1;
        self.clock.get(i).copied().unwrap_or(0)
    }

    fn limit(&self, name: &str) -> Option<u64> {
        self.budget
            .and_then(|b| b.get(name))
            .and_then(Value::as_u64)
    }

    /// The wall-clock checkpoint (`workflow.md` §10).
    fn check_clock(&mut self) -> Res<()> {
        if let Some(limit) = self.limit("max_wall_time_sec") {
            let now = self.read_clock();
            if now.saturating_sub(self.start_ms) >= limit * 1000 {
                return Err(BUDGET);
            }
        }
        Ok(())
    }

    /// The embedder's cap (`RunOptions::max_host_calls`), checked after the pack's own
    /// limits: the call past it fails the run with `limit_exceeded`.
    fn check_cap(&mut self) -> Res<()> {
        if self.max_host_calls.is_some_and(|m| self.host_calls >= m) {
            return Err(LIMIT);
        }
        self.host_calls += 1;
        Ok(())
    }

    fn issue_model(
        &mut self,
        prompt: &str,
        provider: &str,
        input: &Value,
        system: &str,
    ) -> Res<()> {
        self.check_clock()?;
        self.check_cap()?;
        let mut call = json!({"prompt": prompt, "input": input, "system": system});
        if provider != "default" {
            call["provider"] = json!(provider);
        }
        self.log.calls.push(call);
        Ok(())
    }

    /// An extension step's call (`later-versions.md` §5): not a tool call, so no
    /// `max_tool_calls`; the clock and the embedder's cap apply.
    fn issue_extension(&mut self, step: &Value, input: &Value) -> Res<()> {
        self.check_clock()?;
        self.check_cap()?;
        let params: Map<String, Value> = step
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| {
                ![
                    "id",
                    "kind",
                    "description",
                    "input",
                    "depends_on",
                    "modifiers",
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.log
            .calls
            .push(json!({"extension": step["kind"], "input": input, "params": params}));
        Ok(())
    }

    fn issue_tool(&mut self, tool: &str, args: &Value) -> Res<()> {
        if self
            .limit("max_tool_calls")
            .is_some_and(|m| self.tool_calls + 1 > m)
        {
            return Err(BUDGET);
        }
        self.check_clock()?;
        self.check_cap()?;
        self.tool_calls += 1;
        self.log.calls.push(json!({"tool": tool, "args": args}));
        Ok(())
    }

    fn answer(queues: &mut BTreeMap<String, VecDeque<Value>>, name: &str) -> Answer {
        match queues.get_mut(name).and_then(VecDeque::pop_front) {
            Some(a) => parse_answer(&a),
            None => Answer::Error,
        }
    }

    /// Issues (unless `pre_issued` says it already was) and answers a model call.
    /// Answers come from the `provider/prompt` queue when the script has one, else
    /// from the plain `prompt` queue.
    fn model_call(
        &mut self,
        prompt: &str,
        provider: &str,
        input: &Value,
        system: &str,
        pre_issued: &mut bool,
    ) -> Res<Answer> {
        if !std::mem::take(pre_issued) {
            self.issue_model(prompt, provider, input, system)?;
        }
        let keyed = format!("{provider}/{prompt}");
        let key = if self.prompts.contains_key(&keyed) {
            keyed.as_str()
        } else {
            prompt
        };
        Ok(Self::answer(&mut self.prompts, key))
    }

    /// Issues (unless `pre_issued`) and answers a tool call.
    fn tool_call(&mut self, tool: &str, args: &Value, pre_issued: &mut bool) -> Res<Answer> {
        if !std::mem::take(pre_issued) {
            self.issue_tool(tool, args)?;
        }
        Ok(Self::answer(&mut self.tools, tool))
    }

    fn render(&self, prompt: &str, input: &Value) -> Res<String> {
        let no_fragments = Map::new();
        render(
            &self.pack["prompts"][prompt],
            self.pack["fragments"].as_object().unwrap_or(&no_fragments),
            input,
            &self.artifacts,
            &self.variables,
        )
        .map_err(|()| "invalid_variable")
    }

    /// A prompt's offered tools (`workflow.md` §6 step 2; agent steps `compositions.md`
    /// 6.3.1): the names of `list` that are tool keys or agent member keys, less the
    /// blocklist; none with `tool_choice: none`.
    fn offered(&self, prompt: &str, list: Option<&Value>) -> Vec<String> {
        let pack = self.pack;
        let p = &pack["prompts"][prompt];
        let policy = &p["tool_policy"];
        if policy["tool_choice"] == "none" {
            return Vec::new();
        }
        let blocked = |n: &str| {
            policy["blocklist"]
                .as_array()
                .is_some_and(|b| b.iter().any(|x| x == n))
        };
        let list = list.or(p.get("tools"));
        list.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|n| {
                self.pack["tools"].get(*n).is_some()
                    || self.pack["agents"]["members"].get(*n).is_some()
            })
            .filter(|n| !blocked(n))
            .map(str::to_owned)
            .collect()
    }

    // -----------------------------------------------------------------------------------
    // The workflow (`workflow.md` §3–§13)

    fn workflow(&mut self, start: &str, script: &[Item]) -> Res<(Value, Option<String>)> {
        let pack = self.pack;
        let wf = &pack["workflow"];
        self.budget = wf["engine"].get("budget");
        let mut visits: BTreeMap<String, u64> = BTreeMap::new();
        let mut total = 1;
        let mut current = start.to_owned();
        visits.insert(current.clone(), 1);
        self.log.trace.push(format!("enter {current}"));
        if self.limit("max_wall_time_sec").is_some() {
            self.start_ms = self.read_clock();
        }
        let mut last = Value::Null;
        let control = self.control_level();
        for item in script {
            if let Item::Turn(_) = item {
                self.reply.clear();
            }
            match item {
                Item::Turn(input) => loop {
                    let state = &wf["states"][&current];
                    let (output, event) = if state["orchestration"] == "composition" {
                        let out =
                            self.composition(state["composition"].as_str().unwrap(), input)?;
                        let event = out.get("event").and_then(Value::as_str).map(str::to_owned);
                        (out, event)
                    } else {
                        self.prompt_state(state["prompt_task"].as_str().unwrap(), &current, input)?
                    };
                    self.write_artifacts(state, &output);
                    self.add_reply(&output);
                    last = output;
                    if terminal(state) || state["orchestration"] == "external" {
                        break;
                    }
                    let Some(event) = event else { break };
                    self.transition(&mut current, &event, &mut visits, &mut total)?;
                    let dest = &wf["states"][&current];
                    if dest["orchestration"] == "external" {
                        break;
                    }
                    // RFC 0014: at level 1.8+, a non-terminal destination runs in this
                    // turn only with `control: agent`.
                    if control && !terminal(dest) && dest["control"] != "agent" {
                        break;
                    }
                },
                Item::Event(event) => {
                    let state = &wf["states"][&current];
                    if terminal(state) {
                        return Err("terminal_state");
                    }
                    let mode = state["orchestration"].as_str().unwrap_or("internal");
                    if mode == "internal" || mode == "composition" {
                        return Err("invalid_event");
                    }
                    self.transition(&mut current, event, &mut visits, &mut total)?;
                }
            }
        }
        Ok((last, Some(current)))
    }

    /// `workflow.md` §7.
    fn transition(
        &mut self,
        current: &mut String,
        event: &str,
        visits: &mut BTreeMap<String, u64>,
        total: &mut u64,
    ) -> Res<()> {
        let pack = self.pack;
        let states = &pack["workflow"]["states"];
        let target = states[current.as_str()]["on_event"]
            .get(event)
            .and_then(Value::as_str)
            .ok_or("invalid_event")?;
        let mut dest = target;
        let mut redirected = false;
        if let Some(max) = states[target]["max_visits"].as_u64() {
            if visits.get(target).copied().unwrap_or(0) >= max {
                dest = states[target]["on_max_visits"]
                    .as_str()
                    .ok_or("max_visits_exceeded")?;
                redirected = true;
            }
        }
        if self.limit("max_total_visits").is_some_and(|m| *total >= m) {
            return Err(BUDGET);
        }
        self.check_clock()?;
        let suffix = if redirected {
            format!(" (redirected from {target})")
        } else {
            String::new()
        };
        self.log
            .trace
            .push(format!("transition {current} -> {dest} on {event}{suffix}"));
        self.log.trace.push(format!("enter {dest}"));
        *visits.entry(dest.to_owned()).or_insert(0) += 1;
        *total += 1;
        *current = dest.to_owned();
        Ok(())
    }

    /// `workflow.md` §11.
    fn write_artifacts(&mut self, state: &Value, output: &Value) {
        let Some(writes) = output.get("artifacts").and_then(Value::as_object) else {
            return;
        };
        for (name, v) in writes {
            let Some(def) = state["artifacts"].get(name) else {
                continue;
            };
            if v.is_null() {
                continue;
            }
            let new = if def["mode"] == "append" {
                match self.artifacts.remove(name) {
                    None => Artifact::List(vec![v.clone()]),
                    Some(Artifact::Value(old)) => Artifact::List(vec![old, v.clone()]),
                    Some(Artifact::List(mut l)) => {
                        l.push(v.clone());
                        Artifact::List(l)
                    }
                }
            } else {
                Artifact::Value(v.clone())
            };
            self.artifacts.insert(name.clone(), new);
        }
    }

    /// The validators of `prompt` on a model answer made at `at` (a step id, a state
    /// name, a plain agent member), in declaration order (`later-versions.md` §4): a
    /// `max_characters` limit truncates and the chain goes on, a banned word replaces
    /// the text and ends it; a structured answer (`schema`, or JSON) is never rewritten
    /// but fails with `guardrail_blocked`. Each firing is a trace line and a record.
    fn guard(&mut self, prompt: &str, at: &str, mut v: Value, schema: bool) -> Res<Value> {
        let pack = self.pack;
        let Some(list) = pack["prompts"][prompt]["validators"].as_array() else {
            return Ok(v);
        };
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        for val in list {
            if v.is_null() {
                break;
            }
            let text = match &v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let ty = val["type"].as_str().unwrap_or_default();
            let limit = val["params"]["max_characters"].as_u64().map(|n| n as usize);
            let trigger = match ty {
                "banned_words" => {
                    let lower = text.to_lowercase();
                    val["params"]["words"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .any(|w| {
                            let w = w.to_lowercase();
                            lower.match_indices(&w).any(|(i, _)| {
                                !lower[..i].chars().next_back().is_some_and(is_word)
                                    && !lower[i + w.len()..].chars().next().is_some_and(is_word)
                            })
                        })
                }
                "max_length" => limit.is_some_and(|n| text.chars().count() > n),
                _ => false,
            };
            if !trigger {
                continue;
            }
            let structured = schema || !v.is_string();
            let action = match (structured, limit) {
                (true, _) => "blocked",
                (false, Some(_)) => "truncated",
                (false, None) => "replaced",
            };
            self.log.trace.push(format!("guardrail {ty} {at}"));
            self.log.calls.push(json!({
                "guardrail": ty, "at": at, "action": action, "length": text.chars().count()
            }));
            match (structured, limit) {
                (true, _) => return Err("guardrail_blocked"),
                (false, Some(n)) => v = Value::String(text.chars().take(n).collect()),
                (false, None) => {
                    let message = val["message"].as_str().unwrap_or(
                        "Sorry, we can't provide this response as it would violate our content policy.",
                    );
                    v = Value::String(message.to_owned());
                    break;
                }
            }
        }
        Ok(v)
    }

    /// A prompt state's execution (`workflow.md` §6): the model, with tool rounds.
    fn prompt_state(
        &mut self,
        prompt: &str,
        at: &str,
        input: &Value,
    ) -> Res<(Value, Option<String>)> {
        let system = self.render(prompt, input)?;
        let pack = self.pack;
        let policy = &pack["prompts"][prompt]["tool_policy"];
        let max_rounds = policy["max_rounds"].as_u64().unwrap_or(5);
        let per_turn = policy["max_tool_calls_per_turn"].as_u64().unwrap_or(10);
        let offered = self.offered(prompt, None);
        let mut made = 0;
        for round in 1.. {
            let provider = self.prompt_provider(prompt);
            match self.model_call(prompt, &provider, input, &system, &mut false)? {
                Answer::Error => return Err(HOST_ERROR),
                Answer::Output(v, event) => return Ok((self.guard(prompt, at, v, false)?, event)),
                Answer::ToolCalls(reqs) if reqs.is_empty() => return Err(HOST_ERROR),
                Answer::ToolCalls(reqs) => {
                    for (name, args) in reqs {
                        if !offered.contains(&name) || made >= per_turn {
                            continue; // an error result for the model, no host call
                        }
                        made += 1;
                        self.tool_call(&name, &args, &mut false)?;
                    }
                }
            }
            if round == max_rounds {
                return Err("agent_step_limit");
            }
        }
        unreachable!()
    }

    // -----------------------------------------------------------------------------------
    // Compositions (`compositions.md` §4–§10)

    fn composition(&mut self, name: &str, input: &Value) -> Res<Value> {
        let pack = self.pack;
        let comp = &pack["compositions"][name];
        let steps = comp["steps"].as_array().unwrap();
        let mut status: BTreeMap<String, Status> = BTreeMap::new();
        let mut outputs: BTreeMap<String, Value> = BTreeMap::new();
        let mut last: Option<Value> = None;
        for (i, step) in steps.iter().enumerate() {
            let id = step["id"].as_str().unwrap();
            if skipped(step, &steps[..i], &status) {
                self.log.trace.push(format!("skip {id}"));
                status.insert(id.to_owned(), Status::Skipped);
                continue;
            }
            let scope = Scope {
                input,
                outputs: &outputs,
            };
            match step["kind"].as_str().unwrap() {
                "branch" => {
                    let yes = eval_predicate(&step["predicate"], &scope)?;
                    let selected = if yes {
                        step.get("then")
                    } else {
                        step.get("else")
                    };
                    let selected = selected.and_then(Value::as_str);
                    self.log
                        .trace
                        .push(format!("branch {id} -> {}", selected.unwrap_or("-")));
                    status.insert(
                        id.to_owned(),
                        Status::Ran {
                            output: None,
                            selected: selected.map(str::to_owned),
                        },
                    );
                }
                kind => {
                    let out = if kind == "parallel" {
                        self.parallel(step, &scope)?
                    } else {
                        let prepared = self.start_leaf(step, &scope)?;
                        self.run_leaf(step, &prepared, false)?
                    };
                    self.eval_requests(step, &out);
                    last = Some(out.clone());
                    outputs.insert(id.to_owned(), out.clone());
                    status.insert(
                        id.to_owned(),
                        Status::Ran {
                            output: Some(out),
                            selected: None,
                        },
                    );
                }
            }
        }
        let out = match comp.get("output").and_then(Value::as_str) {
            Some(o) => match status.get(o) {
                Some(Status::Ran {
                    output: Some(v), ..
                }) => Some(v.clone()),
                _ => None,
            },
            None => last,
        };
        out.ok_or("no_output")
    }

    /// A completed step's eval requests (`compositions.md` §9.2).
    fn eval_requests(&mut self, step: &Value, output: &Value) {
        for eval in step["modifiers"]["eval"].as_array().into_iter().flatten() {
            self.log
                .evals
                .push(json!({"step": step["id"], "eval": eval, "output": output}));
        }
    }

    /// Writes `step <id>`, resolves the step's bindings and renders its prompt.
    fn start_leaf(&mut self, step: &Value, scope: &Scope) -> Res<Prepared> {
        let id = step["id"].as_str().unwrap();
        self.log.trace.push(format!("step {id}"));
        if is_extension(step) {
            let input = step.get("input").cloned().unwrap_or(Value::Null);
            let input = bind(&input, scope).ok_or("unresolved_binding")?;
            return Ok(Prepared {
                input,
                system: String::new(),
            });
        }
        if step["kind"] == "tool" {
            let args = step.get("args").cloned().unwrap_or(json!({}));
            let args = bind(&args, scope).ok_or("unresolved_binding")?;
            return Ok(Prepared {
                input: args,
                system: String::new(),
            });
        }
        let input = step.get("input").cloned().unwrap_or(Value::Null);
        let input = bind(&input, scope).ok_or("unresolved_binding")?;
        let system = self.render(step["prompt_task"].as_str().unwrap(), &input)?;
        Ok(Prepared { input, system })
    }

    /// Issues a prepared leaf step's first call (a parallel branch starting).
    fn issue_first(&mut self, step: &Value, p: &Prepared) -> Res<()> {
        if is_extension(step) {
            self.issue_extension(step, &p.input)
        } else if step["kind"] == "tool" {
            self.issue_tool(step["tool"].as_str().unwrap(), &p.input)
        } else {
            let provider = self.step_provider(step);
            self.issue_model(
                step["prompt_task"].as_str().unwrap(),
                &provider,
                &p.input,
                &p.system,
            )
        }
    }

    /// A leaf step's attempts (`compositions.md` §9.1).
    fn run_leaf(&mut self, step: &Value, p: &Prepared, mut pre_issued: bool) -> Res<Value> {
        let id = step["id"].as_str().unwrap();
        let attempts = step["modifiers"]["retry"]["max_attempts"]
            .as_u64()
            .unwrap_or(1);
        for attempt in 1..=attempts {
            if attempt > 1 {
                self.log.trace.push(format!("retry {id} {attempt}"));
            }
            match self.attempt(step, p, &mut pre_issued) {
                Err(HOST_ERROR | "agent_step_limit" | "guardrail_blocked")
                    if attempt < attempts =>
                {
                    continue
                }
                other => return other,
            }
        }
        unreachable!()
    }

    fn attempt(&mut self, step: &Value, p: &Prepared, pre_issued: &mut bool) -> Res<Value> {
        if is_extension(step) {
            if !std::mem::take(pre_issued) {
                self.issue_extension(step, &p.input)?;
            }
            let kind = step["kind"].as_str().unwrap();
            return match Self::answer(&mut self.extensions, kind) {
                Answer::Output(v, _) => Ok(v),
                _ => Err(HOST_ERROR),
            };
        }
        match step["kind"].as_str().unwrap() {
            "tool" => match self.tool_call(step["tool"].as_str().unwrap(), &p.input, pre_issued)? {
                Answer::Output(v, _) => Ok(v),
                _ => Err(HOST_ERROR),
            },
            "prompt" => {
                let prompt = step["prompt_task"].as_str().unwrap();
                let provider = self.step_provider(step);
                match self.model_call(prompt, &provider, &p.input, &p.system, pre_issued)? {
                    Answer::Output(v, _) => {
                        let id = step["id"].as_str().unwrap();
                        let v = self.guard(prompt, id, v, step.get("output_schema").is_some())?;
                        Ok(string_rule(step, v))
                    }
                    _ => Err(HOST_ERROR),
                }
            }
            _ => self.agent(step, p, pre_issued),
        }
    }

    /// An agent step's loop (`compositions.md` §6.3.4).
    fn agent(&mut self, step: &Value, p: &Prepared, pre_issued: &mut bool) -> Res<Value> {
        let prompt = step["prompt_task"].as_str().unwrap();
        let offered = self.offered(prompt, step.get("tools"));
        let per_turn =
            self.pack["prompts"][prompt]["tool_policy"]["max_tool_calls_per_turn"].as_u64();
        let max_steps = step["termination"]["max_steps"].as_u64();
        let finish = step["termination"]["tool_called"].as_str();
        let mut made = 0;
        let provider = self.step_provider(step);
        for turn in 1.. {
            let reqs = match self.model_call(prompt, &provider, &p.input, &p.system, pre_issued)? {
                Answer::Error => return Err(HOST_ERROR),
                Answer::Output(v, _) => {
                    let id = step["id"].as_str().unwrap();
                    let v = self.guard(prompt, id, v, step.get("output_schema").is_some())?;
                    return Ok(string_rule(step, v));
                }
                Answer::ToolCalls(reqs) if reqs.is_empty() => return Err(HOST_ERROR),
                Answer::ToolCalls(reqs) => reqs,
            };
            let mut finished = None;
            for (name, args) in reqs {
                if !offered.contains(&name) || per_turn.is_some_and(|cap| made >= cap) {
                    continue; // an error result for the model, no host call
                }
                made += 1;
                if let Answer::Output(v, _) = self.tool_call(&name, &args, &mut false)? {
                    if finish == Some(name.as_str()) {
                        finished = Some(v);
                    }
                }
            }
            if let Some(v) = finished {
                return Ok(v);
            }
            match max_steps {
                Some(m) if turn == m => return Ok(Value::Null),
                None if turn == 50 => return Err("agent_step_limit"),
                _ => {}
            }
        }
        unreachable!()
    }

    /// A parallel step (`compositions.md` §8).
    fn parallel(&mut self, step: &Value, scope: &Scope) -> Res<Value> {
        self.log
            .trace
            .push(format!("step {}", step["id"].as_str().unwrap()));
        let branches = step["branches"].as_array().unwrap();
        let outer = std::mem::take(&mut self.log);
        let mut logs: Vec<Log> = Vec::new();
        let result = self.branches(branches, scope, &mut logs);
        self.log = outer;
        for l in logs {
            self.log.trace.extend(l.trace);
            self.log.calls.extend(l.calls);
            self.log.evals.extend(l.evals);
        }
        let outputs = result?;
        let merged = match step["reduce"]["strategy"].as_str().unwrap() {
            "barrier" => Value::Object(
                branches
                    .iter()
                    .zip(&outputs)
                    .map(|(b, o)| (b["id"].as_str().unwrap().to_owned(), o.clone()))
                    .collect(),
            ),
            "replace" => outputs.last().unwrap().clone(),
            _ => Value::Array(
                outputs
                    .iter()
                    .flat_map(|o| match o {
                        Value::Array(items) => items.clone(),
                        other => vec![other.clone()],
                    })
                    .collect(),
            ),
        };
        let into = step["reduce"]["into"].as_str().unwrap();
        Ok(json!({ into: merged }))
    }

    /// Runs the branches, each writing its own log in `logs`: every branch starts and
    /// issues its first call in declaration order, then each runs to its end.
    fn branches(
        &mut self,
        branches: &[Value],
        scope: &Scope,
        logs: &mut Vec<Log>,
    ) -> Res<Vec<Value>> {
        let mut started: Vec<Res<Prepared>> = Vec::new();
        for b in branches {
            let r = self
                .start_leaf(b, scope)
                .and_then(|p| self.issue_first(b, &p).map(|()| p));
            logs.push(std::mem::take(&mut self.log));
            if let Err(k) = &r {
                if run_wide(k) {
                    return Err(k);
                }
            }
            started.push(r);
        }
        let mut results = Vec::new();
        for (j, (b, s)) in branches.iter().zip(started).enumerate() {
            let r = match s {
                Ok(p) => {
                    self.log = std::mem::take(&mut logs[j]);
                    let r = self.run_leaf(b, &p, true);
                    if let Ok(out) = &r {
                        self.eval_requests(b, out);
                    }
                    logs[j] = std::mem::take(&mut self.log);
                    if let Err(k) = &r {
                        if run_wide(k) {
                            return Err(k);
                        }
                    }
                    r
                }
                Err(k) => Err(k),
            };
            results.push(r);
        }
        results.into_iter().collect()
    }
}

/// `compositions.md` 11.2: with `output_schema`, a string holding JSON text is parsed.
/// A vendor step kind `vendor.name`.
fn is_extension(step: &Value) -> bool {
    step["kind"].as_str().is_some_and(|k| k.contains('.'))
}

fn string_rule(step: &Value, v: Value) -> Value {
    match (&v, step.get("output_schema")) {
        (Value::String(s), Some(_)) => serde_json::from_str(s).unwrap_or(v),
        _ => v,
    }
}

/// `workflow.md` §8.
fn terminal(state: &Value) -> bool {
    state["terminal"] == true || state["on_event"].as_object().is_none_or(Map::is_empty)
}

/// `compositions.md` §4.2.
fn skipped(step: &Value, before: &[Value], status: &BTreeMap<String, Status>) -> bool {
    let id = step["id"].as_str().unwrap();
    let guards: Vec<&Value> = before
        .iter()
        .filter(|b| b["kind"] == "branch" && (b["then"] == id || b["else"] == id))
        .collect();
    let selected = |b: &&Value| {
        matches!(
            status.get(b["id"].as_str().unwrap()),
            Some(Status::Ran { selected: Some(s), .. }) if s == id
        )
    };
    if !guards.is_empty() && !guards.iter().any(selected) {
        return true;
    }
    match step.get("depends_on").and_then(Value::as_array) {
        Some(deps) if !deps.is_empty() => deps
            .iter()
            .all(|d| matches!(status.get(d.as_str().unwrap()), Some(Status::Skipped))),
        _ => false,
    }
}

/// `compositions.md` §7.
fn eval_predicate(p: &Value, scope: &Scope) -> Res<bool> {
    if let Some(all) = p.get("all_of") {
        for q in all.as_array().unwrap() {
            if !eval_predicate(q, scope)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    if let Some(any) = p.get("any_of") {
        for q in any.as_array().unwrap() {
            if eval_predicate(q, scope)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    if let Some(q) = p.get("not") {
        return Ok(!eval_predicate(q, scope)?);
    }
    let actual = resolve(path_body(p["path"].as_str().unwrap()), scope);
    if let Some(exists) = p.get("exists") {
        return Ok(actual.is_some() == exists.as_bool().unwrap());
    }
    let actual = actual.unwrap_or(Value::Null);
    let value = &p["value"];
    let member = || -> Res<bool> {
        let list = value.as_array().ok_or("type_error")?;
        Ok(list.iter().any(|x| json_eq(x, &actual)))
    };
    let ordered = || -> Res<(f64, f64)> {
        match (actual.as_f64(), value.as_f64()) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err("type_error"),
        }
    };
    Ok(match p["op"].as_str().unwrap() {
        "equals" => json_eq(&actual, value),
        "not_equals" => !json_eq(&actual, value),
        "in" => member()?,
        "not_in" => !member()?,
        "less_than" => ordered().map(|(a, b)| a < b)?,
        "less_than_or_equals" => ordered().map(|(a, b)| a <= b)?,
        "greater_than" => ordered().map(|(a, b)| a > b)?,
        _ => ordered().map(|(a, b)| a >= b)?,
    })
}
