//! Compositions (`compositions.md`): steps flattened in walk order, `${...}` bindings
//! resolved to slots, predicates typed.

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::doc::Node;
use ir_spec::{
    Bind, Compare, Composition, Ordering, OutputSchema, Part, Path, Pred, Ref, Root, Step, StepId,
    StepKind,
};

use crate::members::{entries, Name};

use super::prompts::{offered, policy};
use super::{strings, uint32, Cx, LowerError};
use crate::diag::{At, Token};
use crate::syntax::reference::{lex_binding, lex_whole_reference, Lexed, Lexing, Piece};
use crate::vocab::{Kind, Op, Strategy};

/// `compositions` → [`Module::compositions`](ir_spec::Module::compositions).
pub(super) fn lower_all(cx: &mut Cx<'_>) -> Result<(), LowerError> {
    let base = At::Text("/compositions");
    let names = RefCell::default();
    let root = cx.root;
    for (key, comp) in entries(root.get("compositions")) {
        let c = lower_one(cx, &names, key, comp, &base.key(key))?;
        cx.module.compositions.push(c);
    }
    Ok(())
}

/// A step value with where it is, in the flattened order.
struct Flat<'v> {
    step: &'v Node<'v>,
    /// Its index in `steps`, and in its parallel step's `branches` for a branch.
    at: (usize, Option<usize>),
    top: bool,
}

fn lower_one<'a>(
    cx: &mut Cx<'a>,
    names: &RefCell<SharedNames>,
    key: &'a str,
    comp: &'a Node<'a>,
    ptr: &At<'_>,
) -> Result<Composition, LowerError> {
    // Pass 1: number the steps; a parallel's branches directly follow it.
    let steps = comp
        .get("steps")
        .and_then(Node::as_array)
        .unwrap_or_default();
    let mut flat = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let branches = crate::vocab::parallel_branches(step);
        flat.push(Flat {
            step,
            at: (i, None),
            top: true,
        });
        for (j, b) in branches.into_iter().flatten().enumerate() {
            flat.push(Flat {
                step: b,
                at: (i, Some(j)),
                top: false,
            });
        }
    }
    let mut ids: HashMap<Name<'_>, StepId> =
        HashMap::with_capacity_and_hasher(steps.len(), Default::default());
    let mut walk = Vec::with_capacity(steps.len());
    for (i, f) in flat.iter().enumerate() {
        let id = StepId::from_index(i).ok_or_else(|| {
            let (tokens, n) = Token::step(f.at.0, f.at.1);
            LowerError::new(At::Path(ptr, &tokens[..n]), "too many steps")
        })?;
        if f.top {
            walk.push(id);
        }
        // Only top-level steps can be named (then/else/depends_on/output/references).
        if f.top {
            if let Some(name) = f.step.get("id").and_then(Node::as_str) {
                ids.entry(Name(name)).or_insert(id);
            }
        }
    }
    let lookup = |name: &str, ptr: &At<'_>| -> Result<StepId, LowerError> {
        ids.get(&Name(name))
            .copied()
            .ok_or_else(|| LowerError::new(ptr, format!("no top-level step `{name}`")))
    };
    let refs = Refs {
        step: &lookup,
        names,
    };
    // Pass 2: lower each step.
    let mut out = Vec::with_capacity(flat.len());
    for (i, f) in flat.iter().enumerate() {
        let s = f.step;
        let (tokens, n) = Token::step(f.at.0, f.at.1);
        let p = &At::Path(ptr, &tokens[..n]);
        let kind_name = s.get("kind").and_then(Node::as_str).unwrap_or("");
        let Some(vocab_kind) = Kind::parse_at(kind_name, cx.level >= ir_spec::SpecLevel::V1_8)
        else {
            return Err(LowerError::new(
                p.key("kind"),
                format!("unsupported step kind `{kind_name}`"),
            ));
        };
        let bind = |name: &str| -> Result<Option<Bind>, LowerError> {
            s.get(name)
                .map(|v| lower_bind(v, &p.key(name), &refs))
                .transpose()
        };
        let kind = match vocab_kind {
            Kind::Prompt | Kind::Agent => {
                let task = s.get("prompt_task").and_then(Node::as_str).unwrap_or("");
                let prompt = cx.prompt(task, &p.key("prompt_task"))?;
                let input = bind("input")?.unwrap_or(Bind::Const(serde_json::Value::Null));
                let output_schema = output_schema(cx, s.get("output_schema"));
                if vocab_kind == Kind::Prompt {
                    StepKind::Prompt {
                        prompt,
                        input,
                        output_schema,
                    }
                } else {
                    let pv = cx.root.get("prompts").and_then(|ps| ps.get(task));
                    let pol = policy(pv.and_then(|pv| pv.get("tool_policy")));
                    let list = s.get("tools").or_else(|| pv.and_then(|pv| pv.get("tools")));
                    let names: Vec<&str> = strings(list).collect();
                    let tools = offered(cx, &names, &pol);
                    let term = s.get("termination");
                    let tool_called = match term
                        .and_then(|t| t.get("tool_called"))
                        .and_then(Node::as_str)
                    {
                        Some(t) => Some(cx.tool(t, &p.key("termination").key("tool_called"))?),
                        None => None,
                    };
                    StepKind::Agent {
                        prompt,
                        input,
                        output_schema,
                        tools,
                        max_tool_calls_per_turn: pol.max_tool_calls_per_turn,
                        max_steps: uint32(term.and_then(|t| t.get("max_steps"))),
                        tool_called,
                    }
                }
            }
            Kind::Tool => {
                let name = s.get("tool").and_then(Node::as_str).unwrap_or("");
                StepKind::Tool {
                    tool: cx.tool(name, &p.key("tool"))?,
                    args: bind("args")?
                        .unwrap_or(Bind::Const(serde_json::Value::Object(Default::default()))),
                }
            }
            Kind::Branch => {
                let target = |k: &str| -> Result<Option<StepId>, LowerError> {
                    s.get(k)
                        .and_then(Node::as_str)
                        .map(|n| lookup(n, &p.key(k)))
                        .transpose()
                };
                StepKind::Branch {
                    predicate: lower_pred(
                        s.get("predicate").unwrap_or(&Node::Null),
                        &p.key("predicate"),
                        &refs,
                    )?,
                    then: target("then")?
                        .ok_or_else(|| LowerError::new(p, "branch without `then`"))?,
                    otherwise: target("else")?,
                }
            }
            Kind::Parallel => {
                let n = s
                    .get("branches")
                    .and_then(Node::as_array)
                    .map_or(0, <[Node]>::len);
                let first = i + 1;
                let branches = (first..first + n).filter_map(StepId::from_index).collect();
                let reduce = s.get("reduce");
                let strategy = reduce
                    .and_then(|r| r.get("strategy"))
                    .and_then(Node::as_str)
                    .and_then(Strategy::parse)
                    .unwrap_or(Strategy::Barrier)
                    .reduce();
                let into = reduce
                    .and_then(|r| r.get("into"))
                    .and_then(Node::as_str)
                    .unwrap_or("")
                    .to_owned();
                StepKind::Parallel {
                    branches,
                    strategy,
                    into,
                }
            }
            Kind::Extension => {
                const NOT_PARAMS: &[&str] = &[
                    "id",
                    "kind",
                    "description",
                    "input",
                    "depends_on",
                    "modifiers",
                ];
                let params: serde_json::Map<String, serde_json::Value> = s
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !NOT_PARAMS.contains(&k.as_str()))
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_value()))
                    .collect();
                StepKind::Extension {
                    kind: kind_name.to_owned(),
                    params: ir_spec::JsonText::from_value(&serde_json::Value::Object(params)),
                    input: bind("input")?.unwrap_or(Bind::Const(serde_json::Value::Null)),
                }
            }
        };
        let depends_on = s
            .get("depends_on")
            .and_then(Node::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(k, d)| d.as_str().map(|d| lookup(d, &p.key("depends_on").index(k))))
            .collect::<Result<Vec<_>, _>>()?;
        let modifiers = s.get("modifiers");
        let max_attempts = uint32(
            modifiers
                .and_then(|m| m.get("retry"))
                .and_then(|r| r.get("max_attempts")),
        )
        .unwrap_or(1)
        .max(1);
        let evals = strings(modifiers.and_then(|m| m.get("eval")))
            .map(str::to_owned)
            .collect();
        let id = s.get("id").and_then(Node::as_str).unwrap_or("");
        out.push(Step {
            id: cx.intern(id),
            kind,
            depends_on,
            guarded_by: Vec::new(),
            max_attempts,
            evals,
        });
    }
    // Guards: each branch's targets remember the branch (`compositions.md` 4.2a).
    for i in 0..out.len() {
        let (then, otherwise) = match &out[i].kind {
            StepKind::Branch {
                then, otherwise, ..
            } => (*then, *otherwise),
            _ => continue,
        };
        let Some(branch) = StepId::from_index(i) else {
            continue;
        };
        for target in std::iter::once(then).chain(otherwise) {
            if let Some(t) = out.get_mut(target.index()) {
                if !t.guarded_by.contains(&branch) {
                    t.guarded_by.push(branch);
                }
            }
        }
    }
    let output = match comp.get("output").and_then(Node::as_str) {
        Some(name) => Some(lookup(name, &ptr.key("output"))?),
        None => None,
    };
    Ok(Composition {
        key: cx.intern(key),
        steps: out,
        walk,
        output,
    })
}

/// A step's `output_schema` (`compositions.md` 2.25): embedded when the pack is a file
/// and the file is found; dropped when the pack is a file and it is not; kept by name for
/// an inline pack.
fn output_schema(cx: &Cx<'_>, v: Option<&Node>) -> Option<OutputSchema> {
    let name = v?.as_str()?.to_owned();
    match cx.options.folders() {
        None => Some(OutputSchema { name, schema: None }),
        Some(folders) => {
            // A file the check warned about (`unresolved_schema`) makes a step with no
            // schema; one it refused (`unsafe_path`) never gets here.
            let schema = crate::schema_files::read(&folders, &name).ok()?;
            Some(OutputSchema {
                name,
                schema: Some(ir_spec::JsonText::from_value(&schema)),
            })
        }
    }
}

/// What resolving a composition's references needs: its step names' slots, and the
/// member names shared across the module.
struct Refs<'l> {
    step: &'l dyn Fn(&str, &At<'_>) -> Result<StepId, LowerError>,
    names: &'l RefCell<SharedNames>,
}

/// One shared copy of each member name the module's references read.
#[derive(Default)]
struct SharedNames {
    all: HashSet<Arc<str>>,
    /// The name given last: a module's references read the same few names over and over,
    /// and one comparison is cheaper than hashing the name.
    last: Option<Arc<str>>,
}

impl SharedNames {
    /// The shared copy of `name`.
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(last) = &self.last {
            if ir_spec::json::eq_str(last, name) {
                return last.clone();
            }
        }
        let shared = match self.all.get(name) {
            Some(shared) => shared.clone(),
            None => {
                let shared: Arc<str> = Arc::from(name);
                self.all.insert(shared.clone());
                shared
            }
        };
        self.last = Some(shared.clone());
        shared
    }
}

fn lower_ref(r: Lexed<'_>, ptr: &At<'_>, refs: &Refs<'_>) -> Result<Ref, LowerError> {
    let root = match r.step {
        None => Root::Input,
        Some(name) => Root::Step((refs.step)(name, ptr)?),
    };
    let mut names = refs.names.borrow_mut();
    let path = Path::new(r.names().map(|name| names.get(name)));
    Ok(Ref { root, path })
}

/// A step's `input` / `args` value → [`Bind`] (`compositions.md` §3.5).
fn lower_bind(v: &Node, ptr: &At<'_>, refs: &Refs<'_>) -> Result<Bind, LowerError> {
    Ok(match v {
        Node::String(s) => match lex_binding(s).map_err(|e| LowerError::new(ptr, e.message))? {
            Lexing::Literal(t) => Bind::Const(serde_json::Value::String(t.to_owned())),
            Lexing::Whole(r) => Bind::Whole(lower_ref(r, ptr, refs)?),
            Lexing::Template(pieces) => Bind::Interp(
                pieces
                    .into_iter()
                    .map(|piece| match piece {
                        Piece::Text(t) => Ok(Part::Text(t.to_owned())),
                        Piece::Ref(r) => Ok(Part::Ref(lower_ref(r, ptr, refs)?)),
                    })
                    .collect::<Result<_, LowerError>>()?,
            ),
        },
        Node::Array(items) => {
            let items = items
                .iter()
                .enumerate()
                .map(|(i, item)| lower_bind(item, &ptr.index(i), refs))
                .collect::<Result<Vec<_>, _>>()?;
            if items.iter().all(|b| matches!(b, Bind::Const(_))) {
                Bind::Const(v.to_value())
            } else {
                Bind::Array(items)
            }
        }
        Node::Object(m) => {
            let items = m
                .iter()
                .map(|(k, item)| Ok((k.as_str().to_owned(), lower_bind(item, &ptr.key(k), refs)?)))
                .collect::<Result<Vec<_>, LowerError>>()?;
            if items.iter().all(|(_, b)| matches!(b, Bind::Const(_))) {
                Bind::Const(v.to_value())
            } else {
                Bind::Object(items)
            }
        }
        other => Bind::Const(other.to_value()),
    })
}

/// A branch `predicate` → [`Pred`] (`compositions.md` §7).
fn lower_pred(v: &Node, ptr: &At<'_>, refs: &Refs<'_>) -> Result<Pred, LowerError> {
    let bad = || LowerError::new(ptr, "malformed predicate");
    let obj = v.as_object().ok_or_else(bad)?;
    let list = |k: &str, v: &Node| -> Result<Vec<Pred>, LowerError> {
        v.as_array()
            .ok_or_else(bad)?
            .iter()
            .enumerate()
            .map(|(i, p)| lower_pred(p, &ptr.key(k).index(i), refs))
            .collect()
    };
    if let Some(all) = obj.get("all_of") {
        return Ok(Pred::All(list("all_of", all)?));
    }
    if let Some(any) = obj.get("any_of") {
        return Ok(Pred::Any(list("any_of", any)?));
    }
    if let Some(inner) = obj.get("not") {
        return Ok(Pred::Not(Box::new(lower_pred(
            inner,
            &ptr.key("not"),
            refs,
        )?)));
    }
    let path_text = obj.get("path").and_then(Node::as_str).ok_or_else(bad)?;
    let pptr = ptr.key("path");
    let reference = lex_whole_reference(path_text).map_err(|e| LowerError::new(pptr, e.message))?;
    let path = lower_ref(reference, &pptr, refs)?;
    if let Some(expect) = obj.get("exists") {
        return Ok(Pred::Exists {
            path,
            expect: expect.as_bool().ok_or_else(bad)?,
        });
    }
    let value = obj
        .get("value")
        .map_or(serde_json::Value::Null, Node::to_value);
    let ordered = |op| Compare::Ordered {
        op,
        bound: value.as_f64(),
    };
    let list_of = |negate| Compare::In {
        list: value.as_array().cloned(),
        negate,
    };
    let op = obj
        .get("op")
        .and_then(Node::as_str)
        .and_then(Op::parse)
        .ok_or_else(bad)?;
    let test = match op {
        Op::Equals => Compare::Equals {
            value: value.clone(),
            negate: false,
        },
        Op::NotEquals => Compare::Equals {
            value: value.clone(),
            negate: true,
        },
        Op::In => list_of(false),
        Op::NotIn => list_of(true),
        Op::LessThan => ordered(Ordering::Lt),
        Op::LessThanOrEquals => ordered(Ordering::Le),
        Op::GreaterThan => ordered(Ordering::Gt),
        Op::GreaterThanOrEquals => ordered(Ordering::Ge),
    };
    Ok(Pred::Compare { path, test })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ir_spec::{Bind, StepKind};

    use crate::{build_artifact, Options};

    #[test]
    fn references_share_one_copy_of_each_member_name() {
        let pack = r#"{"id": "p", "name": "P", "version": "1.0.0",
            "template_engine": {"version": "v1", "syntax": "{{variable}}"},
            "prompts": {"a": {"id": "a", "name": "A", "version": "1.0.0", "system_template": "x"}},
            "compositions": {
              "c1": {"version": 1, "steps": [
                {"id": "s0", "kind": "prompt", "prompt_task": "a", "input": "${input.text}"},
                {"id": "s1", "kind": "prompt", "prompt_task": "a", "input": "${s0.output.text}"}]},
              "c2": {"version": 1, "steps": [
                {"id": "s0", "kind": "prompt", "prompt_task": "a", "input": "${input.doc.text}"}]}}}"#;
        let (_, artifact) = build_artifact(pack.as_bytes(), &Options::default()).unwrap();
        let artifact = artifact.expect("the pack builds");
        let paths: Vec<_> = artifact
            .module
            .compositions
            .iter()
            .flat_map(|c| &c.steps)
            .map(|step| match &step.kind {
                StepKind::Prompt {
                    input: Bind::Whole(r),
                    ..
                } => r.path.clone(),
                other => panic!("a prompt step with a whole reference: {other:?}"),
            })
            .collect();
        let names: Vec<Vec<&str>> = paths
            .iter()
            .map(|p| p.iter().map(|n| &**n).collect())
            .collect();
        assert_eq!(names, [vec!["text"], vec!["text"], vec!["doc", "text"]]);
        // Every `text` is the same copy, across steps and compositions.
        assert!(Arc::ptr_eq(&paths[0][0], &paths[1][0]));
        assert!(Arc::ptr_eq(&paths[0][0], &paths[2][1]));
    }
}
