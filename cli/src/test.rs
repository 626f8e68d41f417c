//! `packc test`: run conformance cases (`*.case.yaml`) with the scripted host.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

/// Arguments of `packc test`.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// Case files (`*.case.yaml`) or folders holding them.
    #[arg(required = true, value_name = "CASE_OR_DIR")]
    pub paths: Vec<PathBuf>,
    /// Let the cases' packs read files (schema files) from this folder too (repeatable).
    /// By default a pack reads only from its own folder and below.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// The most model and tool calls one case's run may make; past it the run fails
    /// with `limit_exceeded`.
    #[arg(long, value_name = "N", default_value_t = crate::run::DEFAULT_MAX_HOST_CALLS)]
    pub max_host_calls: u64,
}

/// Run every case; each failure with what differed, then `N passed, N failed`; exit 1 on
/// a failure, and when the paths hold no case at all (a mistyped path must not pass).
pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let mut files = Vec::new();
    for path in &args.paths {
        collect(path, &mut files)?;
    }
    if files.is_empty() {
        let paths: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "error: no case files found in {} (case files are named `*.case.yaml`)",
            paths.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    let base = packc_host::RunCaseOptions {
        allow_paths: crate::check::allowed_folders(&args.allow_paths)?,
        ..Default::default()
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let options = packc_host::RunCaseOptions {
            max_host_calls: Some(args.max_host_calls),
            ..base.clone()
        };
        match packc_host::run_case_file_with(file, options) {
            Ok(()) => passed += 1,
            Err(diff) => {
                failed += 1;
                println!(
                    "FAIL {}",
                    packc_compiler::render::escape_control(&file.display().to_string())
                );
                for line in diff.lines() {
                    println!("    {}", packc_compiler::render::escape_control(line));
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The case files under `path`, sorted; `path` itself when it is a file.
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !path.is_dir() {
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".case.yaml"))
        .collect();
    found.sort();
    out.extend(found);
    Ok(())
}
