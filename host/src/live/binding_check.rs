//! Tool bindings checked before the first call, so a misspelled script or URL is found
//! when the run starts, not inside a recording after it ended.

use std::path::{Path, PathBuf};

use super::tools::{Binding, ToolBindings};

/// What is wrong with a set of bindings for one module.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BindingReport {
    /// Bindings that cannot work: a command that does not exist or is not executable, an
    /// HTTP binding whose URL does not parse.
    pub errors: Vec<String>,
    /// Binding keys that name no tool (and no agent member) of the pack, with "did you
    /// mean" when a key is close to one.
    pub warnings: Vec<String>,
}

impl ToolBindings {
    /// Checks every binding against the module it will serve.
    pub fn check(&self, module: &ir_spec::Module) -> BindingReport {
        let mut known: Vec<&str> = module.tools.iter().map(|t| module.str(t.key)).collect();
        known.extend(module.agents.iter().map(|a| module.str(a.key)));
        let mut report = BindingReport::default();
        for (key, binding) in &self.tools {
            if !known.contains(&key.as_str()) {
                let help = match packc_compiler::check::suggest(key, known.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => "the pack never calls it".to_owned(),
                };
                report.warnings.push(format!(
                    "tool binding `{key}` names no tool of the pack; {help}"
                ));
            }
            match binding {
                Binding::Command { argv, dir, .. } => {
                    if let Err(e) = find_program(&argv[0], dir) {
                        report.errors.push(format!("tool `{key}`: {e}"));
                    }
                }
                Binding::Http { url, .. } => {
                    let ok = url.parse::<ureq::http::Uri>().is_ok_and(|u| {
                        matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some()
                    });
                    if !ok {
                        report.errors.push(format!(
                            "tool `{key}`: `{url}` is not an http:// or https:// URL"
                        ));
                    }
                }
            }
        }
        report
    }
}

/// The program a command binding runs, resolved as it will be started: a path with a
/// `/` relative to the bindings file's folder, a bare name on `PATH`.
pub(crate) fn find_program(program: &str, dir: &Path) -> Result<PathBuf, String> {
    let path = Path::new(program);
    if program.contains('/') || path.is_absolute() {
        let full = if path.is_relative() {
            dir.join(path)
        } else {
            path.to_path_buf()
        };
        return match std::fs::metadata(&full) {
            Err(_) => Err(format!("command `{}` does not exist", full.display())),
            Ok(m) if !m.is_file() || !is_executable(&m) => Err(format!(
                "command `{}` is not an executable file",
                full.display()
            )),
            Ok(_) => Ok(full),
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|d| d.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && is_executable(&m)))
        .ok_or_else(|| format!("command `{program}` is not found on PATH"))
}

#[cfg(unix)]
fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}
