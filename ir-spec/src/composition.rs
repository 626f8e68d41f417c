//! Compositions (RFC 0010): step graphs lowered to a walk order.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{OutputSchema, PromptId, StepId, StrId, ToolId, ToolRef};

/// One composition of the pack's `compositions` map.
///
/// ```yaml
/// compositions:
///   analyze:                       # -> Composition::key
///     version: 1
///     output: extract              # -> Composition::output
///     steps: [...]                 # -> Composition::steps / Composition::walk
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Composition {
    /// The key in `compositions`.
    pub key: StrId,
    /// Every step, top-level and nested: a parallel's branches directly follow it. A
    /// [`StepId`] indexes this table and the run's output slots.
    pub steps: Vec<Step>,
    /// The top-level steps, in the order the walk visits them (array order).
    pub walk: Vec<StepId>,
    /// `output`: the step whose output is the composition's; `None` = the last step
    /// that ran and produced an output.
    pub output: Option<StepId>,
}

/// A step.
///
/// ```yaml
/// - id: classify                   # -> Step::id
///   kind: prompt                   # -> Step::kind
///   depends_on: [a, b]             # -> Step::depends_on
///   modifiers:
///     retry: {max_attempts: 3}     # -> Step::max_attempts
///     eval: [tone_check]           # -> Step::evals
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The step `id`.
    pub id: StrId,
    /// What the step does.
    pub kind: StepKind,
    /// `depends_on`: the step is skipped when every one of these was skipped.
    pub depends_on: Vec<StepId>,
    /// The branch steps whose `then` or `else` names this step: it runs only if one of
    /// them ran and selected it (`compositions.md` 4.2a).
    pub guarded_by: Vec<StepId>,
    /// `modifiers.retry.max_attempts` (1 when absent): total attempts of a leaf step.
    pub max_attempts: u32,
    /// `modifiers.eval`: eval ids requested when the step completes.
    pub evals: Vec<String>,
}

/// The kind-specific part of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StepKind {
    /// ```yaml
    /// kind: prompt
    /// prompt_task: classifier
    /// input: "${input.text}"
    /// output_schema: schemas/c.json
    /// ```
    Prompt {
        /// `prompt_task`.
        prompt: PromptId,
        /// `input` (null when absent).
        input: Bind,
        /// `output_schema`, when declared and not unresolved.
        output_schema: Option<OutputSchema>,
    },
    /// ```yaml
    /// kind: agent
    /// prompt_task: solver
    /// input: "${input.problem}"
    /// tools: [calc]
    /// termination: {max_steps: 4, tool_called: submit}
    /// ```
    Agent {
        /// `prompt_task`.
        prompt: PromptId,
        /// `input` (null when absent).
        input: Bind,
        /// `output_schema`, when declared and not unresolved.
        output_schema: Option<OutputSchema>,
        /// The offered tools: the step's `tools` (else the prompt's), less the prompt's
        /// blocklist; none under `tool_choice: none` (`compositions.md` 6.3.1).
        tools: Vec<ToolRef>,
        /// The prompt's `tool_policy.max_tool_calls_per_turn`, when set.
        max_tool_calls_per_turn: Option<u32>,
        /// `termination.max_steps`.
        max_steps: Option<u32>,
        /// `termination.tool_called`.
        tool_called: Option<ToolId>,
    },
    /// ```yaml
    /// kind: tool
    /// tool: kb_lookup
    /// args: {q: "${input.q}"}
    /// ```
    Tool {
        /// `tool`.
        tool: ToolId,
        /// `args` (`{}` when absent).
        args: Bind,
    },
    /// ```yaml
    /// kind: branch
    /// predicate: {path: "${c.output.type}", op: equals, value: paper}
    /// then: extract_paper
    /// else: extract_general
    /// ```
    Branch {
        /// `predicate`.
        predicate: Pred,
        /// `then`.
        then: StepId,
        /// `else`.
        otherwise: Option<StepId>,
    },
    /// ```yaml
    /// kind: parallel
    /// branches: [{id: a, ...}, {id: b, ...}]
    /// reduce: {strategy: barrier, into: results}
    /// ```
    Parallel {
        /// `branches`, in declaration order (each a leaf step).
        branches: Vec<StepId>,
        /// `reduce.strategy`.
        strategy: Reduce,
        /// `reduce.into`.
        into: String,
    },
    /// A vendor step kind (spec level 1.8+), served by the host with an `extension` call.
    ///
    /// ```yaml
    /// kind: acme.rerank
    /// input: "${search.output}"
    /// top_k: 3
    /// ```
    Extension {
        /// The `kind`, `vendor.name`.
        kind: String,
        /// The step's other members (all but `id`, `kind`, `description`, `input`,
        /// `depends_on` and `modifiers`), as a JSON object.
        params: crate::JsonText,
        /// `input` (null when absent), resolved like a tool step's `args`.
        input: Bind,
    },
}

/// `reduce.strategy` (`compositions.md` 8.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reduce {
    /// `append`: concatenate, splicing array outputs one level.
    Append,
    /// `replace`: the last branch's output.
    Replace,
    /// `barrier`: an object of branch id → output.
    Barrier,
}

/// A `${...}` reference, resolved to a root slot and a member path.
///
/// `"${classify.output.doc.type}"` → `Ref { root: Root::Step(classify), path: [doc, type] }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ref {
    /// Where the path starts.
    pub root: Root,
    /// Member names, in order.
    pub path: Path,
}

/// The member names of a [`Ref`], in order: a slice of shared names.
///
/// A path of one name, the common case, is kept in place; a compiler hands every
/// reference to the same name one shared copy of it. On the wire it is a sequence of
/// strings, as a `Vec<String>` is (FORMAT.md).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Path(Names);

#[derive(Clone, PartialEq, Eq)]
enum Names {
    One(Arc<str>),
    Many(Vec<Arc<str>>),
}

impl Default for Names {
    fn default() -> Self {
        Names::Many(Vec::new())
    }
}

impl Path {
    /// The path of these names.
    pub fn new(names: impl IntoIterator<Item = Arc<str>>) -> Path {
        let mut names = names.into_iter();
        let Some(first) = names.next() else {
            return Path::default();
        };
        match names.next() {
            None => Path(Names::One(first)),
            Some(second) => {
                let mut all = vec![first, second];
                all.extend(names);
                Path(Names::Many(all))
            }
        }
    }
}

impl std::ops::Deref for Path {
    type Target = [Arc<str>];
    #[inline]
    fn deref(&self) -> &[Arc<str>] {
        match &self.0 {
            Names::One(name) => std::slice::from_ref(name),
            Names::Many(names) => names,
        }
    }
}

impl<'p> IntoIterator for &'p Path {
    type Item = &'p Arc<str>;
    type IntoIter = std::slice::Iter<'p, Arc<str>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<S: AsRef<str>> FromIterator<S> for Path {
    fn from_iter<I: IntoIterator<Item = S>>(names: I) -> Path {
        Path::new(names.into_iter().map(|n| Arc::from(n.as_ref())))
    }
}

impl std::fmt::Debug for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Path {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(|name| &**name))
    }
}

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Path, D::Error> {
        /// One name, read into its shared copy without an owned string between.
        struct Name(Arc<str>);
        impl<'de> Deserialize<'de> for Name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
                struct Text;
                impl serde::de::Visitor<'_> for Text {
                    type Value = Name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Name, E> {
                        Ok(Name(Arc::from(s)))
                    }
                }
                d.deserialize_str(Text)
            }
        }
        struct Seq;
        impl<'de> serde::de::Visitor<'de> for Seq {
            type Value = Path;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence of member names")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Path, A::Error> {
                let mut failed = None;
                let path = Path::new(std::iter::from_fn(|| match seq.next_element::<Name>() {
                    Ok(name) => name.map(|Name(name)| name),
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                }));
                failed.map_or(Ok(path), Err)
            }
        }
        deserializer.deserialize_seq(Seq)
    }
}

/// The root of a [`Ref`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Root {
    /// `${input...}`
    Input,
    /// `${<step>.output...}`: that step's output slot.
    Step(StepId),
}

/// A step's `input` or `args`, with every string pre-parsed (`compositions.md` §3.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")] // depth-limited on decode: see `nesting.rs`
pub enum Bind {
    /// A value without references, copied as is: `5`, `"fixed"`, `{a: 1}`.
    Const(#[serde(with = "crate::json_text")] serde_json::Value),
    /// `"${input.count}"`: the referenced value, JSON type kept.
    Whole(Ref),
    /// `"n=${input.n}"`: a string with each reference in its text form.
    Interp(Vec<Part>),
    /// An array holding at least one reference somewhere.
    Array(Vec<Bind>),
    /// An object holding at least one reference somewhere; members in source order.
    Object(Vec<(String, Bind)>),
}

/// A piece of a [`Bind::Interp`] string.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Part {
    /// Literal text.
    Text(String),
    /// A reference, written in its text form.
    Ref(Ref),
}

/// A branch predicate (`compositions.md` §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")] // depth-limited on decode: see `nesting.rs`
pub enum Pred {
    /// `{path: "${s.output.x}", op: equals, value: 1}` and the other compare ops.
    Compare {
        /// `path`.
        path: Ref,
        /// `op` with its `value`, pre-typed.
        test: Compare,
    },
    /// `{path: "${s.output.x}", exists: true}`
    Exists {
        /// `path`.
        path: Ref,
        /// `exists`.
        expect: bool,
    },
    /// `{all_of: [...]}`: left to right, stops at the first false.
    All(Vec<Pred>),
    /// `{any_of: [...]}`: left to right, stops at the first true.
    Any(Vec<Pred>),
    /// `{not: ...}`
    Not(Box<Pred>),
}

/// A compare op with its constant, typed once at lowering.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Compare {
    /// `op: equals` (`negate: false`) or `not_equals` (`negate: true`).
    Equals {
        /// The `value`.
        #[serde(with = "crate::json_text")]
        value: serde_json::Value,
        /// `not_equals`.
        negate: bool,
    },
    /// `op: in` / `not_in`; `list` is `None` when `value` is not an array
    /// (evaluating it is then a `type_error`).
    In {
        /// The `value` when it is an array.
        #[serde(with = "crate::json_text::option")]
        list: Option<Vec<serde_json::Value>>,
        /// `not_in`.
        negate: bool,
    },
    /// `less_than` & co.; `bound` is `None` when `value` is not a number
    /// (evaluating it is then a `type_error`).
    Ordered {
        /// Which comparison.
        op: Ordering,
        /// The `value` when it is a number.
        bound: Option<f64>,
    },
}

/// An ordered comparison: `actual <op> value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ordering {
    /// `less_than`
    Lt,
    /// `less_than_or_equals`
    Le,
    /// `greater_than`
    Gt,
    /// `greater_than_or_equals`
    Ge,
}

impl Ordering {
    /// The op as a pack writes it: `less_than`, `less_than_or_equals`, `greater_than`,
    /// `greater_than_or_equals`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ordering::Lt => "less_than",
            Ordering::Le => "less_than_or_equals",
            Ordering::Gt => "greater_than",
            Ordering::Ge => "greater_than_or_equals",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_written_and_read_as_a_sequence_of_strings() {
        for names in [&[][..], &["x"], &["doc", "type"], &["a", "b", "c", "d"]] {
            let path: Path = names.iter().collect();
            assert_eq!(path.len(), names.len());
            assert!(path.iter().map(|n| &**n).eq(names.iter().copied()));
            let owned: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
            let bytes = postcard::to_allocvec(&path).unwrap();
            assert_eq!(bytes, postcard::to_allocvec(&owned).unwrap(), "{names:?}");
            let back: Path = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(back, path);
            assert_eq!(format!("{back:?}"), format!("{owned:?}"));
        }
        // A truncated sequence, or one of other things, is refused.
        let bytes = postcard::to_allocvec(&["doc", "type"]).unwrap();
        assert!(postcard::from_bytes::<Path>(&bytes[..bytes.len() - 1]).is_err());
        assert!(postcard::from_bytes::<Path>(&postcard::to_allocvec(&[7u8]).unwrap()).is_err());
    }
}
