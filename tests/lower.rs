//! Every pack of `../shared/corpus` that checks without errors also lowers: the module
//! validates, survives an artifact round trip, and each of its targets (the workflow,
//! every agent member, every composition) runs without panicking against a host whose
//! every call fails. One test per file; skipped cleanly when `../shared` is absent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use packc_compiler::{check_bytes, Options};
use packc_vm::driver::{drive, Host, ScriptItem};
use packc_vm::{Answer, CallView, Program, Run, RunOptions};

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for packc_suite::CorpusPack { file, path, .. } in packc_suite::corpus() {
        let name = file.replace(['/', '-', '.'], "_");
        trials.push(Trial::test(format!("lower::{name}"), move || run(&path)));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Fails every call, so each run ends at its first host call.
struct Failing;

impl Host for Failing {
    fn call(&mut self, _: &CallView<'_>) -> Answer {
        Answer::Error("unavailable".into())
    }
    fn clock(&mut self) -> u64 {
        0
    }
}

fn run(path: &PathBuf) -> Result<(), Failed> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let options = Options {
        base_dir: path.parent().map(Path::to_path_buf),
        ..Options::default()
    };
    let checked = check_bytes(&bytes, &options);
    if checked.has_errors() {
        return Ok(()); // rejected packs are the checker's business
    }
    let module = packc_compiler::lower(&checked, &options).map_err(|e| e.to_string())?;
    module.validate().map_err(|e| e.to_string())?;
    // The artifact round trip: the MODL payload plus the sections beside it (`spec`,
    // `GARD`), which a bare postcard round trip of the module leaves out.
    let artifact = ir_spec::Artifact {
        source_hash: [0; 32],
        compiler: String::new(),
        module,
    };
    let decoded =
        ir_spec::Artifact::decode(&artifact.encode(), usize::MAX).map_err(|e| e.to_string())?;
    if decoded.module != artifact.module {
        return Err("the artifact round trip changed the module".into());
    }
    let module = artifact.module;
    let program = Arc::new(Program::new(module).map_err(|e| e.to_string())?);
    let module = program.module();
    for target in packc_suite::every_target(module) {
        let Ok(mut r) = Run::new(program.clone(), target, RunOptions::default()) else {
            continue; // a target the run refuses
        };
        let script = [ScriptItem::Turn(serde_json::json!({"text": "hello"}))];
        // Any outcome is fine; a panic fails the test.
        let _ = drive(&mut r, &mut Failing, &script);
    }
    Ok(())
}
