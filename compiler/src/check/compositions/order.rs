//! Names, order and visibility inside one composition: step ids unique (2.3), every
//! name a top-level step (2.6), `depends_on` earlier and branch targets later than the
//! step naming them (2.11), and references reading only earlier outputs (3.3).

use std::ops::ControlFlow;

use crate::doc::{Node, Obj};
use crate::members::Name;
use rustc_hash::{FxHashMap, FxHashSet};

use super::super::{did_you_mean, Cx};
use super::shape::{expect_array, expect_str, schema, What};
use crate::diag::{walk, At, DiagKind, Diagnostic, Token};
use crate::syntax::binding_roots;
use crate::vocab::Kind;

/// What the rules need to know about a top-level step, by id.
#[derive(Clone, Copy)]
pub(super) struct TopStep {
    pub(super) index: usize,
    /// `None` when the kind is missing or unknown (already diagnosed; treated as having
    /// an output so that one mistake does not cascade).
    pub(super) kind: Option<Kind>,
}

/// A step object being checked: its members, its pointer, and its index among the
/// composition's top-level steps (a step of a parallel branch has its parallel step's).
#[derive(Clone, Copy)]
pub(super) struct Step<'a> {
    pub(super) obj: &'a Obj<'a>,
    pub(super) ptr: &'a At<'a>,
    pub(super) index: usize,
}

/// A parallel step as a reference to one of its branches' outputs reads it.
#[derive(Clone, Copy)]
struct Parallel<'p> {
    id: Option<&'p str>,
    strategy: Option<&'p str>,
    into: Option<&'p str>,
    /// How many branches it has.
    branches: usize,
}

/// The step names of one composition.
pub(super) struct Comp<'p> {
    pub(super) top: FxHashMap<Name<'p>, TopStep>,
    /// Steps of parallel branches: (the parallel step's index, the branch's).
    pub(super) nested: FxHashMap<Name<'p>, (usize, usize)>,
    /// The parallel steps, by index: their id and `reduce` (`strategy`, `into`), for
    /// the help of a reference to one of their branches.
    parallels: FxHashMap<usize, Parallel<'p>>,
    /// Whether this composition's `cyclic_composition` has been reported (2.11 blames
    /// the first offending reference in document order).
    cycle_reported: bool,
    /// Top-level steps a branch names in `then` / `else`, by index: the walk skips them
    /// unless a branch that ran selected them (4.2(a)).
    guarded: FxHashSet<usize>,
    /// Each top-level step's `depends_on`, by index: the earlier steps it names.
    deps: FxHashMap<usize, Vec<usize>>,
    /// Top-level steps the walk may skip, by index: guarded, or with a `depends_on` whose
    /// steps may all be skipped (4.2(b)). Known for a step once its `depends_on` is read,
    /// before any later step reads its output.
    skippable: FxHashSet<usize>,
    /// Branch steps with both targets, by index: (branch, `then`, `else`). One that runs
    /// selects one of the two, so a step joining on both is never skipped by it.
    arms: Vec<(usize, usize, usize)>,
    /// (reader, read) pairs already given `skippable_reference`: one note per pair.
    noted: std::cell::RefCell<FxHashSet<(usize, usize)>>,
}

impl<'p> Comp<'p> {
    /// Pre-order walk collecting ids: top-level steps by index, nested ones apart, and
    /// `duplicate_step_id` at every second occurrence (2.3).
    pub(super) fn collect(
        cx: &mut Cx<'_, '_>,
        steps: &'p [Node<'p>],
        steps_ptr: &At<'_>,
    ) -> Comp<'p> {
        let mut c = Comp {
            top: FxHashMap::with_capacity_and_hasher(steps.len(), Default::default()),
            nested: FxHashMap::default(),
            parallels: FxHashMap::default(),
            cycle_reported: false,
            guarded: FxHashSet::default(),
            deps: FxHashMap::default(),
            skippable: FxHashSet::default(),
            arms: Vec::new(),
            noted: Default::default(),
        };
        // Pointers are built only for a duplicate, so a clean composition allocates none.
        let id_ptr = |(i, j): (usize, Option<usize>)| {
            // The tokens after the composition's `steps`.
            let (tokens, n) = Token::step(i, j);
            At::Path(steps_ptr, &tokens[1..n]).key("id").pointer()
        };
        // Where `id` was first seen, (top-level index, branch index), if it was.
        let first = |c: &Comp<'p>, id: &str| {
            c.top
                .get(&Name(id))
                .map(|t| (t.index, None))
                .or_else(|| c.nested.get(&Name(id)).map(|&(i, j)| (i, Some(j))))
        };
        let seen = |cx: &mut Cx<'_, '_>, c: &Comp<'p>, id: &'p str, at: (usize, Option<usize>)| {
            if let Some(prev) = first(c, id) {
                cx.push(
                    Diagnostic::new(
                        DiagKind::DuplicateStepId,
                        format!("step id `{id}` is used twice"),
                    )
                    .at(id_ptr(at))
                    .also(id_ptr(prev), "first used here")
                    .help(
                        "step ids are unique across the whole composition, parallel branches included",
                    ),
                );
                false
            } else {
                true
            }
        };
        for (i, step) in steps.iter().enumerate() {
            let kind = step
                .get("kind")
                .and_then(Node::as_str)
                .and_then(|k| Kind::parse_at(k, cx.level >= ir_spec::SpecLevel::V1_8));
            if let Some(id) = step.get("id").and_then(Node::as_str) {
                if seen(cx, &c, id, (i, None)) {
                    c.top.insert(Name(id), TopStep { index: i, kind });
                }
            }
            if let Some(branches) = crate::vocab::parallel_branches(step) {
                let reduce = step.get("reduce");
                let member = |k: &str| reduce.and_then(|r| r.get(k)).and_then(Node::as_str);
                c.parallels.insert(
                    i,
                    Parallel {
                        id: step.get("id").and_then(Node::as_str),
                        strategy: member("strategy"),
                        into: member("into"),
                        branches: branches.len(),
                    },
                );
                for (j, b) in branches.iter().enumerate() {
                    if let Some(id) = b.get("id").and_then(Node::as_str) {
                        if seen(cx, &c, id, (i, Some(j))) {
                            c.nested.insert(Name(id), (i, j));
                        }
                    }
                }
            }
        }
        c
    }

    /// Whether step `reader` running means step `read` ran: it is that step, or it has a
    /// `depends_on` whose every step running means so (it runs only when one of them
    /// ran). Chains deeper than 64 are taken as not implying it.
    fn implies(&self, reader: usize, read: usize, depth: usize) -> bool {
        reader == read
            || depth < 64
                && self.deps.get(&reader).is_some_and(|deps| {
                    !deps.is_empty() && deps.iter().all(|&d| self.implies(d, read, depth + 1))
                })
    }

    /// The id of top-level step `index`, for messages.
    fn id_of(&self, index: usize) -> &'p str {
        self.top
            .iter()
            .find(|(_, t)| t.index == index)
            .map_or("", |(name, _)| name.0)
    }

    /// Blame `ptr` with the composition's first `cyclic_composition`; later ones are
    /// consequences and stay quiet.
    fn report_cycle(&mut self, cx: &mut Cx<'_, '_>, ptr: &At<'_>, message: String) {
        if std::mem::replace(&mut self.cycle_reported, true) {
            return;
        }
        cx.push(
            Diagnostic::new(DiagKind::CyclicComposition, message)
                .at(ptr)
                .help("order `steps` so that every step comes after what it depends on and every branch comes before its targets"),
        );
    }
}

/// `unresolved_step` for `name`, which `what` (at `ptr`) names but is no top-level step;
/// "did you mean" offers the top-level steps whose index `fits`, `among` (those that
/// may stand there: a branch's "later steps", a step's "earlier steps").
fn unresolved_step(
    c: &Comp<'_>,
    name: &str,
    ptr: &At<'_>,
    what: &str,
    (among, fits): (&str, impl Fn(usize) -> bool),
) -> Diagnostic {
    let message = if c.nested.contains_key(&Name(name)) {
        format!("{what} `{name}` is a step nested in a parallel; only top-level steps can be named here")
    } else {
        format!("{what} `{name}` names no step of the composition")
    };
    let candidates = c
        .top
        .iter()
        .filter(|(_, t)| fits(t.index))
        .map(|(k, _)| k.0);
    Diagnostic::new(DiagKind::UnresolvedStep, message)
        .at(ptr)
        .help(did_you_mean(among, name, candidates))
}

/// The composition's `output` (a string, at `optr`): a top-level step with an output.
pub(super) fn check_output(cx: &mut Cx<'_, '_>, c: &Comp<'_>, output: &str, optr: &At<'_>) {
    match c.top.get(&Name(output)) {
        Some(TopStep {
            kind: Some(Kind::Branch),
            ..
        }) => cx.push(
            Diagnostic::new(
                DiagKind::UnresolvedStep,
                format!("output `{output}` is a branch step, which has no output"),
            )
            .at(optr)
            .help("name a prompt, agent, tool or parallel step"),
        ),
        Some(_) => {}
        None => {
            let d = unresolved_step(c, output, optr, "output", ("steps", |_| true));
            cx.push(d);
        }
    }
}

/// A branch's `then` / `else`: top-level steps later than the branch.
pub(super) fn check_targets(cx: &mut Cx<'_, '_>, c: &mut Comp<'_>, step: Step<'_>) {
    let Step { obj, ptr, index } = step;
    let target = |key: &str| {
        let t = c.top.get(&Name(obj.get(key)?.as_str()?))?;
        (t.index > index).then_some(t.index)
    };
    if let (Some(then), Some(otherwise)) = (target("then"), target("else")) {
        c.arms.push((index, then, otherwise));
    }
    for key in ["then", "else"] {
        let Some(target) = obj.get(key) else {
            continue;
        };
        let tptr = ptr.key(key);
        let Some(name) = target.as_str() else {
            cx.push(super::shape::wrong_type(
                &tptr,
                What::Member(key),
                "a step id",
                target,
            ));
            continue;
        };
        match c.top.get(&Name(name)) {
            None => {
                let d = unresolved_step(c, name, &tptr, key, ("later steps", |i| i > index));
                cx.push(d);
            }
            Some(t) if t.index <= index => {
                c.report_cycle(cx, &tptr, format!(
                    "`{key}: {name}` names a step that is not later in `steps` than its branch; the walk only moves forward, so this is a cycle"
                ));
            }
            Some(t) => {
                c.guarded.insert(t.index);
            }
        }
    }
}

/// A step's `depends_on`: top-level steps earlier than it; none on a parallel branch.
pub(super) fn check_depends_on(
    cx: &mut Cx<'_, '_>,
    c: &mut Comp<'_>,
    step: Step<'_>,
    nested: bool,
) {
    let Step { obj, ptr, index } = step;
    if !nested {
        // Whether the walk may skip this step, once its `depends_on` is read.
        let deps = obj.get("depends_on").and_then(Node::as_array).map(|deps| {
            deps.iter()
                .filter_map(Node::as_str)
                .filter_map(|d| c.top.get(&Name(d)).map(|t| t.index))
                .filter(|&d| d < index)
                .collect::<Vec<usize>>()
        });
        // Skipped when every step it joins on is, which cannot happen when it joins on
        // both targets of a branch that always runs.
        let joined = deps.as_ref().is_some_and(|d| {
            !d.is_empty()
                && d.iter().all(|i| c.skippable.contains(i))
                && !c
                    .arms
                    .iter()
                    .any(|(b, t, e)| !c.skippable.contains(b) && d.contains(t) && d.contains(e))
        });
        if c.guarded.contains(&index) || joined {
            c.skippable.insert(index);
        }
        if let Some(deps) = deps {
            c.deps.insert(index, deps);
        }
    }
    let Some(deps) = obj.get("depends_on") else {
        return;
    };
    let dptr = ptr.key("depends_on");
    if nested {
        cx.push(
            schema(&dptr, "a parallel branch cannot have `depends_on`")
                .help("branches of one parallel step all start together; put `depends_on` on the parallel step"),
        );
        return;
    }
    let what = What::Member("depends_on");
    let Some(deps) = expect_array(cx, deps, &dptr, what, "an array of step ids") else {
        return;
    };
    for (k, dep) in deps.iter().enumerate() {
        let kptr = dptr.index(k);
        let Some(name) = expect_str(cx, dep, &kptr, What::Phrase("a step id")) else {
            continue;
        };
        match c.top.get(&Name(name)) {
            None => {
                let d = unresolved_step(
                    c,
                    name,
                    &kptr,
                    "depends_on",
                    ("earlier steps", |i| i < index),
                );
                cx.push(d);
            }
            Some(t) if t.index >= index => {
                c.report_cycle(cx, &kptr, format!(
                    "`depends_on: {name}` names a step that is not earlier in `steps`; the walk runs steps in array order, so this is a cycle"
                ));
            }
            Some(_) => {}
        }
    }
}

/// 3.2/3.3: every string inside `input`/`args`, at any depth (never object keys), in
/// document order.
pub(super) fn check_bindings(
    cx: &mut Cx<'_, '_>,
    c: &Comp<'_>,
    v: Option<&Node>,
    ptr: &At<'_>,
    index: usize,
) {
    let Some(v) = v else { return };
    walk::<()>(v, |tokens, node| {
        if let Node::String(s) = node {
            check_binding(cx, c, s, &At::Path(ptr, tokens), index);
        }
        ControlFlow::Continue(())
    });
}

/// One string of `input`/`args` at `ptr`: a well-formed binding whose references are visible.
fn check_binding(cx: &mut Cx<'_, '_>, c: &Comp<'_>, s: &str, ptr: &At<'_>, index: usize) {
    note_template_syntax(cx, c, s, ptr);
    // A malformed binding gets that diagnostic alone, so visibility waits for the whole
    // string to lex. The step ids met are kept meanwhile (a binding with more step
    // references than `roots` holds is lexed a second time for them; neither pass
    // allocates).
    let mut roots = [""; 8];
    let mut steps = 0;
    let lexed = binding_roots(s, |root| {
        if let Some(step) = root {
            if let Some(slot) = roots.get_mut(steps) {
                *slot = step;
            }
            steps += 1;
        }
    });
    match lexed {
        Err(e) => {
            // An unclosed `${` may be meant as text, which a binding cannot hold.
            let help = if e.to_string().contains("is not closed") {
                "a reference is `${input.a.b}` or `${step_id.output.a.b}`, closed by `}`; there is no way to write a literal `${` in a binding"
            } else {
                "a reference is `${input.a.b}` or `${step_id.output.a.b}`"
            };
            cx.push(
                Diagnostic::new(
                    DiagKind::UnresolvedBinding,
                    format!("malformed reference: {e}"),
                )
                .at(ptr)
                .help(help),
            );
        }
        Ok(()) if steps <= roots.len() => {
            for step in &roots[..steps] {
                check_visible(cx, c, step, ptr, index);
                note_skippable(cx, c, step, ptr, index);
            }
        }
        Ok(()) => {
            let _ = binding_roots(s, |root| {
                if let Some(step) = root {
                    check_visible(cx, c, step, ptr, index);
                    note_skippable(cx, c, step, ptr, index);
                }
            });
        }
    }
}

/// `foreign_template_syntax` for a binding holding `{{path}}`: a template placeholder,
/// which a binding sends as written; a binding reads a value with `${...}`. Once per
/// string, for the first such placeholder.
fn note_template_syntax(cx: &mut Cx<'_, '_>, c: &Comp<'_>, s: &str, ptr: &At<'_>) {
    let Some(start) = s.find("{{") else {
        return;
    };
    let rest = &s[start + 2..];
    let Some(end) = rest.find("}}") else {
        return;
    };
    let inner = rest[..end].trim();
    let is_path = !inner.is_empty()
        && inner
            .split('.')
            .all(|seg| !seg.is_empty() && seg.chars().all(|ch| ch.is_alphanumeric() || ch == '_'));
    if !is_path {
        return;
    }
    let first = inner.split('.').next().unwrap_or_default();
    let reference = if first == "input" || c.top.contains_key(&Name(first)) {
        format!("${{{inner}}}")
    } else {
        format!("${{input.{inner}}}")
    };
    cx.push(
        Diagnostic::new(
            DiagKind::ForeignTemplateSyntax,
            format!(
                "`{{{{{}}}}}` in a step's binding is sent as written: a binding reads values with `${{...}}`, not a template's `{{{{...}}}}`",
                &rest[..end]
            ),
        )
        .at(ptr)
        .help(format!("write `{reference}`")),
    );
}

/// `skippable_reference`: step `index` reads `name`'s output, an earlier step the walk
/// may skip, and may run when it is skipped (4.2–4.3). Once per pair of steps.
fn note_skippable(cx: &mut Cx<'_, '_>, c: &Comp<'_>, name: &str, ptr: &At<'_>, index: usize) {
    let Some(t) = c.top.get(&Name(name)) else {
        return;
    };
    if t.index >= index
        || !c.skippable.contains(&t.index)
        || c.implies(index, t.index, 0)
        || !c.noted.borrow_mut().insert((index, t.index))
    {
        return;
    }
    let reader = c.id_of(index);
    let why = if c.guarded.contains(&t.index) {
        "a branch selects it, and the walk skips it when none that ran did"
    } else {
        "the walk skips it when every step of its `depends_on` was skipped"
    };
    cx.push(
        Diagnostic::new(
            DiagKind::SkippableReference,
            format!(
                "step `{reader}` reads `{name}.output`, but `{name}` may be skipped ({why}) while `{reader}` still runs: the reference then does not resolve, and the run fails with `unresolved_binding`"
            ),
        )
        .at(ptr)
        .help(format!(
            "give `{reader}` `depends_on: [{name}]`, so that it is skipped with `{name}` (a skip never follows the order of `steps` alone)"
        )),
    );
}

/// 3.3: `<name>.output` is visible when `name` is an earlier top-level step with an
/// output (`input` always is).
pub(super) fn check_visible(
    cx: &mut Cx<'_, '_>,
    c: &Comp<'_>,
    name: &str,
    ptr: &At<'_>,
    index: usize,
) {
    let problem = match c.top.get(&Name(name)) {
        Some(TopStep {
            kind: Some(Kind::Branch),
            ..
        }) => format!("`{name}` is a branch step, which has no output"),
        Some(t) if t.index >= index => format!("step `{name}` does not run before this one"),
        Some(_) => return,
        None if c.nested.contains_key(&Name(name)) => {
            let (i, j) = c.nested[&Name(name)];
            let nested = format!("`{name}` is nested in a parallel step");
            let read = |form: String| {
                format!("{nested}; read the parallel step's merged output instead: {form}")
            };
            let reducer = c.parallels.get(&i).and_then(|p| {
                let (id, into) = (p.id?, p.into?);
                match p.strategy? {
                    "barrier" => Some(read(format!(
                        "`${{{id}.output.{into}.{name}}}` (its `barrier` reducer keys each branch's output by its id)"
                    ))),
                    "append" => Some(read(format!(
                        "`${{{id}.output.{into}}}` (its `append` reducer lists the branches' outputs)"
                    ))),
                    "replace" if j + 1 == p.branches => Some(read(format!(
                        "`${{{id}.output.{into}}}` (its `replace` reducer keeps this last branch's output)"
                    ))),
                    "replace" => Some(format!(
                        "{nested}, whose `replace` reducer keeps only the last branch's output, not `{name}`'s (with `strategy: barrier`, `${{{id}.output.{into}.{name}}}` reads it)"
                    )),
                    _ => None,
                }
            });
            reducer.unwrap_or_else(|| {
                format!("{nested}; read the parallel step's merged output instead")
            })
        }
        None => format!("no step `{name}` in this composition"),
    };
    let visible: Vec<&str> = c
        .top
        .iter()
        .filter(|(_, t)| t.index < index && t.kind != Some(Kind::Branch))
        .map(|(k, _)| k.0)
        .collect();
    cx.push(
        Diagnostic::new(
            DiagKind::UnresolvedBinding,
            format!("a reference to `{name}.output` cannot be resolved: {problem}"),
        )
        .at(ptr)
        .help(format!(
            "references read `input` or an earlier step's output; {}",
            did_you_mean("earlier steps", name, visible.iter().copied())
        )),
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The messages of the pack's diagnostics at `/compositions/c/steps/<last>/input`, for
    /// a composition of `n` prompt steps whose last one binds `input`.
    fn input_messages(n: usize, input: &str) -> Vec<String> {
        let mut steps: Vec<_> = (0..n)
            .map(|k| json!({"id": format!("s{k}"), "kind": "prompt", "prompt_task": "p", "input": "${input.t}"}))
            .collect();
        steps[n - 1]["input"] = json!(input);
        let pack = json!({
            "id": "d", "name": "D", "version": "1.0.0",
            "template_engine": {"version": "v1", "syntax": "{{variable}}"},
            "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "Hi {{input}}"}},
            "compositions": {"c": {"version": 1, "steps": steps}},
        });
        let at = format!("/compositions/c/steps/{}/input", n - 1);
        crate::check_bytes(
            &serde_json::to_vec(&pack).unwrap(),
            &crate::Options::default(),
        )
        .diagnostics
        .into_iter()
        .filter(|d| d.pointer() == Some(at.as_str()))
        .map(|d| d.message)
        .collect()
    }

    /// Every step reference of a binding is checked, in order, once the whole string has
    /// lexed: with few references (kept while lexing) and with more than are kept (lexed
    /// again), and none when a later one is malformed.
    #[test]
    fn every_step_reference_of_a_binding_is_checked_in_order() {
        let refs = |ids: &[&str]| {
            ids.iter()
                .map(|id| format!("${{{id}.output}}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let late = "step `s11` does not run before this one";
        let missing = "no step `zz` in this composition";
        let late_then_missing = |messages: Vec<String>| {
            assert_eq!(messages.len(), 2, "{messages:?}");
            assert!(messages[0].ends_with(late), "{messages:?}");
            assert!(messages[1].ends_with(missing), "{messages:?}");
        };
        late_then_missing(input_messages(12, &refs(&["s0", "s11", "zz"])));
        let many: Vec<String> = (0..9).map(|k| format!("s{k}")).collect();
        let mut many: Vec<&str> = many.iter().map(|k| k.as_str()).collect();
        many.extend(["s11", "zz"]);
        late_then_missing(input_messages(12, &refs(&many)));
        let malformed = format!("{} ${{s0.x}}", refs(&many));
        let messages = input_messages(12, &malformed);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].starts_with("malformed reference"),
            "{messages:?}"
        );
    }

    /// `skippable_reference` blames a step that reads a step the walk may skip, once per
    /// pair of steps; not one that depends on it (directly or through a chain), nor one
    /// that reads a step nothing can skip, nor a step after a join that something ran.
    #[test]
    fn a_read_of_a_skippable_step_is_noted_once_per_pair() {
        let step = |id: &str, input: &str| json!({"id": id, "kind": "prompt", "prompt_task": "p", "input": input});
        let mut steps = vec![
            step("a", "${input}"),
            json!({"id": "b", "kind": "branch", "predicate": {"path": "${a.output.x}", "exists": true}, "then": "t", "else": "e"}),
            step("t", "${input}"),
            step("e", "${input}"),
        ];
        let mut confirm = step("confirm", "${t.output}");
        confirm["depends_on"] = json!(["t"]);
        let mut chained = step("chained", "${t.output}");
        chained["depends_on"] = json!(["confirm"]);
        let mut join = step("join", "${input}");
        join["depends_on"] = json!(["t", "e"]);
        steps.extend([
            confirm,
            chained,
            join,
            step("reads_t", "${t.output} ${t.output.y}"),
            step("reads_join", "${join.output}"),
            step("reads_a", "${a.output}"),
        ]);
        let pack = json!({
            "id": "d", "name": "D", "version": "1.0.0",
            "template_engine": {"version": "v1", "syntax": "{{variable}}"},
            "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "Hi"}},
            "compositions": {"c": {"version": 1, "steps": steps}},
        });
        let noted: Vec<String> = crate::check_bytes(
            &serde_json::to_vec(&pack).unwrap(),
            &crate::Options::default(),
        )
        .diagnostics
        .into_iter()
        .filter(|d| d.kind == crate::diag::DiagKind::SkippableReference)
        .map(|d| d.pointer().unwrap_or_default().to_owned())
        .collect();
        // `join` may be skipped only when both `t` and `e` are, which one branch never
        // does; `reads_t` reads `t` twice and is noted once.
        assert_eq!(noted, ["/compositions/c/steps/7/input"]);
    }

    /// A template placeholder in a binding is noted, once per string, with the reference
    /// to write; `{{` that does not hold a path is left alone.
    #[test]
    fn a_template_placeholder_in_a_binding_is_noted() {
        let noted = |input: &str| -> Vec<(String, String)> {
            let pack = json!({
                "id": "d", "name": "D", "version": "1.0.0",
                "template_engine": {"version": "v1", "syntax": "{{variable}}"},
                "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "Hi"}},
                "compositions": {"c": {"version": 1, "steps": [
                    {"id": "s0", "kind": "prompt", "prompt_task": "p", "input": "${input}"},
                    {"id": "s1", "kind": "prompt", "prompt_task": "p", "input": input},
                ]}},
            });
            crate::check_bytes(
                &serde_json::to_vec(&pack).unwrap(),
                &crate::Options::default(),
            )
            .diagnostics
            .into_iter()
            .filter(|d| d.kind == crate::diag::DiagKind::ForeignTemplateSyntax)
            .map(|d| (d.message, d.help.unwrap_or_default()))
            .collect()
        };
        let n = noted("Order: {{s0.output.id}} and {{ name }}");
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0]
            .0
            .starts_with("`{{s0.output.id}}` in a step's binding is sent as written"));
        assert_eq!(n[0].1, "write `${s0.output.id}`");
        assert_eq!(noted("{{ name }}")[0].1, "write `${input.name}`");
        assert!(noted("a {{ literal, text }} and {{}}").is_empty());
    }

    /// The help of a reference problem fits it: no earlier steps for a first step, the
    /// literal-`${` remark only for a reference left open.
    #[test]
    fn reference_help_fits_the_problem() {
        let help = |first: &str| -> Vec<String> {
            let pack = json!({
                "id": "d", "name": "D", "version": "1.0.0",
                "template_engine": {"version": "v1", "syntax": "{{variable}}"},
                "prompts": {"p": {"id": "p", "name": "P", "version": "1.0.0", "system_template": "Hi"}},
                "compositions": {"c": {"version": 1, "steps": [
                    {"id": "s0", "kind": "prompt", "prompt_task": "p", "input": first},
                    {"id": "s1", "kind": "prompt", "prompt_task": "p", "input": "${input}"},
                ]}},
            });
            crate::check_bytes(
                &serde_json::to_vec(&pack).unwrap(),
                &crate::Options::default(),
            )
            .diagnostics
            .into_iter()
            .filter_map(|d| d.help)
            .collect()
        };
        assert!(help("${s1.output}")[0].ends_with("there are no earlier steps"));
        assert!(!help("${s1.outptu}")[0].contains("literal"));
        assert!(help("${s1.output")[0].contains("no way to write a literal `${`"));
    }
}
