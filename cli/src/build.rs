//! `packc build`: check a pack, lower it and write the `.ppk` artifact.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use packc_compiler::render::RenderSource;
use packc_compiler::Options;

use crate::Format;

/// Arguments of `packc build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The pack file (.yaml, .yml or .json).
    #[arg(value_name = "PACK")]
    pub pack: PathBuf,
    /// Where to write the artifact; by default the pack's path with `.ppk` in place of
    /// `.pack.yaml`, `.yaml`, `.yml` or `.json`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How diagnostics are judged and printed (as `packc check`).
    #[command(flatten)]
    pub diagnostics: crate::check::DiagnosticArgs,
}

/// Check, lower and write the artifact; exit 1 (writing nothing) when the pack has errors.
pub fn run(args: &BuildArgs) -> Result<ExitCode> {
    let limits = args.diagnostics.limits();
    let spec_level = args.diagnostics.spec_level;
    let (checked, bytes) = crate::check::check_file_at(&args.pack, &limits, spec_level)?;
    let text = String::from_utf8_lossy(&bytes);
    let name = args.pack.display().to_string();
    let src = RenderSource {
        name: &name,
        text: &text,
        spans: checked.loaded.as_ref().map(|l| &l.spans),
    };
    crate::check::print_diagnostics(
        &src,
        &checked,
        args.diagnostics.format,
        args.diagnostics.color.for_stderr(),
    )?;
    let (errors, warnings, _notes) = crate::check::counts(&checked.diagnostics);
    if errors > 0 || (args.diagnostics.deny_warnings && warnings > 0) {
        if args.diagnostics.format == Format::Human {
            eprintln!("{name}: {errors} error(s), {warnings} warning(s); nothing written");
        }
        return Ok(ExitCode::from(1));
    }
    let mut options = Options {
        limits,
        spec_level,
        ..Options::default()
    };
    options.base_dir = Some(
        args.pack
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    );
    let artifact = packc_compiler::artifact(&checked, &bytes, &options)?;
    let encoded = artifact.encode();
    let max = ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
    if encoded.len() > max {
        eprintln!(
            "error[limit_exceeded]: the artifact would be {} bytes, more than readers accept by default ({max} bytes, `max_artifact_bytes`); nothing written",
            encoded.len()
        );
        return Ok(ExitCode::from(1));
    }
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.pack));
    write_atomically(&out, &encoded)?;
    eprintln!("wrote {} ({} bytes)", out.display(), encoded.len());
    Ok(ExitCode::SUCCESS)
}

/// `dir/x.pack.yaml` → `dir/x.ppk`; also `.pack.yml`, `.pack.json`, `.yaml`, `.yml`,
/// `.json`; any other name gets `.ppk` appended.
pub fn default_output(pack: &Path) -> PathBuf {
    let name = pack
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let suffixes = [
        ".pack.yaml",
        ".pack.yml",
        ".pack.json",
        ".yaml",
        ".yml",
        ".json",
    ];
    let stem = suffixes
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .filter(|stem| !stem.is_empty())
        .unwrap_or(&name);
    pack.with_file_name(format!("{stem}.ppk"))
}

/// Write through a temporary file beside `path`, so a reader never sees half an artifact.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_output_replaces_the_pack_suffix() {
        let cases = [
            ("examples/a.pack.yaml", "examples/a.ppk"),
            ("a.pack.json", "a.ppk"),
            ("dir/b.yaml", "dir/b.ppk"),
            ("c.yml", "c.ppk"),
            ("d.json", "d.ppk"),
            ("e.txt", "e.txt.ppk"),
            (".yaml", ".yaml.ppk"),
        ];
        for (pack, out) in cases {
            assert_eq!(
                default_output(Path::new(pack)),
                PathBuf::from(out),
                "{pack}"
            );
        }
    }
}
