//! `packc build`: check a pack, lower it and write the `.ppk` artifact.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use packc_compiler::render::RenderSource;

use crate::Format;

/// Check a pack and compile it into a `.ppk` artifact.
///
/// Diagnostics are printed as by `packc check`; when there is an error nothing is
/// written and the exit code is 1. The artifact records the SHA-256 of the source and
/// the compiler version; the same pack always gives the same bytes.
///
/// Examples:
///   packc build examples/rfc0010-ex2.pack.yaml        # writes examples/rfc0010-ex2.ppk
///   packc build my.pack.json -o build/my.ppk
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
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
    crate::out::set_stderr_color(args.diagnostics.color.for_stderr());
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.pack));
    crate::files::make_folder(&out, "-o")?;
    crate::files::check_target(&out, &[&args.pack], "-o")?;
    let limits = args.diagnostics.limits();
    let allow = crate::check::allowed_folders(&args.diagnostics.allow_paths)?;
    let options =
        crate::check::options_for(&args.pack, &limits, &allow, args.diagnostics.spec_level);
    // Checked and lowered in one pass over the file: a JSON pack is parsed once.
    let (checked, bytes, artifact) = crate::check::with_pack(&args.pack, &options, |bytes| {
        Ok(packc_compiler::build_file_bytes(
            &args.pack, bytes, &options,
        )?)
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let name = args.pack.display().to_string();
    let src = RenderSource::of_checked(&name, &text, &checked);
    crate::check::print_diagnostics(
        &src,
        &checked.diagnostics,
        args.diagnostics.format,
        args.diagnostics.color.for_stderr(),
        args.diagnostics.max_diagnostics,
    )?;
    let (errors, warnings, _notes) = crate::check::counts(&checked.diagnostics);
    if errors > 0 || (args.diagnostics.deny_warnings && warnings > 0) {
        if args.diagnostics.format == Format::Human {
            eprintln!("{name}: {errors} error(s), {warnings} warning(s); nothing written");
        }
        return Ok(ExitCode::from(1));
    }
    let artifact = artifact.context("internal: a pack with no errors was not lowered")?;
    let encoded = artifact.encode();
    let max = ir_spec::container::DEFAULT_MAX_ARTIFACT_BYTES;
    if encoded.len() > max {
        eprintln!(
            "error[limit_exceeded]: the artifact would be {} bytes, more than readers accept by default ({max} bytes, `max_artifact_bytes`); nothing written",
            encoded.len()
        );
        return Ok(ExitCode::from(1));
    }
    crate::files::write_atomically(&out, &encoded, true)?;
    let shown = out.display().to_string();
    // One write: stderr is unbuffered.
    let line = format!(
        "wrote {} ({} bytes)\n",
        packc_compiler::render::escape_control(&shown),
        encoded.len()
    );
    eprint!("{line}");
    crate::leave_until_exit((checked, bytes, artifact, encoded));
    Ok(ExitCode::SUCCESS)
}

/// `dir/x.pack.yaml` → `dir/x.ppk`; also `.pack.yml`, `.pack.json`, `.yaml`, `.yml`,
/// `.json`; any other name gets `.ppk` appended. A name that is not UTF-8 keeps its
/// bytes and gets `.ppk` appended.
pub fn default_output(pack: &Path) -> PathBuf {
    let Some(name) = pack.file_name().map(|n| n.to_str().map(str::to_owned)) else {
        return pack.with_file_name("pack.ppk");
    };
    let Some(name) = name else {
        let mut bytes = pack.file_name().unwrap_or_default().to_os_string();
        bytes.push(".ppk");
        return pack.with_file_name(bytes);
    };
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
