//! `packc test`: run conformance cases (`*.case.yaml`) with the scripted host.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

/// Run conformance cases (`*.case.yaml`) with scripted model and tool answers.
///
/// Each case compiles its pack, runs it against a scripted host and compares the
/// output, error, calls and trace with its `expect`. One line is printed per failing
/// case with what differed, then `N passed, N failed`.
///
/// Examples:
///   packc test ../shared/conformance/cases
///   packc test examples/cases/rfc0010-ex2.case.yaml
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
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
    #[arg(long, value_name = "N", default_value_t = crate::inputs::DEFAULT_MAX_HOST_CALLS)]
    pub max_host_calls: u64,
    /// Run only the cases whose path contains PATTERN (repeatable: any of them).
    #[arg(long, value_name = "PATTERN")]
    pub filter: Vec<String>,
    /// Also write the results as JUnit XML (what CI systems read) to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
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
    if let Some(path) = &args.junit {
        // Checked before the cases run: a case or its pack is never replaced by a report.
        let cases: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        crate::files::make_folder(path, "--junit")?;
        crate::files::check_target(path, &cases, "--junit")?;
        crate::files::check_replaceable(path, JUNIT_START.as_bytes(), "--junit", "a JUnit report")?;
    }
    let options = packc_host::RunCaseOptions {
        allow_paths: crate::check::allowed_folders(&args.allow_paths)?,
        max_host_calls: Some(args.max_host_calls),
        ..Default::default()
    };
    if !args.filter.is_empty() {
        files.retain(|f| {
            let name = f.to_string_lossy();
            args.filter.iter().any(|p| name.contains(p.as_str()))
        });
        if files.is_empty() {
            eprintln!(
                "error: no case file matches --filter {}",
                args.filter.join(", --filter ")
            );
            return Ok(ExitCode::from(1));
        }
    }
    let color = crate::ColorChoice::Auto.for_stdout();
    let (mut passed, mut failures) = (0usize, Vec::new());
    let mut results = Vec::new();
    for file in &files {
        let started = std::time::Instant::now();
        let result = packc_host::run_case_file_with(file, options.clone());
        let seconds = started.elapsed().as_secs_f64();
        match &result {
            Ok(()) => passed += 1,
            Err(diff) => {
                failures.push(file);
                outln!(
                    "{} {}",
                    crate::out::paint("FAIL", true, color),
                    packc_compiler::render::escape_control(&file.display().to_string())
                );
                for line in diff.lines() {
                    outln!("    {}", packc_compiler::render::escape_control(line));
                }
            }
        }
        results.push((file, result, seconds));
    }
    if let Some(path) = &args.junit {
        crate::files::write_atomically(path, junit(&results).as_bytes(), true)?;
    }
    if !failures.is_empty() {
        outln!("\nfailures:");
        for file in &failures {
            outln!(
                "    {}",
                packc_compiler::render::escape_control(&file.display().to_string())
            );
        }
        outln!();
    }
    let failed = failures.len();
    let failed_text = format!("{failed} failed");
    outln!(
        "{passed} passed, {}",
        crate::out::paint(&failed_text, failed > 0, color && failed > 0)
    );
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

/// The results as JUnit XML: one `testsuite`, one `testcase` per case file (its name the
/// file name without `.case.yaml`, its class the folder), a `failure` with what differed.
/// How a JUnit report starts: its XML declaration.
const JUNIT_START: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";

fn junit(results: &[(&PathBuf, packc_host::CaseResult, f64)]) -> String {
    let failures = results.iter().filter(|(_, r, _)| r.is_err()).count();
    let total: f64 = results.iter().map(|(_, _, s)| s).sum();
    let mut out = format!(
        "{JUNIT_START}\n<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{total:.3}\">\n  <testsuite name=\"packc test\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{total:.3}\">\n",
        results.len(),
        results.len()
    );
    for (file, result, seconds) in results {
        let name = file
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .trim_end_matches(".case.yaml")
                    .to_owned()
            })
            .unwrap_or_default();
        let class = file
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        out.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" time=\"{seconds:.3}\"",
            xml(&name),
            xml(&class),
            xml(&file.display().to_string())
        ));
        match result {
            Ok(()) => out.push_str("/>\n"),
            Err(diff) => {
                let first = diff.lines().next().unwrap_or_default();
                out.push_str(&format!(
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(first),
                    xml(diff)
                ));
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text as XML character data or an attribute value; characters XML 1.0 cannot hold
/// (most control characters) become `?`.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 => out.push('?'),
            c => out.push(c),
        }
    }
    out
}
