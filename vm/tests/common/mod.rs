//! Shared by the test binaries: loading packs, and picking the call to answer next.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use std::collections::{BTreeMap, VecDeque};

use packc_vm::driver::Host;
use packc_vm::{Answer, CallView, Input, Need, Program, Run};

/// Compiles the pack file at `path` into a program.
pub fn program(path: &Path) -> Arc<Program> {
    packc_suite::program(path)
}

/// The outstanding call to answer next: the lowest branch first, then the oldest.
pub fn pick<'r>(run: &'r Run) -> Option<CallView<'r>> {
    packc_vm::driver::next_call(run)
}

/// The input after `need` in a drive that gives `turn` once, then finishes, reads the
/// clock as 0 and answers the call [`pick`] chooses with `answer`'s output; `None` once
/// the run is done.
pub fn next_input(
    run: &Run,
    need: Need,
    turn: &mut Option<serde_json::Value>,
    answer: impl FnOnce(&CallView<'_>) -> serde_json::Value,
) -> Option<Input> {
    Some(match need {
        Need::Done => return None,
        Need::Caller => turn.take().map_or(Input::Finish, Input::Turn),
        Need::Clock => Input::Clock(0),
        Need::Calls | Need::Wait => {
            let call = pick(run).expect("a call is outstanding");
            Input::Answer(call.id(), out(answer(&call)))
        }
    })
}

/// Answers from per-key queues; `reverse` answers the highest parallel branch first.
#[derive(Default, Clone)]
pub struct Queues {
    pub answers: BTreeMap<String, VecDeque<Answer>>,
    pub clock: Vec<u64>,
    pub reads: usize,
    pub reverse: bool,
}

impl Queues {
    pub fn with(mut self, key: &str, answers: Vec<Answer>) -> Self {
        self.answers.insert(key.to_owned(), answers.into());
        self
    }
}

impl Host for Queues {
    fn call(&mut self, call: &CallView<'_>) -> Answer {
        let key = call
            .prompt_task()
            .or_else(|| call.tool())
            .unwrap_or_default();
        self.answers
            .get_mut(key)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| Answer::Error(format!("no scripted answer for {key}")))
    }
    fn clock(&mut self) -> u64 {
        let i = self.reads.min(self.clock.len().saturating_sub(1));
        self.reads += 1;
        self.clock.get(i).copied().unwrap_or(0)
    }
    fn pick(&mut self, outstanding: &[CallView<'_>]) -> usize {
        if !self.reverse {
            return packc_vm::driver::lowest_branch_first(outstanding);
        }
        let it = outstanding.iter().enumerate();
        it.max_by_key(|(_, c)| (c.branch().unwrap_or(0), c.id()))
            .map_or(0, |(i, _)| i)
    }
}

/// The top of a test pack: the five members every pack needs.
pub const HEAD: &str =
    "id: t\nname: T\nversion: 1.0.0\ntemplate_engine: {version: v1, syntax: '{{variable}}'}\n";

/// A `prompts:` block whose templates say `Do <key>.` and then `extra`.
pub fn prompts(keys: &[&str], extra: &str) -> String {
    let mut s = String::from("prompts:\n");
    for k in keys {
        s.push_str(&format!(
            "  {k}: {{id: {k}, name: {k}, version: 1.0.0, system_template: 'Do {k}.{extra}'}}\n"
        ));
    }
    s
}

/// A `tools:` block with one object-parameter tool per key.
pub fn tool_defs(keys: &[&str]) -> String {
    let mut s = String::from("tools:\n");
    for k in keys {
        s.push_str(&format!("  {k}: {{name: {k}, description: {k}, parameters: {{type: object, properties: {{}}}}}}\n"));
    }
    s
}

/// A `compositions:` block: composition `c` whose first step `p` runs `branches` (flow
/// mappings) in parallel and reduces them by `strategy` into `all`, then the `after`
/// steps.
pub fn parallel_comp(strategy: &str, branches: &[&str], after: &[&str]) -> String {
    let mut s = format!(
        "compositions:\n  c:\n    version: 1\n    steps:\n      - id: p\n        kind: parallel\n        reduce: {{strategy: {strategy}, into: all}}\n        branches:\n"
    );
    for b in branches {
        s.push_str(&format!("          - {b}\n"));
    }
    for a in after {
        s.push_str(&format!("      - {a}\n"));
    }
    s
}

/// The parallel pack of the rule and snapshot tests: an agent, a retried tool step and a
/// prompt step in parallel, then a tool step reading the merged output; the prompts'
/// templates end with `extra`.
pub fn parallel_pack(extra: &str) -> String {
    let comp = parallel_comp(
        "append",
        &[
            "{id: b1, kind: agent, prompt_task: a, input: '${input}', tools: [t], termination: {max_steps: 3}}",
            "{id: b2, kind: tool, tool: u, args: {q: '${input}'}, modifiers: {retry: {max_attempts: 2}}}",
            "{id: b3, kind: prompt, prompt_task: w, input: 'n=${input}'}",
        ],
        &["{id: after, kind: tool, tool: v, args: {all: '${p.output.all}'}}"],
    );
    format!(
        "{HEAD}{}{}{comp}",
        prompts(&["a", "w"], extra),
        tool_defs(&["t", "u", "v"])
    )
}

/// A workflow of two prompt states under `budget` (`engine.budget`): `one` (prompt `p`)
/// moves to the terminal `two` (prompt `q`) on `Next`.
pub fn two_state_pack(budget: &str) -> String {
    format!(
        "{HEAD}{}workflow:
  version: 1
  entry: one
  engine: {{budget: {budget}}}
  states:
    one: {{prompt_task: p, on_event: {{Next: two}}}}
    two: {{prompt_task: q, terminal: true}}
",
        prompts(&["p", "q"], "")
    )
}

/// Checks and lowers an inline pack, which must have no errors.
pub fn compile(yaml: &str) -> ir_spec::Module {
    let options = packc_compiler::Options::default();
    let checked = packc_compiler::check_bytes(yaml.as_bytes(), &options);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    packc_compiler::lower(&checked, &options).expect("lowers")
}

/// A model or tool answer with this output.
pub fn out(v: serde_json::Value) -> Answer {
    Answer::Output {
        output: v,
        event: None,
    }
}
