//! Shared by the test binaries: loading packs, and picking the call to answer next.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use std::collections::{BTreeMap, VecDeque};

use packc_vm::driver::Host;
use packc_vm::{Answer, CallView, Program, Run};

/// Compiles the pack file at `path` into a program.
pub fn program(path: &Path) -> Arc<Program> {
    let bytes = std::fs::read(path).unwrap();
    let options = packc_compiler::Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    let module = packc_compiler::lower(&checked, &options).unwrap();
    Arc::new(Program::new(module).unwrap())
}

/// The outstanding call to answer next: the lowest branch first, then the oldest.
pub fn pick<'r>(run: &'r Run) -> Option<CallView<'r>> {
    run.pending()
        .min_by_key(|c| (c.branch().unwrap_or(0), c.id()))
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
        let key = |c: &CallView<'_>| (c.branch().unwrap_or(0), c.id());
        let it = outstanding.iter().enumerate();
        let found = if self.reverse {
            it.max_by_key(|(_, c)| key(c))
        } else {
            it.min_by_key(|(_, c)| key(c))
        };
        found.map_or(0, |(i, _)| i)
    }
}
