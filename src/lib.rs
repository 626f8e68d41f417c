//! The packc test and benchmark suite.
//!
//! This package exists to hold the workspace's integration tests (`tests/`) and
//! criterion benchmarks (`benches/`); it has no library API of its own beyond the
//! helpers below, which the tests share, and the benchmarks' workloads
//! ([`workloads`]), which the VM's profiling examples replay.

use std::path::PathBuf;

/// The `../shared` folder beside the checkout, when it exists.
///
/// Tests that read the shared conformance cases or corpus skip cleanly without it,
/// so `cargo test` passes on a fresh clone.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    dir.is_dir().then_some(dir)
}

pub mod gen;
pub mod workloads;

/// The files directly in `dir` whose names end with `suffix`, sorted by path; none when
/// `dir` cannot be read.
pub fn files_ending(dir: &std::path::Path, suffix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// The packs of `examples/` (`*.pack.yaml`), sorted by path.
pub fn example_packs() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    files_ending(&dir, ".pack.yaml")
}

/// The test name of a case file: its file name without `.case.yaml`, with `-` as `_`
/// (`comp-err-x.case.yaml` is `comp_err_x`).
pub fn case_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| {
            n.to_string_lossy()
                .replace(".case.yaml", "")
                .replace('-', "_")
        })
        .unwrap_or_default()
}

/// Every target a module can run as: its workflow (when it has one), each agent member,
/// each composition.
pub fn every_target(module: &ir_spec::Module) -> Vec<packc_vm::Target> {
    use packc_vm::Target;
    let mut targets = Vec::new();
    if module.workflow.is_some() {
        targets.push(Target::Workflow);
    }
    targets.extend(
        (0..module.agents.len())
            .filter_map(|i| Some(Target::Agent(ir_spec::AgentId::from_index(i)?))),
    );
    targets.extend(
        (0..module.compositions.len())
            .filter_map(|i| Some(Target::Composition(ir_spec::CompId::from_index(i)?))),
    );
    targets
}

/// Compiles the pack file at `path` (check, lower) into a VM program, panicking on any
/// diagnostic error: for benchmarks and tests over packs known to be clean.
pub fn program(path: &std::path::Path) -> std::sync::Arc<packc_vm::Program> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let options = packc_compiler::Options {
        base_dir: path.parent().map(std::path::Path::to_path_buf),
        ..Default::default()
    };
    let checked = packc_compiler::check_bytes(&bytes, &options);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    let module = packc_compiler::lower(&checked, &options).expect("a clean pack lowers");
    std::sync::Arc::new(packc_vm::Program::new(module).expect("a lowered module verifies"))
}

/// One pack of `../shared/corpus`, with its `MANIFEST.json` entry.
pub struct CorpusPack {
    /// The file, relative to the corpus folder (`promptkit/hello.pack.json`).
    pub file: String,
    /// Its full path.
    pub path: PathBuf,
    /// Its whole MANIFEST entry (`packc` holds the expected verdict and diagnostics).
    pub entry: serde_json::Value,
}

/// Every pack the corpus MANIFEST lists, in its order; empty without `../shared`.
pub fn corpus() -> Vec<CorpusPack> {
    let Some(shared) = shared_dir() else {
        return Vec::new();
    };
    let dir = shared.join("corpus");
    let text = std::fs::read(dir.join("MANIFEST.json")).expect("MANIFEST.json is readable");
    let manifest: serde_json::Value = serde_json::from_slice(&text).expect("MANIFEST.json is JSON");
    let entries = manifest.as_array().expect("MANIFEST.json is a list");
    entries
        .iter()
        .map(|entry| {
            let file = entry["file"].as_str().expect("entry has a file").to_owned();
            CorpusPack {
                path: dir.join(&file),
                file,
                entry: entry.clone(),
            }
        })
        .collect()
}

/// Drives `run` from `Input::Start` to its end, as the benchmarks do: `input` is the
/// first turn and `Finish` the next, the clock reads 0, and the outstanding call of the
/// lowest branch (then the lowest id) is answered first, by `answer`. The VM's drive
/// loop ([`packc_vm::driver::drive_from`]); the outcome stays in the run.
pub fn drive_to_end(
    run: &mut packc_vm::Run,
    input: serde_json::Value,
    answer: impl FnMut(&packc_vm::CallView<'_>) -> packc_vm::Answer,
) {
    use packc_vm::driver::{drive_from, Host};
    use packc_vm::{Answer, CallView, Input};
    struct Answers<F>(F);
    impl<F: FnMut(&CallView<'_>) -> Answer> Host for Answers<F> {
        fn call(&mut self, call: &CallView<'_>) -> Answer {
            (self.0)(call)
        }
        fn clock(&mut self) -> u64 {
            0
        }
    }
    let mut input = Some(input);
    let caller = |_: &mut _| {
        Ok::<_, std::convert::Infallible>(input.take().map_or(Input::Finish, Input::Turn))
    };
    match drive_from(
        run,
        &mut Answers(answer),
        Input::Start,
        caller,
        |_, _, _, _| Ok(()),
    ) {
        Ok(ended) => ended.expect("the run ends"),
        Err(never) => match never {},
    }
}
