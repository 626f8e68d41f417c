//! `packc check`: load and check packs, print diagnostics.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use packc_compiler::diag::Severity;
use packc_compiler::load::Limits;
use packc_compiler::render::{self, RenderSource};
use packc_compiler::{Checked, Options};

use crate::{ColorChoice, Format};

/// Check packs for errors without building anything.
///
/// Every pack is parsed (YAML 1.2 or JSON), validated against the schema of its spec
/// level (its `$schema` claim, or `--spec-level`) and checked against every rule of
/// the spec. All problems of a file are reported in one pass, in source order, each
/// pointing at its line.
///
/// Examples:
///   packc check examples/rfc0010-ex2.pack.yaml
///   packc check --format json packs/*.yaml
///   packc check --deny-warnings my.pack.json
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct CheckArgs {
    /// Pack files to check (.yaml, .yml or .json).
    #[arg(required = true, value_name = "PACK")]
    pub packs: Vec<PathBuf>,
    /// How diagnostics are judged and printed.
    #[command(flatten)]
    pub diagnostics: DiagnosticArgs,
}

/// The options of every command that checks a pack (`check`, `build`).
#[derive(Args, Debug)]
pub struct DiagnosticArgs {
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Treat warnings as errors (exit 1 when any is reported).
    #[arg(long)]
    pub deny_warnings: bool,
    /// Largest pack source accepted, in bytes; larger files are `limit_exceeded`.
    #[arg(long, value_name = "BYTES", default_value_t = packc_compiler::load::Limits::default().max_source_bytes)]
    pub max_source_bytes: usize,
    /// Set a compiler limit (repeatable): max_source_bytes (as --max-source-bytes),
    /// max_depth, max_nodes, max_string_bytes,
    /// max_total_template_bytes, max_compositions, max_steps_per_composition,
    /// max_total_steps, max_states, max_prompts, max_tools, max_agents, max_attempts,
    /// max_patterns, max_pattern_size, max_banned_word_bytes (README, "Limits").
    #[arg(long = "limit", value_name = "NAME=N", value_parser = parse_limit)]
    pub limits: Vec<(String, usize)>,
    /// When to colour the output.
    #[arg(long, value_enum, default_value_t)]
    pub color: ColorChoice,
    /// Let the pack read files (schema files) from this folder too (repeatable). By
    /// default a pack reads only from its own folder and below.
    #[arg(long = "allow-path", value_name = "DIR")]
    pub allow_paths: Vec<PathBuf>,
    /// Print at most N diagnostics per pack in the human format, then `… and M more`
    /// (0: all). The counts and the exit code still cover every diagnostic;
    /// `--format json` prints them all.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DIAGNOSTICS)]
    pub max_diagnostics: usize,
    /// Read the pack at this spec level (1.5, 1.5.1, 1.8 or 1.9; a version such as 1.7
    /// or v1.6.0 names its level, and `latest` is 1.9) instead of the one its `$schema`
    /// claims (README, "Spec versions").
    #[arg(long, value_name = "LEVEL", value_parser = parse_spec_level)]
    pub spec_level: Option<ir_spec::SpecLevel>,
}

/// `--spec-level`: `1.5`, `1.5.1`, `1.8`, `1.9`, or a version its level covers.
pub fn parse_spec_level(text: &str) -> Result<ir_spec::SpecLevel, String> {
    ir_spec::SpecLevel::parse(text)
        .ok_or_else(|| {
            format!("`{text}` is not a spec level: use 1.5, 1.5.1, 1.8, 1.9 (or a version such as 1.7, or latest)")
        })
}

/// Counts of errors, warnings and notes among diagnostics.
pub fn counts(diags: &[packc_compiler::diag::Diagnostic]) -> (usize, usize, usize) {
    let n = |s: Severity| diags.iter().filter(|d| d.severity == s).count();
    (n(Severity::Error), n(Severity::Warning), n(Severity::Note))
}

/// How many diagnostics of one pack the human format prints by default.
pub const DEFAULT_MAX_DIAGNOSTICS: usize = 200;

impl DiagnosticArgs {
    /// The compiler limits: the defaults, `--max-source-bytes`, then each `--limit`.
    pub fn limits(&self) -> Limits {
        let mut limits = Limits {
            max_source_bytes: self.max_source_bytes,
            ..Limits::default()
        };
        for (name, value) in &self.limits {
            // `parse_limit` admitted only known names.
            let _ = limits.set(name, *value);
        }
        limits
    }
}

/// The `--allow-path` folders, each checked to be a folder (a typo must not silently
/// leave a pack's files unreadable, nor be taken for a file).
pub fn allowed_folders(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    for dir in dirs {
        let meta = std::fs::metadata(dir)
            .with_context(|| format!("--allow-path {}: cannot read it", dir.display()))?;
        if !meta.is_dir() {
            anyhow::bail!("--allow-path {}: not a folder", dir.display());
        }
    }
    Ok(dirs.to_vec())
}

/// `NAME=N` of `--limit`, with `NAME` one of [`Limits::NAMES`].
fn parse_limit(text: &str) -> Result<(String, usize), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=N"))?;
    let value: usize = value
        .trim()
        .parse()
        .map_err(|_| format!("`{value}` is not a whole number"))?;
    Limits::default().set(name.trim(), value)?;
    Ok((name.trim().to_owned(), value))
}

/// Check every pack; exit 1 if any has errors (or warnings, with `--deny-warnings`).
pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let mut failed = false;
    let d = &args.diagnostics;
    let color = d.color.for_stderr();
    crate::out::set_stderr_color(color);
    let (mut errors, mut warnings, mut notes) = (0usize, 0usize, 0usize);
    let mut unreadable = 0usize;
    let allow = allowed_folders(&d.allow_paths)?;
    for (i, path) in args.packs.iter().enumerate() {
        if crate::inspect::is_artifact(path).unwrap_or(false) {
            let message = format!(
                "{} is a built .ppk artifact, not a pack's source; `packc inspect {}` shows what it holds",
                path.display(),
                crate::shell::path(path)
            );
            print_unchecked(path, "not_a_pack", &message, d.format)?;
            unreadable += 1;
            continue;
        }
        let options = options_for(path, &d.limits(), &allow, d.spec_level);
        // The host validators are read from the document the check parsed.
        let read = with_pack(path, &options, |bytes| {
            let (checked, host) =
                packc_compiler::check_file_bytes_and(path, bytes, &options, |doc, _| {
                    packc_compiler::validators::host_validators(doc)
                });
            Ok((checked, host.unwrap_or_default()))
        });
        // A file that cannot be read is reported, and the other packs are still checked.
        let (checked, bytes, host) = match read {
            Ok(read) => read,
            Err(e) => {
                print_unchecked(path, "unreadable", &format!("{e:#}"), d.format)?;
                unreadable += 1;
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        let src = RenderSource {
            name: &name,
            text: &text,
            spans: checked.loaded.as_ref().map(|l| &l.spans),
        };
        print_diagnostics(
            &src,
            &checked.diagnostics,
            d.format,
            color,
            d.max_diagnostics,
        )?;
        print_host_validators(&src, &checked, &host, d.format)?;
        let (e, w, n) = counts(&checked.diagnostics);
        errors += e;
        warnings += w;
        notes += n;
        failed |= e > 0 || (d.deny_warnings && w > 0);
        if i + 1 == args.packs.len() {
            crate::leave_until_exit((checked, bytes));
        }
    }
    if d.format == Format::Human {
        let files = args.packs.len();
        let noun = if files == 1 { "pack" } else { "packs" };
        let notes = match notes {
            0 => String::new(),
            n => format!(", {n} note(s)"),
        };
        // Formatted first: stderr is unbuffered, and `eprintln!` writes each piece with
        // its own system call.
        let unread = match unreadable {
            0 => String::new(),
            n => format!(", {n} could not be checked"),
        };
        let line = if errors + warnings + unreadable == 0 {
            format!("checked {files} {noun}: no problems{notes}\n")
        } else {
            format!(
                "checked {files} {noun}: {errors} error(s), {warnings} warning(s){notes}{unread}\n"
            )
        };
        eprint!("{line}");
    }
    // A file that could not be read is I/O trouble (exit 2), as when it is the only one.
    Ok(if unreadable > 0 {
        ExitCode::from(2)
    } else if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reports a file that could not be checked: `message` on stderr and, with `--format
/// json`, one line on stdout shaped like a diagnostic's, `kind` `unreadable` (it could
/// not be read) or `not_a_pack` (a built artifact), placed nowhere:
/// `{"kind", "severity": "error", "message", "file", "line": null, "column": null,
/// "pointer": null, "help": null}`.
fn print_unchecked(path: &Path, kind: &str, message: &str, format: Format) -> Result<()> {
    eprintln!("error: {}", render::escape_control(message));
    if format == Format::Json {
        let line = serde_json::json!({
            "kind": kind,
            "severity": "error",
            "message": message,
            "file": path.display().to_string(),
            "line": null,
            "column": null,
            "pointer": null,
            "help": null,
        });
        writeln!(std::io::stdout().lock(), "{}", render::json_line(&line))?;
    }
    Ok(())
}

/// The compiler options for the pack file at `path`: its folder is where the files it
/// names are read from, `allow` widens that, and `spec_level` (when given) overrides
/// the level its `$schema` claims.
pub fn options_for(
    path: &Path,
    limits: &Limits,
    allow: &[PathBuf],
    spec_level: Option<ir_spec::SpecLevel>,
) -> Options {
    Options {
        limits: limits.clone(),
        base_dir: Some(path.parent().map(Path::to_path_buf).unwrap_or_default()),
        allow_paths: allow.to_vec(),
        spec_level,
    }
}

/// Reads the pack file at `path` and runs `check` on its bytes (with `options`, from
/// [`options_for`]). A file over `max_source_bytes` is not read: it gives its
/// `limit_exceeded` diagnostic, no bytes and `R::default()`.
pub fn with_pack<R: Default>(
    path: &Path,
    options: &Options,
    check: impl FnOnce(&[u8]) -> Result<(Checked, R)>,
) -> Result<(Checked, Vec<u8>, R)> {
    Ok(match read_pack(path, options)? {
        Ok(bytes) => {
            let (checked, found) = check(&bytes)?;
            (checked, bytes, found)
        }
        Err(too_large) => (too_large, Vec::new(), R::default()),
    })
}

/// The bytes of the pack file at `path`, or, for a file over `max_source_bytes`, its
/// `limit_exceeded` diagnostic (such a file is not read).
pub fn read_pack(path: &Path, options: &Options) -> Result<Result<Vec<u8>, Checked>> {
    let max_source_bytes = options.limits.max_source_bytes;
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if meta.is_file() && (name.ends_with(".case.yaml") || name.ends_with(".case.yml")) {
        anyhow::bail!(
            "{} is a case file (a pack with its script and what to expect), not a pack: run it with `packc test {}`",
            path.display(),
            crate::shell::path(path)
        );
    }
    if meta.is_dir() {
        anyhow::bail!(
            "cannot read {}: it is a folder; name the pack files in it (e.g. `packc check {}`)",
            path.display(),
            path.join("*.pack.yaml").display()
        );
    }
    // The name says how a pack is read (`*.json` strictly as JSON, else YAML): a name
    // that says neither is refused rather than guessed at.
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    if !matches!(extension, "yaml" | "yml" | "json") {
        let near = ir_spec::suggest::suggest(extension, ["yaml", "yml", "json"]);
        let fix = match near {
            Some(e) => format!("did you mean `.{e}`? rename it"),
            None => "rename it to end in .yaml, .yml or .json".to_owned(),
        };
        anyhow::bail!(
            "{} is not named as a pack: packc reads packs from .yaml, .yml and .json files ({fix})",
            path.display()
        );
    }
    if meta.len() > max_source_bytes as u64 {
        // Do not read a huge file just to say it is too big.
        let d = packc_compiler::load::too_large(meta.len(), max_source_bytes);
        return Ok(Err(Checked {
            loaded: None,
            diagnostics: vec![d],
        }));
    }
    let bytes = packc_compiler::paths::read_regular(path, max_source_bytes as u64)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Ok(bytes))
}

/// Lists the pack's host validators (validator types that are not built in): a live
/// run refuses to start unless each is bound under `guards:` (`later-versions.md` §4).
/// Information only: never counted as a warning. The human format prints one `info:`
/// line each; `--format json` one line per pack that has any, after its diagnostics:
/// `{"file", "host_validators": [{"type", "near_built_in", "pointer", "line", "column"}]}`.
fn print_host_validators(
    src: &RenderSource<'_>,
    checked: &Checked,
    found: &[(String, String)],
    format: Format,
) -> Result<()> {
    let Some(loaded) = &checked.loaded else {
        return Ok(());
    };
    if found.is_empty() {
        return Ok(());
    }
    let spans = &loaded.spans;
    let position = |ptr: &str| spans.locate(ptr).map(|s| src.line_col(s.start));
    match format {
        Format::Human => {
            for (ptr, ty) in found {
                let place = match position(ptr) {
                    Some((line, col)) => format!("{}:{line}:{col}", src.name),
                    None => src.name.to_owned(),
                };
                let near = match packc_compiler::validators::near_built_in(ty) {
                    Some(b) => format!(" (did you mean the built-in `{b}`?)"),
                    None => String::new(),
                };
                eprintln!(
                    "info: {place}: host validator `{}` ({}): the host judges it; a live run needs it bound under `guards:` in its --tools file{near}",
                    render::escape_control(ty),
                    render::escape_control(ptr)
                );
            }
        }
        Format::Json => {
            let list: Vec<_> = found
                .iter()
                .map(|(ptr, ty)| {
                    let pos = position(ptr);
                    serde_json::json!({
                        "type": ty,
                        "near_built_in": packc_compiler::validators::near_built_in(ty),
                        "pointer": ptr,
                        "line": pos.map(|p| p.0),
                        "column": pos.map(|p| p.1),
                    })
                })
                .collect();
            let line = serde_json::json!({"file": src.name, "host_validators": list});
            writeln!(std::io::stdout().lock(), "{}", render::json_line(&line))?;
        }
    }
    Ok(())
}

/// Print one file's diagnostics in the chosen format; the human format stops after `max`
/// of them (0: no cap) and says how many more there are.
pub fn print_diagnostics(
    src: &RenderSource<'_>,
    all: &[packc_compiler::Diagnostic],
    format: Format,
    color: bool,
    max: usize,
) -> Result<()> {
    match format {
        Format::Human => {
            let shown = if max == 0 {
                all.len()
            } else {
                max.min(all.len())
            };
            let mut err = std::io::stderr().lock();
            render::human(src, &all[..shown], color, &mut err)?;
            if shown < all.len() {
                writeln!(
                    err,
                    "… and {} more diagnostic(s) (`--max-diagnostics 0` prints them all)",
                    all.len() - shown
                )?;
            }
        }
        Format::Json => {
            render::json_lines(src, all, &mut std::io::stdout().lock())?;
        }
    }
    Ok(())
}
