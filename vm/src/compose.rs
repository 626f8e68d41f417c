//! Compositions (`compositions.md` §4–§10): the walk, skip rules, branches, predicates,
//! leaf steps with retry, parallel steps and reducers, and the composition output.

use ir_spec::{
    Bind, CompId, Compare, Composition, Ordering, Part, Pred, Reduce, Ref, Root, Step, StepId,
    StepKind,
};
use serde_json::{Map, Value};

use crate::api::{Answer, Call, CallRecord, ErrorKind, EvalRequest, ModelCall, RunError, ToolCall};
use crate::exec::{BoxFut, Core, Entry, Join, Lane};
use crate::render::render;
use crate::toolloop::{self, End, Loop};
use crate::value::{follow, json_eq, write_text_form};

/// What the walk knows about a step.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    NotReached,
    Ran,
    Skipped,
}

/// The values references read: the input and the output slots.
pub(crate) struct Scope<'a> {
    pub input: &'a Value,
    pub slots: &'a [Option<Value>],
}

impl Scope<'_> {
    /// Resolves a reference; `None` when it does not resolve (§3.4).
    fn get(&self, r: &Ref) -> Option<&Value> {
        let root = match r.root {
            Root::Input => self.input,
            Root::Step(s) => self.slots.get(s.index())?.as_ref()?,
        };
        follow(root, &r.path)
    }
}

fn unresolved(core: &Core, comp: &Composition, r: &Ref) -> RunError {
    let mut text = match r.root {
        Root::Input => "${input".to_owned(),
        Root::Step(s) => format!("${{{}.output", core.m.str(comp.steps[s.index()].id)),
    };
    for seg in &r.path {
        text.push('.');
        text.push_str(seg);
    }
    text.push('}');
    RunError::new(
        ErrorKind::UnresolvedBinding,
        format!("`{text}` does not resolve"),
    )
}

/// Resolves a step's `input` / `args` (§3.5).
pub(crate) fn resolve(
    core: &Core,
    comp: &Composition,
    scope: &Scope<'_>,
    b: &Bind,
) -> Result<Value, RunError> {
    Ok(match b {
        Bind::Const(v) => v.clone(),
        Bind::Whole(r) => scope
            .get(r)
            .ok_or_else(|| unresolved(core, comp, r))?
            .clone(),
        Bind::Interp(parts) => {
            let mut s = String::new();
            for p in parts {
                match p {
                    Part::Text(t) => s.push_str(t),
                    Part::Ref(r) => write_text_form(
                        &mut s,
                        scope.get(r).ok_or_else(|| unresolved(core, comp, r))?,
                    ),
                }
            }
            Value::String(s)
        }
        Bind::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| resolve(core, comp, scope, i))
                .collect::<Result<_, _>>()?,
        ),
        Bind::Object(items) => Value::Object(
            items
                .iter()
                .map(|(k, i)| Ok((k.clone(), resolve(core, comp, scope, i)?)))
                .collect::<Result<Map<_, _>, RunError>>()?,
        ),
    })
}

/// Evaluates a predicate (§7).
pub(crate) fn eval(scope: &Scope<'_>, p: &Pred) -> Result<bool, RunError> {
    let type_error = |m: &str| RunError::new(ErrorKind::TypeError, m.to_owned());
    Ok(match p {
        Pred::All(ps) => {
            for p in ps {
                if !eval(scope, p)? {
                    return Ok(false);
                }
            }
            true
        }
        Pred::Any(ps) => {
            for p in ps {
                if eval(scope, p)? {
                    return Ok(true);
                }
            }
            false
        }
        Pred::Not(p) => !eval(scope, p)?,
        Pred::Exists { path, expect } => scope.get(path).is_some() == *expect,
        Pred::Compare { path, test } => {
            let actual = scope.get(path).unwrap_or(&Value::Null);
            match test {
                Compare::Equals { value, negate } => json_eq(actual, value) != *negate,
                Compare::In { list, negate } => {
                    let list = list
                        .as_ref()
                        .ok_or_else(|| type_error("`in` / `not_in` needs a list value"))?;
                    list.iter().any(|v| json_eq(actual, v)) != *negate
                }
                Compare::Ordered { op, bound } => {
                    let (Some(a), Some(b)) = (actual.as_f64(), *bound) else {
                        return Err(type_error("an ordered comparison needs two numbers"));
                    };
                    match op {
                        Ordering::Lt => a < b,
                        Ordering::Le => a <= b,
                        Ordering::Gt => a > b,
                        Ordering::Ge => a >= b,
                    }
                }
            }
        }
    })
}

/// Merges branch outputs (§8.3).
pub(crate) fn reduce(strategy: Reduce, branch_ids: &[String], outputs: Vec<Value>) -> Value {
    match strategy {
        Reduce::Barrier => Value::Object(branch_ids.iter().cloned().zip(outputs).collect()),
        Reduce::Replace => outputs.into_iter().last().unwrap_or(Value::Null),
        Reduce::Append => {
            let mut out = Vec::new();
            for o in outputs {
                match o {
                    Value::Array(items) => out.extend(items),
                    other => out.push(other),
                }
            }
            Value::Array(out)
        }
    }
}

/// Runs composition `id` on `input` (§1, §4, §10).
pub(crate) async fn run(
    core: &Core,
    lane: &Lane,
    id: CompId,
    input: &Value,
) -> Result<Value, RunError> {
    let m = core.m.clone();
    let comp = &m.compositions[id.index()];
    let n = comp.steps.len();
    let mut slots: Vec<Option<Value>> = vec![None; n];
    let mut status = vec![Status::NotReached; n];
    let mut selected = vec![false; n];
    let mut last = None;
    for &sid in &comp.walk {
        let step = &comp.steps[sid.index()];
        let name = m.str(step.id);
        let guarded = !step.guarded_by.is_empty() && !selected[sid.index()];
        let joined = !step.depends_on.is_empty()
            && step
                .depends_on
                .iter()
                .all(|d| status[d.index()] == Status::Skipped);
        if guarded || joined {
            lane.sink.trace(format!("skip {name}"));
            status[sid.index()] = Status::Skipped;
            continue;
        }
        let output = match &step.kind {
            StepKind::Branch {
                predicate,
                then,
                otherwise,
            } => {
                let scope = Scope {
                    input,
                    slots: &slots,
                };
                let target = if eval(&scope, predicate)? {
                    Some(*then)
                } else {
                    *otherwise
                };
                let shown = target.map_or("-", |t| m.str(comp.steps[t.index()].id));
                lane.sink.trace(format!("branch {name} -> {shown}"));
                if let Some(t) = target {
                    selected[t.index()] = true;
                }
                status[sid.index()] = Status::Ran;
                continue;
            }
            StepKind::Parallel {
                branches,
                strategy,
                into,
            } => {
                lane.sink.trace(format!("step {name}"));
                let scope = Scope {
                    input,
                    slots: &slots,
                };
                let futs: Vec<BoxFut<'_, Result<Value, RunError>>> = branches
                    .iter()
                    .enumerate()
                    .map(|(j, b)| {
                        let branch_lane = Lane {
                            sink: lane.sink.child(),
                            branch: u32::try_from(j).ok(),
                        };
                        let scope = Scope {
                            input: scope.input,
                            slots: scope.slots,
                        };
                        let b = *b;
                        Box::pin(async move { leaf(core, comp, b, &scope, &branch_lane).await })
                            as BoxFut<'_, Result<Value, RunError>>
                    })
                    .collect();
                let results = Join::new(core, futs).await?;
                let mut outputs = Vec::with_capacity(results.len());
                for r in results {
                    outputs.push(r?);
                }
                let ids: Vec<String> = branches
                    .iter()
                    .map(|b| m.str(comp.steps[b.index()].id).to_owned())
                    .collect();
                let mut obj = Map::new();
                obj.insert(into.clone(), reduce(*strategy, &ids, outputs));
                let v = Value::Object(obj);
                emit_evals(core, lane, step, &v);
                v
            }
            _ => {
                let scope = Scope {
                    input,
                    slots: &slots,
                };
                leaf(core, comp, sid, &scope, lane).await?
            }
        };
        slots[sid.index()] = Some(output);
        status[sid.index()] = Status::Ran;
        last = Some(sid);
    }
    let out = comp.output.or(last);
    match out.and_then(|o| slots[o.index()].take()) {
        Some(v) => Ok(v),
        None => Err(RunError::new(
            ErrorKind::NoOutput,
            format!("composition `{}` produced no output", m.str(comp.key)),
        )),
    }
}

fn emit_evals(core: &Core, lane: &Lane, step: &Step, output: &Value) {
    for e in &step.evals {
        lane.sink.push(Entry::Eval(EvalRequest {
            step: core.m.str(step.id).to_owned(),
            eval: e.clone(),
            output: output.clone(),
        }));
    }
}

/// The string rule of §11.2: with an output schema, a string answer holding JSON text
/// becomes the parsed value.
fn string_rule(schema: bool, v: Value) -> Value {
    match (&v, schema) {
        (Value::String(s), true) => serde_json::from_str(s).unwrap_or(v),
        _ => v,
    }
}

fn retryable(e: &RunError) -> bool {
    matches!(e.kind, ErrorKind::HostError | ErrorKind::AgentStepLimit)
}

/// Runs a leaf step (prompt, agent or tool) with its retry modifier (§6, §9.1).
async fn leaf(
    core: &Core,
    comp: &Composition,
    sid: StepId,
    scope: &Scope<'_>,
    lane: &Lane,
) -> Result<Value, RunError> {
    let step = &comp.steps[sid.index()];
    let name = core.m.str(step.id);
    lane.sink.trace(format!("step {name}"));
    // Bindings and the prompt are resolved once, before the first attempt.
    let prepared = match &step.kind {
        StepKind::Prompt { prompt, input, .. } | StepKind::Agent { prompt, input, .. } => {
            let input = resolve(core, comp, scope, input)?;
            let system = render(core, &core.m.prompts[prompt.index()], &input)?;
            (input, system)
        }
        StepKind::Tool { args, .. } => (resolve(core, comp, scope, args)?, String::new()),
        _ => return Err(RunError::new(ErrorKind::Protocol, "not a leaf step")),
    };
    let mut attempt = 1;
    loop {
        if attempt > 1 {
            lane.sink.trace(format!("retry {name} {attempt}"));
        }
        match attempt_once(core, step, &prepared.0, &prepared.1, lane).await {
            Ok(v) => {
                emit_evals(core, lane, step, &v);
                return Ok(v);
            }
            Err(e) if retryable(&e) && attempt < step.max_attempts => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

async fn attempt_once(
    core: &Core,
    step: &Step,
    input: &Value,
    system: &str,
    lane: &Lane,
) -> Result<Value, RunError> {
    let host_error = |m: String| RunError::new(ErrorKind::HostError, m);
    match &step.kind {
        StepKind::Prompt {
            prompt,
            output_schema,
            ..
        } => {
            let key = core.m.str(core.m.prompts[prompt.index()].key).to_owned();
            let call = Call::Model(ModelCall {
                prompt: key.clone(),
                system: system.to_owned(),
                input: input.clone(),
                history: Vec::new(),
                tools: Vec::new(),
                events: Vec::new(),
                output_schema: output_schema.clone(),
            });
            let record = CallRecord::Model {
                prompt: key.clone(),
                input: input.clone(),
                system: system.to_owned(),
            };
            match core.host_call(lane, call, record).await? {
                Answer::Output { output, .. } => Ok(string_rule(output_schema.is_some(), output)),
                Answer::Error(e) => Err(host_error(format!("model call `{key}` failed: {e}"))),
                Answer::ToolCalls(_) => Err(host_error(format!(
                    "prompt step answered `{key}` with tool calls"
                ))),
            }
        }
        StepKind::Tool { tool, .. } => {
            let key = core.m.str(core.m.tools[tool.index()].key).to_owned();
            let call = Call::Tool(ToolCall {
                tool: key.clone(),
                args: input.clone(),
            });
            let record = CallRecord::Tool {
                tool: key.clone(),
                args: input.clone(),
            };
            match core.host_call(lane, call, record).await? {
                Answer::Output { output, .. } => Ok(output),
                Answer::Error(e) => Err(host_error(format!("tool call `{key}` failed: {e}"))),
                Answer::ToolCalls(_) => {
                    Err(host_error(format!("tool `{key}` answered with tool calls")))
                }
            }
        }
        StepKind::Agent {
            prompt,
            output_schema,
            tools,
            max_tool_calls_per_turn,
            max_steps,
            tool_called,
            ..
        } => {
            let spec = Loop {
                prompt: *prompt,
                system: system.to_owned(),
                input: input.clone(),
                history: Vec::new(),
                tools,
                events: Vec::new(),
                output_schema: output_schema.clone(),
                max_turns: max_steps.unwrap_or(50),
                cap_is_error: max_steps.is_none(),
                max_tool_calls: *max_tool_calls_per_turn,
                tool_called: *tool_called,
            };
            Ok(match toolloop::run(core, lane, spec).await? {
                End::Answer(v, _) => string_rule(output_schema.is_some(), v),
                End::ToolCalled(v) => v,
                End::Exhausted => Value::Null,
            })
        }
        _ => Err(RunError::new(ErrorKind::Protocol, "not a leaf step")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(p: &[&str]) -> Ref {
        Ref {
            root: Root::Input,
            path: p.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn cmp(p: &[&str], test: Compare) -> Pred {
        Pred::Compare {
            path: path(p),
            test,
        }
    }

    fn check(input: Value, pred: &Pred) -> Result<bool, ErrorKind> {
        eval(
            &Scope {
                input: &input,
                slots: &[],
            },
            pred,
        )
        .map_err(|e| e.kind)
    }

    #[test]
    fn missing_paths_compare_as_null_and_exist_not() {
        let input = json!({"a": {"b": null}, "s": "text"});
        let eq = |v| Compare::Equals {
            value: v,
            negate: false,
        };
        assert_eq!(
            check(input.clone(), &cmp(&["zz"], eq(json!(null)))),
            Ok(true)
        );
        assert_eq!(
            check(input.clone(), &cmp(&["s", "x"], eq(json!(null)))),
            Ok(true)
        );
        assert_eq!(
            check(
                input.clone(),
                &Pred::Exists {
                    path: path(&["a", "b"]),
                    expect: true
                }
            ),
            Ok(true)
        );
        assert_eq!(
            check(
                input.clone(),
                &Pred::Exists {
                    path: path(&["a", "c"]),
                    expect: false
                }
            ),
            Ok(true)
        );
        let not_in = Compare::In {
            list: Some(vec![json!("x")]),
            negate: true,
        };
        assert_eq!(check(input, &cmp(&["zz"], not_in)), Ok(true));
    }

    #[test]
    fn type_errors_and_short_circuits() {
        let input = json!({"tier": "gold", "n": 2.0});
        let lt = |b| Compare::Ordered {
            op: Ordering::Lt,
            bound: b,
        };
        assert_eq!(
            check(input.clone(), &cmp(&["tier"], lt(Some(3.0)))),
            Err(ErrorKind::TypeError)
        );
        assert_eq!(
            check(input.clone(), &cmp(&["n"], lt(None))),
            Err(ErrorKind::TypeError)
        );
        assert_eq!(
            check(input.clone(), &cmp(&["missing"], lt(Some(3.0)))),
            Err(ErrorKind::TypeError)
        );
        let not_list = Compare::In {
            list: None,
            negate: false,
        };
        assert_eq!(
            check(input.clone(), &cmp(&["n"], not_list)),
            Err(ErrorKind::TypeError)
        );
        let gold = cmp(
            &["tier"],
            Compare::Equals {
                value: json!("gold"),
                negate: false,
            },
        );
        let bad = cmp(&["tier"], lt(Some(3.0)));
        assert_eq!(
            check(input.clone(), &Pred::Any(vec![gold.clone(), bad.clone()])),
            Ok(true)
        );
        let not_gold = Pred::Not(Box::new(gold));
        assert_eq!(
            check(input.clone(), &Pred::All(vec![not_gold, bad])),
            Ok(false)
        );
        let in_list = Compare::In {
            list: Some(vec![json!(1), json!(2)]),
            negate: false,
        };
        assert_eq!(check(input, &cmp(&["n"], in_list)), Ok(true));
    }

    #[test]
    fn reducers_follow_the_table() {
        let ids = ["b1".to_owned(), "b2".to_owned(), "b3".to_owned()];
        let outs = || vec![json!([{"t": "a"}]), json!({"t": "b"}), json!([])];
        assert_eq!(
            reduce(Reduce::Append, &ids, outs()),
            json!([{"t": "a"}, {"t": "b"}])
        );
        assert_eq!(reduce(Reduce::Replace, &ids, outs()), json!([]));
        assert_eq!(
            reduce(Reduce::Barrier, &ids, outs()),
            json!({"b1": [{"t": "a"}], "b2": {"t": "b"}, "b3": []})
        );
        let nested = vec![json!([[1], 2]), json!(null), json!([3])];
        assert_eq!(
            reduce(Reduce::Append, &ids, nested),
            json!([[1], 2, null, 3])
        );
    }
}
